/**
 * The result of a profile (`result.json`, schema `oplens.result/1`), typed for the extension and
 * the webview. The records are generated from `server/oplens/records/run.py` (dataclass `Run`) into
 * `generated/run.ts`, field for field with each field's default (`make generate`; a test fails while
 * it is stale); the extension builds them from the wire with `parseRun`
 * (extension/src/runs/parseRun.ts). All times are microseconds per iteration.
 */

// every record (interface) of result.json, as generated; their readers are parseRun's
export type * from './generated/run';
export { RUN_SCHEMA } from './generated/run';

import type { OverviewRun, Run } from './generated/run';

/**
 * What a run directory holds and the server sends: a function's lines (`Run`, `result.json`), or a program
 * overview (`OverviewRun`, `overview.json`: the `Overview` and how it ran, no lines).
 */
export type AnyRun = Run | OverviewRun;

/** A program overview, not a function's lines. */
export function isOverview(run: AnyRun): run is OverviewRun {
  return 'overview' in run;
}
