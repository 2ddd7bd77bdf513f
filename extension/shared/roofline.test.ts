import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RooflineDot, RooflineView } from './generated/views';
import { roofline, type RooflineChart } from './roofline';

// A real run of rmsnorm_naive on this CPU (oplens profile ... --view bound): each line's intensity, achieved
// FLOP/s (its FLOPs in one call over its time per call) and share of the time, and the host's measured ceilings,
// as the server's chart carries them (oplens.views.roofline; tests/unit/test_views_roofline.py checks its decades and
// words for the same run: the decades here are its).
const BYTES_PER_S = 24.06e9;
const MEASURED: Record<number, { us: number; pct: number; flops: number; intensity: number }> = {
  25: { us: 16980.2, pct: 30.4, flops: 4194304, intensity: 0.0833 },
  26: { us: 7232.4, pct: 12.6, flops: 4194304, intensity: 0.25 },
  27: { us: 30.0, pct: 0.05, flops: 4096, intensity: 0.125 },
  28: { us: 10.9, pct: 0.02, flops: 4096, intensity: 0.125 },
  29: { us: 16582.8, pct: 26.7, flops: 4194304, intensity: 0.125 },
  30: { us: 18655.4, pct: 30.2, flops: 4194304, intensity: 0.125 },
};

function dot(line: number, over: Partial<RooflineDot> = {}): RooflineDot {
  const m = MEASURED[line] as (typeof MEASURED)[number];
  return {
    line,
    intensity: m.intensity,
    flop_per_s: m.flops / (m.us * 1e-6),
    share: m.pct / 100,
    bound: 'memory',
    above: '',
    head: `line ${line}`,
    title: 'memory-bound · 12 % of the roofline',
    ...over,
  };
}

function view(dots: RooflineDot[] = Object.keys(MEASURED).map((n) => dot(Number(n)))): RooflineView {
  return {
    note: '',
    x_decades: [-2, 1],
    y_decades: [7, 11],
    x_ticks: ['0.01', '0.1', '1', '10'],
    y_ticks: ['10M', '100M', '1G', '10G', '100G'],
    ceilings: [
      { kind: 'memory', dtypes: [], peak: BYTES_PER_S, label: 'memory 24.1 GB/s · measured' },
      { kind: 'compute', dtypes: ['float32'], peak: 61.47e9, label: 'float32 61.47 GFLOP/s · measured' },
      { kind: 'compute', dtypes: ['bfloat16', 'float16'], peak: 2.302e9, label: 'bfloat16, float16 2.30 GFLOP/s · measured' },
    ],
    dots,
    key: '',
    above: [],
  };
}

function chartOf(v: RooflineView, source: Record<number, string> = {}): RooflineChart {
  const r = roofline(v, source);
  assert.ok('chart' in r, 'note' in r ? r.note : '');
  return r.chart;
}

const log = Math.log10;

describe('the roofline chart laid out', () => {
  it('the server’s note where there is no chart', () => {
    const note = 'No roofline chart: this run has no ceilings for its device.';
    assert.deepEqual(roofline({ ...view([]), note }), { note });
  });

  it('a dot per line with work, inside the plot, at its intensity and achieved FLOP/s (log-log)', () => {
    const source = { 25: '    x_sq = x * x', 30: '    return out * weight' };
    const c = chartOf(view(), source);
    assert.equal(c.dots.length, 6);
    for (const d of c.dots) {
      assert.ok(d.cx >= c.plot.left && d.cx <= c.plot.right, `line ${d.line} x`);
      assert.ok(d.cy >= c.plot.top && d.cy <= c.plot.bottom, `line ${d.line} y`);
      assert.equal(d.bound, 'memory');
    }
    const d25 = c.dots.find((d) => d.line === 25);
    const d26 = c.dots.find((d) => d.line === 26);
    assert.ok(d25 && d26);
    assert.equal(d25.flopsPerS, dot(25).flop_per_s); // the record's: FLOPs in one call / self time per call
    // on a log axis the distance between two dots is the log of their ratio, on the ticks' scale
    const decade = (c.xTicks[1]?.at ?? 0) - (c.xTicks[0]?.at ?? 0);
    assert.ok(Math.abs(d26.cx - d25.cx - decade * log(0.25 / 0.0833)) < 0.5);
    // hot lines are big dots; a hover names the line and its code as the editor has it, then the server's words
    assert.ok(d25.r > (c.dots.find((d) => d.line === 28)?.r ?? Infinity));
    assert.equal(d25.title, 'line 25: x_sq = x * x\nmemory-bound · 12 % of the roofline');
    assert.equal(c.dots.find((d) => d.line === 26)?.title, 'line 26\nmemory-bound · 12 % of the roofline');
    // small dots drawn last, on top of large ones
    assert.deepEqual(c.dots.map((d) => d.r), [...c.dots.map((d) => d.r)].sort((a, b) => b - a));
  });

  it('draws the memory slope up to the highest compute ceiling, and a flat ceiling per peak, with the server’s labels', () => {
    const c = chartOf(view());
    const memory = c.ceilings.filter((l) => l.kind === 'memory');
    const compute = c.ceilings.filter((l) => l.kind === 'compute');
    assert.equal(memory.length, 1);
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
  });

  it('puts a line that runs at the memory ceiling on the slope', () => {
    const intensity = 0.5;
    const c = chartOf(view([dot(25, { intensity, flop_per_s: BYTES_PER_S * intensity, share: 1 })]));
    const slope = c.ceilings.find((l) => l.kind === 'memory');
    const d = c.dots.find((x) => x.line === 25);
    assert.ok(slope && d);
    const t = (d.cx - slope.x1) / (slope.x2 - slope.x1);
    assert.ok(Math.abs(slope.y1 + t * (slope.y2 - slope.y1) - d.cy) < 0.5);
  });

  it('a dot above the roofline is marked and drawn above the slope', () => {
    // 128 KiB read and written in a µs, far above the 24 GB/s memory ceiling
    const above = dot(27, { above: 'memory', flop_per_s: 2 * 131072 * 0.125 * 1e6 });
    const c = chartOf(view([...Object.keys(MEASURED).filter((n) => n !== '27').map((n) => dot(Number(n))), above]));
    const d = c.dots.find((x) => x.line === 27);
    const slope = c.ceilings.find((l) => l.kind === 'memory');
    assert.ok(d && slope && d.above === 'memory');
    const t = (d.cx - slope.x1) / (slope.x2 - slope.x1);
    assert.ok(d.cy < slope.y1 + t * (slope.y2 - slope.y1), 'the dot is above the slope');
    assert.equal(c.dots.filter((x) => x.above !== '').length, 1);
  });

  it('ticks: one per decade, with the server’s labels, evenly spaced', () => {
    const c = chartOf(view());
    assert.deepEqual(c.xTicks.map((t) => t.label), ['0.01', '0.1', '1', '10']);
    assert.deepEqual(c.yTicks.map((t) => t.label), ['10M', '100M', '1G', '10G', '100G']);
    assert.equal(c.xTicks[0]?.at, c.plot.left);
    assert.equal(c.xTicks.at(-1)?.at, c.plot.right);
    assert.equal(c.yTicks[0]?.at, c.plot.bottom);
    assert.equal(c.yTicks.at(-1)?.at, c.plot.top);
  });

  it('places a dot at the FLOP/s the chart carries', () => {
    const base25 = chartOf(view()).dots.find((d) => d.line === 25);
    const faster = chartOf(view([dot(25, { flop_per_s: 10 * dot(25).flop_per_s })])).dots.find((x) => x.line === 25);
    assert.ok(base25 && faster && faster.cy < base25.cy && faster.flopsPerS === 10 * dot(25).flop_per_s);
  });
});
