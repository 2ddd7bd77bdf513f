import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RANK_PART_COMMAND } from '../../shared/names';
import { jsonFixture } from '../../test/fixtures';
import { parseResultNotification, parseRun } from '../runs/parseRun';
import { describeRankPartError, rankPartRequest } from './rankPart';

const merged = parseRun(jsonFixture('rmsnorm_naive.ranks.result.json'));

// The server reads a rank's own run on its host and answers it (tests/lsp/test_lsp_ranks.py); here what
// the extension asks and what it says of the server's refusals.
describe('a rank’s own run (its part)', () => {
  it('is asked of the server by run id and rank', () => {
    assert.deepEqual(rankPartRequest(merged.run_id, 1), { run_id: '20261201-110000-rmsnorm_naive-cccccc', rank: 1 });
  });

  it('comes back as {uri, run}, read as any run', () => {
    const part = { ...merged, run_id: `${merged.run_id}/ranks/1`, run_dir: `${merged.run_dir}/ranks/1`, ranks: [merged.ranks[1]] };
    const { uri, run } = parseResultNotification({ uri: 'file:///tmp/oplens-sample/rmsnorm.py', run: part });
    assert.equal(uri, 'file:///tmp/oplens-sample/rmsnorm.py');
    assert.equal(run.run_id, '20261201-110000-rmsnorm_naive-cccccc/ranks/1');
    assert.deepEqual(
      run.ranks.map((r) => r.rank),
      [1],
    );
  });

  it('says why the server has none: its message and detail', () => {
    const data = { kind: 'bad_input', message: 'run r has no rank 7', detail: 'its ranks: 0, 1, 2', location: {} };
    assert.equal(describeRankPartError({ code: -32803, message: 'run r has no rank 7', data }), 'run r has no rank 7 (its ranks: 0, 1, 2)');
    const failed = { kind: 'bad_input', message: 'rank 3 has no part: killed by SIGKILL', detail: '', location: {} };
    assert.equal(describeRankPartError({ code: -32803, message: failed.message, data: failed }), 'rank 3 has no part: killed by SIGKILL');
    assert.equal(describeRankPartError({ code: -32602, message: 'no run \'x\'' }), 'no run \'x\'');
  });

  it('says so when the server is older than the command', () => {
    const said = describeRankPartError({ code: -32602, message: `Invalid Params: Command name '${RANK_PART_COMMAND}' is not defined` });
    assert.match(said, /server is older than this extension/);
  });
});
