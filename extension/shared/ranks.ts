/**
 * A distributed run (`oplens run --nproc-per-node N`: the function captured in every rank, the ranks
 * merged into one run) for people. A merged run's headline figures are means over its ranks; what
 * is said here of a line is the median across ranks and their spread, as the CLI's table says it:
 *
 * - the inlay hint of a line: `2.20 ms · 7.9 % · ranks 1.75–2.22 ms`, on a straggler's line
 *   `9.01 ms · 57.9 % · 9.0–27.0 ms · ⚠ rank 1`;
 * - the rows of its hover: one per rank, a bar, the time, the slowest marked, the collective time;
 * - the results page's ranks × lines strip: a heat row per rank, a cell per line.
 *
 * Pure (no VS Code, no DOM): the extension host's hints and hovers and the results page both use it.
 */

import { fmtShare, fmtUs } from './format';
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

/**
 * A range in few characters, for an inlay hint (VS Code cuts a line's hints beyond 43 characters
 * by default): both ends in the unit of the larger, to about three digits: `0.8–23.0 ms`,
 * `1.14–3.85 ms`, `75–113 µs`, `9.5–9.8 µs`.
 */
export function fmtUsSpan(min: number, max: number): string {
  if (!Number.isFinite(min) || !Number.isFinite(max)) {
    return '–';
  }
  const ms = Math.abs(max) >= 1000;
  const scale = ms ? 1000 : 1;
  const top = Math.abs(max) / scale;
  const decimals = top >= 100 ? 0 : ms ? (top >= 10 ? 1 : 2) : top >= 10 ? 0 : 1;
  const write = (us: number): string => (us / scale).toFixed(decimals).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const lo = write(min);
  const hi = write(max);
  return `${lo === hi ? hi : `${lo}–${hi}`} ${ms ? 'ms' : 'µs'}`;
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

// ---- the inlay hint ---------------------------------------------------------------------------

/**
 * `4.89 ms · 18.8 % · ranks 4.75–9.17 ms`; on a straggler's line `9.01 ms · 57.9 % · 9.0–27.0 ms ·
 * ⚠ rank 1` (the mark names the ranks, and keeps the hint within the 43 characters VS Code shows of
 * a line's hints by default). Undefined for a single process.
 */
export function rankHintLabel(stat: Pick<LineStat, 'pct_device' | 'ranks'>, straggler?: number): string | undefined {
  const r = stat.ranks;
  if (!r || r.per_rank.length === 0) {
    return undefined;
  }
  const span = fmtUsSpan(r.min, r.max);
  const parts = [fmtUs(r.median), fmtShare(stat.pct_device)];
  return (straggler === undefined ? [...parts, `ranks ${span}`] : [...parts, span, `⚠ rank ${straggler}`]).join(' · ');
}

/**
 * The server's hint of a line of a distributed run with the line's ranks: its single-process
 * figure (`mean · share`, the mean over ranks) becomes the median and the spread; what follows it
 * (a diff's `▲ 2.1×`) is kept. Undefined (leave the hint as it is) for a line of a single process,
 * or a label the server wrote otherwise (one that already names ranks).
 */
export function rankHint(serverLabel: string, stat: Pick<LineStat, 'self_device_us' | 'pct_device' | 'ranks'>, straggler?: number): string | undefined {
  const label = rankHintLabel(stat, straggler);
  const base = `${fmtUs(stat.self_device_us)} · ${fmtShare(stat.pct_device)}`;
  if (label === undefined || !serverLabel.startsWith(base) || /\branks?\b/.test(serverLabel)) {
    return undefined;
  }
  return label + serverLabel.slice(base.length);
}

/** What the hint's tooltip adds: `the median across 3 ranks (mean 15.02 ms); rank 1 the slowest`. */
export function rankHintTooltip(stat: Pick<LineStat, 'self_device_us' | 'ranks'>, straggler?: number): string {
  const r = stat.ranks;
  if (!r) {
    return '';
  }
  const head = `the median across ${r.per_rank.length} ranks (mean ${fmtUs(stat.self_device_us)})`;
  if (straggler !== undefined) {
    return `${head}; rank ${straggler} is the straggler`;
  }
  return r.slowest >= 0 && r.max > r.min ? `${head}; rank ${r.slowest} the slowest` : head;
}

// ---- the hover's per-rank rows ----------------------------------------------------------------

export interface RankRow {
  rank: number;
  /** µs per call on this rank. */
  us: number;
  /** Of the slowest rank's time, 0..1 (the bar). */
  fraction: number;
  slowest: boolean;
  /** The line's straggler (a `straggler` insight names it). */
  straggler: boolean;
  /** Of `us`, the time in collective ops on this rank; null where the line's ops do not say. */
  collectiveUs: number | null;
}

/** Each rank's collective time on a line: the sum of its collective ops' per-rank figures (null without them). */
export function collectivePerRank(ops: readonly { category: string; ranks: RankSpread | null }[], count: number): (number | null)[] {
  const collective = ops.filter((o) => o.category === 'collective' && o.ranks !== null);
  if (collective.length === 0) {
    return Array.from({ length: count }, () => null);
  }
  return Array.from({ length: count }, (_, i) => collective.reduce((sum, o) => sum + (o.ranks?.per_rank[i] ?? 0), 0));
}

/** One row per rank of `spread`, in rank order. */
export function rankRows(spread: RankSpread, ranks: readonly RankInfo[], opts: { straggler?: number; collective?: readonly (number | null)[] } = {}): RankRow[] {
  const numbers = rankNumbers(ranks, spread.per_rank.length);
  const max = spread.per_rank.reduce((m, v) => Math.max(m, v), 0);
  const slowest = spread.slowest >= 0 ? spread.slowest : numbers[spread.per_rank.indexOf(max)];
  return spread.per_rank.map((us, i) => {
    const rank = numbers[i] ?? i;
    return {
      rank,
      us,
      fraction: max > 0 ? Math.max(0, us) / max : 0,
      slowest: max > 0 && rank === slowest && spread.max > spread.min,
      straggler: opts.straggler === rank,
      collectiveUs: opts.collective?.[i] ?? null,
    };
  });
}

const EIGHTHS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/** A bar of `width` characters filled to `fraction` in eighths (`████▍       `); a bar above 0 shows at least `▏`. */
export function textBar(fraction: number, width = 12): string {
  const f = Number.isFinite(fraction) ? Math.max(0, Math.min(1, fraction)) : 0;
  let eighths = Math.round(f * width * 8);
  if (f > 0 && eighths === 0) {
    eighths = 1;
  }
  const bar = '█'.repeat(Math.floor(eighths / 8)) + (EIGHTHS[eighths % 8] ?? '');
  return bar + ' '.repeat(Math.max(0, width - bar.length));
}

/**
 * The hover's ranks section of a line (Markdown): the median and spread, one row per rank (rank,
 * bar, time, the slowest marked, its collective time), the line's time in collectives. Undefined
 * for a single process.
 */
export function rankHoverMarkdown(stat: LineStat, ranks: readonly RankInfo[], straggler?: number): string | undefined {
  const r = stat.ranks;
  if (!r || r.per_rank.length === 0) {
    return undefined;
  }
  const collective = collectivePerRank(stat.ops, r.per_rank.length);
  const rows = rankRows(r, ranks, { straggler, collective });
  const names = rows.map((row) => `rank ${row.rank}`);
  const times = rows.map((row) => fmtUs(row.us));
  const nameWidth = Math.max(...names.map((n) => n.length));
  const timeWidth = Math.max(...times.map((t) => t.length));
  const anyCollective = rows.some((row) => row.collectiveUs !== null && row.collectiveUs > 0);
  const lines = rows.map((row, i) => {
    const marks = [row.slowest ? '◀ slowest' : '', row.straggler ? '⚠ straggler' : ''].filter(Boolean).join(' ');
    const wait = anyCollective && row.collectiveUs !== null ? `  (${fmtUs(row.collectiveUs)} in collectives)` : '';
    return `${(names[i] ?? '').padEnd(nameWidth)}  ${textBar(row.fraction)}  ${(times[i] ?? '').padStart(timeWidth)}${wait}${marks ? `  ${marks}` : ''}`;
  });
  const head =
    `**Ranks** · median ${fmtUs(r.median)} across ${r.per_rank.length} ranks, ${fmtUsRange(r.min, r.max)}` +
    (straggler !== undefined ? ` · ⚠ rank ${straggler} is the straggler` : '');
  const out = [head, '', '```text', ...lines, '```'];
  if (stat.collective_us > 0) {
    out.push('', `In collectives: ${fmtUs(stat.collective_us)} per call (mean over ranks), of ${fmtUs(stat.self_device_us)}`);
  }
  return out.join('\n');
}

/**
 * A line's hover with its ranks section: after its first paragraph (the server's headline: the
 * line's time and share), before the op table, so that it shows without scrolling the hover.
 */
export function withRanksSection(markdown: string, section: string): string {
  const cut = markdown.indexOf('\n\n');
  return cut < 0 ? `${markdown}\n\n${section}` : `${markdown.slice(0, cut)}\n\n${section}${markdown.slice(cut)}`;
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
