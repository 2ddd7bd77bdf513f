/**
 * The `oplens.diff` answer (server/oplens/engine/diff.py through lsp/views.py `diff_answer`):
 * one function's run against an earlier run of it, line by line, and the function's earlier runs.
 * The extension builds it from the wire with `parseDiffResponse` (extension/src/diff/parseDiff.ts).
 * Times are microseconds per iteration, self device time (self CPU on the CPU).
 */

import type { DeviceLabel, Run } from './run';

/** What a diff says of a line: `slower`/`faster` only where the change is beyond noise and drift. */
export type Verdict = 'slower' | 'faster' | 'same' | 'new' | 'removed';
export const VERDICTS: readonly Verdict[] = ['slower', 'faster', 'same', 'new', 'removed'];

/** One line across the edit (`engine.diff.LineChange`); line numbers as each run profiled them. */
export interface LineChange {
  /** null: a new line. */
  before_line: number | null;
  /** null: a removed line. */
  after_line: number | null;
  before_us: number;
  after_us: number;
  /** after / before; null where before is 0. */
  ratio: number | null;
  verdict: Verdict;
  /** The test's p-value; null for new and removed lines. */
  p_value: number | null;
  /** The line's source (after the edit; before it for a removed line). */
  text: string;
}

export interface TotalsChange {
  before_us: number;
  after_us: number;
  ratio: number | null;
  verdict: Verdict;
  p_value: number | null;
}

/** A run of the function from before `after`, as the picker lists it. */
export interface EarlierRun {
  run_id: string;
  created: string;
  self_device_us: number;
  device_label: DeviceLabel;
  args: string;
}

/** The `oplens.diff` answer. `before` and `totals` are null where `after` is the function's first run. */
export interface FunctionDiff {
  before: Run | null;
  after: Run;
  lines: LineChange[];
  totals: TotalsChange | null;
  /** The test and thresholds used (`alpha`, `min_effect`, `drift`, ...). */
  method: Record<string, unknown>;
  /** Every run of the function before `after`, newest first. */
  earlier: EarlierRun[];
  /** The function's file, as this editor names it. */
  uri: string;
}
