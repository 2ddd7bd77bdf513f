/**
 * A run's lines against its device's ceilings, ready to draw (the results page's roofline chart and
 * its per-line columns). Pure, so it is unit-tested; the page only turns it into SVG.
 *
 * The chart is log-log: x the line's arithmetic intensity (FLOP per byte, `LineStat.intensity`), y
 * the FLOP/s it achieved (`LineStat.flop_per_s`, the server's: its FLOPs in one call over its time
 * per call; a line without it is not placed). The ceilings are
 * `Run.device`'s: the memory slope `bytes_per_s · I` up to the highest compute ceiling, and a flat
 * ceiling per dtype from its ridge point on. One dot per line with counted work, coloured by its
 * bound (server/oplens/analysis/roofline.py) and sized by its share of the time. Coordinates are in
 * the SVG's own units (its viewBox). Where there is nothing to draw, one sentence says why.
 */

import { fmtUs } from './format';
import type { DeviceRoof, LineStat } from './run';

/** `3 * 2**20` → `3.0 MiB`, as `format.fmt_bytes`: under 1 KiB in bytes, then KiB, then MiB. */
export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) {
    return '–';
  }
  if (n < 1024) {
    return `${Math.round(n).toLocaleString('en-US')} B`;
  }
  const [value, unit] = n >= 2 ** 20 ? [n / 2 ** 20, 'MiB'] : [n / 1024, 'KiB'];
  return `${value.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} ${unit}`;
}

const STEPS: [string, number][] = [
  ['T', 1e12],
  ['G', 1e9],
  ['M', 1e6],
  ['k', 1e3],
];

/** `2.5e9` → `2.50 GFLOP`, as `format.fmt_flops` (with `/s`: a rate). */
export function fmtFlops(n: number, perSecond = false): string {
  const suffix = perSecond ? 'FLOP/s' : 'FLOP';
  for (const [prefix, scale] of STEPS) {
    if (n >= scale) {
      return `${(n / scale).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })} ${prefix}${suffix}`;
    }
  }
  return `${Math.round(n).toLocaleString('en-US')} ${suffix}`;
}

/** `2.41e10` → `24.1 GB/s` (decimal, as `oplens calibrate` prints it). */
export function fmtBandwidth(bytesPerS: number): string {
  return `${(bytesPerS / 1e9).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} GB/s`;
}

/**
 * `12.3` → `12 %`, `0.42` → `0.4 %`: a roofline share, as the server writes it (`format.fmt_roofline_pct`,
 * checked against it through format.expected.json).
 */
export function fmtRooflinePct(pct: number): string {
  return pct >= 10 ? `${pct.toFixed(0)} %` : `${pct.toFixed(1)} %`;
}

/**
 * What a line that beats a ceiling is (`LineStat.above_ceiling`), as `format.fmt_above` says it
 * (checked through format.expected.json): `above the memory roofline: its data stays in cache`,
 * `above the float32 ceiling: another dtype or engine`; '' for a line under its ceilings.
 */
export function fmtAbove(above: string, dtype = ''): string {
  if (above === 'memory') {
    return 'above the memory roofline: its data stays in cache';
  }
  if (above === 'compute') {
    return `above the ${dtype || 'float32'} ceiling: another dtype or engine`;
  }
  return '';
}

/**
 * `memory-bound · 12 % of the roofline · floor 2.09 ms, 14.89 ms to win`, as the hover says it; a line above
 * a ceiling says which instead of a %; '' without ceilings.
 */
export function boundPhrase(
  l: Pick<LineStat, 'bound' | 'roofline_pct' | 'floor_us' | 'headroom_us'> & Partial<Pick<LineStat, 'above_ceiling' | 'dtype'>>,
): string {
  if (!l.bound) {
    return '';
  }
  const parts = [l.bound === 'unknown' ? 'bound unknown' : `${l.bound}-bound`];
  if (l.above_ceiling) {
    parts.push(fmtAbove(l.above_ceiling, l.dtype ?? ''));
  } else if (l.roofline_pct !== null) {
    parts.push(`${fmtRooflinePct(l.roofline_pct)} of the roofline`);
  }
  if (l.floor_us !== null) {
    parts.push(`floor ${fmtUs(l.floor_us)}${l.headroom_us !== null ? `, ${fmtUs(l.headroom_us)} to win` : ''}`);
  }
  return parts.join(' · ');
}

// ---- the chart ------------------------------------------------------------------------------------

export interface Tick {
  /** Position along its axis, in chart units. */
  at: number;
  label: string;
}

export interface CeilingLine {
  kind: 'memory' | 'compute';
  /** The dtypes of a compute ceiling (several where their peaks are within 5 % of each other). */
  dtypes: string[];
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  /** `float32 · 61.5 GFLOP/s · measured`, `memory 24.1 GB/s · measured`. */
  label: string;
  labelX: number;
  labelY: number;
  /** Degrees (the memory label follows its slope). */
  angle: number;
  anchor: 'start' | 'end';
}

export interface Dot {
  line: number;
  cx: number;
  cy: number;
  r: number;
  bound: string;
  intensity: number;
  flopsPerS: number;
  /** The hover text: line, code, bound, roofline % (or the ceiling it beats, and why), the figures. */
  title: string;
  /** The ceiling the dot is above (`LineStat.above_ceiling`: 'memory' | 'compute'), '' under the roofline. */
  above: string;
}

export interface RooflineChart {
  width: number;
  height: number;
  /** The plot area inside the axes. */
  plot: { left: number; top: number; right: number; bottom: number };
  xTicks: Tick[];
  yTicks: Tick[];
  ceilings: CeilingLine[];
  dots: Dot[];
  /** The ceilings' origin in words: `measured on x86_64, 2026-12-01` or `vendor's figures for H100 SXM`. */
  source: string;
  /** Lines with work that could not be placed (no bytes, no time): how many. */
  unplaced: number;
  /**
   * Why some dots sit above the roofline, one sentence per ceiling they beat (the memory ceiling is device
   * memory's: a tensor read from cache beats it); empty where none does.
   */
  above: string[];
}

export type Roofline = { chart: RooflineChart } | { note: string };

export interface RooflineInput {
  device: DeviceRoof | null;
  totals: { self_device_us: number };
  lines: readonly LineStat[];
}

const SIZE = { width: 640, height: 340 };
const MARGIN = { left: 64, right: 16, top: 16, bottom: 44 };

/** A decade's tick label: `0.01`, `1`, `100`, `1k`, `10G`. */
function decadeLabel(exp: number): string {
  if (exp < 0) {
    return String(10 ** exp);
  }
  const prefix = ['', 'k', 'M', 'G', 'T', 'P'][Math.floor(exp / 3)];
  return prefix === undefined ? `1e${exp}` : `${10 ** (exp % 3)}${prefix}`;
}

/** Decades [lo, hi] (powers of ten) that hold every value, at least `min` decades wide. */
function decades(values: number[], min = 2): [number, number] {
  const logs = values.filter((v) => v > 0 && Number.isFinite(v)).map(Math.log10);
  let lo = Math.floor(Math.min(...logs) - 0.15);
  let hi = Math.ceil(Math.max(...logs) + 0.15);
  while (hi - lo < min) {
    hi += 1;
    if (hi - lo < min) {
      lo -= 1;
    }
  }
  return [lo, hi];
}

/** The chart of a run, or why there is none. `source` is the code of each line (for the dots' hover). */
export function roofline(run: RooflineInput, source: Record<number, string> = {}, size = SIZE): Roofline {
  const withWork = run.lines.filter((l) => l.flops !== null && l.flops > 0);
  if (withWork.length === 0) {
    return { note: 'No roofline chart: no line’s work was counted in this run (no call recorded input shapes; runs before OpLens counted work have none). Profile it again.' };
  }
  const d = run.device;
  const peaks = Object.entries(d?.dtype_peaks ?? {}).filter(([, p]) => p > 0);
  if (!d || !(d.bytes_per_s > 0) || peaks.length === 0) {
    return { note: 'No roofline chart: this run has no ceilings for its device. `oplens calibrate` measures them (a profile does too, once per host); then profile again.' };
  }
  const useDevice = run.totals.self_device_us > 0;
  const time = (l: LineStat): number => (useDevice ? l.self_device_us : l.self_cpu_us);
  const share = (l: LineStat): number => (useDevice ? l.pct_device : l.pct_cpu) / 100;
  const placed = withWork.filter((l) => l.intensity !== null && l.intensity > 0 && l.flop_per_s !== null && l.flop_per_s > 0);
  if (placed.length === 0) {
    return { note: 'No roofline chart: no line with counted FLOPs also moved counted bytes in measurable time (or the run predates its lines’ achieved FLOP/s: `oplens analyze` it, or profile again).' };
  }
  const bw = d.bytes_per_s;
  const achieved = (l: LineStat): number => l.flop_per_s as number;
  // One compute ceiling per distinct peak: dtypes within 5 % of each other share one line and label.
  const groups: { peak: number; dtypes: string[] }[] = [];
  for (const [dtype, peak] of [...peaks].sort((a, b) => b[1] - a[1])) {
    const near = groups.find((g) => Math.abs(g.peak - peak) <= 0.05 * g.peak);
    if (near) {
      near.dtypes.push(dtype);
    } else {
      groups.push({ peak, dtypes: [dtype] });
    }
  }
  const maxPeak = groups[0]?.peak as number;
  const ridges = groups.map((g) => g.peak / bw);
  const [xLo, xHi] = decades([...placed.map((l) => l.intensity as number), ...ridges]);
  const [yLo, yHi] = decades([...placed.map(achieved), ...groups.map((g) => g.peak)]);

  const plot = { left: MARGIN.left, top: MARGIN.top, right: size.width - MARGIN.right, bottom: size.height - MARGIN.bottom };
  const x = (v: number): number => plot.left + ((Math.log10(v) - xLo) / (xHi - xLo)) * (plot.right - plot.left);
  const y = (v: number): number => plot.bottom - ((Math.log10(v) - yLo) / (yHi - yLo)) * (plot.bottom - plot.top);
  const round = (v: number): number => Math.round(v * 10) / 10;

  const xTicks: Tick[] = [];
  for (let e = xLo; e <= xHi; e++) {
    xTicks.push({ at: round(x(10 ** e)), label: decadeLabel(e) });
  }
  const yTicks: Tick[] = [];
  for (let e = yLo; e <= yHi; e++) {
    yTicks.push({ at: round(y(10 ** e)), label: decadeLabel(e) });
  }

  const origin = d.source === 'spec' ? 'spec' : 'measured';
  const ceilings: CeilingLine[] = [];
  // The memory slope: from where it enters the plot to the highest compute ceiling's ridge point.
  const xStart = Math.max(10 ** xLo, 10 ** yLo / bw);
  const xRidge = Math.min(maxPeak / bw, 10 ** xHi);
  if (xStart < xRidge) {
    const [x1, y1, x2, y2] = [x(xStart), y(bw * xStart), x(xRidge), y(bw * xRidge)];
    const angle = (Math.atan2(y2 - y1, x2 - x1) * 180) / Math.PI;
    // the label along the slope, a little way up it and just above it
    const t = 0.12;
    const lx = x1 + (x2 - x1) * t;
    const ly = y1 + (y2 - y1) * t;
    const off = 7;
    const rad = (angle * Math.PI) / 180;
    ceilings.push({
      kind: 'memory',
      dtypes: [],
      x1: round(x1),
      y1: round(y1),
      x2: round(x2),
      y2: round(y2),
      label: `memory ${fmtBandwidth(bw)} · ${origin}`,
      labelX: round(lx + off * Math.sin(rad)),
      labelY: round(ly - off * Math.cos(rad)),
      angle: round(angle),
      anchor: 'start',
    });
  }
  // The flat ceilings, labelled at their right end above the line; a label that would sit on the one above goes below its line.
  let lastLabelY = -Infinity;
  for (const g of groups) {
    const gy = y(g.peak);
    const from = Math.max(g.peak / bw, 10 ** xLo);
    let labelY = gy - 5;
    if (labelY - lastLabelY < 12) {
      labelY = gy + 13;
    }
    lastLabelY = labelY;
    ceilings.push({
      kind: 'compute',
      dtypes: g.dtypes,
      x1: round(x(from)),
      y1: round(gy),
      x2: round(plot.right),
      y2: round(gy),
      label: `${g.dtypes.join(', ')} ${fmtFlops(g.peak, true)} · ${origin}`,
      labelX: round(plot.right - 4),
      labelY: round(labelY),
      angle: 0,
      anchor: 'end',
    });
  }

  const dots: Dot[] = placed
    .map((l) => {
      const rate = achieved(l);
      const code = (source[l.line] ?? '').trim();
      const bound = boundPhrase(l);
      const title = [
        `line ${l.line}${code ? `: ${code}` : ''}`,
        bound || 'no bound (no ceilings for its dtype)',
        `${fmtFlops(l.flops as number)} in ${fmtUs(time(l))} → ${fmtFlops(rate, true)}; ${fmtBytes(l.bytes ?? 0)} moved, ${(l.intensity as number).toFixed(2)} FLOP/B${l.dtype ? ` (${l.dtype})` : ''}`,
        ...(l.work_estimate ? ['estimate: compiled graph'] : []),
      ].join('\n');
      return {
        line: l.line,
        cx: round(x(l.intensity as number)),
        cy: round(y(rate)),
        r: round(3.5 + 6 * Math.sqrt(Math.max(0, Math.min(1, share(l))))),
        bound: l.bound || 'none',
        intensity: l.intensity as number,
        flopsPerS: rate,
        title,
        above: l.above_ceiling ?? '',
      };
    })
    .sort((a, b) => b.r - a.r); // small dots drawn last, on top of large ones

  const when = d.measured_at ? `, ${d.measured_at.slice(0, 10)}` : '';
  return {
    chart: {
      width: size.width,
      height: size.height,
      plot,
      xTicks,
      yTicks,
      ceilings,
      dots,
      source: d.source === 'spec' ? `the vendor’s figures for ${d.name}` : `measured on ${d.name || 'this host'}${when}`,
      unplaced: withWork.length - placed.length,
      above: aboveNotes(placed),
    },
  };
}

/** One sentence per ceiling some placed line beats: which lines, and why their dots are above the roofline. */
function aboveNotes(placed: readonly LineStat[]): string[] {
  const notes: string[] = [];
  for (const kind of ['memory', 'compute']) {
    const lines = placed.filter((l) => l.above_ceiling === kind);
    if (lines.length === 0) {
      continue;
    }
    const which = `${lines.length === 1 ? 'Line' : 'Lines'} ${lines.map((l) => l.line).join(', ')}`;
    const why =
      kind === 'memory'
        ? 'the memory ceiling is the device memory’s bandwidth, measured on arrays well past the caches; their data stays in cache'
        : `the compute ceiling is the best matmul measured in ${[...new Set(lines.map((l) => l.dtype || 'float32'))].join(', ')}; another dtype or engine ran them`;
    notes.push(`${which} ${lines.length === 1 ? 'is' : 'are'} above the ${kind === 'memory' ? 'memory roofline' : 'compute ceiling'}: ${why}, so no roofline % is shown.`);
  }
  return notes;
}
