import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFixture } from '../../test/fixtures';
import { parseRun } from '../runs/parseRun';
import { gutterSvg, HEAT_LEVELS, heatLevel, heatLines, heatPalette, heatShares } from './heat';

describe('heatLevel', () => {
  it('gives the hottest line the top level and scales the others linearly', () => {
    assert.equal(heatLevel(0.5, 0.5), HEAT_LEVELS);
    assert.equal(heatLevel(0.25, 0.5), HEAT_LEVELS / 2);
    assert.equal(heatLevel(0.26, 0.5), HEAT_LEVELS / 2 + 1);
    assert.equal(heatLevel(0.01, 0.5), 1);
  });

  it('gives no heat under the minimum share, or without any time', () => {
    assert.equal(heatLevel(0.0005, 0.5), 0);
    assert.equal(heatLevel(0, 0), 0);
    assert.equal(heatLevel(Number.NaN, 0.5), 0);
  });

  it('is monotone in the share', () => {
    let last = 0;
    for (let s = 0.001; s <= 0.4; s += 0.001) {
      const level = heatLevel(s, 0.4);
      assert.ok(level >= last);
      last = level;
    }
    assert.equal(last, HEAT_LEVELS);
  });
});

describe('heatLines', () => {
  const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

  it('maps profiled lines to 0-based document lines, moved by the shift', () => {
    // line 28 (`mean_sq + EPS`) has 0.08 % of the time: under the 0.1 % minimum, no heat
    const heat = heatLines(run, 0);
    assert.deepEqual(
      heat.map((h) => h.line),
      [24, 25, 26, 28, 29],
    );
    assert.deepEqual(
      heatLines(run, 3).map((h) => h.line),
      [27, 28, 29, 31, 32],
    );
    assert.equal(heatLines(run, 0, 0).length, 6);
  });

  it('the hottest line (x * x, 46 %) is at the top level; tiny lines at the bottom', () => {
    const heat = heatLines(run, 0);
    const byLine = new Map(heat.map((h) => [h.line + 1, h]));
    assert.equal(byLine.get(25)?.level, HEAT_LEVELS);
    assert.ok(Math.abs((byLine.get(25)?.share ?? 0) - 0.4622) < 1e-3);
    assert.equal(byLine.get(27)?.level, 1);
    assert.ok((byLine.get(26)?.level ?? 0) < HEAT_LEVELS);
  });

  it('drops lines under the minimum share', () => {
    const heat = heatLines(run, 0, 0.01); // 1 %
    assert.deepEqual(
      heat.map((h) => h.line + 1),
      [25, 26, 29, 30],
    );
  });

  it('uses CPU shares when the run has no device time at all', () => {
    const heat = heatLines(
      {
        totals: { self_device_us: 0 },
        lines: [
          { line: 1, pct_device: 0, pct_cpu: 75 },
          { line: 2, pct_device: 0, pct_cpu: 25 },
        ],
      },
      0,
    );
    assert.deepEqual(
      heat.map((h) => h.level),
      [HEAT_LEVELS, Math.ceil(HEAT_LEVELS / 3)], // 25 % is a third of the hottest 75 %
    );
  });

  it('never yields negative lines', () => {
    assert.deepEqual(heatLines(run, -100), []);
  });
});

describe('heat by headroom (oplens.heatBy)', () => {
  // rmsnorm_naive on this CPU: 59.49 ms per call; each line's headroom at the roofline (oplens profile --view bound)
  const run = {
    totals: { self_device_us: 59490 },
    lines: [
      { line: 25, pct_device: 30.4, pct_cpu: 30.4, headroom_us: 14887.9 },
      { line: 26, pct_device: 12.6, pct_cpu: 12.6, headroom_us: 6535.0 },
      { line: 27, pct_device: 0.05, pct_cpu: 0.05, headroom_us: 28.6 },
      { line: 29, pct_device: 26.7, pct_cpu: 26.7, headroom_us: 15187.3 },
      { line: 30, pct_device: 30.2, pct_cpu: 30.2, headroom_us: 17260.4 },
      { line: 31, pct_device: 0.05, pct_cpu: 0.05, headroom_us: null }, // no counted work: no headroom
    ],
  };

  it('colours by what is left to win: the line with the most headroom is the hottest', () => {
    const byTime = new Map(heatLines(run, 0).map((h) => [h.line + 1, h]));
    const byHeadroom = new Map(heatLines(run, 0, 0.001, HEAT_LEVELS, 'headroom').map((h) => [h.line + 1, h]));
    assert.equal(byTime.get(25)?.level, HEAT_LEVELS); // by time, line 25 (30.4 %) is the hottest
    assert.equal(byHeadroom.get(30)?.level, HEAT_LEVELS); // by headroom, line 30 (17.26 ms to win)
    assert.ok((byHeadroom.get(25)?.level ?? HEAT_LEVELS) < HEAT_LEVELS);
    assert.ok(Math.abs((byHeadroom.get(30)?.share ?? 0) - 17260.4 / 59490) < 1e-9);
    assert.equal(byHeadroom.get(27), undefined, 'under 0.1 % of the time to win: no heat');
  });

  it('lines without headroom get no heat; a run without any (older, or no ceilings) none at all', () => {
    assert.deepEqual(heatShares(run, 'headroom').slice(-1), [0]);
    assert.ok(!heatLines(run, 0, 0.001, HEAT_LEVELS, 'headroom').some((h) => h.line + 1 === 31));
    const old = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
    assert.equal(heatLines(old, 0).length, 5);
    assert.deepEqual(heatLines(old, 0, 0.001, HEAT_LEVELS, 'headroom'), []);
  });

  it('a run with no device time measures headroom against its CPU time', () => {
    const cpu = { totals: { self_device_us: 0, self_cpu_us: 100 }, lines: [{ line: 1, pct_device: 0, pct_cpu: 100, headroom_us: 40 }] };
    assert.deepEqual(heatShares(cpu, 'headroom'), [0.4]);
  });
});

describe('heatPalette', () => {
  it('has one colour set per level for every theme kind', () => {
    for (const kind of ['dark', 'light', 'highContrast', 'highContrastLight'] as const) {
      const palette = heatPalette(kind);
      assert.equal(palette.length, HEAT_LEVELS);
      assert.equal(new Set(palette.map((p) => p.gutter)).size, HEAT_LEVELS, `${kind}: levels are distinguishable`);
    }
  });

  it('differs between light and dark themes', () => {
    assert.notDeepEqual(heatPalette('dark'), heatPalette('light'));
  });

  it('high contrast colours are opaque', () => {
    assert.ok(heatPalette('highContrast').every((p) => p.gutter.endsWith('1.00)')));
  });

  it('the gutter bar widens with the level', () => {
    const width = (svg: string): number => Number(/rect x="\d+" y="0" width="(\d+)"/.exec(svg)?.[1]);
    assert.ok(width(gutterSvg('red', 1)) < width(gutterSvg('red', HEAT_LEVELS)));
    assert.ok(gutterSvg('hsla(1, 2%, 3%, 0.50)', 3).includes('fill="hsla(1, 2%, 3%, 0.50)"'));
  });
});
