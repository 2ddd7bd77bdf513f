import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backendLabel, statusView } from './status';

describe('status bar', () => {
  it('shows the backend by its device label', () => {
    assert.equal(backendLabel('neuron'), 'NEURON');
    assert.equal(backendLabel('cuda'), 'CUDA');
    assert.equal(backendLabel('cpu'), 'CPU');
    assert.equal(backendLabel('auto'), 'AUTO');
    assert.equal(backendLabel('auto', 'NEURON'), 'AUTO→NEURON');
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
});
