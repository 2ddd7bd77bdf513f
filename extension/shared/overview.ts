/**
 * The program overview, for the extension host and the results page alike: the server's
 * `oplens.hotFunctions` answer (an overview's functions, hottest first, each with its words and its
 * `▶ lines` arguments, in this editor's paths), and the icicle chart of an overview's call tree
 * (`Overview.frames`: the user's frames only) laid out as rectangles.
 *
 * The words (titles, tooltips, the results page's every cell: `server/oplens/lsp/overview_views.py`,
 * `server/oplens/views/overview.py`) are the server's; the layout is geometry, done here.
 */

import type { OverviewView } from './generated/views';
import type { Overview } from './run';

/** One function of `oplens.hotFunctions`' answer. */
export interface HotFunction {
  /** Its index in `Overview.functions` (the icicle's frames point there). */
  index: number;
  /** The function's file as this editor names it (after path mappings). */
  uri: string;
  /** The file on the host. */
  file: string;
  qualname: string;
  /** Its `def` line (1-based). */
  line: number;
  self_device_us: number;
  total_device_us: number;
  pct_self: number;
  pct_total: number;
  /** Frames of it entered, per step. */
  calls: number;
  /** `20.86 ms/step · 9.5 % self`: by the figure the list is sorted by. */
  title: string;
  /** `CPU 9.5 % · 20.86 ms/step`: its lens. */
  lens: string;
  tooltip: string;
  /** `oplens.profile`'s argument for `▶ lines` (the function in the overview's program); null without a program. */
  lines: Record<string, unknown> | null;
}

export type HotSort = 'self' | 'total';
export const HOT_SORTS: readonly HotSort[] = ['self', 'total'];

/** `oplens.hotFunctions`' answer. */
export interface HotFunctions {
  run_id: string;
  created: string;
  /** `FILE::QUALNAME` of the step function; '' for a time window. */
  step: string;
  /** What the figures are per: `step` or `window`. */
  per: string;
  steps: number;
  device_label: string;
  total_device_us: number;
  sort: HotSort;
  /** `overview of train_step: CPU 220.21 ms/step over 4 steps`. */
  title: string;
  functions: HotFunction[];
  /** The results page of the overview, written by the server (`oplens.views.overview`). */
  page: OverviewView;
}

/** A file's name, the last part of its path (either separator: a host path may be a Windows one). */
export function fileName(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** One rectangle of the icicle chart: a node of the call tree, its width its share of its parent's time
 * (its words are the server's node of the same index, `OverviewView.nodes`). */
export interface IcicleCell {
  /** The node, an index into `Overview.frames` (and `OverviewView.nodes`). */
  node: number;
  /** Its function, an index into `Overview.functions`. */
  fn: number;
  depth: number;
  /** Left edge and width, fractions of the chart's width (the whole: every user frame's time). */
  x: number;
  width: number;
  totalUs: number;
  selfUs: number;
}

export interface Icicle {
  cells: IcicleCell[];
  depth: number;
  /** The time the whole width stands for (per step): the roots' totals. */
  totalUs: number;
}

/**
 * The call tree of `o` as an icicle: the roots side by side on the top row, each node's children
 * under it from its left edge, hottest first (the server's order), widths in proportion to total
 * time. Nodes narrower than `minWidth` (a fraction) are left out with everything under them.
 */
export function icicle(o: Overview, minWidth = 0.002): Icicle {
  const frames = o.frames;
  const children = new Map<number, number[]>();
  for (let i = 0; i < frames.length; i++) {
    const parent = (frames[i] as (typeof frames)[number]).parent;
    const list = children.get(parent) ?? [];
    list.push(i);
    children.set(parent, list);
  }
  const roots = children.get(-1) ?? [];
  const totalUs = roots.reduce((sum, i) => sum + (frames[i]?.total_device_us ?? 0), 0);
  const cells: IcicleCell[] = [];
  if (totalUs <= 0) {
    return { cells, depth: 0, totalUs: 0 };
  }
  let depth = 0;
  const place = (ids: number[], x: number, level: number): void => {
    let left = x;
    for (const id of ids) {
      const f = frames[id];
      if (!f) {
        continue;
      }
      const width = f.total_device_us / totalUs;
      if (width >= minWidth) {
        cells.push({ node: id, fn: f.function, depth: level, x: left, width, totalUs: f.total_device_us, selfUs: f.self_device_us });
        depth = Math.max(depth, level + 1);
        place(children.get(id) ?? [], left, level + 1);
      }
      left += width;
    }
  };
  place(roots, 0, 0);
  return { cells, depth, totalUs };
}
