import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRun } from '../src/runs/parseRun';
import { jsonFixture } from '../test/fixtures';
import { fmtUsRange, isMerged, rankNumbers, rankStrip, stragglers, stripLevel } from './ranks';
import type { LineStat, RankInfo } from './run';

// The editor's words for a merged run (its lines' hints and hovers) are the server's and are tested
// there, through a plain LSP client (tests/test_lsp_ranks.py); here only what the results page draws.

// three ranks merged by the server (make_fixtures.py): rank 1 three times slower on line 25 (x_sq),
// each rank ending in an all_reduce on line 30 where ranks 0 and 2 wait for rank 1
const run = parseRun(jsonFixture('rmsnorm_naive.ranks.result.json'));
const single = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
// format.expected.json: the server's `format.fmt_us_range` for the same inputs
const expected = jsonFixture<{ fmt_us_range: { min: number; max: number; text: string }[] }>('format.expected.json');
const line = (n: number): LineStat => {
  const l = run.lines.find((s) => s.line === n);
  assert.ok(l, `line ${n}`);
  return l;
};

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

  it('maps per-rank figures to rank numbers, skipping failed ranks where they have no figure', () => {
    assert.deepEqual(rankNumbers([info(0), info(1), info(2)], 3), [0, 1, 2]);
    assert.deepEqual(rankNumbers([info(0), info(1, 'it raised'), info(2)], 2), [0, 2]);
    assert.deepEqual(rankNumbers([info(4), info(5)], 2), [4, 5]);
    assert.deepEqual(rankNumbers([], 2), [0, 1]);
  });

  it('names the straggler of each line', () => {
    assert.deepEqual([...stragglers(run.insights)], [[25, 1]]);
    assert.equal(stragglers(single.insights).size, 0);
  });
});

describe('a range of times', () => {
  it('is written with its unit once where both ends share it, as the server writes it', () => {
    for (const { min, max, text } of expected.fmt_us_range) {
      assert.equal(fmtUsRange(min, max), text);
    }
    assert.equal(fmtUsRange(2000, 2000), '2.00 ms');
  });
});

describe('the ranks × lines strip', () => {
  const strip = rankStrip(run, { label: 'Self CPU' });

  it('a row per rank, a cell per line in source order', () => {
    assert.ok(strip);
    assert.deepEqual(strip.lines, [25, 26, 27, 28, 29, 30]);
    assert.deepEqual(
      strip.rows.map((r) => [r.label, r.title, r.cells.length]),
      [
        ['rank 0', 'rank 0 · local 0 · node-a · cpu · pid 4200', 6],
        ['rank 1', 'rank 1 · local 1 · node-a · cpu · pid 4201', 6],
        ['rank 2', 'rank 2 · local 2 · node-a · cpu · pid 4202', 6],
      ],
    );
    assert.deepEqual(strip.failed, []);
  });

  it('colours each cell by the line’s time on that rank against the largest cell', () => {
    assert.ok(strip);
    assert.equal(strip.max, line(25).ranks?.max);
    const levels = strip.rows.map((r) => r.cells.map((c) => c.level));
    assert.deepEqual(levels, [
      [3, 2, 1, 1, 2, 1],
      [8, 2, 1, 1, 2, 1],
      [3, 2, 1, 1, 2, 1],
    ]);
  });

  it('marks the slowest and the straggler, and says the value on hover', () => {
    assert.ok(strip);
    const cell = strip.rows[1]?.cells[0];
    assert.equal(cell?.straggler, true);
    assert.equal(cell?.slowest, true);
    assert.equal(cell?.title, 'line 25 · rank 1: Self CPU 27.04 ms (the slowest, ⚠ the straggler); median across ranks 9.01 ms, 9.01–27.04 ms');
    assert.equal(strip.rows[0]?.cells[0]?.title, 'line 25 · rank 0: Self CPU 9.01 ms; median across ranks 9.01 ms, 9.01–27.04 ms');
    // a line where every rank takes the same time has no slowest
    assert.ok(strip.rows.every((r) => !r.cells[1]?.slowest));
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

  it('lists failed ranks apart; no strip for a single process', () => {
    const withFailed = rankStrip({ ...run, ranks: [...run.ranks, info(3, 'exited with status 1')] });
    assert.deepEqual(withFailed?.failed, [{ rank: 3, why: 'exited with status 1' }]);
    assert.equal(withFailed?.rows.length, 3);
    assert.equal(rankStrip(single), undefined);
  });
});
