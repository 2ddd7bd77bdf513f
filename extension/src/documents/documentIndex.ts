/**
 * What the server knows of each Python document: its functions (from the server's AST walk) and
 * where each function's latest run sits in the current text. The server sends it as the
 * `oplens/document` notification (after didOpen, each didChange, each finished run, a clear) and
 * answers `oplens.functions` with the same object; the extension keeps the newest per document and
 * never parses Python itself.
 *
 * Pure: imports no `vscode`; unit-tested in documentIndex.test.ts.
 */

/** A function as the server lists it; lines are 1-based. */
export interface DocFunction {
  /** `rmsnorm_naive`, `Block.forward`, `outer.inner`. */
  qualname: string;
  name: string;
  /** The first decorator, or the `def`. */
  firstLine: number;
  defLine: number;
  /** The last line of the body. */
  lastLine: number;
  /** `Block.forward(self, x)`. */
  signature: string;
  /** The parameter list, e.g. `x: torch.Tensor, w: torch.Tensor`. */
  params: string;
  /** Positional parameters without a default (`self` included). */
  requiredParams: number;
  inClass: boolean;
  /** It has a lens row (the server's `oplens.lenses` rule); the extension's own lens goes only there. */
  lens: boolean;
}

/**
 * Where a run's lines are now: `fresh` (its function's text is what was profiled, in place),
 * `moved` (the same text, `shift` lines away) or `stale` (the text changed: draw nothing).
 */
export type RunState = 'fresh' | 'moved' | 'stale';

export interface RunPlace {
  runId: string;
  qualname: string;
  state: RunState;
  /** Add to the run's line numbers for the current ones. */
  shift: number;
}

export interface DocumentInfo {
  uri: string;
  /** The text version described; null: the file on disk (not open in this editor). */
  version: number | null;
  /** Why the file does not parse now (then `functions` is empty). */
  parseError: string | null;
  /** Every function, in source order. */
  functions: DocFunction[];
  /** The latest shown run of each function. */
  runs: RunPlace[];
}

export class DocumentParseError extends Error {
  constructor(where: string, problem: string) {
    super(`OpLens document: ${where} ${problem}`);
    this.name = 'DocumentParseError';
  }
}

type Obj = Record<string, unknown>;

function object(v: unknown, where: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new DocumentParseError(where, 'is not an object');
  }
  return v as Obj;
}

function field<T>(o: Obj, key: string, where: string, what: string, ok: (v: unknown) => v is T): T {
  const v = o[key];
  if (!ok(v)) {
    throw new DocumentParseError(`${where}.${key}`, `should be ${what}, not ${JSON.stringify(v)}`);
  }
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isList = (v: unknown): v is unknown[] => Array.isArray(v);
const orNull =
  <T>(ok: (v: unknown) => v is T) =>
  (v: unknown): v is T | null =>
    v === null || v === undefined || ok(v);
const RUN_STATES: readonly string[] = ['fresh', 'moved', 'stale'] satisfies RunState[];
const isRunState = (v: unknown): v is RunState => typeof v === 'string' && RUN_STATES.includes(v);

function readFunction(raw: unknown, where: string): DocFunction {
  const o = object(raw, where);
  const qualname = field(o, 'qualname', where, 'a string', isString);
  return {
    qualname,
    name: isString(o.name) ? o.name : (qualname.split('.').pop() ?? qualname),
    firstLine: field(o, 'firstLine', where, 'a line number', isInt),
    defLine: field(o, 'defLine', where, 'a line number', isInt),
    lastLine: field(o, 'lastLine', where, 'a line number', isInt),
    signature: isString(o.signature) ? o.signature : qualname,
    params: isString(o.params) ? o.params : '',
    requiredParams: field(o, 'requiredParams', where, 'an integer', isInt),
    inClass: isBool(o.inClass) ? o.inClass : false,
    lens: isBool(o.lens) ? o.lens : true, // a server without the setting lenses every function
  };
}

function readRunPlace(raw: unknown, where: string): RunPlace {
  const o = object(raw, where);
  return {
    runId: field(o, 'runId', where, 'a string', isString),
    qualname: field(o, 'qualname', where, 'a string', isString),
    state: field(o, 'state', where, '"fresh", "moved" or "stale"', isRunState),
    shift: isInt(o.shift) ? o.shift : 0,
  };
}

/** The `oplens/document` notification's params, or the `oplens.functions` answer, checked. */
export function parseDocumentInfo(raw: unknown): DocumentInfo {
  const o = object(raw, 'params');
  const functions = field(o, 'functions', 'params', 'a list', isList);
  const runs = o.runs === undefined || o.runs === null ? [] : field(o, 'runs', 'params', 'a list', isList);
  return {
    uri: field(o, 'uri', 'params', 'a string', isString),
    version: field(o, 'version', 'params', 'an integer or null', orNull(isInt)) ?? null,
    parseError: field(o, 'parseError', 'params', 'a string or null', orNull(isString)) ?? null,
    functions: functions.map((f, i) => readFunction(f, `params.functions[${i}]`)),
    runs: runs.map((r, i) => readRunPlace(r, `params.runs[${i}]`)),
  };
}

/** Whether `next` describes the same text as `held` or a newer one (else it is dropped). */
export function isCurrent(held: DocumentInfo | undefined, next: DocumentInfo): boolean {
  if (!held || held.version === null) {
    return true;
  }
  // a numbered version is this editor's text; the file on disk (null) does not replace it
  return next.version !== null && next.version >= held.version;
}

/** The newest `DocumentInfo` of each document, by URI (as this editor writes it). */
export class DocumentIndex {
  private readonly byUri = new Map<string, DocumentInfo>();
  private readonly listeners = new Set<(info: DocumentInfo) => void>();

  onDidChange(listener: (info: DocumentInfo) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Keep `info` unless an answer about a newer version of its text is already here; whether it was kept. */
  update(info: DocumentInfo): boolean {
    if (!isCurrent(this.byUri.get(info.uri), info)) {
      return false;
    }
    this.byUri.set(info.uri, info);
    for (const l of [...this.listeners]) {
      l(info);
    }
    return true;
  }

  get(uri: string): DocumentInfo | undefined {
    return this.byUri.get(uri);
  }

  /** Whether what is held describes `version` of the text (or a newer one), so needs no asking. */
  isUpToDate(uri: string, version: number): boolean {
    const held = this.byUri.get(uri);
    return held !== undefined && held.version !== null && held.version >= version;
  }

  delete(uri: string): void {
    this.byUri.delete(uri);
  }

  /** Forget everything (a new server knows other runs). */
  clear(): void {
    this.byUri.clear();
  }
}

/** The innermost function whose lines (decorators included) hold the 1-based `line`. */
export function enclosingFunction(functions: readonly DocFunction[], line: number): DocFunction | undefined {
  let best: DocFunction | undefined;
  for (const fn of functions) {
    if (fn.firstLine <= line && line <= fn.lastLine && (!best || fn.firstLine >= best.firstLine)) {
      best = fn;
    }
  }
  return best;
}

/** Names of the module's top-level functions (for input factories such as `make_inputs`). */
export function topLevelFunctionNames(functions: readonly DocFunction[]): string[] {
  return functions.filter((f) => !f.qualname.includes('.')).map((f) => f.name);
}

/** What of a run placing it needs (a `Run` has it). */
export interface PlaceableRun {
  run_id: string;
  target: { qualname: string; first_line: number; last_line: number; source_sha256: string };
}

/**
 * Where run `run` sits in the document `info` describes: the server's placement of that run, or,
 * for another run of the same function that the server does not name (an older run on show), the
 * placement of the run it names when both were profiled from the same text at the same lines.
 * Undefined when the document says nothing about it (function gone, or not told yet).
 */
export function placeRun(
  info: DocumentInfo | undefined,
  run: PlaceableRun,
  lookup: (runId: string) => PlaceableRun | undefined = () => undefined,
): { state: RunState; shift: number } | undefined {
  if (!info) {
    return undefined;
  }
  const own = info.runs.find((r) => r.runId === run.run_id);
  if (own) {
    return { state: own.state, shift: own.shift };
  }
  const qualname = run.target.qualname.replace(/\.<locals>\./g, '.');
  for (const named of info.runs) {
    if (named.qualname !== qualname) {
      continue;
    }
    const other = lookup(named.runId)?.target;
    const same =
      other !== undefined &&
      other.source_sha256 === run.target.source_sha256 &&
      other.first_line === run.target.first_line &&
      other.last_line === run.target.last_line;
    return same ? { state: named.state, shift: named.shift } : { state: 'stale', shift: 0 };
  }
  return undefined;
}

/** Whether a placement lets the run's lines be drawn (fresh or moved). */
export function isDrawable(place: { state: RunState } | undefined): place is { state: 'fresh' | 'moved'; shift: number } {
  return place !== undefined && place.state !== 'stale';
}

/** Physical lines as VS Code counts them (\n, \r\n, \r): the source text of a run's lines for labels. */
export function physicalLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}
