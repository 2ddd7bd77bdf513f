import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROTOCOL_VERSION } from '../../shared/names';
import type { InstallHints } from '../problems/problems';
import { checkServerProtocol, packageVersionOf, protocolOf } from './protocol';

const hints: InstallHints = { python: '/venv/bin/python', origin: 'oplens.pythonPath', pythonExtension: false };

describe('the server protocol (serverInfo.version)', () => {
  it('reads +protocol.N', () => {
    assert.equal(protocolOf('0.1.0+protocol.2'), 2);
    assert.equal(protocolOf('0.2.0.dev3+protocol.12'), 12);
    assert.equal(protocolOf('0.1.0'), undefined);
    assert.equal(protocolOf(undefined), undefined);
    assert.equal(packageVersionOf('0.1.0+protocol.2'), '0.1.0');
  });

  it('the same protocol: no problem', () => {
    assert.equal(checkServerProtocol({ name: 'oplens', version: `0.1.0+protocol.${PROTOCOL_VERSION}` }, '0.1.0', hints), undefined);
    assert.equal(checkServerProtocol({ name: 'oplens', version: `0.1.1+protocol.${PROTOCOL_VERSION}` }, '0.1.0'), undefined, 'package versions may differ');
  });

  it('an older server: names both versions and installs the matching package', () => {
    const p = checkServerProtocol({ name: 'oplens', version: `0.0.9+protocol.${PROTOCOL_VERSION - 1}` }, '0.1.0', hints);
    assert.equal(p?.severity, 'error');
    assert.match(p?.message ?? '', new RegExp(`oplens 0\\.0\\.9, speaks protocol ${PROTOCOL_VERSION - 1}`));
    assert.match(p?.message ?? '', new RegExp(`extension 0\\.1\\.0 \\(protocol ${PROTOCOL_VERSION}\\)`));
    assert.match(p?.message ?? '', /Install matching OpLens versions/);
    assert.deepEqual(p?.actions[0], { kind: 'runInTerminal', title: 'Install oplens 0.1.0', command: '/venv/bin/python -m pip install oplens==0.1.0' });
  });

  it('a newer server: update the extension (or pin the server)', () => {
    const p = checkServerProtocol({ name: 'oplens', version: `0.3.0+protocol.${PROTOCOL_VERSION + 1}` }, '0.1.0');
    assert.match(p?.message ?? '', /update the extension to the server's version 0\.3\.0/);
    assert.equal(p?.actions[0]?.kind, 'copy', 'a WebSocket server elsewhere: the command is copied for its host');
  });

  it('no protocol announced (a server before protocols, or not OpLens)', () => {
    const p = checkServerProtocol({ name: 'oplens', version: '0.1.0' }, '0.1.0', hints);
    assert.match(p?.message ?? '', /announces no OpLens protocol/);
    assert.match(checkServerProtocol(undefined, '0.1.0')?.message ?? '', /no serverInfo/);
  });

  it('in the source tree, the editable install', () => {
    const p = checkServerProtocol({ name: 'oplens', version: '0.1.0' }, '0.1.0', { ...hints, sourceTree: '/src/oplens' });
    assert.deepEqual(p?.actions[0], { kind: 'runInTerminal', title: 'Install oplens 0.1.0', command: '/venv/bin/python -m pip install -e /src/oplens' });
  });
});
