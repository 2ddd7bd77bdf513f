/**
 * A distributed run (`oplens run --nproc-per-node N`: the function captured in every rank, the ranks
 * merged into one run) on the results page: its rank selector and its ranks × lines strip (a heat
 * row per rank, a cell per line), drawn from the record's per-rank figures.
 *
 * The editor's words for such a run (a line's hint: the median across ranks and the spread; its
 * hover: a row per rank) are the server's (`server/oplens/lsp/views.py`), as every LSP client gets
 * them; nothing here rewrites them.
 *
 * Pure (no VS Code, no DOM).
 */

import { fmtUs } from './format';
import type { Insight, LineStat, RankInfo, RankSpread } from './run';

/** Per-rank figures are in the order of `Run.ranks`. */
type Ranked = { ranks: readonly RankInfo[] };

/** A merged run of several ranks (a rank's own part, or a single process, is not). */
export function isMerged(run: Ranked & { lines: readonly { ranks: RankSpread | null }[]; totals: { ranks: RankSpread | null } }): boolean {
  return run.ranks.length > 0 && (run.totals.ranks !== null || run.lines.some((l) => l.ranks !== null));
}

/**
 * The rank number of each of `count` per-rank figures: the ranks of the run in order, those with
 * a part where a failed rank (no part, no figure) is listed too, else 0..count-1.
 */
export function rankNumbers(ranks: readonly RankInfo[], count: number): number[] {
  if (ranks.length === count) {
    return ranks.map((r) => r.rank);
  }
  const withParts = ranks.filter((r) => !r.failed);
  if (withParts.length === count) {
    return withParts.map((r) => r.rank);
  }
  return Array.from({ length: count }, (_, i) => i);
}

/** How a rank reads in the results page's selector: `rank 1 · node-a · cuda:1`, `rank 3 · failed`. */
export function rankLabel(info: RankInfo): string {
  const where = [info.host, info.device].filter(Boolean).join(' · ');
  return `rank ${info.rank}${where ? ` · ${where}` : ''}${info.failed ? ' · failed' : ''}`;
}

/** A range with its unit once where both ends share it: `9.01–27.04 ms`, `923.5 µs–21.02 ms`. */
export function fmtUsRange(min: number, max: number): string {
  const lo = fmtUs(min);
  const hi = fmtUs(max);
  if (lo === hi) {
    return lo;
  }
  const cut = lo.lastIndexOf(' ');
  return cut > 0 && lo.slice(cut) === hi.slice(hi.lastIndexOf(' ')) ? `${lo.slice(0, cut)}–${hi}` : `${lo}–${hi}`;
}

/** The straggler of each line (`straggler` insights name it): line → rank. */
export function stragglers(insights: readonly Insight[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const i of insights) {
    if (i.kind === 'straggler' && i.rank !== null && !out.has(i.line)) {
      out.set(i.line, i.rank);
    }
  }
  return out;
}

// ---- the results page's ranks × lines strip ---------------------------------------------------

export const STRIP_LEVELS = 8;

export interface StripCell {
  line: number;
  us: number;
  /** 0 (no time) or 1..levels, linear in the time against the strip's largest cell (like the heat gutter). */
  level: number;
  slowest: boolean;
  straggler: boolean;
  /** The cell's tooltip. */
  title: string;
}

export interface StripRow {
  rank: number;
  /** `rank 1`. */
  label: string;
  /** Who the rank was: `rank 1 · local 1 · node-a · cuda:1 · pid 4201`. */
  title: string;
  cells: StripCell[];
}

export interface RankStrip {
  /** The profiled lines, in source order (a column each). */
  lines: number[];
  rows: StripRow[];
  /** The largest cell, µs (what the top level is). */
  max: number;
  /** Ranks that have no part (they failed), with why. */
  failed: { rank: number; why: string }[];
}

/** The level of `us` on a strip whose largest cell is `max`: 0 for no time, else 1..levels. */
export function stripLevel(us: number, max: number, levels = STRIP_LEVELS): number {
  if (!(us > 0) || !(max > 0)) {
    return 0;
  }
  return Math.min(levels, Math.max(1, Math.ceil((us / max) * levels - 1e-9)));
}

function rankTitle(info: RankInfo | undefined, rank: number): string {
  if (!info) {
    return `rank ${rank}`;
  }
  return [`rank ${rank}`, `local ${info.local_rank}`, info.host, info.device, info.pid ? `pid ${info.pid}` : ''].filter(Boolean).join(' · ');
}

/**
 * The ranks × lines strip of a merged run: a row per rank, a cell per profiled line (in source
 * order) coloured by the line's time on that rank against the largest cell anywhere, so that hot
 * lines are hot in every row and a straggler's cell stands out in its column. Undefined for a
 * single process.
 */
export function rankStrip(
  run: Ranked & { lines: readonly Pick<LineStat, 'line' | 'ranks'>[]; insights: readonly Insight[] },
  opts: { levels?: number; label?: string } = {},
): RankStrip | undefined {
  const levels = opts.levels ?? STRIP_LEVELS;
  const what = opts.label ? `${opts.label} ` : '';
  const lines = [...run.lines].filter((l) => l.ranks !== null && l.ranks.per_rank.length > 0).sort((a, b) => a.line - b.line);
  if (lines.length === 0) {
    return undefined;
  }
  const count = Math.max(...lines.map((l) => l.ranks?.per_rank.length ?? 0));
  const numbers = rankNumbers(run.ranks, count);
  const byRank = new Map(run.ranks.map((r) => [r.rank, r]));
  const slow = stragglers(run.insights);
  const max = lines.reduce((m, l) => Math.max(m, ...(l.ranks?.per_rank ?? [0])), 0);
  const rows: StripRow[] = numbers.map((rank, i) => ({
    rank,
    label: `rank ${rank}`,
    title: rankTitle(byRank.get(rank), rank),
    cells: lines.map((l) => {
      const r = l.ranks as RankSpread;
      const us = r.per_rank[i] ?? 0;
      const slowest = r.slowest === rank && r.max > r.min;
      const straggler = slow.get(l.line) === rank;
      const notes = [slowest ? 'the slowest' : '', straggler ? '⚠ the straggler' : ''].filter(Boolean).join(', ');
      return {
        line: l.line,
        us,
        level: stripLevel(us, max, levels),
        slowest,
        straggler,
        title: `line ${l.line} · rank ${rank}: ${what}${fmtUs(us)}${notes ? ` (${notes})` : ''}; median across ranks ${fmtUs(r.median)}, ${fmtUsRange(r.min, r.max)}`,
      };
    }),
  }));
  const failed = run.ranks.filter((r) => r.failed).map((r) => ({ rank: r.rank, why: r.failed }));
  return { lines: lines.map((l) => l.line), rows, max, failed };
}
