/**
 * The program overview in the editor, its model: the server's `oplens.hotFunctions` answer read off
 * the wire (checked field by field, as result.json is; its `page`, the results page of the overview as
 * the server writes it, by the generated reader), the Hot Functions view's rows, and the
 * request that runs an overview (`oplens.overview`: the program with its step function's steps
 * profiled whole).
 *
 * Pure: imports no `vscode`; unit-tested in hotFunctions.test.ts.
 */

import { readOverviewView } from '../../shared/generated/views';
import { fileName, HOT_SORTS, type HotFunction, type HotFunctions, type HotSort } from '../../shared/overview';
import { isJson } from '../../shared/reader';
import { Reader } from '../runs/parseRun';

const hotFunction = (r: Reader): HotFunction => ({
  index: r.num('index', -1),
  uri: r.str('uri'),
  file: r.str('file'),
  qualname: r.str('qualname'),
  line: r.num('line'),
  self_device_us: r.num('self_device_us'),
  total_device_us: r.num('total_device_us'),
  pct_self: r.num('pct_self', 0),
  pct_total: r.num('pct_total', 0),
  calls: r.num('calls', 0),
  title: r.str('title', ''),
  lens: r.str('lens', ''),
  tooltip: r.str('tooltip', ''),
  lines: r.has('lines') ? r.record('lines', isJson, false) : null,
});

/** `oplens.hotFunctions`' answer; null where the server has no overview. */
export function parseHotFunctions(answer: unknown): HotFunctions | null {
  if (answer === null || answer === undefined) {
    return null;
  }
  const r = Reader.of(answer, 'hot functions');
  return {
    run_id: r.str('run_id'),
    created: r.str('created', ''),
    step: r.str('step', ''),
    per: r.str('per', 'step'),
    steps: r.num('steps', 0),
    device_label: r.str('device_label', 'CPU'),
    total_device_us: r.num('total_device_us', 0),
    sort: r.oneOf('sort', HOT_SORTS, 'self'),
    title: r.str('title', ''),
    functions: r.list('functions', hotFunction),
    page: r.obj('page', readOverviewView),
  };
}

/** One row of the Hot Functions view. */
export interface HotRow {
  label: string;
  description: string;
  tooltip: string;
  uri: string;
  /** The `def` line, 0-based (where a click goes). */
  line: number;
  /** `▶ lines` can run (the overview's program is known). */
  canProfileLines: boolean;
  fn: HotFunction;
}

/** The view's rows: each function by the answer's order, its file's name beside it. */
export function hotRows(answer: HotFunctions): HotRow[] {
  return answer.functions.map((f) => ({
    label: f.qualname,
    description: `${f.title} · ${fileName(f.file)}:${f.line}`,
    tooltip: `${f.tooltip}\n${f.file}:${f.line}${f.lines ? '\n▶ (the row’s button): its lines, captured in the same program' : ''}`,
    uri: f.uri,
    line: Math.max(0, f.line - 1),
    canProfileLines: f.lines !== null,
    fn: f,
  }));
}

/** The other sort order. */
export function otherSort(sort: HotSort): HotSort {
  return sort === 'self' ? 'total' : 'self';
}

/** The view's message above its rows: the overview's headline, and how it is sorted. */
export function hotHeadline(answer: HotFunctions): string {
  return `${answer.title} · sorted by ${answer.sort} time`;
}
