/**
 * The `oplens.diff` answer off the wire → a typed `FunctionDiff`, checked field by field with the
 * same reader and rules as `result.json` (runs/parseRun.ts): unknown keys ignored, a missing or
 * mistyped required field an error naming it.
 *
 * Pure: imports no `vscode`; unit-tested in diffView.test.ts.
 */

import type { EarlierRun, FunctionDiff, LineChange, TotalsChange, Verdict } from '../../shared/diff';
import { VERDICTS } from '../../shared/diff';
import { Reader, readRun, RunParseError } from '../runs/parseRun';

/** A number, or null where the wire has null (or nothing). */
const numOrNull = (r: Reader, key: string): number | null => (r.has(key) ? r.num(key) : null);

const verdict = (r: Reader, key: string): Verdict => {
  const v = r.str(key);
  if (!(VERDICTS as readonly string[]).includes(v)) {
    throw new RunParseError(r.where(key), `should be one of ${VERDICTS.join(', ')}, not ${JSON.stringify(v)}`);
  }
  return v as Verdict;
};

const lineChange = (r: Reader): LineChange => ({
  before_line: numOrNull(r, 'before_line'),
  after_line: numOrNull(r, 'after_line'),
  before_us: r.num('before_us'),
  after_us: r.num('after_us'),
  ratio: numOrNull(r, 'ratio'),
  verdict: verdict(r, 'verdict'),
  p_value: numOrNull(r, 'p_value'),
  text: r.str('text', ''),
});

const totalsChange = (r: Reader): TotalsChange => ({
  before_us: r.num('before_us'),
  after_us: r.num('after_us'),
  ratio: numOrNull(r, 'ratio'),
  verdict: verdict(r, 'verdict'),
  p_value: numOrNull(r, 'p_value'),
});

const earlierRun = (r: Reader): EarlierRun => ({
  run_id: r.str('run_id'),
  created: r.str('created', ''),
  self_device_us: r.num('self_device_us', 0),
  device_label: r.str('device_label', 'DEVICE'),
  args: r.str('args', ''),
});

/** The `oplens.diff` answer: the diff of two runs of a function (none where `after` is its first) and its earlier runs. */
export function parseDiffResponse(result: unknown): FunctionDiff {
  const r = Reader.of(result, 'diff result');
  return {
    before: r.has('before') ? r.obj('before', readRun) : null,
    after: r.obj('after', readRun),
    lines: r.list('lines', lineChange),
    totals: r.has('totals') ? r.obj('totals', totalsChange) : null,
    method: r.record('method', (v: unknown): v is unknown => v !== undefined),
    earlier: r.list('earlier', earlierRun),
    uri: r.str('uri', ''),
  };
}
