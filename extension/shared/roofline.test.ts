import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRun } from '../src/runs/parseRun';
import { jsonFixture } from '../test/fixtures';
import { boundPhrase, fmtAbove, fmtBytes, fmtFlops, fmtRooflinePct, roofline, type RooflineChart } from './roofline';
import type { DeviceRoof, LineStat, Run } from './run';

const base = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

// A real run of rmsnorm_naive on this CPU (oplens profile ... --view bound): each line's work, memory and bound.
const DEVICE: DeviceRoof = {
  name: 'x86_64',
  dtype_peaks: { float32: 61.47e9, bfloat16: 2.302e9, float16: 2.279e9 },
  bytes_per_s: 24.06e9,
  source: 'measured',
  measured_at: '2026-12-01T14:18:29.922+00:00',
};
const MEASURED: Record<number, Partial<LineStat>> = {
  25: { self_device_us: 16980.2, pct_device: 30.4, flops: 4194304, bytes: 50331648, intensity: 0.0833, bound: 'memory', roofline_pct: 12.32, floor_us: 2092.3, headroom_us: 14887.9, alloc_bytes: 16777216, peak_bytes: 16777216 },
  26: { self_device_us: 7232.4, pct_device: 12.6, flops: 4194304, bytes: 16777216, intensity: 0.25, bound: 'memory', roofline_pct: 9.64, floor_us: 697.4, headroom_us: 6535.0, alloc_bytes: 16396, freed_bytes: 12, peak_bytes: 16793612 },
  27: { self_device_us: 30.0, pct_device: 0.05, flops: 4096, bytes: 32776, intensity: 0.125, bound: 'memory', roofline_pct: 4.54, floor_us: 1.36, headroom_us: 28.6, alloc_bytes: 16396, peak_bytes: 16809996 },
  28: { self_device_us: 10.9, pct_device: 0.02, flops: 4096, bytes: 32768, intensity: 0.125, bound: 'memory', roofline_pct: 12.5, floor_us: 1.36, headroom_us: 9.5, alloc_bytes: 16384, peak_bytes: 16826368 },
  29: { self_device_us: 16582.8, pct_device: 26.7, flops: 4194304, bytes: 33570816, intensity: 0.125, bound: 'memory', roofline_pct: 8.42, floor_us: 1395.5, headroom_us: 15187.3, alloc_bytes: 16777216, peak_bytes: 33603584 },
  30: { self_device_us: 18655.4, pct_device: 30.2, flops: 4194304, bytes: 33558528, intensity: 0.125, bound: 'memory', roofline_pct: 7.48, floor_us: 1395.0, headroom_us: 17260.4, alloc_bytes: 16777216, peak_bytes: 50380800 },
};

// each line's achieved FLOP/s as the server records it (analysis/roofline.py: its FLOPs over its time per call)
const WORK: Record<number, Partial<LineStat>> = Object.fromEntries(
  Object.entries(MEASURED).map(([n, w]) => [n, { ...w, flop_per_s: (w.flops ?? 0) / ((w.self_device_us ?? 0) * 1e-6) }]),
);

function withWork(device: DeviceRoof | null = DEVICE, work = WORK): Run {
  return {
    ...base,
    device,
    totals: { ...base.totals, memory: 'host', peak_bytes: 50380800 },
    lines: base.lines.map((l) => ({ ...l, dtype: 'float32', ...(work[l.line] ?? {}) })),
  };
}

function chartOf(run: Run, source: Record<number, string> = {}): RooflineChart {
  const r = roofline(run, source);
  assert.ok('chart' in r, 'note' in r ? r.note : '');
  return r.chart;
}

const log = Math.log10;

describe('the roofline chart', () => {
  it('says why there is no chart: no work counted (an older run, no shapes), or no ceilings', () => {
    const old = roofline(base); // the fixture predates work and ceilings
    assert.ok('note' in old && /no line’s work was counted/.test(old.note) && /input shapes/.test(old.note));
    const noCeilings = roofline(withWork(null));
    assert.ok('note' in noCeilings && /no ceilings/.test(noCeilings.note) && /oplens calibrate/.test(noCeilings.note));
    const zeroBandwidth = roofline(withWork({ ...DEVICE, bytes_per_s: 0 }));
    assert.ok('note' in zeroBandwidth && /oplens calibrate/.test(zeroBandwidth.note));
  });

  it('a dot per line with work, inside the plot, at its intensity and achieved FLOP/s (log-log)', () => {
    const source = { 25: '    x_sq = x * x', 30: '    return out * weight' };
    const c = chartOf(withWork(), source);
    assert.equal(c.dots.length, 6);
    for (const d of c.dots) {
      assert.ok(d.cx >= c.plot.left && d.cx <= c.plot.right, `line ${d.line} x`);
      assert.ok(d.cy >= c.plot.top && d.cy <= c.plot.bottom, `line ${d.line} y`);
      assert.equal(d.bound, 'memory');
    }
    const d25 = c.dots.find((d) => d.line === 25);
    const d26 = c.dots.find((d) => d.line === 26);
    assert.ok(d25 && d26);
    assert.equal(d25.flopsPerS, WORK[25]?.flop_per_s); // the record's: FLOPs in one call / self time per call
    // on a log axis the distance between two dots is the log of their ratio, on the ticks' scale
    const decade = (c.xTicks[1]?.at ?? 0) - (c.xTicks[0]?.at ?? 0);
    assert.ok(Math.abs(d26.cx - d25.cx - decade * log(0.25 / 0.0833)) < 0.5);
    // hot lines are big dots; a hover names the line, its code, the bound and its roofline %
    assert.ok(d25.r > (c.dots.find((d) => d.line === 28)?.r ?? Infinity));
    assert.match(d25.title, /^line 25: x_sq = x \* x\nmemory-bound · 12 % of the roofline · floor 2\.09 ms, 14\.89 ms to win\n4\.19 MFLOP in 16\.98 ms/);
    assert.match(d25.title, /0\.08 FLOP\/B \(float32\)/);
  });

  it('draws the memory slope up to the highest compute ceiling, and a flat ceiling per dtype, labelled', () => {
    const c = chartOf(withWork());
    const memory = c.ceilings.filter((l) => l.kind === 'memory');
    const compute = c.ceilings.filter((l) => l.kind === 'compute');
    assert.equal(memory.length, 1);
    // bfloat16 and float16 peak within 5 % of each other: one line, one label
    assert.deepEqual(compute.map((l) => l.dtypes), [['float32'], ['bfloat16', 'float16']]);
    assert.equal(compute[0]?.label, 'float32 61.47 GFLOP/s · measured');
    assert.equal(memory[0]?.label, 'memory 24.1 GB/s · measured');
    const top = compute[0];
    const slope = memory[0];
    assert.ok(top && slope);
    // the slope ends where the highest ceiling begins (its ridge point), and rises at 45° in decades
    assert.ok(Math.abs(slope.x2 - top.x1) < 0.2 && Math.abs(slope.y2 - top.y1) < 0.2);
    const xDecade = (c.xTicks[1]?.at ?? 0) - (c.xTicks[0]?.at ?? 0);
    const yDecade = (c.yTicks[0]?.at ?? 0) - (c.yTicks[1]?.at ?? 0);
    assert.ok(Math.abs((slope.y1 - slope.y2) / yDecade - (slope.x2 - slope.x1) / xDecade) < 0.01);
    assert.ok(slope.angle < 0, 'rising to the right (SVG y points down)');
    // compute ceilings run flat to the plot's right edge, labels apart
    for (const l of compute) {
      assert.equal(l.y1, l.y2);
      assert.equal(l.x2, c.plot.right);
    }
    assert.ok(Math.abs((compute[0]?.labelY ?? 0) - (compute[1]?.labelY ?? 0)) >= 12);
    assert.match(c.source, /^measured on x86_64, 2026-12-01$/);
  });

  it('puts a line that runs at the memory ceiling on the slope', () => {
    const intensity = 0.5;
    const time = 100; // µs
    const flops = DEVICE.bytes_per_s * intensity * time * 1e-6; // exactly bytes_per_s · I
    const at = { self_device_us: time, flops, bytes: flops / intensity, intensity, bound: 'memory', roofline_pct: 100, flop_per_s: DEVICE.bytes_per_s * intensity };
    const c = chartOf(withWork(DEVICE, { 25: at }));
    const slope = c.ceilings.find((l) => l.kind === 'memory');
    const dot = c.dots.find((d) => d.line === 25);
    assert.ok(slope && dot);
    const t = (dot.cx - slope.x1) / (slope.x2 - slope.x1);
    assert.ok(Math.abs(slope.y1 + t * (slope.y2 - slope.y1) - dot.cy) < 0.5);
  });

  it('a dot above the roofline is marked and the chart says why (its data stays in cache), with no % over 100', () => {
    const intensity = 0.125;
    const time = 1; // µs: 128 KiB read and written in a µs, far above the 24 GB/s memory ceiling
    const bytes = 2 * 131072;
    const above = { self_device_us: time, flops: bytes * intensity, bytes, intensity, bound: 'memory', above_ceiling: 'memory', roofline_pct: null, floor_us: time, headroom_us: 0, flop_per_s: (bytes * intensity) / (time * 1e-6) };
    const c = chartOf(withWork(DEVICE, { ...WORK, 27: above }));
    const dot = c.dots.find((d) => d.line === 27);
    const slope = c.ceilings.find((l) => l.kind === 'memory');
    assert.ok(dot && slope && dot.above === 'memory');
    const t = (dot.cx - slope.x1) / (slope.x2 - slope.x1);
    assert.ok(dot.cy < slope.y1 + t * (slope.y2 - slope.y1), 'the dot is above the slope');
    assert.match(dot.title, /memory-bound · above the memory roofline: its data stays in cache · floor 1\.0 µs, 0\.0 µs to win/);
    assert.doesNotMatch(dot.title, /of the roofline/);
    assert.deepEqual(c.above.length, 1);
    assert.match(c.above[0] ?? '', /^Line 27 is above the memory roofline: .*their data stays in cache, so no roofline % is shown\.$/);
    assert.equal(c.dots.filter((d) => d.above !== '').length, 1);
    assert.deepEqual(chartOf(withWork()).above, []); // none above: nothing to explain
    const compute = chartOf(withWork(DEVICE, { ...WORK, 25: { ...WORK[25], bound: 'compute', above_ceiling: 'compute', roofline_pct: null } }));
    assert.match(compute.above[0] ?? '', /^Line 25 is above the compute ceiling: .*float32; another dtype or engine ran them/);
  });

  it('ticks are decades, labelled for people; a spec device says whose figures', () => {
    const c = chartOf(withWork({ ...DEVICE, source: 'spec', name: 'H100 SXM' }));
    assert.deepEqual(c.xTicks.map((t) => t.label), ['0.01', '0.1', '1', '10']);
    assert.ok(c.yTicks.some((t) => t.label === '1G') && c.yTicks.some((t) => t.label === '100M'));
    assert.match(c.ceilings.find((l) => l.kind === 'memory')?.label ?? '', /· spec$/);
    assert.equal(c.source, 'the vendor’s figures for H100 SXM');
  });

  it('places a dot at the FLOP/s the record carries, and leaves out a line without it', () => {
    const base25 = chartOf(withWork()).dots.find((d) => d.line === 25);
    const faster = chartOf(withWork(DEVICE, { ...WORK, 25: { ...WORK[25], flop_per_s: 10 * (WORK[25]?.flop_per_s ?? 0) } }));
    const d = faster.dots.find((x) => x.line === 25);
    assert.ok(base25 && d && d.cy < base25.cy && d.flopsPerS === 10 * (WORK[25]?.flop_per_s ?? 0));
    assert.match(d.title, /→ 2\.47 GFLOP\/s/);
    const none = chartOf(withWork(DEVICE, { ...WORK, 26: { ...WORK[26], flop_per_s: null } }));
    assert.equal(none.dots.length, 5);
    assert.equal(none.unplaced, 1);
  });

  it('leaves out a line with FLOPs but no bytes, and counts it', () => {
    const c = chartOf(withWork(DEVICE, { ...WORK, 27: { flops: 4096, bytes: 0, intensity: null } }));
    assert.equal(c.dots.length, 5);
    assert.equal(c.unplaced, 1);
  });
});

describe('the lines’ memory and bound cells', () => {
  it('write bytes and FLOPs as the server does (format.fmt_bytes, fmt_flops)', () => {
    assert.equal(fmtBytes(0), '0 B');
    assert.equal(fmtBytes(1023), '1,023 B');
    assert.equal(fmtBytes(16396), '16.0 KiB');
    assert.equal(fmtBytes(3 * 2 ** 20), '3.0 MiB');
    assert.equal(fmtBytes(50380800), '48.0 MiB');
    assert.equal(fmtBytes(5 * 2 ** 30), '5,120.0 MiB');
    assert.equal(fmtFlops(2.5e9), '2.50 GFLOP');
    assert.equal(fmtFlops(4096), '4.10 kFLOP');
    assert.equal(fmtFlops(12), '12 FLOP');
    assert.equal(fmtFlops(6.147e10, true), '61.47 GFLOP/s');
  });

  it('write the roofline % as the server does (format.fmt_roofline_pct, through format.expected.json)', () => {
    const expected = jsonFixture<{ fmt_roofline_pct: Record<string, string> }>('format.expected.json').fmt_roofline_pct;
    assert.ok(Object.keys(expected).length > 0);
    for (const [input, want] of Object.entries(expected)) {
      assert.equal(fmtRooflinePct(Number(input)), want, `${input} %`);
    }
  });

  it('write a line above a ceiling as the server does (format.fmt_above, through format.expected.json)', () => {
    const expected = jsonFixture<{ fmt_above: { above: string; dtype: string; text: string }[] }>('format.expected.json');
    assert.ok(expected.fmt_above.length > 0);
    for (const v of expected.fmt_above) {
      assert.equal(fmtAbove(v.above, v.dtype), v.text, JSON.stringify(v));
    }
  });

  it('the bound as the dots say it, or nothing where the run has none', () => {
    const l = { bound: 'memory', roofline_pct: 12.32, floor_us: 2092.3, headroom_us: 14887.9 };
    assert.equal(boundPhrase(l), 'memory-bound · 12 % of the roofline · floor 2.09 ms, 14.89 ms to win');
    assert.equal(boundPhrase({ ...l, bound: 'unknown', roofline_pct: null, floor_us: null }), 'bound unknown');
    assert.equal(boundPhrase({ ...l, bound: 'compute', above_ceiling: 'compute', dtype: 'bfloat16', roofline_pct: null, floor_us: 5, headroom_us: 0 }),
      'compute-bound · above the bfloat16 ceiling: another dtype or engine · floor 5.0 µs, 0.0 µs to win');
  });
});
