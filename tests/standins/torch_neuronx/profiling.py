"""STAND-IN for `torch_neuronx.profiling` (tests only): NeuronConfig, ProfileMode, NeuronProfiler.

Writes the layout of the docs' "Expected output" (how-to-profile-workload.rst) on `export_trace`:

   ./profile_output/
   ├── <instance-id>_pid_<pid_0>/
   │   └── <timestamp>/
   │       ├── cpu_util.pb                 # CPU utilization
   │       ├── host_mem.pb                 # Host memory
   │       ├── neff_<hash_0>_vnc_0.neff
   │       ├── neff_<hash_1>_vnc_0.neff
   │       ├── ntrace.pb                   # System profile trace
   │       ├── profile_nc_0_session_0.ntff # Device trace (NeuronCore 0)
   │       ├── trace.json                  # Framework trace
   │       └── trace_info.pb               # System profile metadata

per mode: DEVICE the NEFFs and NTFFs, RUNTIME trace_info.pb + ntrace.pb, CPU_UTIL cpu_util.pb,
HOST_MEMORY host_mem.pb. Environment (set by the test):
  STANDIN_API=early|config|documented|correlate
                          which generation of the profiling API this module offers (unset: today's, `correlate`
                          unless STANDIN_NO_CORRELATE=1): `early` the early NeuronProfiler context manager of
                          TorchNeuron's early source (`_EarlyNeuronProfiler`, no NeuronConfig, no ProfileMode),
                          `config` the documented NeuronConfig without correlate_device_time, `correlate` with it,
                          `documented` exactly the 2.33 page's six parameters (how-to-profile-pytorch.rst)
  STANDIN_MAPPING_WARMUP=1
                          (early) the STANDIN_EXEC_BEFORE executions were launched while the framework mapping was on
                          (the profiler's own warm-up), so they are in framework_mapping_*.json too
  STANDIN_NO_CORRELATE=1  an older NeuronConfig without `correlate_device_time` (nor precache_node_info)
  STANDIN_NEFFS=N         graphs compiled (NEFFs written in DEVICE mode, default 1)
  STANDIN_CORES=N         NeuronCores with a session NTFF (default 1)
  STANDIN_EMPTY_NTFFS=K   the last K of those NTFFs are empty (idle NeuronCores)
  STANDIN_NO_NEFF=1       NTFFs only (NEFFs left in the compiler's cache)
  STANDIN_NEFF_NEEDS_CACHE=1
                          session NEFFs only where a NEFF cache dir is given (TORCH_NEURONX_NEFF_CACHE_DIR), as
                          the docs say ("NEFFs appear only with a NEFF cache dir", docs/architecture.md's Neuron facts)
  STANDIN_DEFAULT_NEFF_CACHE=DIR
                          the stand-in's /tmp/neff_cache, where the compiled NEFFs go without a cache dir
  STANDIN_IGNORE_NEFF_CACHE_ENV=1
                          a TorchNeuron that does not read TORCH_NEURONX_NEFF_CACHE_DIR (its NEFFs go to the default)
  STANDIN_DROPPED=N       print the runtime's "N trace events were dropped" warning
  STANDIN_OP_DEVICE_US=aten::mul=7,aten::mm=30
                          known device time (µs) per call of each named op, put into the op table where
                          NeuronConfig(correlate_device_time=True) was given (see `_correlate`)
  STANDIN_EXEC_US=aten::mul=7,Torch-Compiled Region*=50
                          known device executions in the RUNTIME system trace (see `_system_trace`): each call
                          of a named op (a trailing * matches a prefix) launches one execution of that many µs
  STANDIN_LNC=2           each execution on two physical NeuronCores (one nc_exec_running row per core)
  STANDIN_EXEC_BEFORE=N   N more executions before the profiled calls (the warm-up's), on a framework row of their own
  STANDIN_FUSE=N          Adaptive Eager Execution (see `_fuse`): each run of N consecutive queued launches of an iteration
                          is one execution, the queue's rest flushed at the synchronize after the iteration; off under
                          torch.use_deterministic_algorithms / set_deterministic_debug_mode, as the 2.33 docs say
  STANDIN_CPU_FALLBACK=aten::x,aten::y
                          ops that "fell back to CPU" (`torch_neuronx.get_fallback_ops()`, see __init__.py): they launch
                          no execution even where STANDIN_EXEC_US names them
  STANDIN_NEFF_FRAMES=FILE:FUNCTION:LINE=W;FILE:FUNCTION:LINE+FILE:FUNCTION:LINE=W;...
                          the framework debug info compiled into each NEFF (only where NEURON_FRAMEWORK_DEBUG=1, as
                          the docs say it must be set before compiling): its instructions, W the share of the
                          execution's time of each, naming one or several (fused, +) source lines
"""

from __future__ import annotations

import enum
import os
import sys
import time
from pathlib import Path
from typing import Any

from torch._C._profiler import _ExperimentalConfig

from torch_neuronx import record


class ProfileMode(enum.Enum):
    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


class _Config(_ExperimentalConfig):  # passed as torch.profiler's experimental_config
    def _setup(self, kwargs: dict[str, Any]) -> None:
        modes = kwargs["modes"]
        assert all(isinstance(m, ProfileMode) for m in modes), modes
        assert isinstance(kwargs["profile_output_dir"], str)
        self.kwargs = kwargs
        record("NeuronConfig", **{**kwargs, "modes": [m.name for m in modes]})


class _NeuronConfigWithCorrelate(_Config):
    def __init__(
        self,
        modes: list[ProfileMode],
        profile_output_dir: str = "./profile_output",
        capture_enabled_for_nc: str | None = None,
        max_events_per_nc: int = 1_000_000,
        neff_cache_dir: str | None = None,
        precache_node_info: bool = True,
        correlate_device_time: bool = False,
    ) -> None:
        super().__init__()
        self._setup(dict(locals_of(locals())))


class _NeuronConfigOlder(_Config):
    def __init__(
        self,
        modes: list[ProfileMode],
        profile_output_dir: str = "./profile_output",
        capture_enabled_for_nc: str | None = None,
        max_events_per_nc: int = 1_000_000,
        neff_cache_dir: str | None = None,
    ) -> None:
        super().__init__()
        self._setup(dict(locals_of(locals())))


class _NeuronConfigDocumented(_Config):
    """The documented form only (aws-neuron-sdk 2.33, tools/neuron-explorer/how-to-profile-pytorch.rst, "NeuronConfig
    parameters"): modes, capture_enabled_for_nc, profile_output_dir, max_events_per_nc, neff_cache_dir,
    precache_node_info, and nothing else: no correlate_device_time (no page names it), no **kwargs. The defaults are
    the stand-in's (the page's table gives none for profile_output_dir beyond the examples' ./profile_output)."""

    def __init__(
        self,
        modes: list[ProfileMode],
        capture_enabled_for_nc: str | None = None,
        profile_output_dir: str = "./profile_output",
        max_events_per_nc: int = 1_000_000,
        neff_cache_dir: str | None = None,
        precache_node_info: bool = True,
    ) -> None:
        super().__init__()
        self._setup(dict(locals_of(locals())))


def locals_of(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in ("self", "__class__")}


_API = os.environ.get("STANDIN_API", "")
if _API == "documented":
    NeuronConfig: Any = _NeuronConfigDocumented
elif _API == "config" or (not _API and os.environ.get("STANDIN_NO_CORRELATE") == "1"):
    NeuronConfig = _NeuronConfigOlder
else:
    NeuronConfig = _NeuronConfigWithCorrelate


class NeuronProfiler:
    def __init__(self, config: _Config) -> None:
        self.config = config
        record("NeuronProfiler")

    def export_trace(self, prof: Any) -> None:
        kw = self.config.kwargs
        if kw.get("correlate_device_time"):
            _correlate(prof)
        run = Path(kw["profile_output_dir"]) / f"i-0standin0000000_pid_{os.getpid()}" / time.strftime("%Y%m%dT%H%M%S")
        run.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(run / "trace.json"))
        modes = set(kw["modes"])
        if ProfileMode.RUNTIME in modes:
            (run / "trace_info.pb").write_bytes(b"standin")
            (run / "ntrace.pb").write_bytes(_system_trace(run / "trace.json"))
        if ProfileMode.CPU_UTIL in modes:
            (run / "cpu_util.pb").write_bytes(b"standin")
        if ProfileMode.HOST_MEMORY in modes:
            (run / "host_mem.pb").write_bytes(b"standin")
        if ProfileMode.DEVICE in modes:
            graphs = int(os.environ.get("STANDIN_NEFFS", "1"))
            cores = int(os.environ.get("STANDIN_CORES", "1"))
            empty = int(os.environ.get("STANDIN_EMPTY_NTFFS", "0"))
            cache = _neff_cache()
            needs_cache = os.environ.get("STANDIN_NEFF_NEEDS_CACHE") == "1"
            if os.environ.get("STANDIN_NO_NEFF") != "1" and (cache[1] or not needs_cache):
                for i in range(graphs):
                    (run / f"neff_{395760075800974 + i}_vnc_0.neff").write_bytes(_neff_bytes())
            if cache[0]:  # the compiled graphs in TorchNeuron's persistent cache, its layout ab/cd/<key>.neff
                for i in range(graphs):
                    key = f"{395760075800974 + i:016x}"
                    entry = Path(cache[0]) / key[:2] / key[2:4] / f"{key}.neff"
                    entry.parent.mkdir(parents=True, exist_ok=True)
                    entry.write_bytes(b"NEFF" * 64)
            for core in range(cores):
                (run / f"profile_nc_{core}_session_0.ntff").write_bytes(b"" if core >= cores - empty else b"NTFF" * (256 + core))
        dropped = int(os.environ.get("STANDIN_DROPPED", "0"))
        if dropped:
            print(
                f"WARN[0000] Warning: {dropped} trace events were dropped during capture "
                f"(stored 530560 out of {530560 + dropped} total events).",
                file=sys.stderr,
                flush=True,
            )
        record("export_trace", directory=str(run))


def _system_trace(trace_json: Path) -> bytes:
    executions = _executions(trace_json)
    if executions is None:
        return b"standin"
    import json

    return json.dumps({"standin": "ntrace", "lnc": int(os.environ.get("STANDIN_LNC", "1")), "executions": executions}).encode()


def _executions(trace_json: Path) -> list[dict[str, Any]] | None:
    """The runtime's system trace (`ntrace.pb`) of known executions. The real file is the runtime's own
    protobuf, read only by neuron-explorer; this stand-in writes JSON that only the stand-in
    neuron-explorer reads (tests/standins/neuron_explorer.py turns it into the documented tables).

    What is imitated: the runtime traces "one `nc_exec_running` hardware event per execution" of a NEFF,
    "LNC>1 emits one `nc_exec_running` row per physical core", launched by a runtime call on the
    framework op's thread (`nrt_model_submit` among the runtime events users filter on: public trn2 code
    passing `--system-trace-filter-event-types nc_exec_running,nrt_model_submit,...`), linked by flow ids
    that are "small per-model counters" (Deep-Learning-Profiling-Tools/Tilebench,
    tilebench/neuron_diag/native_device.py). Execution is asynchronous: each starts on the device after
    its launch and after the one before it ends. Which ops launch an execution, and for how long, is
    STANDIN_EXEC_US: the op's outermost call of a named op (not a same-named op nested in it)."""
    known = os.environ.get("STANDIN_EXEC_US", "")
    per_call = {name: float(us) for name, _, us in (item.rpartition("=") for item in known.split(",") if item)}
    if not per_call:
        return None
    import json

    data = json.loads(trace_json.read_text(encoding="utf-8"))
    base = int(data.get("baseTimeNanoseconds", 0) or 0)

    def duration_us(name: str) -> float | None:
        for key, us in per_call.items():
            if name == key or (key.endswith("*") and name.startswith(key[:-1])):
                return us
        return None

    ops = sorted((e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")),
                 key=lambda e: (e["tid"], float(e["ts"])))  # fmt: skip
    launches, open_until = [], {}  # (tid) -> end of the launching op that encloses what follows
    for e in ops:
        start, end = base + round(float(e["ts"]) * 1000), base + round((float(e["ts"]) + float(e["dur"])) * 1000)
        us = duration_us(e["name"])
        if us is None or start < open_until.get(e["tid"], 0):
            continue
        open_until[e["tid"]] = end
        launches.append({"op": e["name"], "tid": e["tid"], "op_start_ns": start, "op_end_ns": end,
                         "launch_ns": start + (end - start) // 2, "us": us,
                         "seq_nr": int((e.get("args") or {}).get("Sequence number", 0))})  # fmt: skip
    fallback = set(fallback_ops())
    launches = [x for x in launches if x["op"] not in fallback]  # ran on the CPU: no device execution
    launches.sort(key=lambda x: x["launch_ns"])
    if fusing():
        launches = _fuse(launches, data, base)
    first = launches[0]["launch_ns"] if launches else base
    before = int(os.environ.get("STANDIN_EXEC_BEFORE", "0"))
    tid = launches[0]["tid"] if launches else 0
    at = [first - 10_000_000 + i * 100_000 for i in range(before)]  # 10 ms before the profiled calls
    warm = [{"op": "standin::warmup", "tid": tid, "op_start_ns": t, "op_end_ns": t + 50_000, "launch_ns": t + 25_000,
             "us": 11.0, "framework_row": True, "seq_nr": launches[0]["seq_nr"] if launches else 0,
             "warmup": True} for t in at]  # fmt: skip
    models: dict[str, int] = {}
    device_free, out = 0, []
    for x in warm + launches:
        model = models.setdefault(x["op"], 395760075800974 + len(models))  # the k-th graph: neff_<id>_vnc_0.neff
        flow = sum(1 for o in out if o["model_id"] == model)
        start = max(x["launch_ns"] + 1_000, device_free + 200)
        end = start + round(x["us"] * 1000)
        device_free = end
        # nrta_seq_id: the runtime's async sequence id, execution unit 0 (nrt_async.rst: "Monotonically increasing IDs
        # of executions. The first 16 bits are an Execution Unit ID, while the last 48 bits are a strictly ordered
        # Sequence Number")
        out.append({**x, "model_id": model, "flow": str(flow), "start_ns": start, "end_ns": end, "nrta_seq_id": len(out) + 1})
    return out


def fusing() -> int:
    """How many queued ops Adaptive Eager Execution fuses into one execution here (0: off). The 2.33 docs
    (frameworks/torch/pytorch-native-overview.rst, "Adaptive Eager Execution"): TorchNeuron analyses "sequences of
    queued operators and fus[es] them into single operators based on fusion heuristics ... dispatched as single
    operator calls", and "When ``torch.use_deterministic_algorithms()`` or ``torch.set_deterministic_debug_mode()``
    is called, TorchNeuron will ensure reproducible order of execution and Adaptive Eager Execution optimizations are
    disabled". The heuristics are not public; the stand-in's is a fixed group size (STANDIN_FUSE)."""
    import torch

    n = int(os.environ.get("STANDIN_FUSE", "0") or 0)
    deterministic = torch.are_deterministic_algorithms_enabled() or torch.get_deterministic_debug_mode() != 0
    return 0 if deterministic else n


def fallback_ops() -> list[str]:
    return [op for op in os.environ.get("STANDIN_CPU_FALLBACK", "").split(",") if op]


def _fuse(launches: list[dict[str, Any]], trace: dict[str, Any], base: int) -> list[dict[str, Any]]:
    """The launches of each iteration (`oplens.iter:<k>` ranges, where OpLens synchronises right after each closes:
    worker/calls.py) fused in runs of `fusing()` consecutive ops. What is followed, and what is assumed:

    - followed (TorchNeuron's early source, parmoham-aws/test-repo-parmoham): a fused ("concatenated") operation is
      named after its parts joined by "|" (`IrNodeManager::GenerateConcatenationOpName`: `node1->op_name + "|" +
      node2->op_name`), and its one execution is recorded in the framework mapping under every part
      (`RecordProfilerMapping`: `for (auto* cascading_op : concat_state->GetCascadingOperations())
      collector.Record(seq_id, cascading_op->pytorch_sequence_nr, ...)`); each op was submitted by its own
      dispatch (`SubmitOperationContext`), so each op's framework row keeps a flow to the execution it went into
      (the stand-in explorer links every row in `covers`) -- ASSUMED: no page shows a fused execution's flows;
    - a run filled by its last op is launched at that op; the queue's rest is launched by the iteration's
      synchronize, after the iteration's range closed (docs: "Neuron synchronizes at the operation where that
      tensor is needed"; OpLens's synchronize is outside the range) -- ASSUMED: the launch's time and thread (the
      profiled thread, 2 µs after the range) are the stand-in's;
    - the execution's time is the sum of its parts' (no fusion speed-up is modelled)."""
    n = fusing()
    ranges = [e for e in trace["traceEvents"] if e.get("ph") == "X" and str(e.get("name", "")).startswith("oplens.iter:")]
    iters = sorted((base + round(float(e["ts"]) * 1000), base + round((float(e["ts"]) + float(e["dur"])) * 1000)) for e in ranges)
    out: list[dict[str, Any]] = []

    def flush(group: list[dict[str, Any]], launch_ns: int) -> None:
        if not group:
            return
        first = group[0]
        out.append({**first, "op": "|".join(x["op"] for x in group), "us": sum(x["us"] for x in group),
                    "launch_ns": launch_ns, "seq_nrs": [x["seq_nr"] for x in group],
                    "covers": [[x["tid"], x["op_start_ns"]] for x in group]})  # fmt: skip

    for start, end in iters:
        queued = [x for x in launches if start <= x["launch_ns"] < end]
        for k in range(0, len(queued), n):
            group = queued[k : k + n]
            flush(group, group[-1]["launch_ns"] if len(group) == n else end + 2_000)
    inside = {id(x) for s, e in iters for x in launches if s <= x["launch_ns"] < e}
    out += [x for x in launches if id(x) not in inside]  # outside any iteration (the warm-up's): as they were
    return sorted(out, key=lambda x: x["launch_ns"])


def _debug_info() -> bool:
    """Whether the compile embeds framework debug info. The pages disagree on the variable: NEURON_FRAMEWORK_DEBUG=1
    ("Enables HLO-level stack trace capture. Required for the Source Code Viewer to map hardware instructions to
    Python model code", environment-variables.rst of 2.31), or XLA_IR_DEBUG=1 with XLA_HLO_DEBUG=1 ("To enable
    tracking of the stack trace information, you set these environment variables before compiling your NEFF",
    how-to-link-view-source-code.rst; Neuron 2.33's environment-variables.rst: "Compile time. NKI_DEBUG_INFO,
    XLA_IR_DEBUG, and XLA_HLO_DEBUG change what the compiler writes into the NEFF"). The stand-in takes either;
    STANDIN_DEBUG_VARS=xla: only the 2.33 pair, =framework: only the older one (a release that reads one kind)."""
    which = os.environ.get("STANDIN_DEBUG_VARS", "")
    xla = os.environ.get("XLA_IR_DEBUG") == "1" and os.environ.get("XLA_HLO_DEBUG") == "1"
    framework = os.environ.get("NEURON_FRAMEWORK_DEBUG") == "1"
    return {"xla": xla, "framework": framework}.get(which, xla or framework)


def _neff_bytes() -> bytes:
    """A NEFF: opaque bytes, with the stand-in's debug info (JSON after the magic) where compiled with the debug
    info (`_debug_info`)."""
    frames = os.environ.get("STANDIN_NEFF_FRAMES", "")
    if not frames or not _debug_info():
        return b"NEFF" * 64
    import json

    instructions = []
    for item in frames.split(";"):
        where, _, weight = item.rpartition("=")
        lines = [dict(zip(("file", "function", "line"), w.rsplit(":", 2), strict=True)) for w in where.split("+")]
        instructions.append({"frames": lines, "weight": float(weight)})
    return b"NEFF" + json.dumps({"standin_debug": instructions}).encode()


def _neff_cache() -> tuple[str, bool]:
    """Where the compiled NEFFs go, and whether it is a cache dir that was given. TorchNeuron's early source
    (parmoham-aws/test-repo-parmoham, torch_neuronx/csrc/core/cache/PersistentCacheBackend.h): "The cache
    directory is read from TORCH_NEURONX_NEFF_CACHE_DIR environment variable, falling back to /tmp/neff_cache
    if not set", laid out `cache_dir/ab/cd/abcd1234...neff`. The stand-in's /tmp/neff_cache is
    STANDIN_DEFAULT_NEFF_CACHE (none where unset: never the real one)."""
    given = "" if os.environ.get("STANDIN_IGNORE_NEFF_CACHE_ENV") == "1" else os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR", "")
    return (given or os.environ.get("STANDIN_DEFAULT_NEFF_CACHE", "")), bool(given)


def _correlate(prof: Any) -> None:
    """What `correlate_device_time=True` is observed to do: `key_averages()` shows Self NEURON per op
    (the blog this project follows prints that table), while TorchNeuron's Kineto session hands Kineto no
    device activities ("The `processTrace()` callback is a no-op. NRT writes directly to
    `profile_output_dir`", torch_neuronx/csrc/profiler/README.md of the early source,
    parmoham-aws/test-repo-parmoham; a user passes `NeuronConfig(..., correlate_device_time=True)` and
    reads `prof.key_averages().table(...)`). HOW it gets there is not public: neither that source nor the
    docs show the mechanism. This stand-in does it the one way torch's op table takes device time from
    outside Kineto: each CPU FunctionEvent's `kernels` (`FunctionEvent.append_kernel`, which is what
    `self_device_time_total` sums; torch/autograd/profiler_util.py), on the table `prof.events()` keeps,
    once the trace is ready (on_trace_ready). Kineto's raw results are left without device time."""
    known = os.environ.get("STANDIN_OP_DEVICE_US", "")
    per_call = {name: float(us) for name, _, us in (item.rpartition("=") for item in known.split(",") if item)}
    if not per_call:
        return
    from torch.autograd import DeviceType

    given = 0
    for fe in prof.events():
        if fe.device_type == DeviceType.CPU and not fe.is_async and fe.name in per_call and not _nested_in_same(fe):
            fe.append_kernel(fe.name, fe.device_index, per_call[fe.name])
            given += 1
    record("correlate", ops=given)


def _nested_in_same(fe: Any) -> bool:
    """An op inside a same-named op (a device's kernel re-dispatching it): one device execution is the
    outer call's, as STANDIN_EXEC_US counts it."""
    parent = fe.cpu_parent
    while parent is not None:
        if parent.name == fe.name:
            return True
        parent = parent.cpu_parent
    return False


class _EarlyNeuronProfiler:
    """TorchNeuron's early NeuronProfiler (parmoham-aws/test-repo-parmoham, torch_neuronx/profiling.py), offered
    where STANDIN_API=early: "Unified profiler wrapper that coordinates both NRT runtime profiling (system + device)
    and PyTorch profiling", with the real signature

        def __init__(self, pytorch_activities: list[ProfilerActivity] | None = None, record_shapes: bool = False,
                     pytorch_trace_file: str | None = None, neuron_output_dir: str = "./output",
                     event_filters: dict[str, list[str] | list[int]] | None = None)

    and its lifecycle: `start()` runs `_start_nrt_profiling` (`_C._nrt_inspect_config_allocate`, `..._set_defaults`,
    `..._set_output_dir(config_capsule, self.neuron_output_dir)`, `..._set_enable_inspect`, the event filters,
    `_C._nrt_inspect_begin_with_options`), then, where pytorch_activities are given, its own
    `profile(activities=self.pytorch_activities, record_shapes=self.record_shapes)`; `stop()` stops the torch
    profiler first (`export_chrome_trace(self.pytorch_trace_file)`, `f"{neuron_output_dir}/pytorch_trace.json"` by
    default), then NRT. The framework mapping is on only while both run (`enabled = self._nrt_active and
    self._pytorch_active`) and is dumped when it goes off (`framework_mapping_<YYYYmmdd_HHMMSS_mmm>.json`). The
    runtime's side is the stand-in `_C` (tests/standins/torch_neuronx/_C.py)."""

    def __init__(
        self,
        pytorch_activities: list[Any] | None = None,
        record_shapes: bool = False,
        pytorch_trace_file: str | None = None,
        neuron_output_dir: str = "./output",
        event_filters: dict[str, list[str] | list[int]] | None = None,
    ) -> None:
        self.pytorch_activities = pytorch_activities or []
        self.record_shapes = record_shapes
        self.neuron_output_dir = neuron_output_dir
        self.pytorch_trace_file: str | None = None
        if self.pytorch_activities:
            self.pytorch_trace_file = f"{neuron_output_dir}/{pytorch_trace_file or 'pytorch_trace.json'}"
        self.event_filters = event_filters
        self._is_active = self._nrt_active = self._pytorch_active = self._framework_mapping_active = False
        self._pytorch_profiler: Any = None
        record("NeuronProfiler.early", pytorch_activities=[str(a) for a in self.pytorch_activities],
               record_shapes=record_shapes, neuron_output_dir=neuron_output_dir, event_filters=event_filters)  # fmt: skip

    def start(self) -> None:
        if self._is_active:
            raise RuntimeError("Profiler is already active")
        self._start_nrt_profiling()
        if self.pytorch_activities:
            self._start_pytorch_profiling()
        self._is_active = True

    def stop(self) -> None:
        if not self._is_active:
            raise RuntimeError("Profiler is not active")
        if self._pytorch_active:
            self._stop_pytorch_profiling()
        if self._nrt_active:
            self._nrt_active = False
            self._sync_framework_mapping_state()
            _C._nrt_inspect_stop()
        self._is_active = False

    def __enter__(self) -> _EarlyNeuronProfiler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> bool:
        self.stop()
        return False

    def is_active(self) -> bool:
        return self._is_active

    def get_nrt_output_directory(self) -> str:
        return self.neuron_output_dir

    def _start_nrt_profiling(self) -> None:
        capsule = _C._nrt_inspect_config_allocate()
        _C._nrt_inspect_config_set_defaults(capsule)
        _C._nrt_inspect_config_set_output_dir(capsule, self.neuron_output_dir)
        _C._nrt_inspect_config_set_enable_inspect(capsule, True)
        for nc in (self.event_filters or {}).get("nc", []):
            _C._nrt_inspect_config_set_capture_enabled_for_nc(capsule, nc, True)
        for kind in (self.event_filters or {}).get("types", []):
            _C._nrt_inspect_config_set_capture_enabled_for_event_type_string(capsule, kind, True)
        _C._nrt_inspect_begin_with_options(capsule)
        self._nrt_active = True
        self._sync_framework_mapping_state()

    def _start_pytorch_profiling(self) -> None:
        import torch

        self._pytorch_profiler = torch.profiler.profile(activities=self.pytorch_activities, record_shapes=self.record_shapes)
        self._pytorch_profiler.__enter__()
        self._pytorch_active = True
        self._sync_framework_mapping_state()

    def _stop_pytorch_profiling(self) -> None:
        try:
            self._pytorch_profiler.__exit__(None, None, None)
            self._pytorch_profiler.export_chrome_trace(self.pytorch_trace_file)
        finally:
            self._pytorch_active = False
            self._sync_framework_mapping_state()

    def _sync_framework_mapping_state(self) -> None:
        enabled = self._nrt_active and self._pytorch_active
        _C._set_profiler_mapping_enabled(enabled)
        if not enabled and self._framework_mapping_active:
            self._dump_profiler_mappings()
        self._framework_mapping_active = enabled

    def _dump_profiler_mappings(self) -> None:
        import json
        from datetime import datetime

        import torch

        torch.neuron.synchronize()  # type: ignore[attr-defined]  # the real one: torch_neuronx.synchronize()
        mappings = _C._get_profiler_mappings()
        if mappings.get("data"):
            os.makedirs(self.neuron_output_dir, exist_ok=True)
            now = datetime.now()
            stamp = now.strftime("%Y%m%d_%H%M%S") + f"_{now.microsecond // 1000:03d}"
            with open(os.path.join(self.neuron_output_dir, f"framework_mapping_{stamp}.json"), "w") as f:
                json.dump(mappings, f, indent=2)


from torch_neuronx import _C  # noqa: E402  (the stand-in's runtime bindings use _executions above)

if _API == "early":  # the early module: NeuronProfiler only (no NeuronConfig, no ProfileMode)
    NeuronProfiler: Any = _EarlyNeuronProfiler
    del NeuronConfig, ProfileMode
