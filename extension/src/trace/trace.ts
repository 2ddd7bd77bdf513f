/**
 * A Chrome trace (`trace.json`, as torch.profiler exports it) → a compact timeline model for the
 * built-in trace viewer: one lane per process/thread, each complete event at a nesting depth.
 *
 * Complete events (`ph: "X"`) and begin/end pairs (`B`/`E`) are kept; metadata (`M`) names the
 * lanes; everything else (instants, counters, flows) is left out. Large traces are capped at
 * `limit` events (the longest kept), and the model says how many were dropped.
 *
 * Pure: imports no `vscode`; unit-tested in trace.test.ts.
 */

import type { TraceModel } from '../../shared/messages';

interface RawEvent {
  ph?: unknown;
  name?: unknown;
  cat?: unknown;
  ts?: unknown;
  dur?: unknown;
  pid?: unknown;
  tid?: unknown;
  args?: unknown;
}

interface Complete {
  lane: string;
  start: number;
  dur: number;
  name: string;
  cat: string;
}

export const DEFAULT_EVENT_LIMIT = 400_000;

function key(v: unknown): string {
  return typeof v === 'number' || typeof v === 'string' ? String(v) : '?';
}

function numberOr(v: unknown, fallback: number): number {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : fallback;
}

/** The events of a parsed trace.json: `{traceEvents: [...]}` or a bare array. */
export function traceEvents(data: unknown): RawEvent[] {
  if (Array.isArray(data)) {
    return data as RawEvent[];
  }
  if (typeof data === 'object' && data !== null && Array.isArray((data as { traceEvents?: unknown }).traceEvents)) {
    return (data as { traceEvents: RawEvent[] }).traceEvents;
  }
  throw new Error('not a Chrome trace: no traceEvents list');
}

export function layoutTrace(data: unknown, title: string, limit = DEFAULT_EVENT_LIMIT): TraceModel {
  const events = traceEvents(data);
  const processNames = new Map<string, string>();
  const threadNames = new Map<string, string>();
  const sortIndex = new Map<string, number>();
  const complete: Complete[] = [];
  const open = new Map<string, RawEvent[]>(); // B events waiting for their E, per lane

  for (const e of events) {
    if (typeof e !== 'object' || e === null) {
      continue;
    }
    const pid = key(e.pid);
    const lane = `${pid}\u0000${key(e.tid)}`;
    const args = (typeof e.args === 'object' && e.args !== null ? e.args : {}) as Record<string, unknown>;
    switch (e.ph) {
      case 'M':
        if (e.name === 'process_name' && typeof args.name === 'string') {
          processNames.set(pid, args.name);
        } else if (e.name === 'thread_name' && typeof args.name === 'string') {
          threadNames.set(lane, args.name);
        } else if (e.name === 'process_sort_index' && typeof args.sort_index === 'number') {
          sortIndex.set(pid, args.sort_index);
        }
        break;
      case 'X': {
        const start = numberOr(e.ts, NaN);
        if (Number.isFinite(start)) {
          complete.push({ lane, start, dur: Math.max(0, numberOr(e.dur, 0)), name: String(e.name ?? ''), cat: String(e.cat ?? '') });
        }
        break;
      }
      case 'B': {
        const stack = open.get(lane) ?? [];
        stack.push(e);
        open.set(lane, stack);
        break;
      }
      case 'E': {
        const begin = open.get(lane)?.pop();
        const start = numberOr(begin?.ts, NaN);
        const end = numberOr(e.ts, NaN);
        if (begin && Number.isFinite(start) && Number.isFinite(end)) {
          complete.push({ lane, start, dur: Math.max(0, end - start), name: String(begin.name ?? ''), cat: String(begin.cat ?? '') });
        }
        break;
      }
      default:
        break;
    }
  }

  let dropped = 0;
  let kept = complete;
  if (complete.length > limit) {
    kept = [...complete].sort((a, b) => b.dur - a.dur).slice(0, limit);
    dropped = complete.length - limit;
  }

  // lanes: by process sort index (or pid), then thread id; numeric where they are numbers
  const laneKeys = [...new Set(kept.map((e) => e.lane))];
  const num = (s: string): number => (Number.isFinite(Number(s)) ? Number(s) : Number.MAX_SAFE_INTEGER);
  laneKeys.sort((a, b) => {
    const [pa = '', ta = ''] = a.split('\u0000');
    const [pb = '', tb = ''] = b.split('\u0000');
    const sa = sortIndex.get(pa) ?? num(pa);
    const sb = sortIndex.get(pb) ?? num(pb);
    return sa - sb || num(pa) - num(pb) || num(ta) - num(tb) || a.localeCompare(b);
  });
  const laneIndex = new Map(laneKeys.map((k, i) => [k, i]));

  kept.sort((a, b) => (laneIndex.get(a.lane) ?? 0) - (laneIndex.get(b.lane) ?? 0) || a.start - b.start || b.dur - a.dur);
  const origin = kept.reduce((m, e) => Math.min(m, e.start), Infinity);
  const t0 = Number.isFinite(origin) ? origin : 0;

  const names: string[] = [];
  const nameIndex = new Map<string, number>();
  const categories: string[] = [];
  const categoryIndex = new Map<string, number>();
  const intern = (s: string, list: string[], index: Map<string, number>): number => {
    let i = index.get(s);
    if (i === undefined) {
      i = list.length;
      list.push(s);
      index.set(s, i);
    }
    return i;
  };

  const model: TraceModel = {
    title,
    lanes: laneKeys.map((k) => {
      const [pid = '', tid = ''] = k.split('\u0000');
      const process = processNames.get(pid) ?? `process ${pid}`;
      const thread = threadNames.get(k) ?? `thread ${tid}`;
      return { name: `${process} (${pid}) · ${thread}`, depth: 0 };
    }),
    names,
    categories,
    lane: [],
    depth: [],
    start: [],
    dur: [],
    name: [],
    category: [],
    span: 0,
    dropped,
  };

  // depth: how many earlier events of the lane are still open at this one's start
  let currentLane = -1;
  let ends: number[] = [];
  const eps = 1e-6;
  for (const e of kept) {
    const lane = laneIndex.get(e.lane) ?? 0;
    if (lane !== currentLane) {
      currentLane = lane;
      ends = [];
    }
    const start = e.start - t0;
    while (ends.length > 0 && (ends[ends.length - 1] ?? 0) <= start + eps) {
      ends.pop();
    }
    const depth = ends.length;
    ends.push(start + e.dur);
    const info = model.lanes[lane];
    if (info) {
      info.depth = Math.max(info.depth, depth + 1);
    }
    model.lane.push(lane);
    model.depth.push(depth);
    model.start.push(start);
    model.dur.push(e.dur);
    model.name.push(intern(e.name, names, nameIndex));
    model.category.push(intern(e.cat, categories, categoryIndex));
    model.span = Math.max(model.span, start + e.dur);
  }
  return model;
}
