import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rankLabel } from '../shared/ranks';
import type { RankInfo } from '../shared/run';
import { parseRun } from '../src/core/parseRun';
import { rankPartPath, standalonePart } from '../src/core/rankPart';
import { jsonFixture } from './fixtures';

const merged = parseRun(jsonFixture('rmsnorm_naive.ranks.result.json'));

describe('a rank’s own run (its part)', () => {
  it('is at <run_dir>/<part>/result.json', () => {
    const where = rankPartPath(merged, 1);
    assert.ok(!('problem' in where));
    assert.equal(where.info.rank, 1);
    assert.equal(where.dir, '/runs/20261201-110000-rmsnorm_naive-cccccc/ranks/1');
    assert.equal(where.file, '/runs/20261201-110000-rmsnorm_naive-cccccc/ranks/1/result.json');
  });

  it('says why a rank has none', () => {
    const failed: RankInfo = { rank: 3, local_rank: 3, world_size: 4, host: 'h', device: 'cpu', part: '', pid: 0, failed: 'killed by SIGKILL' };
    const run = { ...merged, ranks: [...merged.ranks, failed] };
    assert.deepEqual(rankPartPath(run, 3), { problem: 'rank 3 has no part: killed by SIGKILL' });
    assert.deepEqual(rankPartPath(run, 7), { problem: 'run 20261201-110000-rmsnorm_naive-cccccc has no rank 7 (its ranks: 0, 1, 2, 3)' });
    assert.deepEqual(rankPartPath({ ...merged, ranks: [] }, 0), { problem: 'run 20261201-110000-rmsnorm_naive-cccccc is not a distributed run' });
    assert.match((rankPartPath({ ...merged, run_dir: '' }, 0) as { problem: string }).problem, /no run_dir/);
  });

  it('stands on its own once read: its run_dir is its directory, its id kept (or made)', () => {
    const where = rankPartPath(merged, 1);
    assert.ok(!('problem' in where));
    // a part as the server writes it: its own id, no run_dir, paths relative to its directory
    const part = { ...merged, run_id: `${merged.run_id}/ranks/1`, run_dir: '', ranks: [where.info] };
    const shown = standalonePart(part, merged, where.info, where.dir);
    assert.equal(shown.run_dir, where.dir);
    assert.equal(shown.run_id, '20261201-110000-rmsnorm_naive-cccccc/ranks/1');
    assert.equal(standalonePart({ ...part, run_id: '' }, merged, where.info, where.dir).run_id, `${merged.run_id}/ranks/1`);
    assert.equal(standalonePart({ ...part, run_id: merged.run_id }, merged, where.info, where.dir).run_id, `${merged.run_id}/ranks/1`);
  });

  it('reads in the selector as rank, host and device', () => {
    assert.equal(rankLabel(merged.ranks[1] as RankInfo), 'rank 1 · node-a · cpu');
    assert.equal(rankLabel({ rank: 2, local_rank: 0, world_size: 4, host: '', device: '', part: '', pid: 0, failed: 'it raised' }), 'rank 2 · failed');
  });
});
