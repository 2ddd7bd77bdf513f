/**
 * What of a run the results page needs, and no more: each line keeps only its top ops (the bar
 * tooltips show five), and the page gets instead, for every op name, the line where it spends the
 * most time (a click on an op row jumps there). A function of hundreds of lines with a dozen ops
 * each then posts a fraction of the full record to the webview.
 *
 * Pure: imports no `vscode`; unit-tested in runView.test.ts.
 */

import type { Run } from '../../shared/run';

export const OPS_PER_LINE = 5;

/** For each op name, the profiled line where it spends the most (device, else CPU) time. */
export function hottestLineOfOps(run: Run): Record<string, number> {
  const best = new Map<string, { line: number; us: number }>();
  for (const l of run.lines) {
    for (const o of l.ops) {
      const us = o.self_device_us || o.self_cpu_us;
      const current = best.get(o.name);
      if (!current || us > current.us) {
        best.set(o.name, { line: l.line, us });
      }
    }
  }
  const out: Record<string, number> = {};
  for (const [name, { line }] of best) {
    out[name] = line;
  }
  return out;
}

/** The run with each line's ops cut to the `keep` largest (they come sorted by the engine; sorted here anyway). */
export function trimmedForView(run: Run, keep = OPS_PER_LINE): Run {
  return {
    ...run,
    lines: run.lines.map((l) =>
      l.ops.length <= keep ? l : { ...l, ops: [...l.ops].sort((a, b) => b.self_device_us - a.self_device_us || b.self_cpu_us - a.self_cpu_us).slice(0, keep) },
    ),
  };
}
