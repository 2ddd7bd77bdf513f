import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFixture } from '../../test/fixtures';
import { parseRun } from '../runs/parseRun';
import { explorerUnavailable, parseExplorerRecord, tunnelCommand, tunnelFor, withPort } from './explorer';

// server/oplens/backends/neuron/explorer.py ExplorerLink.to_dict()
const LINK = {
  run_id: 'r1',
  display_name: 'oplens-r1',
  url: 'http://localhost:3001/profile/oplens-r1',
  tunnel: 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a',
  host: 'trn2-a',
  ui_port: 3001,
  api_port: 3002,
  profile: 'profile directory /ws/.oplens/runs/r1/neuron',
  ingest_command: ['neuron-explorer', 'view'],
  viewer: 'started',
  viewer_pid: 4242,
  viewer_log: '/ws/.oplens/explorer.log',
  messages: ['started neuron-explorer view (pid 4242)'],
};

describe('parseExplorerRecord', () => {
  it("reads the server's ExplorerLink", () => {
    const r = parseExplorerRecord(LINK);
    assert.equal(r.profileUrl, 'http://localhost:3001/profile/oplens-r1');
    assert.equal(tunnelFor(r), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a');
    assert.deepEqual([r.uiPort, r.apiPort], [3001, 3002]);
    assert.equal(r.host, 'trn2-a');
    assert.equal(r.displayName, 'oplens-r1');
    assert.deepEqual(r.messages, ['started neuron-explorer view (pid 4242)']);
  });

  it('refuses a record with nothing to open, or without its ports', () => {
    assert.throws(() => parseExplorerRecord({ ...LINK, url: '' }), /no profile URL/);
    assert.throws(() => parseExplorerRecord({ ...LINK, api_port: undefined }), /without its ports/);
    assert.throws(() => parseExplorerRecord(null), /no record/);
  });
});

describe('tunnels', () => {
  it('forwards both ports to the same local numbers', () => {
    assert.equal(tunnelCommand(3001, 3002, 'trn2-a'), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a');
    assert.equal(tunnelCommand(3001, 3002, ''), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 <host>');
  });

  it("ignores a server tunnel that forwards only one port", () => {
    const r = parseExplorerRecord({ ...LINK, tunnel: 'ssh -L 3001:localhost:3001 trn2-a' });
    assert.equal(tunnelFor(r), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a');
  });

  it('withPort moves the page to a forwarded port', () => {
    assert.equal(withPort('http://localhost:3001/profile/x', 40123), 'http://localhost:40123/profile/x');
  });
});

describe('which runs open in Neuron Explorer', () => {
  const cpu = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

  it('a CPU run: no, use Open Trace', () => {
    assert.match(explorerUnavailable(cpu) ?? '', /Open Trace/);
  });

  it('a Neuron run with a device profile: yes', () => {
    const neuron = { ...cpu, backend: { ...cpu.backend, name: 'neuron', device_label: 'NEURON' }, artifacts: { ...cpu.artifacts, device_profile_dir: 'neuron' } };
    assert.equal(explorerUnavailable(neuron), undefined);
    const bare = { ...neuron, artifacts: { ...neuron.artifacts, device_profile_dir: '' } };
    assert.match(explorerUnavailable(bare) ?? '', /no device profile/);
  });
});
