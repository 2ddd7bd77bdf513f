/**
 * A run's roofline chart laid out for drawing (the results page's roofline section): the server's
 * chart (`oplens.views.roofline`, the `roofline` of the run's page: its decades, tick labels, ceilings,
 * dots and every word) placed in the SVG's own units. Pure, so it is unit-tested; the page only turns
 * it into SVG (webview/rooflineChart.ts).
 *
 * The chart is log-log: x a line's arithmetic intensity (FLOP per byte), y the FLOP/s it achieved. The
 * memory slope `bytes_per_s · I` runs up to the highest compute ceiling, a flat ceiling per distinct
 * compute peak from its ridge point on. A dot per placed line, sized by its share of the time.
 */

import type { RooflineView } from './generated/views';

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
  /** The hover text: the line and its code, then the server's (bound, roofline % or the ceiling it beats, figures). */
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
}

export type Roofline = { chart: RooflineChart } | { note: string };

const SIZE = { width: 640, height: 340 };
const MARGIN = { left: 64, right: 16, top: 16, bottom: 44 };

/**
 * The server's chart `view` laid out, or its note where there is none. `source` is the code of each line
 * as the editor has it (the dots' hover starts with it).
 */
export function roofline(view: RooflineView, source: Record<number, string> = {}, size = SIZE): Roofline {
  const [xLo = 0, xHi = 1] = view.x_decades;
  const [yLo = 0, yHi = 1] = view.y_decades;
  if (view.note || view.dots.length === 0) {
    return { note: view.note };
  }
  const plot = { left: MARGIN.left, top: MARGIN.top, right: size.width - MARGIN.right, bottom: size.height - MARGIN.bottom };
  const x = (v: number): number => plot.left + ((Math.log10(v) - xLo) / (xHi - xLo)) * (plot.right - plot.left);
  const y = (v: number): number => plot.bottom - ((Math.log10(v) - yLo) / (yHi - yLo)) * (plot.bottom - plot.top);
  const round = (v: number): number => Math.round(v * 10) / 10;

  const xTicks: Tick[] = view.x_ticks.map((label, i) => ({ at: round(x(10 ** (xLo + i))), label }));
  const yTicks: Tick[] = view.y_ticks.map((label, i) => ({ at: round(y(10 ** (yLo + i))), label }));

  const compute = view.ceilings.filter((c) => c.kind === 'compute');
  const memory = view.ceilings.find((c) => c.kind === 'memory');
  const maxPeak = Math.max(...compute.map((c) => c.peak));
  const ceilings: CeilingLine[] = [];
  // The memory slope: from where it enters the plot to the highest compute ceiling's ridge point.
  if (memory && memory.peak > 0) {
    const bw = memory.peak;
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
        label: memory.label,
        labelX: round(lx + off * Math.sin(rad)),
        labelY: round(ly - off * Math.cos(rad)),
        angle: round(angle),
        anchor: 'start',
      });
    }
  }
  // The flat ceilings, labelled at their right end above the line; a label that would sit on the one above goes below its line.
  const bw = memory?.peak ?? 0;
  let lastLabelY = -Infinity;
  for (const g of compute) {
    const gy = y(g.peak);
    const from = bw > 0 ? Math.max(g.peak / bw, 10 ** xLo) : 10 ** xLo;
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
      label: g.label,
      labelX: round(plot.right - 4),
      labelY: round(labelY),
      angle: 0,
      anchor: 'end',
    });
  }

  const dots: Dot[] = view.dots
    .map((d) => {
      const code = (source[d.line] ?? '').trim();
      return {
        line: d.line,
        cx: round(x(d.intensity)),
        cy: round(y(d.flop_per_s)),
        r: round(3.5 + 6 * Math.sqrt(Math.max(0, Math.min(1, d.share)))),
        bound: d.bound,
        intensity: d.intensity,
        flopsPerS: d.flop_per_s,
        title: `${d.head}${code ? `: ${code}` : ''}\n${d.title}`,
        above: d.above,
      };
    })
    .sort((a, b) => b.r - a.r); // small dots drawn last, on top of large ones

  return { chart: { width: size.width, height: size.height, plot, xTicks, yTicks, ceilings, dots } };
}
