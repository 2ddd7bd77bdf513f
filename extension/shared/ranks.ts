/**
 * A distributed run (`oplens run --nproc-per-node N`: the function captured in every rank, the ranks
 * merged into one run): which runs are merged ones (the results panel gives them a rank selector), and
 * the colour level of a cell of the ranks × lines strip. The strip's and the selector's words are the
 * server's (`oplens.views.ranks`, the run page's `ranks`), as are the editor's (a line's hint: the
 * median across ranks and the spread; its hover: a row per rank, `server/oplens/lsp/views.py`).
 *
 * Pure (no VS Code, no DOM).
 */

import type { RankInfo, RankSpread } from './run';

/** A merged run of several ranks (a rank's own part, or a single process, is not). */
export function isMerged(run: { ranks: readonly RankInfo[]; lines: readonly { ranks: RankSpread | null }[]; totals: { ranks: RankSpread | null } }): boolean {
  return run.ranks.length > 0 && (run.totals.ranks !== null || run.lines.some((l) => l.ranks !== null));
}

export const STRIP_LEVELS = 8;

/** The level of `us` on a strip whose largest cell is `max`: 0 for no time, else 1..levels (linear, like the heat gutter). */
export function stripLevel(us: number, max: number, levels = STRIP_LEVELS): number {
  if (!(us > 0) || !(max > 0)) {
    return 0;
  }
  return Math.min(levels, Math.max(1, Math.ceil((us / max) * levels - 1e-9)));
}
