import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRun } from '../src/runs/parseRun';
import { jsonFixture } from '../test/fixtures';
import { isMerged, stripLevel } from './ranks';
import type { RankInfo } from './run';

// The words of a merged run (the editor's hints and hovers, the results page's selector and strip) are the
// server's and are tested there (tests/lsp/test_lsp_ranks.py, tests/unit/test_views_ranks.py); here only what the
// extension decides itself.

// three ranks merged by the server (make_fixtures.py): rank 1 three times slower on line 25 (x_sq),
// each rank ending in an all_reduce on line 30 where ranks 0 and 2 wait for rank 1
const run = parseRun(jsonFixture('rmsnorm_naive.ranks.result.json'));
const single = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

function info(rank: number, failed = ''): RankInfo {
  return { rank, local_rank: rank, world_size: 4, host: 'h', device: 'cpu', part: failed ? '' : `ranks/${rank}`, pid: 0, failed };
}

describe('a merged run', () => {
  it('is told from a single process and from a rank’s own part', () => {
    assert.equal(isMerged(run), true);
    assert.equal(isMerged(single), false);
    // a part lists its own rank but has no spreads
    assert.equal(isMerged({ ...single, ranks: [info(1)] }), false);
  });
});

describe('the ranks × lines strip', () => {
  it('colours each cell by the line’s time on that rank against the largest cell', () => {
    const lines = run.lines.filter((l) => l.ranks !== null).sort((a, b) => a.line - b.line);
    const max = Math.max(...lines.flatMap((l) => l.ranks?.per_rank ?? []));
    const levels = [0, 1, 2].map((rank) => lines.map((l) => stripLevel(l.ranks?.per_rank[rank] ?? 0, max)));
    assert.deepEqual(levels, [
      [3, 2, 1, 1, 2, 1],
      [8, 2, 1, 1, 2, 1],
      [3, 2, 1, 1, 2, 1],
    ]);
  });

  it('levels: none for no time, then linear up to the top', () => {
    assert.equal(stripLevel(0, 100), 0);
    assert.equal(stripLevel(5, 0), 0);
    assert.equal(stripLevel(0.001, 100), 1);
    assert.equal(stripLevel(12.5, 100), 1);
    assert.equal(stripLevel(12.6, 100), 2);
    assert.equal(stripLevel(100, 100), 8);
    assert.equal(stripLevel(50, 100, 4), 2);
  });
});
