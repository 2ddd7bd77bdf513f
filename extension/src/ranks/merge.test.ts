import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { EXTENSION_COMMANDS, MERGE_COMMAND, SERVER_COMMANDS } from '../../shared/names';
import { repoFile } from '../../test/fixtures';
import { defaultRunsFolder, describeMergeError, mergedMessage, mergeRequest, mergeUnsupported } from './merge';

interface Manifest {
  contributes: { commands: { command: string; title: string; category?: string }[]; menus: Record<string, { command: string }[]> };
}

const manifest = JSON.parse(repoFile('package.json')) as Manifest;

describe('Merge Runs of Several Hosts…', () => {
  it('is a palette command of its own (no menu), beside the server’s oplens.merge', () => {
    const contributed = manifest.contributes.commands.find((c) => c.command === EXTENSION_COMMANDS.mergeRuns);
    assert.equal(`${contributed?.category}: ${contributed?.title}`, 'OpLens: Merge Runs of Several Hosts…');
    for (const [menu, items] of Object.entries(manifest.contributes.menus)) {
      assert.ok(!items.some((m) => m.command === EXTENSION_COMMANDS.mergeRuns), `in menu ${menu}`);
    }
    assert.ok(SERVER_COMMANDS.includes(MERGE_COMMAND));
  });

  it('opens the picker in the runs directory', () => {
    assert.equal(defaultRunsFolder({ runsDirectory: '/data/runs', workspace: '/ws', websocket: false }), '/data/runs');
    assert.equal(defaultRunsFolder({ runsDirectory: '', workspace: '/ws', websocket: false }), path.join('/ws', '.oplens', 'runs'));
    // the setting is for a server started here; a WebSocket server keeps its own (the workspace's, mapped)
    assert.equal(defaultRunsFolder({ runsDirectory: '/data/runs', workspace: '/ws', websocket: true }), path.join('/ws', '.oplens', 'runs'));
    assert.equal(defaultRunsFolder({ runsDirectory: '', workspace: undefined, websocket: false }), undefined);
  });

  it('sends the picked folders as this editor names them (the server maps them)', () => {
    const picked = [
      { scheme: 'file', fsPath: '/shared/job/node0/run' },
      { scheme: 'file', fsPath: '/shared/job/node1/run' },
    ];
    assert.deepEqual(mergeRequest(picked), { dirs: ['/shared/job/node0/run', '/shared/job/node1/run'] });
    assert.match((mergeRequest([...picked, { scheme: 'vscode-vfs', fsPath: '/r' }]) as { problem: string }).problem, /\/r is not on a file system \(vscode-vfs:\)/);
    assert.ok('problem' in mergeRequest([]));
  });

  it('an older server (the same protocol, no oplens.merge) is told before the picker, with what to install', () => {
    assert.equal(mergeUnsupported(['oplens.profile', MERGE_COMMAND], '0.1.0+protocol.3', '0.1.0'), undefined);
    assert.equal(mergeUnsupported(undefined, undefined, '0.1.0'), undefined, 'not started: execute says so');
    const p = mergeUnsupported(['oplens.profile'], '0.0.9+protocol.3', '0.1.0');
    assert.equal(p?.severity, 'error');
    assert.match(p?.message ?? '', /the server \(oplens 0\.0\.9\) cannot merge runs: it is older than this extension \(0\.1\.0\)/);
    assert.match(p?.message ?? '', /Install oplens 0\.1\.0 where the server runs/);
    // and if it is asked anyway: pygls's answer for an unknown command
    const asked = describeMergeError({ code: -32602, message: `Invalid Params: Command name '${MERGE_COMMAND}' is not defined` }, '0.0.9+protocol.3', '0.1.0');
    assert.deepEqual(asked, p);
  });

  it('what oplens merge refuses, in its own words (the detail too)', () => {
    const data = { kind: 'bad_input', message: 'rank 0 appears in more than one directory', detail: 'give each host’s run once (each host runs its own --node-rank)', location: {} };
    const p = describeMergeError({ code: -32803, message: data.message, data }, undefined, '0.1.0');
    assert.equal(p.severity, 'error');
    assert.equal(p.message, 'OpLens: cannot merge the runs: rank 0 appears in more than one directory (give each host’s run once (each host runs its own --node-rank))');
    assert.equal(p.detail, data.detail);
    const bare = describeMergeError({ code: -32602, message: 'oplens.merge takes one object {dirs: …}: dirs is missing' }, undefined, '0.1.0');
    assert.match(bare.message, /^OpLens: cannot merge the runs: oplens\.merge takes one object/);
    const gone = describeMergeError({ message: 'Connection got disposed.' }, undefined, '0.1.0');
    assert.equal(gone.actions[0]?.kind, 'restartServer');
  });

  it('a cancelled merge (the notification\'s Cancel, Cancel OpLens Run) is said as such, not as a failure', () => {
    const data = { kind: 'cancelled', message: 'the merge was cancelled; nothing was stored', detail: '', location: {} };
    const p = describeMergeError({ code: -32803, message: data.message, data }, undefined, '0.1.0');
    assert.deepEqual(p, { severity: 'info', message: 'OpLens: merging the runs was cancelled; nothing was stored.', actions: [] });
  });

  it('says how many ranks the merged run has', () => {
    assert.equal(mergedMessage('rmsnorm_naive', 2, 'CPU 19.6 ms'), '$(check) OpLens rmsnorm_naive: 2 ranks merged · CPU 19.6 ms');
    assert.equal(mergedMessage('f', undefined, ''), '$(check) OpLens f: runs merged');
  });
});
