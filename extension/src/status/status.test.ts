import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backendLabel, reconnectDetail, statusView } from './status';

describe('status bar', () => {
  it('shows the backend by its device label', () => {
    assert.equal(backendLabel('neuron'), 'NEURON');
    assert.equal(backendLabel('cuda'), 'CUDA');
    assert.equal(backendLabel('cpu'), 'CPU');
    assert.equal(backendLabel('auto'), 'AUTO');
    assert.equal(backendLabel('auto', 'NEURON'), 'AUTO→NEURON');
    // what auto picks on the server's host (oplens.backends), before any run and over the last run's
    assert.equal(backendLabel('auto', undefined, 'CPU'), 'AUTO→CPU');
    assert.equal(backendLabel('auto', 'CPU', 'NEURON'), 'AUTO→NEURON');
    assert.equal(backendLabel('cuda', undefined, 'CUDA'), 'CUDA');
  });

  it('says why auto picked what it picked in the tooltip', () => {
    const note = 'auto fell back to the CPU (neuron: torch_neuronx is not installed; cuda: this torch (2.13.0+cpu) is a build without CUDA)';
    const view = statusView({ state: 'ready', backend: 'auto', connection: 'stdio', hostDevice: 'CPU', backendNote: note });
    assert.equal(view.text, '$(flame) OpLens AUTO→CPU');
    assert.match(view.tooltip, /Backend: AUTO→CPU \(oplens\.backend = auto\): auto fell back to the CPU \(neuron: torch_neuronx is not installed/);
  });

  it('says the server state, quietly when ready', () => {
    const ready = statusView({ state: 'ready', backend: 'cpu', connection: 'stdio' });
    assert.equal(ready.text, '$(flame) OpLens CPU');
    assert.equal(ready.error, false);
    const busy = statusView({ state: 'busy', backend: 'neuron', connection: 'stdio' });
    assert.match(busy.text, /NEURON · profiling…/);
    const failed = statusView({ state: 'failed', backend: 'cpu', connection: 'ws://localhost:8765' });
    assert.equal(failed.error, true);
    assert.match(failed.text, /not running/);
    assert.match(failed.tooltip, /ws:\/\/localhost:8765/);
  });

  it('says "disconnected, reconnecting" with the attempt and the delay while a dropped WebSocket is retried', () => {
    const view = statusView({
      state: 'reconnecting',
      backend: 'neuron',
      connection: 'ws://localhost:8765',
      reconnect: { attempt: 3, nextDelayMs: 4_000, lastFailure: 'ECONNREFUSED' },
    });
    assert.equal(view.text, '$(debug-disconnect) OpLens NEURON · disconnected, reconnecting…');
    assert.equal(view.warning, true);
    assert.equal(view.error, false);
    assert.match(view.tooltip, /disconnected, reconnecting… \(attempt 3, next try in 4 s, last: ECONNREFUSED\)/);
    assert.match(view.tooltip, /Connection: ws:\/\/localhost:8765/);
    assert.match(view.tooltip, /runs show again once reconnected/);
    assert.equal(reconnectDetail({ attempt: 1, nextDelayMs: 0 }), 'attempt 1, trying now');
    assert.equal(reconnectDetail({ attempt: 2, nextDelayMs: 250 }), 'attempt 2, next try in 250 ms');
    // the other states are not drawn as a warning; ready stays quiet
    assert.equal(statusView({ state: 'ready', backend: 'cpu', connection: 'ws://localhost:8765' }).warning, false);
    assert.equal(statusView({ state: 'failed', backend: 'cpu', connection: 'ws://localhost:8765' }).warning, false);
  });

  it('a refused token after a drop: not running, with why', () => {
    const view = statusView({ state: 'failed', backend: 'cpu', connection: 'ws://localhost:8765', detail: 'the server refused the token (401)' });
    assert.equal(view.error, true);
    assert.match(view.tooltip, /not running \(the server refused the token \(401\)\)/);
  });
});
