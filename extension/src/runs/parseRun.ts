/**
 * `result.json` off the wire → a typed `Run`, checked field by field.
 *
 * The readers of the records are generated from the Python dataclasses (`shared/generated/run.ts`,
 * `make generate`): each field required or defaulted exactly as `Run.from_dict` takes it, unknown
 * keys ignored (a newer server's extra fields), and a missing or mistyped required field an error
 * naming the field (`RunParseError`), never a half-built record that fails later in the heat gutter
 * or the panel. Written here by hand: the schema check, and the answers the server writes as plain
 * dicts rather than records (`oplens.profile`'s answer; `oplens.compare`'s is read as its page, compare/compareAnswer.ts).
 *
 * Pure: imports no `vscode`; unit-tested in parseRun.test.ts.
 */

import { readOverviewRun as readOverviewRunRecord, readRun as readRunRecord } from '../../shared/generated/run';
import { Reader, RunParseError } from '../../shared/reader';
import { RUN_SCHEMA, type AnyRun, type OverviewRun, type Run } from '../../shared/run';

// diff/parseDiff.ts and doctor/doctor.ts read their answers with the same reader
export { Reader, RunParseError };

/** A `Run` from the parsed JSON of `result.json` (or the `run` of an `oplens/result` notification). */
export function parseRun(data: unknown): Run {
  return readRun(Reader.of(data, ''));
}

/** A `Run` of this schema (another major version is not an OpLens result; another minor, an update away). */
export function readRun(r: Reader): Run {
  const schema = r.str('schema', RUN_SCHEMA);
  if (schema.split('/')[0] !== RUN_SCHEMA.split('/')[0]) {
    throw new RunParseError(r.where('schema'), `is ${JSON.stringify(schema)}, not an OpLens result`);
  }
  if (schema.split('/')[1] !== RUN_SCHEMA.split('/')[1]) {
    throw new RunParseError(
      r.where('schema'),
      `is ${schema}; this extension reads ${RUN_SCHEMA}: update the extension or the oplens package so they match`,
    );
  }
  return readRunRecord(r);
}

/** A program overview (`overview.json`, an `OverviewRun`) from its parsed JSON. */
export function parseOverviewRun(data: unknown): OverviewRun {
  return readOverviewRunRecord(Reader.of(data, ''));
}

/** What the server sends as a run: a program overview (it has `overview`) or a function's `Run`. */
export function parseAnyRun(data: unknown): AnyRun {
  return readAnyRun(Reader.of(data, ''));
}

export function readAnyRun(r: Reader): AnyRun {
  return r.has('overview') ? readOverviewRunRecord(r) : readRun(r);
}

/** The `oplens/result` notification's params: `{uri, run}`. */
/** `oplens/result`: the run (or overview) shown on `uri`; `reveal`: a run not asked for here (a notebook kernel's) to show as if it were. */
export function parseResultNotification(params: unknown): { uri: string; run: AnyRun; reveal: boolean } {
  const r = Reader.of(params, 'params');
  return { uri: r.str('uri'), run: r.obj('run', readAnyRun), reveal: r.bool('reveal', false) };
}

/** The `oplens.profile` response: `{run_id, uri, qualname, title}`. */
export function parseProfileResponse(result: unknown): { run_id: string; uri: string; qualname: string; title: string } {
  const r = Reader.of(result, 'profile result');
  return { run_id: r.str('run_id'), uri: r.str('uri'), qualname: r.str('qualname'), title: r.str('title', '') };
}
