import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fmtShare, fmtUs } from '../shared/format';
import {
  collectivePerRank,
  fmtUsRange,
  fmtUsSpan,
  isMerged,
  rankHint,
  rankHintLabel,
  rankHintTooltip,
  rankHoverMarkdown,
  rankNumbers,
  rankRows,
  rankStrip,
  stragglers,
  stripLevel,
  textBar,
  withRanksSection,
} from '../shared/ranks';
import type { LineStat, RankInfo, RankSpread } from '../shared/run';
import { parseRun } from '../src/core/parseRun';
import { jsonFixture } from './fixtures';

// three ranks merged by the server (make_fixtures.py): rank 1 three times slower on line 25 (x_sq),
// each rank ending in an all_reduce on line 30 where ranks 0 and 2 wait for rank 1
const run = parseRun(jsonFixture('rmsnorm_naive.ranks.result.json'));
const single = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
const line = (n: number): LineStat => {
  const l = run.lines.find((s) => s.line === n);
  assert.ok(l, `line ${n}`);
  return l;
};

function info(rank: number, failed = ''): RankInfo {
  return { rank, local_rank: rank, world_size: 4, host: 'h', device: 'cpu', part: failed ? '' : `ranks/${rank}`, pid: 0, failed };
}

function spread(per_rank: number[], slowest: number): RankSpread {
  const sorted = [...per_rank].sort((a, b) => a - b);
  return { per_rank, median: sorted[Math.floor(sorted.length / 2)] ?? 0, min: sorted[0] ?? 0, max: sorted[sorted.length - 1] ?? 0, slowest };
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

describe('the hint of a line of a distributed run', () => {
  it('writes a range with its unit once where both ends share it', () => {
    assert.equal(fmtUsRange(7100, 49100), '7.10–49.10 ms');
    assert.equal(fmtUsRange(923.469, 21020.7475), '923.5 µs–21.02 ms');
    assert.equal(fmtUsRange(15.7, 42), '15.7–42.0 µs');
    assert.equal(fmtUsRange(2000, 2000), '2.00 ms');
  });

  it('writes a hint’s range short: the larger end’s unit, about three digits', () => {
    assert.equal(fmtUsSpan(7100, 49100), '7.1–49.1 ms');
    assert.equal(fmtUsSpan(788, 22960), '0.8–23.0 ms');
    assert.equal(fmtUsSpan(1140, 3850), '1.14–3.85 ms');
    assert.equal(fmtUsSpan(75, 112.7), '75–113 µs');
    assert.equal(fmtUsSpan(400.4, 408.5), '400–409 µs');
    assert.equal(fmtUsSpan(9.5, 9.8), '9.5–9.8 µs');
    assert.equal(fmtUsSpan(4894.78, 4894.78), '4.89 ms');
    assert.equal(fmtUsSpan(150_000, 2_355_000), '150–2,355 ms');
    assert.equal(fmtUsSpan(Number.NaN, 1), '–');
  });

  it('shows the median across ranks (not the mean), the share and the spread; the straggler marked', () => {
    const x = line(25);
    assert.ok(x.self_device_us > (x.ranks?.median ?? 0) * 1.5, 'the fixture’s mean is well above its median');
    assert.equal(rankHintLabel(x, 1), `9.01 ms · ${fmtShare(x.pct_device)} · 9.0–27.0 ms · ⚠ rank 1`);
    assert.equal(rankHintLabel(line(30)), `2.20 ms · ${fmtShare(line(30).pct_device)} · ranks 1.75–2.22 ms`);
    assert.equal(rankHintLabel(line(26)), `4.89 ms · ${fmtShare(line(26).pct_device)} · ranks 4.89 ms`);
  });

  it('fits the 43 characters VS Code shows of a line’s hints, the straggler mark included', () => {
    // the real two-rank DDP run of tests/data/programs/ddp_train.py: line 21, rank 1 the straggler
    const label = rankHintLabel({ pct_device: 52.8, ranks: { per_rank: [788, 22960], median: 11874, min: 788, max: 22960, slowest: 1 } }, 1) ?? '';
    assert.equal(label, '11.87 ms · 52.8 % · 0.8–23.0 ms · ⚠ rank 1');
    assert.ok(label.length <= 43, `${label.length} characters`);
  });

  it('has no rank hint for a single process', () => {
    const l = single.lines[0] as LineStat;
    assert.equal(rankHintLabel(l), undefined);
    assert.equal(rankHint(`${fmtUs(l.self_device_us)} · ${fmtShare(l.pct_device)}`, l), undefined);
  });

  it('rewrites the server’s single-process hint, keeping a diff’s mark after it', () => {
    const x = line(25);
    const server = `${fmtUs(x.self_device_us)} · ${fmtShare(x.pct_device)}`;
    assert.equal(server, '15.02 ms · 57.9 %');
    assert.equal(rankHint(server, x, 1), `9.01 ms · 57.9 % · 9.0–27.0 ms · ⚠ rank 1`);
    assert.equal(rankHint(`${server} · ▲ 2.1×`, x), `9.01 ms · 57.9 % · ranks 9.0–27.0 ms · ▲ 2.1×`);
  });

  it('leaves a hint the server wrote otherwise (one that already names ranks, or other figures)', () => {
    const x = line(25);
    assert.equal(rankHint('9.01 ms · 57.9 % · ranks 9.01–27.04 ms', x), undefined);
    assert.equal(rankHint('1.00 ms · 3.0 %', x), undefined);
  });

  it('says in its tooltip what the figure is', () => {
    assert.equal(rankHintTooltip(line(25), 1), 'the median across 3 ranks (mean 15.02 ms); rank 1 is the straggler');
    assert.equal(rankHintTooltip(line(30)), 'the median across 3 ranks (mean 2.06 ms); rank 2 the slowest');
    assert.equal(rankHintTooltip(line(26)), 'the median across 3 ranks (mean 4.89 ms)');
  });
});

describe('the per-rank rows of a line’s hover', () => {
  it('one row per rank: its time, a bar against the slowest, the slowest and the straggler marked', () => {
    const rows = rankRows(line(25).ranks as RankSpread, run.ranks, { straggler: 1 });
    assert.deepEqual(
      rows.map((r) => [r.rank, Math.round(r.us), Number(r.fraction.toFixed(3)), r.slowest, r.straggler]),
      [
        [0, 9014, 0.333, false, false],
        [1, 27041, 1, true, true],
        [2, 9014, 0.333, false, false],
      ],
    );
  });

  it('marks no slowest rank when all ranks take the same time', () => {
    assert.ok(rankRows(line(26).ranks as RankSpread, run.ranks).every((r) => !r.slowest && r.fraction === 1));
  });

  it('each rank’s collective time is its collective ops’ per-rank figures', () => {
    assert.deepEqual(collectivePerRank(line(30).ops, 3), [600, 150, 620]);
    assert.deepEqual(collectivePerRank(line(25).ops, 3), [null, null, null]);
  });

  it('rank numbers follow run.ranks, a failed rank (no figure) left out', () => {
    const rows = rankRows(spread([10, 40], 3), [info(0), info(2, 'killed by SIGKILL'), info(3)]);
    assert.deepEqual(
      rows.map((r) => [r.rank, r.slowest]),
      [
        [0, false],
        [3, true],
      ],
    );
  });

  it('draws text bars in eighths', () => {
    assert.equal(textBar(1, 4), '████');
    assert.equal(textBar(0, 4), '    ');
    assert.equal(textBar(0.5, 4), '██  ');
    assert.equal(textBar(0.32, 12), '███▉        ');
    assert.equal(textBar(0.0001, 4), '▏   ');
    assert.equal(textBar(Number.NaN, 2), '  ');
    assert.equal(textBar(3, 2), '██');
  });

  it('the hover section: the median and spread, the rows, the collective time', () => {
    const md = rankHoverMarkdown(line(30), run.ranks);
    assert.equal(
      md,
      [
        '**Ranks** · median 2.20 ms across 3 ranks, 1.75–2.22 ms',
        '',
        '```text',
        'rank 0  ███████████▉  2.20 ms  (600.0 µs in collectives)',
        'rank 1  █████████▌    1.75 ms  (150.0 µs in collectives)',
        'rank 2  ████████████  2.22 ms  (620.0 µs in collectives)  ◀ slowest',
        '```',
        '',
        'In collectives: 456.7 µs per call (mean over ranks), of 2.06 ms',
      ].join('\n'),
    );
    const x = rankHoverMarkdown(line(25), run.ranks, 1) ?? '';
    assert.match(x, /^\*\*Ranks\*\* · median 9\.01 ms across 3 ranks, 9\.01–27\.04 ms · ⚠ rank 1 is the straggler/);
    assert.match(x, /rank 1 {2}█{12} {2}27\.04 ms {2}◀ slowest ⚠ straggler/);
    assert.doesNotMatch(x, /collectives/);
    assert.equal(rankHoverMarkdown(single.lines[0] as LineStat, []), undefined);
  });
});

describe('the hover with its ranks section', () => {
  it('goes after the headline, before the op table', () => {
    assert.equal(withRanksSection('**OpLens** · line 21\n\n| op |\n|---|', '**Ranks** · …'), '**OpLens** · line 21\n\n**Ranks** · …\n\n| op |\n|---|');
    assert.equal(withRanksSection('**OpLens** · line 21', '**Ranks** · …'), '**OpLens** · line 21\n\n**Ranks** · …');
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
