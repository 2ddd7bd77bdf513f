/**
 * The result of a profile (`result.json`, schema `oplens.result/1`), typed for the extension and
 * the webview. It mirrors `server/oplens/records/run.py` (dataclass `Run`) field for field; the
 * extension builds it from the wire with `parseRun` (extension/src/core/parseRun.ts), which fills
 * defaults exactly as the Python `from_dict` does. All times are microseconds per iteration.
 */

export const RUN_SCHEMA = 'oplens.result/1';

/** Per-iteration distribution of one figure, in µs. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** The median's confidence interval (the server's analysis/stats.py says at which level). */
  ci_low: number;
  ci_high: number;
}

/**
 * One figure across the ranks of a distributed capture (`oplens run --nproc-per-node`), µs per
 * call: null for a single process.
 */
export interface RankSpread {
  /** In the order of `Run.ranks`. */
  per_rank: number[];
  median: number;
  min: number;
  max: number;
  /** The rank (its global number) with the max; -1 when unknown. */
  slowest: number;
}

export interface SourceRef {
  file: string;
  line: number;
  function: string;
}

/** One operator name (a key_averages row), per iteration. */
export interface OpStat {
  name: string;
  calls: number;
  self_cpu_us: number;
  self_device_us: number;
  /** Share of the run's self device time, in %. */
  pct: number;
  device_spread: Spread;
  /** `collective` (all_reduce, all_gather, ...: time waiting for the other ranks), else ''. */
  category: string;
  /** A distributed run: self device time per rank. */
  ranks: RankSpread | null;
}

/** A line of a same-file helper called from a target line (drill-down). */
export interface InnerLine {
  function: string;
  line: number;
  self_cpu_us: number;
  self_device_us: number;
}

/** A block a line allocated that the same call freed again (paired by its address). */
export interface Temporary {
  bytes: number;
  /** The line that freed it (the def line: when the function returned). */
  freed_line: number;
}

/** A `torch.compile` region called on a line, with the source lines its graph fused. */
export interface CompiledRegion {
  name: string;
  calls: number;
  self_device_us: number;
  fused: SourceRef[];
}

/** One engine of a NeuronCore in a compiled graph, as the vendor's processed profile gives it (never estimated). */
export interface EngineTime {
  /** Tensor | Vector | Scalar | GpSimd | Sync | DMA */
  engine: string;
  /** Per call of the graph: time with at least one instruction (DMA: packet) in flight. */
  active_us: number;
  /** Of the graph's device time per call. */
  pct: number;
}

/** A compiled graph's (a NEFF's) engine breakdown per call, from the processed device profile. */
export interface GraphEngines {
  graph: string;
  calls: number;
  device_us: number;
  engines: EngineTime[];
  /** The line that calls it, where OpLens can tell; null where it cannot. */
  line: number | null;
  /** What was read: the tables, under which processed profile. */
  source: string;
}

export interface LineStat {
  /** 1-based line in the profiled file. */
  line: number;
  self_cpu_us: number;
  self_device_us: number;
  pct_device: number;
  pct_cpu: number;
  op_calls: number;
  ops: OpStat[];
  device_spread: Spread;
  cpu_spread: Spread;
  noisy: boolean;
  inner: InnerLine[];
  compiled: CompiledRegion[];
  /** The line's figure in each profiled iteration, in order. */
  device_samples_us: number[];
  cpu_samples_us: number[];
  /** A distributed run: the line's self device time per rank. */
  ranks: RankSpread | null;
  /** Of self_device_us, time in collective ops (waiting for the other ranks). */
  collective_us: number;
  /** The line's work in one call (analysis/work.py); null where no call recorded input shapes. */
  flops: number | null;
  bytes: number | null;
  /** FLOPs per byte. */
  intensity: number | null;
  /** Ops with no rule: their work is not counted. */
  work_unknown: string[];
  /** Its work includes torch.compile graphs counted from the graph's ops: an estimate. */
  work_estimate: boolean;
  /** Memory in that call: allocated and freed by the line's ops, the most allocated while it ran. */
  alloc_bytes: number;
  freed_bytes: number;
  peak_bytes: number;
  /** The largest block it allocated that the call freed again, and the line that freed it. */
  temporary: Temporary | null;
  /** Against the device's ceilings (Run.device): the dtype of its FLOPs, its bound, how close to the
   * roofline, the time at the roofline and what is left. */
  dtype: string;
  bound: string;
  roofline_pct: number | null;
  floor_us: number | null;
  headroom_us: number | null;
  /** Achieved: its FLOPs and bytes in one call over its self time per call. */
  flop_per_s: number | null;
  bytes_per_s: number | null;
  /** Neuron: the engine breakdown of the compiled graph this line calls (Run.engine_graphs); empty where none. */
  engines: EngineTime[];
  engine_graph: string;
}

export interface Target {
  /** Path on the server's host. */
  file: string;
  qualname: string;
  first_line: number;
  last_line: number;
  source_sha256: string;
  def_line: number;
  /** The function's text as profiled. */
  source: string;
}

export type DeviceLabel = 'NEURON' | 'CUDA' | 'CPU' | string;

export interface BackendInfo {
  name: string;
  device_label: DeviceLabel;
  torch_version: string;
  device_name: string;
  requested: string;
  note: string;
  details: Record<string, unknown>;
  /** Traps met in this run, each naming its fix (dropped events, empty NTFFs, too little warm-up, ...). */
  warnings: string[];
}

export interface Config {
  warmup: number;
  iters: number;
  /** Iterations run under the started profiler and not recorded (its start-up cost). */
  profiler_warmup: number;
  args: string;
  timeout_s: number;
  record_shapes: boolean;
}

export interface Totals {
  self_cpu_us: number;
  self_device_us: number;
  op_calls: number;
  wall_us: Spread;
  unattributed_device_us: number;
  device_samples_us: number[];
  cpu_samples_us: number[];
  /** A distributed run: self device time per rank. */
  ranks: RankSpread | null;
  collective_us: number;
  /** The function's work in one call (the lines' sum). */
  flops: number | null;
  bytes: number | null;
  /** The most memory allocated since the call began. */
  peak_bytes: number;
  /** Whose allocator: "device" | "host" ("" where not recorded). */
  memory: string;
  floor_us: number | null;
  headroom_us: number | null;
}

/** The ceilings a run's roofline used. */
export interface DeviceRoof {
  name: string;
  /** FLOP/s per dtype. */
  dtype_peaks: Record<string, number>;
  bytes_per_s: number;
  /** "measured" | "spec" */
  source: string;
  measured_at: string;
}

export interface Compile {
  first_call_us: number;
  compile_us: number;
  graphs: number;
}

/**
 * How a function was captured inside the user's own program (`oplens run`, Profile Function in
 * Program…): the calls it saw, skipped and profiled. The per-call figures are the run's
 * per-iteration ones.
 */
export interface Capture {
  /** The script's path, or `-m module`. */
  program: string;
  argv: string[];
  cwd: string;
  /** Calls of the target on the capturing thread (nested calls not counted). */
  calls_seen: number;
  /** Run untouched first (compiles, warm caches). */
  calls_skipped: number;
  /** Profiled but dropped: the profiler's start-up lands on them. */
  calls_profiler_warmup: number;
  /** The run's iterations. */
  calls_profiled: number;
  /** torch.compile graphs that fused the function's lines (which then never run). */
  compiled_graphs: number;
  /** The program ended before the window was complete. */
  partial: boolean;
  /** Why partial. */
  reason: string;
  /** The program's exit status (null: stopped by OpLens, or unknown). */
  exit_code: number | null;
  /** Ended by OpLens once the window was captured. */
  stopped: boolean;
}

export interface Insight {
  line: number;
  kind: string;
  message: string;
  evidence: string;
  /** A distributed run's insight about one rank (a `straggler`); null otherwise. */
  rank: number | null;
}

/** One rank of a distributed capture: who it was, and where its own run (its part) is. */
export interface RankInfo {
  rank: number;
  local_rank: number;
  world_size: number;
  host: string;
  /** e.g. `cpu`, `cuda:1`, `neuron:3`. */
  device: string;
  /** The rank's own run directory, relative to the run's (`ranks/1`): its `result.json` is there. */
  part: string;
  pid: number;
  /** Why this rank has no part (it raised, exited, was killed); '' when it has one. */
  failed: string;
}

/** A compiled graph (NEFF) and its device trace (NTFF), paired by the hash in both names. */
export interface NeffNtffPair {
  hash: string;
  neff: string;
  ntff: string;
  /** 0: an empty trace (a NeuronCore that ran nothing). */
  ntff_bytes: number;
}

/** Paths are relative to `run_dir` unless absolute (both on the server's host). */
export interface Artifacts {
  trace_json: string;
  device_profile_dir: string;
  neff_ntff_pairs: NeffNtffPair[];
  worker_log: string;
  files: string[];
  /** Neuron: NeuronConfig's profile_output_dir (what Neuron Explorer ingests). */
  profile_output_dir: string;
  /** Neuron: trace_info.pb, ntrace.pb, ... */
  system_trace_files: string[];
  /** Neuron: every NEFF and NTFF by its documented naming, and each process's profile directory. */
  neffs: NeffFile[];
  ntffs: NtffFile[];
  neuron_profiles: NeuronProfileDir[];
}

/** A compiled graph in a Neuron profile: `session` neff_<hash>_vnc_<n>.neff, `model` neff_<hash>.neff, `graph` neffs/graph_<hash>.neff. */
export interface NeffFile {
  path: string;
  form: string;
  hash: string;
  core: number | null;
}

/** A device trace: `session` profile_nc_<n>_session_<m>.ntff, `model` <hash>_instid_<i>_vnc_<n>.ntff, `capture`. */
export interface NtffFile {
  path: string;
  form: string;
  core: number | null;
  session: number | null;
  rank: number | null;
  hash: string;
  /** 0: an empty trace (a NeuronCore that ran nothing). */
  bytes: number;
}

/** One process's profile directory; `system` holds trace_info.pb + ntrace.pb (Explorer ingests it with -d). */
export interface NeuronProfileDir {
  dir: string;
  kind: string;
  neffs: string[];
  ntffs: string[];
  rank: number | null;
  framework_trace: string;
}

export interface Run {
  schema: string;
  run_id: string;
  run_dir: string;
  created: string;
  target: Target;
  backend: BackendInfo;
  config: Config;
  totals: Totals;
  lines: LineStat[];
  ops: OpStat[];
  insights: Insight[];
  artifacts: Artifacts;
  compile: Compile;
  /**
   * Set for a function captured inside a program; null for a profile of the function alone.
   * Absent in results written before captures existed.
   */
  capture?: Capture | null;
  /**
   * A distributed capture (merged over its ranks): each rank and its part, in rank order; empty
   * for a single process. The headline figures are then means over the ranks, and lines, ops and
   * totals carry their spread across ranks (`ranks`).
   */
  ranks: RankInfo[];
  /** The ceilings of the lines' bound and roofline; null where there is none. */
  device: DeviceRoof | null;
  timings_ms: Record<string, number>;
  /** What each figure is: mean, trimmed-mean share, median with its confidence interval (by field). */
  estimators: Record<string, string>;
  /** Neuron: each compiled graph's engine breakdown from the processed device profile (`oplens explorer`). */
  engine_graphs: GraphEngines[];
  /** Why there is no engine breakdown, or what is missing ("" when there is nothing to say). */
  engine_note: string;
}

/** One row of `oplens.compare`'s summary (the case study's side-by-side table). */
export interface CompareRow {
  variant: string;
  run_id: string;
  device_label: DeviceLabel;
  self_device_us: number;
  self_cpu_us: number;
  op_calls: number;
  /** Baseline (the first row) device time over this row's; 0 when this row has no device time. */
  speedup: number;
}
