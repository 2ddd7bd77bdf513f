import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFixture } from '../../test/fixtures';
import { parseRun } from '../runs/parseRun';
import { awsExtensionGuide, explorerUnavailable, parseExplorerRecord, tunnelCommand, tunnelFor, viewContainerId, withPort } from './explorer';

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
  ingest_command: ['neuron-explorer', 'upload'],
  upload_command: ['neuron-explorer', 'upload'],
  endpoint: 'http://localhost:3002',
  profile_directory: '/ws/.oplens/runs/r1/neuron/i-0abc_pid_7/20260101T000000',
  upload_files: [],
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
    assert.equal(r.endpoint, 'http://localhost:3002');
    assert.equal(r.profileDirectory, '/ws/.oplens/runs/r1/neuron/i-0abc_pid_7/20260101T000000');
    assert.deepEqual(r.uploadFiles, []);
  });

  it('reads a record of an older server, without the upload fields', () => {
    const { endpoint: _e, profile_directory: _d, upload_files: _f, upload_command: _u, ...old } = LINK;
    const r = parseExplorerRecord({ ...old, api_port: 4002 });
    assert.deepEqual([r.endpoint, r.profileDirectory, r.uploadFiles], ['http://localhost:4002', '', []]);
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

describe('the AWS Neuron Explorer extension (get-started.rst, "Using VS Code instead of the browser")', () => {
  it('a system profile: listed on the custom endpoint, and its session directory copied for Local Binary', () => {
    const g = awsExtensionGuide(parseExplorerRecord(LINK), '/ws/.oplens/runs/r1/neuron');
    assert.equal(g.copy, '/ws/.oplens/runs/r1/neuron/i-0abc_pid_7/20260101T000000');
    assert.equal(
      g.message,
      'OpLens: the profile is uploaded to Neuron Explorer as "oplens-r1" on the endpoint localhost:3002: with Endpoint → Custom endpoint ' +
        'localhost:3002, the Profile Manager lists it under that name. With Local Binary: Profile Manager → Upload Profile → paste the ' +
        'copied path (/ws/.oplens/runs/r1/neuron/i-0abc_pid_7/20260101T000000).',
    );
  });

  it('a device-only pair: Individual Files, the folder that holds them copied', () => {
    const r = parseExplorerRecord({ ...LINK, profile_directory: '', upload_files: ['/p/s/neff_1.neff', '/p/s/1_instid_0_vnc_0.ntff'] });
    const g = awsExtensionGuide(r, '/p');
    assert.equal(g.copy, '/p/s');
    assert.match(g.message, /Individual Files .*: neff_1\.neff and 1_instid_0_vnc_0\.ntff in the copied folder \/p\/s\.$/);
    assert.match(g.message, /as "oplens-r1" on the endpoint localhost:3002/);
  });

  it("an older server's record: the run's own profile directory", () => {
    const r = parseExplorerRecord({ ...LINK, profile_directory: undefined, endpoint: undefined });
    assert.equal(awsExtensionGuide(r, '/ws/run/neuron').copy, '/ws/run/neuron');
  });

  it("reads the extension's view container from its manifest, not by guessing", () => {
    const manifest = { contributes: { viewsContainers: { activitybar: [{ id: 'neuronExplorer', title: 'Neuron Explorer', icon: 'x.svg' }] } } };
    assert.equal(viewContainerId(manifest), 'neuronExplorer');
    assert.equal(viewContainerId({ contributes: { commands: [{ command: 'x.open', title: 'Open Profile' }] } }), undefined);
    assert.equal(viewContainerId(undefined), undefined);
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
