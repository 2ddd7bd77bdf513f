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
  STANDIN_NO_CORRELATE=1  an older NeuronConfig without `correlate_device_time` (nor precache_node_info)
  STANDIN_NEFFS=N         graphs compiled (NEFFs written in DEVICE mode, default 1)
  STANDIN_CORES=N         NeuronCores with a session NTFF (default 1)
  STANDIN_EMPTY_NTFFS=K   the last K of those NTFFs are empty (idle NeuronCores)
  STANDIN_NO_NEFF=1       NTFFs only (NEFFs left in the compiler's cache)
  STANDIN_NEFF_NEEDS_CACHE=1
                          session NEFFs only where a NEFF cache dir is given (TORCH_NEURONX_NEFF_CACHE_DIR), as
                          the docs say ("NEFFs appear only with a NEFF cache dir", DESIGN.md's Neuron facts)
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


def locals_of(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k not in ("self", "__class__")}


NeuronConfig = _NeuronConfigOlder if os.environ.get("STANDIN_NO_CORRELATE") == "1" else _NeuronConfigWithCorrelate


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
        return b"standin"
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
                         "launch_ns": start + (end - start) // 2, "us": us})  # fmt: skip
    launches.sort(key=lambda x: x["launch_ns"])
    first = launches[0]["launch_ns"] if launches else base
    before = int(os.environ.get("STANDIN_EXEC_BEFORE", "0"))
    tid = launches[0]["tid"] if launches else 0
    at = [first - 10_000_000 + i * 100_000 for i in range(before)]  # 10 ms before the profiled calls
    warm = [{"op": "standin::warmup", "tid": tid, "op_start_ns": t, "op_end_ns": t + 50_000, "launch_ns": t + 25_000,
             "us": 11.0, "framework_row": True} for t in at]  # fmt: skip
    models: dict[str, int] = {}
    device_free, out = 0, []
    for x in warm + launches:
        model = models.setdefault(x["op"], 395760075800974 + len(models))  # the k-th graph: neff_<id>_vnc_0.neff
        flow = sum(1 for o in out if o["model_id"] == model)
        start = max(x["launch_ns"] + 1_000, device_free + 200)
        end = start + round(x["us"] * 1000)
        device_free = end
        out.append({**x, "model_id": model, "flow": str(flow), "start_ns": start, "end_ns": end})
    return json.dumps({"standin": "ntrace", "lnc": int(os.environ.get("STANDIN_LNC", "1")), "executions": out}).encode()


def _neff_bytes() -> bytes:
    """A NEFF: opaque bytes, with the stand-in's debug info (JSON after the magic) where compiled with
    NEURON_FRAMEWORK_DEBUG=1 ("Enables HLO-level stack trace capture", environment-variables.rst)."""
    frames = os.environ.get("STANDIN_NEFF_FRAMES", "")
    if not frames or os.environ.get("NEURON_FRAMEWORK_DEBUG") != "1":
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
        if fe.device_type == DeviceType.CPU and not fe.is_async and fe.name in per_call:
            fe.append_kernel(fe.name, fe.device_index, per_call[fe.name])
            given += 1
    record("correlate", ops=given)
