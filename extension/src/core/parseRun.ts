/**
 * `result.json` off the wire → a typed `Run`, checked field by field.
 *
 * The same rules as the Python reader (`records.from_dict`): unknown keys are ignored (a newer
 * server's extra fields), optional fields take their defaults, and a missing or mistyped required
 * field is an error naming the field (`RunParseError`), never a half-built record that fails later
 * in the heat gutter or the panel.
 */

import type {
  Artifacts,
  BackendInfo,
  Capture,
  CompareRow,
  CompiledRegion,
  Temporary,
  DeviceRoof,
  Config,
  EngineTime,
  GraphEngines,
  InnerLine,
  Insight,
  LineStat,
  NeffFile,
  NeffNtffPair,
  NeuronProfileDir,
  NtffFile,
  OpStat,
  RankInfo,
  RankSpread,
  Run,
  SourceRef,
  Spread,
  Target,
  Totals,
} from '../../shared/run';
import { RUN_SCHEMA } from '../../shared/run';

export class RunParseError extends Error {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`OpLens result: ${path} ${problem}`);
    this.name = 'RunParseError';
  }
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A reader over one JSON object that knows where it is, for error messages (also parseDiff.ts's). */
export class Reader {
  constructor(
    private readonly o: Obj,
    private readonly at: string,
  ) {}

  static of(v: unknown, at: string): Reader {
    if (!isObj(v)) {
      throw new RunParseError(at, 'is not an object');
    }
    return new Reader(v, at);
  }

  where(key: string): string {
    return this.at ? `${this.at}.${key}` : key;
  }

  /** Whether the object has `key` at all (null included). */
  present(key: string): boolean {
    return key in this.o;
  }

  has(key: string): boolean {
    return this.o[key] !== undefined && this.o[key] !== null;
  }

  num(key: string, fallback?: number): number {
    const v = this.o[key];
    if (v === undefined || v === null) {
      if (fallback === undefined) {
        throw new RunParseError(this.where(key), 'is missing');
      }
      return fallback;
    }
    if (typeof v !== 'number' || Number.isNaN(v)) {
      throw new RunParseError(this.where(key), `should be a number, not ${JSON.stringify(v)}`);
    }
    return v;
  }

  str(key: string, fallback?: string): string {
    const v = this.o[key];
    if (v === undefined || v === null) {
      if (fallback === undefined) {
        throw new RunParseError(this.where(key), 'is missing');
      }
      return fallback;
    }
    if (typeof v !== 'string') {
      throw new RunParseError(this.where(key), `should be a string, not ${JSON.stringify(v)}`);
    }
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return fallback;
    }
    if (typeof v !== 'boolean') {
      throw new RunParseError(this.where(key), `should be true or false, not ${JSON.stringify(v)}`);
    }
    return v;
  }

  obj<T>(key: string, read: (r: Reader) => T, fallback?: () => T): T {
    const v = this.o[key];
    if ((v === undefined || v === null) && fallback !== undefined) {
      return fallback();
    }
    return read(Reader.of(v, this.where(key)));
  }

  list<T>(key: string, read: (r: Reader) => T, optional = true): T[] {
    const v = this.o[key];
    if (v === undefined || v === null) {
      if (optional) {
        return [];
      }
      throw new RunParseError(this.where(key), 'is missing');
    }
    if (!Array.isArray(v)) {
      throw new RunParseError(this.where(key), 'should be a list');
    }
    return v.map((item, i) => read(Reader.of(item, `${this.where(key)}[${i}]`)));
  }

  strings(key: string): string[] {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return [];
    }
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
      throw new RunParseError(this.where(key), 'should be a list of strings');
    }
    return v as string[];
  }

  numbers(key: string): number[] {
    const v = this.o[key];
    if (v === undefined || v === null) {
      return [];
    }
    if (!Array.isArray(v) || v.some((n) => typeof n !== 'number')) {
      throw new RunParseError(this.where(key), 'should be a list of numbers');
    }
    return v as number[];
  }

  record<T>(key: string, keep: (v: unknown) => v is T): Record<string, T> {
    const v = this.o[key];
    const out: Record<string, T> = {};
    if (isObj(v)) {
      for (const [k, item] of Object.entries(v)) {
        if (keep(item)) {
          out[k] = item;
        }
      }
    }
    return out;
  }
}

const spread = (r: Reader): Spread => ({
  median: r.num('median', 0),
  min: r.num('min', 0),
  max: r.num('max', 0),
  ci_low: r.num('ci_low', 0),
  ci_high: r.num('ci_high', 0),
});
const noSpread = (): Spread => ({ median: 0, min: 0, max: 0, ci_low: 0, ci_high: 0 });

const rankSpread = (r: Reader): RankSpread => ({
  per_rank: r.numbers('per_rank'),
  median: r.num('median', 0),
  min: r.num('min', 0),
  max: r.num('max', 0),
  slowest: r.num('slowest', -1),
});
/** A distributed run's spread across ranks; null for a single process (and in results older than ranks). */
const ranksOf = (r: Reader): RankSpread | null => (r.has('ranks') ? r.obj('ranks', rankSpread) : null);

const rankInfo = (r: Reader): RankInfo => ({
  rank: r.num('rank'),
  local_rank: r.num('local_rank', 0),
  world_size: r.num('world_size', 1),
  host: r.str('host', ''),
  device: r.str('device', ''),
  part: r.str('part', ''),
  pid: r.num('pid', 0),
  failed: r.str('failed', ''),
});

const opStat = (r: Reader): OpStat => ({
  name: r.str('name'),
  calls: r.num('calls'),
  self_cpu_us: r.num('self_cpu_us'),
  self_device_us: r.num('self_device_us'),
  pct: r.num('pct', 0),
  device_spread: r.obj('device_spread', spread, noSpread),
  category: r.str('category', ''),
  ranks: ranksOf(r),
});

const innerLine = (r: Reader): InnerLine => ({
  function: r.str('function'),
  line: r.num('line'),
  self_cpu_us: r.num('self_cpu_us'),
  self_device_us: r.num('self_device_us'),
});

const sourceRef = (r: Reader): SourceRef => ({ file: r.str('file'), line: r.num('line'), function: r.str('function', '') });

const temporary = (r: Reader): Temporary => ({ bytes: r.num('bytes'), freed_line: r.num('freed_line') });

const compiledRegion = (r: Reader): CompiledRegion => ({
  name: r.str('name'),
  calls: r.num('calls'),
  self_device_us: r.num('self_device_us'),
  fused: r.list('fused', sourceRef),
});

const engineTime = (r: Reader): EngineTime => ({ engine: r.str('engine'), active_us: r.num('active_us'), pct: r.num('pct') });

const graphEngines = (r: Reader): GraphEngines => ({
  graph: r.str('graph'),
  calls: r.num('calls'),
  device_us: r.num('device_us'),
  engines: r.list('engines', engineTime),
  line: optionalNum(r, 'line'),
  source: r.str('source', ''),
});

const lineStat = (r: Reader): LineStat => ({
  line: r.num('line'),
  self_cpu_us: r.num('self_cpu_us'),
  self_device_us: r.num('self_device_us'),
  pct_device: r.num('pct_device'),
  pct_cpu: r.num('pct_cpu'),
  op_calls: r.num('op_calls'),
  ops: r.list('ops', opStat),
  device_spread: r.obj('device_spread', spread, noSpread),
  cpu_spread: r.obj('cpu_spread', spread, noSpread),
  noisy: r.bool('noisy', false),
  inner: r.list('inner', innerLine),
  compiled: r.list('compiled', compiledRegion),
  device_samples_us: r.numbers('device_samples_us'),
  cpu_samples_us: r.numbers('cpu_samples_us'),
  ranks: ranksOf(r),
  collective_us: r.num('collective_us', 0),
  flops: optionalNum(r, 'flops'),
  bytes: optionalNum(r, 'bytes'),
  intensity: optionalNum(r, 'intensity'),
  work_unknown: r.has('work_unknown') ? r.strings('work_unknown') : [],
  work_estimate: r.bool('work_estimate', false),
  alloc_bytes: r.num('alloc_bytes', 0),
  freed_bytes: r.num('freed_bytes', 0),
  peak_bytes: r.num('peak_bytes', 0),
  temporary: r.has('temporary') ? r.obj('temporary', temporary) : null,
  dtype: r.has('dtype') ? r.str('dtype') : '',
  bound: r.has('bound') ? r.str('bound') : '',
  roofline_pct: optionalNum(r, 'roofline_pct'),
  floor_us: optionalNum(r, 'floor_us'),
  headroom_us: optionalNum(r, 'headroom_us'),
  flop_per_s: optionalNum(r, 'flop_per_s'),
  bytes_per_s: optionalNum(r, 'bytes_per_s'),
  engines: r.list('engines', engineTime),
  engine_graph: r.str('engine_graph', ''),
});

const target = (r: Reader): Target => ({
  file: r.str('file'),
  qualname: r.str('qualname'),
  first_line: r.num('first_line'),
  last_line: r.num('last_line'),
  source_sha256: r.str('source_sha256'),
  def_line: r.num('def_line', 0),
  source: r.str('source', ''),
});

const isJson = (v: unknown): v is unknown => v !== undefined;
const isNumber = (v: unknown): v is number => typeof v === 'number';

const backend = (r: Reader): BackendInfo => ({
  name: r.str('name'),
  device_label: r.str('device_label'),
  torch_version: r.str('torch_version', ''),
  device_name: r.str('device_name', ''),
  requested: r.str('requested', ''),
  note: r.str('note', ''),
  details: r.record('details', isJson),
  warnings: r.strings('warnings'),
});

const config = (r: Reader): Config => ({
  warmup: r.num('warmup'),
  iters: r.num('iters'),
  profiler_warmup: r.num('profiler_warmup', 0),
  args: r.str('args', ''),
  timeout_s: r.num('timeout_s', 0),
  record_shapes: r.bool('record_shapes', true),
});

const totals = (r: Reader): Totals => ({
  self_cpu_us: r.num('self_cpu_us'),
  self_device_us: r.num('self_device_us'),
  op_calls: r.num('op_calls'),
  wall_us: r.obj('wall_us', spread, noSpread),
  unattributed_device_us: r.num('unattributed_device_us', 0),
  device_samples_us: r.numbers('device_samples_us'),
  cpu_samples_us: r.numbers('cpu_samples_us'),
  ranks: ranksOf(r),
  collective_us: r.num('collective_us', 0),
  flops: optionalNum(r, 'flops'),
  bytes: optionalNum(r, 'bytes'),
  peak_bytes: r.num('peak_bytes', 0),
  memory: r.has('memory') ? r.str('memory') : '',
  floor_us: optionalNum(r, 'floor_us'),
  headroom_us: optionalNum(r, 'headroom_us'),
});

const deviceRoof = (r: Reader): DeviceRoof => ({
  name: r.str('name', ''),
  dtype_peaks: r.record('dtype_peaks', isNumber),
  bytes_per_s: r.num('bytes_per_s', 0),
  source: r.str('source', ''),
  measured_at: r.str('measured_at', ''),
});

const insight = (r: Reader): Insight => ({
  line: r.num('line'),
  kind: r.str('kind'),
  message: r.str('message'),
  evidence: r.str('evidence', ''),
  rank: optionalNum(r, 'rank'),
});

const pair = (r: Reader): NeffNtffPair => ({ hash: r.str('hash'), neff: r.str('neff'), ntff: r.str('ntff'), ntff_bytes: r.num('ntff_bytes', 0) });

const optionalNum = (r: Reader, key: string): number | null => (r.has(key) ? r.num(key) : null);

const neffFile = (r: Reader): NeffFile => ({ path: r.str('path'), form: r.str('form', ''), hash: r.str('hash', ''), core: optionalNum(r, 'core') });

const ntffFile = (r: Reader): NtffFile => ({
  path: r.str('path'),
  form: r.str('form', ''),
  core: optionalNum(r, 'core'),
  session: optionalNum(r, 'session'),
  rank: optionalNum(r, 'rank'),
  hash: r.str('hash', ''),
  bytes: r.num('bytes', 0),
});

const neuronProfileDir = (r: Reader): NeuronProfileDir => ({
  dir: r.str('dir'),
  kind: r.str('kind', ''),
  neffs: r.strings('neffs'),
  ntffs: r.strings('ntffs'),
  rank: optionalNum(r, 'rank'),
  framework_trace: r.str('framework_trace', ''),
});

const artifacts = (r: Reader): Artifacts => ({
  trace_json: r.str('trace_json', ''),
  device_profile_dir: r.str('device_profile_dir', ''),
  neff_ntff_pairs: r.list('neff_ntff_pairs', pair),
  worker_log: r.str('worker_log', ''),
  files: r.strings('files'),
  profile_output_dir: r.str('profile_output_dir', ''),
  system_trace_files: r.strings('system_trace_files'),
  neffs: r.list('neffs', neffFile),
  ntffs: r.list('ntffs', ntffFile),
  neuron_profiles: r.list('neuron_profiles', neuronProfileDir),
});

const capture = (r: Reader): Capture => ({
  program: r.str('program'),
  argv: r.strings('argv'),
  cwd: r.str('cwd', ''),
  calls_seen: r.num('calls_seen', 0),
  calls_skipped: r.num('calls_skipped', 0),
  calls_profiler_warmup: r.num('calls_profiler_warmup', 0),
  calls_profiled: r.num('calls_profiled', 0),
  compiled_graphs: r.num('compiled_graphs', 0),
  partial: r.bool('partial', false),
  reason: r.str('reason', ''),
  exit_code: optionalNum(r, 'exit_code'),
  stopped: r.bool('stopped', false),
});

/** A `Run` from the parsed JSON of `result.json` (or the `run` of an `oplens/result` notification). */
export function parseRun(data: unknown): Run {
  return readRun(Reader.of(data, ''));
}

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
  return {
    schema,
    run_id: r.str('run_id', ''),
    run_dir: r.str('run_dir', ''),
    created: r.str('created', ''),
    target: r.obj('target', target),
    backend: r.obj('backend', backend),
    config: r.obj('config', config),
    totals: r.obj('totals', totals),
    lines: r.list('lines', lineStat, false),
    ops: r.list('ops', opStat, false),
    insights: r.list('insights', insight),
    artifacts: r.obj('artifacts', artifacts, () => artifacts(Reader.of({}, 'artifacts'))),
    compile: r.obj(
      'compile',
      (c) => ({ first_call_us: c.num('first_call_us', 0), compile_us: c.num('compile_us', 0), graphs: c.num('graphs', 0) }),
      () => ({ first_call_us: 0, compile_us: 0, graphs: 0 }),
    ),
    // null for a profile of the function alone; absent in results older than captures
    ...(r.has('capture') ? { capture: r.obj('capture', capture) } : r.present('capture') ? { capture: null } : {}),
    ranks: r.list('ranks', rankInfo),
    device: r.has('device') ? r.obj('device', deviceRoof) : null,
    timings_ms: r.record('timings_ms', isNumber),
    estimators: r.record('estimators', (v: unknown): v is string => typeof v === 'string'),
    engine_graphs: r.list('engine_graphs', graphEngines),
    engine_note: r.str('engine_note', ''),
  };
}

/** The `oplens/result` notification's params: `{uri, run}`. */
export function parseResultNotification(params: unknown): { uri: string; run: Run } {
  const r = Reader.of(params, 'params');
  return { uri: r.str('uri'), run: r.obj('run', readRun) };
}

/** The `oplens.compare` response's summary rows. */
export function parseCompareSummary(result: unknown): CompareRow[] {
  return Reader.of(result, 'compare result').list(
    'summary',
    (r) => ({
      variant: r.str('variant'),
      run_id: r.str('run_id'),
      device_label: r.str('device_label', 'DEVICE'),
      self_device_us: r.num('self_device_us'),
      self_cpu_us: r.num('self_cpu_us', 0),
      op_calls: r.num('op_calls', 0),
      speedup: r.num('speedup', 0),
    }),
    false,
  );
}

/** The `oplens.profile` response: `{run_id, uri, qualname, title}`. */
export function parseProfileResponse(result: unknown): { run_id: string; uri: string; qualname: string; title: string } {
  const r = Reader.of(result, 'profile result');
  return { run_id: r.str('run_id'), uri: r.str('uri'), qualname: r.str('qualname'), title: r.str('title', '') };
}
