import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { explorerUnavailable, manualExplorerCommand, parseExplorerRecord, tunnelCommand, tunnelFor, withPort } from '../src/core/explorer';
import { parseRun } from '../src/core/parseRun';
import { jsonFixture } from './fixtures';

const ports = { uiPort: 3001, apiPort: 3002 };

describe('parseExplorerRecord', () => {
  it("reads the server's ExplorerLink", () => {
    // server/oplens/engine/explorer.py ExplorerLink.to_dict()
    const r = parseExplorerRecord(
      {
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
      },
      ports,
    );
    assert.equal(r.profileUrl, 'http://localhost:3001/profile/oplens-r1');
    assert.equal(tunnelFor(r), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a');
    assert.equal(r.host, 'trn2-a');
    assert.deepEqual(r.messages, ['started neuron-explorer view (pid 4242)']);
  });

  it('reads the snake_case record', () => {
    const r = parseExplorerRecord(
      {
        profile_url: 'http://localhost:3001/profile/oplens-r1',
        ui_port: 3001,
        api_port: 3002,
        tunnel_command: 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a',
        display_name: 'oplens-r1',
        host: 'trn2-a',
      },
      ports,
    );
    assert.equal(r.profileUrl, 'http://localhost:3001/profile/oplens-r1');
    assert.equal(tunnelFor(r), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a');
  });

  it('derives the profile URL from the display name and the configured ports', () => {
    const r = parseExplorerRecord({ displayName: 'my run', uiPort: '4001' }, ports);
    assert.equal(r.uiPort, 4001);
    assert.equal(r.apiPort, 3002);
    assert.equal(r.profileUrl, 'http://localhost:4001/profile/my%20run');
  });

  it('accepts nested ports', () => {
    const r = parseExplorerRecord({ url: 'http://localhost:5001/profile/x', ports: { ui: 5001, api: 5002 } }, ports);
    assert.deepEqual([r.uiPort, r.apiPort], [5001, 5002]);
  });

  it('refuses a record with nothing to open', () => {
    assert.throws(() => parseExplorerRecord({ ui_port: 3001 }, ports), /neither a profile URL nor a display name/);
    assert.throws(() => parseExplorerRecord(null, ports), /no record/);
  });
});

describe('tunnels', () => {
  it('forwards both ports to the same local numbers', () => {
    assert.equal(tunnelCommand(3001, 3002, 'trn2-a'), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 trn2-a');
    assert.equal(tunnelCommand(3001, 3002, ''), 'ssh -L 3001:localhost:3001 -L 3002:localhost:3002 <host>');
  });

  it("ignores a server tunnel that forwards only one port", () => {
    const r = parseExplorerRecord({ display_name: 'x', tunnel: 'ssh -L 3001:localhost:3001 trn2-a', host: 'trn2-a' }, ports);
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

  it('the manual command names the run directory', () => {
    assert.equal(manualExplorerCommand(cpu), `oplens explorer ${cpu.run_dir}`);
  });
});
