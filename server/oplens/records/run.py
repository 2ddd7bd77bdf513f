"""The result of a profile: plain typed records, serialised as `result.json`.

One `Run` crosses every boundary (worker → engine → CLI/LSP → editor). All times are
microseconds *per iteration*. The primary figures (`self_cpu_us`, `self_device_us`) are means
over the profiled iterations less the calls that stalled (`Totals.outliers`), so per-line figures
sum exactly to the totals; each also has a `Spread` (median, min, max over every iteration) for
judging noise.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from oplens.records.spread import RankSpread

SCHEMA = "oplens.result/1"


@dataclass
class Spread:
    """Per-iteration distribution of one figure, in µs."""

    median: float = 0.0
    min: float = 0.0
    max: float = 0.0
    ci_low: float = 0.0  # the median's confidence interval (analysis/stats.py: CONFIDENCE)
    ci_high: float = 0.0


@dataclass
class SourceRef:
    file: str
    line: int
    function: str = ""


@dataclass
class OpStat:
    """One operator name (key_averages row), per iteration."""

    name: str
    calls: float
    self_cpu_us: float
    self_device_us: float
    pct: float = 0.0  # share of the run's self device time
    device_spread: Spread = field(default_factory=Spread)
    category: str = ""  # "collective": all_reduce, all_gather, ... (c10d, gloo, NCCL, the Neuron collectives)
    ranks: RankSpread | None = None  # a distributed run: self device time per rank


@dataclass
class InnerLine:
    """A line of a same-file helper called from a target line (drill-down)."""

    function: str
    line: int
    self_cpu_us: float
    self_device_us: float


@dataclass
class FusedLineTime:
    """One source line a compiled graph fused, with its share of the graph's device time: the device
    profile's instructions that name the line (Neuron: `Instruction.stack_frame_ids`), never estimated."""

    file: str
    line: int
    function: str = ""
    self_device_us: float = 0.0  # per iteration
    pct: float = 0.0  # of the region's device time


@dataclass
class RuntimeFusion:
    """Device executions that each carried the work of several ops (Neuron's Adaptive Eager Execution fuses queued
    ops into one execution, backends/neuron/systrace.py): all their time is on the line whose op launched them
    (`launched_by`); every line they covered names them, so no line's time is silently another's."""

    launched_by: int
    lines: list[int]  # the lines whose ops they carried, in launch order, `launched_by` first
    ops: list[str]  # the top-level ops they carried, in launch order
    executions: float  # per iteration
    device_us: float  # per iteration, all of it in `launched_by`'s self device time


@dataclass
class CompiledRegion:
    """A `torch.compile` region called on a line, with the source lines its graph fused."""

    name: str  # e.g. "Torch-Compiled Region: 0/0"
    calls: float
    self_device_us: float  # device time of everything inside the region
    fused: list[SourceRef] = field(default_factory=list)
    split: list[FusedLineTime] = field(default_factory=list)  # its device time per fused line, where the device says
    split_note: str = ""  # how the split was made, or why there is none (and how to get it)


@dataclass
class EngineTime:
    """One engine of a NeuronCore in a compiled graph, as the vendor's processed profile gives it
    (Neuron Explorer's Parquet tables, read by backends/neuron/engines.py); never estimated."""

    engine: str  # Tensor | Vector | Scalar | GpSimd | Sync | DMA
    active_us: float  # per call of the graph: time with at least one instruction (DMA: packet) in flight
    pct: float  # of the graph's device time per call


@dataclass
class MeasuredEfficiency:
    """A line's (or the function's) efficiency as the device measured it: Neuron Explorer's per framework op
    tables (`FrameworkNode`: mfu, hfu, mbu_per_interval, hbm_read_bytes, hbm_write_bytes; `Summary`:
    mm_arithmetic_intensity, peak_flops_bandwidth_ratio; `ThrottleSummary`), read by
    backends/neuron/efficiency.py, each op's figure weighted by its executions' device time. A figure the
    profile does not hold is None (never 0) and `missing` says which table or column it would come from."""

    mfu_pct: float | None = None  # Model FLOPs Utilization, % (the Tensor Engine's useful matmul work)
    hfu_pct: float | None = None  # Hardware FLOPs Utilization, % (with the compiler's transposes)
    mbu_pct: float | None = None  # Memory Bandwidth Utilization, % (HBM)
    hbm_bytes: float | None = None  # HBM bytes read + written in one call
    intensity: float | None = None  # Summary.mm_arithmetic_intensity (matmul FLOPs per HBM byte)
    ridge: float | None = None  # Summary.peak_flops_bandwidth_ratio: memory-bound below it, compute-bound above
    throttled_pct: float | None = None  # ThrottleSummary.throttle_active_time_percent: the NeuronCore held back
    bound: str = ""  # compute | memory | neither (from mfu_pct and mbu_pct); "": neither figure measured
    covered_pct: float = 0.0  # of the line's device time, the executions whose graph has measured figures
    ops: list[str] = field(default_factory=list)  # the framework ops (FrameworkNode.node_name) measured
    missing: list[str] = field(default_factory=list)  # figures not measured, naming the table/column absent


@dataclass
class GraphEngines:
    """A compiled graph's (a NEFF's) engine breakdown per call, from the processed device profile."""

    graph: str  # the NEFF as the profile names it (ExecutionInfo.neff_name, NeffHeader.network_name)
    calls: int  # its executions in the profile
    device_us: float  # its device time per call
    engines: list[EngineTime] = field(default_factory=list)
    line: int | None = None  # the line that calls it, where OpLens can tell (None: it cannot)
    source: str = ""  # what was read: the tables, under which processed profile


@dataclass
class Temporary:
    """A block a line allocated that the same call freed again (paired by its address)."""

    bytes: int
    freed_line: int  # the line that freed it (the def line: when the function returned)


@dataclass
class LineStat:
    line: int
    self_cpu_us: float
    self_device_us: float
    pct_device: float
    pct_cpu: float
    op_calls: float  # top-level operator calls per iteration
    ops: list[OpStat] = field(default_factory=list)
    device_spread: Spread = field(default_factory=Spread)
    cpu_spread: Spread = field(default_factory=Spread)
    noisy: bool = False
    inner: list[InnerLine] = field(default_factory=list)
    compiled: list[CompiledRegion] = field(default_factory=list)
    # The line's figure in each profiled iteration, in order (what spreads and diffs are made of).
    device_samples_us: list[float] = field(default_factory=list)
    cpu_samples_us: list[float] = field(default_factory=list)
    # The line's host wall time per call: its ranges, from its start to the next line's start (what it calls
    # included); of that, the time no operator ran (wall less its ops' inclusive host time: Python, a wait, I/O);
    # per profiled iteration in wall_samples_us. 0 in runs older than the record.
    wall_us: float = 0.0
    wall_spread: Spread = field(default_factory=Spread)
    outside_ops_us: float = 0.0
    wall_samples_us: list[float] = field(default_factory=list)
    # Of its operators' host time, the wait for the device: the runtime's synchronisations under it (a `.item()`,
    # `.cpu()`, `synchronize`), or where the runtime shows none, its device→host scalar reads on a device
    # (`aten::_local_scalar_dense`); 0 on the CPU, where an op's work is done when it returns
    wait_us: float = 0.0
    # OpLens's own line marks run on the line per call (its ranges, and its same-file helpers' lines under it) and,
    # of outside_ops_us, what they cost: measured in the same profile (a probe of empty lines marked the same way),
    # absent from a call the profiler does not watch. 0 in runs without the probe.
    marks: float = 0.0
    marks_us: float = 0.0
    ranks: RankSpread | None = None  # a distributed run: the line's self device time per rank
    collective_us: float = 0.0  # of self_device_us, time in collective ops (waiting for the other ranks)
    # The line's work in one call (analysis/work.py), from the call recorded with input shapes;
    # None where no call was. Ops with no rule are named in work_unknown, their work not counted.
    flops: float | None = None
    bytes: float | None = None
    intensity: float | None = None  # flops per byte
    work_unknown: list[str] = field(default_factory=list)
    # Its work includes torch.compile graphs counted from the graph's ops (the kernels fuse them: an
    # estimate of the work, not of how it runs).
    work_estimate: bool = False
    # The line's memory in that call (the profiler's memory events; the device's allocator where it
    # reports, else the host's): allocated and freed by its ops, and the most allocated since the
    # call began while it ran.
    alloc_bytes: int = 0
    freed_bytes: int = 0
    peak_bytes: int = 0
    temporary: Temporary | None = None  # the largest block it allocated that the call freed again
    # Against the device's ceilings (analysis/roofline.py; Run.device): the dtype its FLOPs are in,
    # why it takes its time, how close to the roofline, the time at the roofline and what is left.
    dtype: str = ""
    bound: str = ""  # compute | memory | overhead | host | unknown ("": no ceilings)
    # The ceiling the line beats (it ran faster than its floor): "memory" (its bytes/s above the
    # device memory's: its data stays in cache) | "compute" (its FLOP/s above its dtype's peak:
    # another dtype or engine) | "". Then roofline_pct is None, floor_us its time, headroom_us 0.
    above_ceiling: str = ""
    roofline_pct: float | None = None
    floor_us: float | None = None
    headroom_us: float | None = None
    flop_per_s: float | None = None  # achieved: its FLOPs in one call over its time per call
    bytes_per_s: float | None = None  # achieved: its bytes in one call over its time per call
    # Neuron: the engine breakdown of the compiled graph this line calls (Run.engine_graphs), where
    # the vendor's processed profile gives one and the graph is tied to this line; else empty.
    engines: list[EngineTime] = field(default_factory=list)
    engine_graph: str = ""
    # Neuron: its efficiency as the device measured it (MeasuredEfficiency), where the processed device profile
    # holds per framework op figures for the graphs its executions ran; None: not measured (its bound is estimated).
    measured: MeasuredEfficiency | None = None
    bound_from: str = ""  # measured (MeasuredEfficiency.bound) | estimated (the roofline above) | "" (no bound)
    # Neuron: executions the runtime fused that carried this line's ops (its own, or another line's that launched
    # them), and the ops on this line that ran on the CPU (no Neuron kernel: TorchNeuron's CPU fallback).
    runtime_fused: list[RuntimeFusion] = field(default_factory=list)
    cpu_fallback: list[str] = field(default_factory=list)


SCRIPT_MODULE = "<script>"  # Target.module of a file imported by its path, not as a module of a package


@dataclass
class Target:
    file: str
    qualname: str
    first_line: int
    last_line: int
    source_sha256: str
    def_line: int = 0  # the `def` line (first_line includes decorators)
    source: str = ""  # the function's text as profiled (first_line..last_line): what a diff maps lines by
    # The notebook (.ipynb, on the host) whose cell defines the function, for a run of the `%oplens` magic
    # ("": a function of a file, or a kernel that did not say which notebook it runs)
    notebook: str = ""
    # The module it was imported as: a package module's dotted name (`mypkg.layers.mlp`), "<script>" for a file
    # imported by its path ("": not imported by OpLens, e.g. a capture inside the program)
    module: str = ""

    def imported_as(self) -> str:
        """How the worker imported the file, in words ("" where it did not say)."""
        if not self.module:
            return ""
        return "imported by path (a script)" if self.module == SCRIPT_MODULE else f"imported as {self.module}"

    def home(self) -> str:
        """The file whose editor shows the run: its notebook (a cell's `file` is the kernel's), else its file."""
        return self.notebook or self.file


@dataclass
class BackendInfo:
    name: str  # cpu | cuda | neuron
    device_label: str  # CPU | CUDA | NEURON
    torch_version: str = ""
    device_name: str = ""
    requested: str = ""  # what the user asked for (e.g. "auto")
    note: str = ""  # why auto chose this backend, or what a fallback means
    details: dict[str, Any] = field(default_factory=dict)  # e.g. the NeuronConfig used
    # Traps met in this run, each naming the fix (dropped events, empty NTFFs, too little warm-up, ...)
    warnings: list[str] = field(default_factory=list)


@dataclass
class SideBySide:
    """A run measured beside other variants in one worker, one call of each per round, the order rotated each
    round (`oplens compare`, worker/sidebyside.py): its calls share the machine's moments with theirs, so
    the `k`-th call of each variant's samples ran in the same round."""

    group: str  # the same for every run of the compare
    variants: list[str]  # every variant measured, as FILE::QUALNAME, the baseline first
    index: int  # this run's place among them
    # Its calls in the shared trace: oplens.iter:<k> for each k (the trace holds every variant's calls)
    trace_calls: list[int] = field(default_factory=list)
    # Its calls in the rounds timed plainly before the profiler started (no profiler, no line marks), µs, one a
    # round: what a speed-up on the host is made of (engine/compare.py); [] where they could not all be timed
    plain_calls_us: list[float] = field(default_factory=list)
    # An edited function's earlier version measured beside the edit (engine/earlier.py): the stored run whose
    # version this is ("": a compare's variant)
    earlier_of: str = ""


@dataclass
class EarlierVersion:
    """A function profiled after an edit, and its version before the edit (engine/earlier.py): the earlier
    run's module text loaded beside the new one and measured in the same worker, interleaved (`measured_run`),
    or, where it could not be, why (`why_not`: a diff against `run_id` is then across two processes)."""

    run_id: str  # the stored run of the earlier version (the function's latest run before this one)
    measured_run: str = ""  # the earlier version's run measured beside this one ("" where it could not be)
    why_not: str = ""  # why it was not measured beside this one, in words ("" where it was)


@dataclass
class Config:
    warmup: int
    iters: int
    profiler_warmup: int = 0  # iterations run under the started profiler before the measured ones
    args: str = ""
    timeout_s: float = 0.0
    record_shapes: bool = True
    # Each iteration ran a notebook statement that reaches the function (`%oplens`): the ops outside its lines
    # were not its own (Totals.outside_device_us), as `oplens analyze` derives them again
    statement: bool = False
    side_by_side: SideBySide | None = None  # measured beside other variants (a compare), else alone
    earlier: EarlierVersion | None = None  # profiled after an edit: its earlier version, measured beside it or not
    # What marked the lines: `monitoring` (sys.monitoring's local events, Python 3.12+) or `settrace` ("": not said)
    line_marks: str = ""


@dataclass
class OutlierCall:
    """A profiled call left out of the headline figures: the same work as the other calls (the same ops
    on the same lines, the same argument shapes), far slower (analysis/outliers.py says how far)."""

    call: int  # its index among the profiled calls, from 0 (as in the *_samples_us lists)
    device_us: float  # its self device time, all lines (on the CPU: its self CPU time)
    cpu_us: float  # its self CPU time, all lines
    slower: float  # × the median call of the same work, by the figure that made it an outlier
    rank: int | None = None  # a merged run of several ranks: the rank whose call it was


@dataclass
class Outliers:
    """Which profiled calls the headline figures leave out (`Totals.outliers`, analysis/outliers.py): every
    µs figure of the lines, ops and totals (and the roofline and insights made of them) is the mean over
    the `kept` calls; the per-call samples and spreads keep every call."""

    calls: list[OutlierCall] = field(default_factory=list)  # empty: no call was left out
    kept: int = 0  # the calls the headline figures are the mean of
    profiled: int = 0  # the calls profiled
    works: int = 0  # kinds of work among them (calls of different ops or argument shapes are never compared)
    all_device_us: float = 0.0  # the total self device time's mean over every call, the outliers included
    all_cpu_us: float = 0.0
    note: str = ""  # in words, for every view ("" where no call was left out)


@dataclass
class Totals:
    self_cpu_us: float
    self_device_us: float
    op_calls: float
    wall_us: Spread = field(default_factory=Spread)
    # Device time no CPU op claimed (e.g. a kernel with no launching op); not in any line.
    unattributed_device_us: float = 0.0
    # A notebook statement's own device time per iteration, around the function's calls (`%oplens -f f
    # train(x)`: the rest of train); not the function's, so in no line and no total.
    outside_device_us: float = 0.0
    device_samples_us: list[float] = field(default_factory=list)  # per profiled iteration, all lines
    cpu_samples_us: list[float] = field(default_factory=list)
    ranks: RankSpread | None = None  # a distributed run: self device time per rank
    collective_us: float = 0.0
    flops: float | None = None  # the function's work in one call (the lines' sum)
    bytes: float | None = None
    peak_bytes: int = 0  # the most memory allocated since the call began, at any point of it
    memory: str = ""  # whose allocator the memory figures are: "device" | "host" ("": not recorded)
    memory_note: str = ""  # where they were read, where not the profiler's memory events (Neuron's counters)
    floor_us: float | None = None  # the lines' time at the roofline, summed
    headroom_us: float | None = None
    # The calls left out of every figure above as stalled (None: a run older than the record)
    outliers: Outliers | None = None
    measured: MeasuredEfficiency | None = None  # Neuron: the measured lines' figures, weighted by their device time
    # The smallest change of the total per call this run tells from its own noise, % of its median call
    # (analysis/stats.py: noise_floor); 0: too few calls to say
    noise_floor_pct: float = 0.0
    # The profiled calls' host wall time per call (their iteration ranges), and what of it no line of the function
    # ran in (its entry and exit, around its lines): the lines' wall times sum to the first less the second
    call_wall_us: float = 0.0
    outside_lines_us: float = 0.0


@dataclass
class Compile:
    """First-call cost, reported apart from the steady state (torch.compile compiles on it)."""

    first_call_us: float = 0.0
    compile_us: float = 0.0  # first call minus the steady-state median, where a compile happened
    graphs: int = 0


@dataclass
class Insight:
    line: int
    kind: str
    message: str
    evidence: str = ""
    rank: int | None = None  # a distributed run's insight about one rank (a straggler)


@dataclass
class NeffNtffPair:
    """A compiled graph (NEFF) and its device trace (NTFF), paired by the hash in both names."""

    hash: str
    neff: str  # paths relative to the run directory
    ntff: str
    ntff_bytes: int = 0  # 0: an empty trace (a NeuronCore that ran nothing)


@dataclass
class NeffFile:
    """A compiled graph in a Neuron profile, in one of the documented namings (backends/neuron/artifacts.py)."""

    path: str  # relative to the run directory (or to the profile directory given to `oplens explorer`)
    form: str  # "session" neff_<hash>_vnc_<n>.neff | "model" neff_<hash>.neff | "graph" neffs/graph_<hash>.neff
    hash: str = ""
    core: int | None = None  # the virtual NeuronCore of a session-form NEFF


@dataclass
class NtffFile:
    """A device trace in a Neuron profile."""

    path: str
    form: str  # "session" profile_nc_<n>_session_<m>.ntff | "model" <hash>_instid_<i>_vnc_<n>.ntff | "capture" <name>.ntff
    core: int | None = None  # NeuronCore
    session: int | None = None
    rank: int | None = None  # from a _rank_<id> suffix (multi-worker captures)
    hash: str = ""  # model form: the NEFF it pairs with
    bytes: int = 0  # 0: an empty trace (a NeuronCore that ran nothing)


@dataclass
class NeuronProfileDir:
    """One process's profile directory (`<instance>_pid_<pid>[/<timestamp>]`, one per rank)."""

    dir: str
    kind: str  # "system" (trace_info.pb + ntrace.pb: Explorer ingests the directory) | "device" (NTFFs only)
    neffs: list[str] = field(default_factory=list)  # paths, the NEFFs that belong to this profile
    ntffs: list[str] = field(default_factory=list)
    rank: int | None = None
    framework_trace: str = ""  # trace.json or neuron_framework_trace_rank_<N>.json


@dataclass
class Artifacts:
    """What a run leaves besides result.json; paths are relative to the run directory."""

    trace_json: str = ""
    device_profile_dir: str = ""  # Neuron: <out>/<instance>_pid_<pid>/<timestamp> (the newest)
    neff_ntff_pairs: list[NeffNtffPair] = field(default_factory=list)  # only where the naming implies a pair
    worker_log: str = ""
    files: list[str] = field(default_factory=list)  # other backend files (system traces, ...)
    profile_output_dir: str = ""  # Neuron: NeuronConfig's profile_output_dir (what Explorer ingests)
    system_trace_files: list[str] = field(default_factory=list)  # Neuron: trace_info.pb, ntrace.pb, ...
    neffs: list[NeffFile] = field(default_factory=list)
    ntffs: list[NtffFile] = field(default_factory=list)
    neuron_profiles: list[NeuronProfileDir] = field(default_factory=list)
    processed_system_trace: str = ""  # Neuron: the system trace as neuron-explorer processed it (its Parquet tables)


@dataclass
class DeviceRoof:
    """The ceilings a run's roofline used (records/ceilings.py holds the calibration itself)."""

    name: str = ""
    dtype_peaks: dict[str, float] = field(default_factory=dict)  # FLOP/s per dtype
    bytes_per_s: float = 0.0
    source: str = ""  # "measured" | "spec"
    measured_at: str = ""


@dataclass
class RankInfo:
    """One rank of a distributed capture: who it was, and where its own run (its part) is."""

    rank: int
    local_rank: int = 0
    world_size: int = 1
    host: str = ""
    device: str = ""  # e.g. "cpu", "cuda:1", "neuron:3"
    part: str = ""  # the rank's own run directory, relative to the run's ("ranks/1")
    pid: int = 0
    failed: str = ""  # why this rank has no part (it raised, exited, was killed)


@dataclass
class Capture:
    """How a function was captured inside the user's own program (`oplens run`): the calls it
    saw, skipped and profiled. The per-call figures are the run's per-iteration ones."""

    program: str  # the script's path, or "-m module"
    argv: list[str] = field(default_factory=list)  # the program's arguments
    cwd: str = ""
    calls_seen: int = 0  # calls of the target on the capturing thread (nested calls not counted)
    calls_skipped: int = 0  # run untouched first (compiles, warm caches)
    calls_profiler_warmup: int = 0  # profiled but dropped: the profiler's start-up lands on them
    calls_profiled: int = 0  # the run's iterations
    compiled_graphs: int = 0  # torch.compile graphs that fused the function's lines (which then never run)
    partial: bool = False  # the program ended before the window was complete
    reason: str = ""  # why partial
    exit_code: int | None = None  # the program's exit status (None: stopped by OpLens or still unknown)
    stopped: bool = False  # ended by OpLens once the window was captured (--stop)


# DeviceTimeSources.source: the names of the places device time is read from.
KINETO_LINKED, OP_TABLE, SYSTEM_TRACE, HOST_CPU, NO_SOURCE = "kineto_linked", "op_table", "system_trace", "cpu", "none"


@dataclass
class DeviceTimeSources:
    """Where a run's device time came from: each source OpLens measured and the one it used.

    Sources: "kineto_linked" (device activities in Kineto's raw results linked to their launching op
    by correlation id, and a PrivateUse1 device's time on the op itself), "op_table" (the self device
    time on the profile's FunctionEvents, what `key_averages()` sums as Self <DEVICE>: where the vendor
    propagates device time into the table, e.g. NeuronConfig(correlate_device_time=True)),
    "system_trace" (the runtime's system trace), "cpu" (no device: device time is CPU time), "none"."""

    source: str  # the one the lines' device time came from
    totals_us: dict[str, float] = field(default_factory=dict)  # each source measured: its total, µs per iteration
    note: str = ""  # in words: why that one; where none gave device time, the fix
    found: dict[str, str] = field(default_factory=dict)  # each source tried: what it found, in words (or why nothing)
    mismatch: str = ""  # two sources' totals apart by more than SOURCES_AGREE_WITHIN: both figures, in words


# Two device-time sources of one run agree where their totals per iteration are this close (relative to
# the larger): the op table and the system trace time the same executions, from two ends.
SOURCES_AGREE_WITHIN = 0.05


@dataclass
class Run:
    target: Target
    backend: BackendInfo
    config: Config
    totals: Totals
    lines: list[LineStat]
    ops: list[OpStat]
    insights: list[Insight] = field(default_factory=list)
    artifacts: Artifacts = field(default_factory=Artifacts)
    compile: Compile = field(default_factory=Compile)
    capture: Capture | None = None  # set by `oplens run`: the function captured inside a program
    ranks: list[RankInfo] = field(default_factory=list)  # a distributed capture: its ranks (merged run)
    device: DeviceRoof | None = None  # the ceilings of the lines' bound and roofline
    timings_ms: dict[str, float] = field(default_factory=dict)  # where the worker spent its time
    estimators: dict[str, str] = field(default_factory=dict)  # what each figure is (analysis/stats.py)
    run_id: str = ""
    run_dir: str = ""
    created: str = ""
    schema: str = SCHEMA
    # Neuron: each compiled graph's engine breakdown from the processed device profile (attached by
    # `oplens explorer`, which processes it), and in words why there is none or what is missing.
    engine_graphs: list[GraphEngines] = field(default_factory=list)
    engine_note: str = ""
    device_time: DeviceTimeSources | None = None  # where device time came from (None: a run older than the record)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        return from_dict(cls, data)


T = TypeVar("T")


def from_dict(cls: type[T], data: Any) -> T:
    """Build dataclass `cls` from plain JSON data, recursively; unknown keys are ignored
    (a newer writer's extra fields), missing keys take their defaults."""
    return typing.cast(T, _convert(cls, data))


@functools.cache
def _fields(tp: type) -> tuple[tuple[str, Any], ...]:
    """A dataclass's fields with their resolved types, once per class (resolving the hints took over
    half of reading a result.json)."""
    hints = typing.get_type_hints(tp)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(tp))


def _convert(tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            return tp()
        return tp(**{name: _convert(hint, value[name]) for name, hint in _fields(tp) if name in value})
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_convert(item, v) for v in value]
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if value is None else _convert(args[0], value)
    return value
