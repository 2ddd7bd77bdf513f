/**
 * The names OpLens gives its own ranges in a trace (server/oplens/engine/linemarks.py): one
 * `oplens.line:<n>` range per executed line of the target, inside one `oplens.iter:<i>` per iteration.
 */

/** The 1-based line an OpLens line marker names (`oplens.line:25` → 25), if the event is one. */
export function markerLine(name: string): number | undefined {
  const m = /^oplens\.line:(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The iteration an OpLens iteration marker names (`oplens.iter:3` → 3), if the event is one. */
export function markerIteration(name: string): number | undefined {
  const m = /^oplens\.iter:(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}
