/**
 * The names OpLens gives its own ranges in a trace (server/oplens/worker/linemarks.py): one
 * `oplens.line:<n>` range per executed line of the target, inside one `oplens.iter:<i>` per iteration.
 */

import { ITER_RANGE, LINE_RANGE } from './names';

function numbered(prefix: string, name: string): number | undefined {
  if (!name.startsWith(prefix)) {
    return undefined;
  }
  const rest = name.slice(prefix.length);
  return /^\d+$/.test(rest) ? Number(rest) : undefined;
}

/** The 1-based line an OpLens line marker names (`oplens.line:25` → 25), if the event is one. */
export function markerLine(name: string): number | undefined {
  return numbered(LINE_RANGE, name);
}

/** The iteration an OpLens iteration marker names (`oplens.iter:3` → 3), if the event is one. */
export function markerIteration(name: string): number | undefined {
  return numbered(ITER_RANGE, name);
}
