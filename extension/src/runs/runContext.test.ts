import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HAS_RUNS_CONTEXT, runContext, runOffersContext } from './runContext';

const run = (name: string): { backend: { name: string } } => ({ backend: { name } });

describe('runContext: the when-clause keys of the runs held', () => {
  it('no run: nothing applies, every key present and false', () => {
    assert.deepEqual(runContext([]), { [HAS_RUNS_CONTEXT]: false, [runOffersContext('explorer')]: false });
  });

  it('CPU and GPU runs: runs are held, Neuron Explorer does not apply', () => {
    assert.deepEqual(runContext([run('cpu'), run('cuda')]), { 'oplens.hasRuns': true, 'oplens.runOffers.explorer': false });
  });

  it('a Neuron run among them: Neuron Explorer applies', () => {
    assert.equal(runContext([run('cpu'), run('neuron')])['oplens.runOffers.explorer'], true);
  });
});
