/**
 * What of a run the results page needs, and no more: each line keeps only its top ops (the page's
 * words, the bars' tooltips among them, are the server's `oplens.runPage`). A function of hundreds of
 * lines with a dozen ops each then posts a fraction of the full record to the webview.
 *
 * Pure: imports no `vscode`; unit-tested in runView.test.ts.
 */

import type { Run } from '../../shared/run';

export const OPS_PER_LINE = 5;

/** The run with each line's ops cut to the `keep` largest (they come sorted by the engine; sorted here anyway). */
export function trimmedForView(run: Run, keep = OPS_PER_LINE): Run {
  return {
    ...run,
    lines: run.lines.map((l) =>
      l.ops.length <= keep ? l : { ...l, ops: [...l.ops].sort((a, b) => b.self_device_us - a.self_device_us || b.self_cpu_us - a.self_cpu_us).slice(0, keep) },
    ),
  };
}
