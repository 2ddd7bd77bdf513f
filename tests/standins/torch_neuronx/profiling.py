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
  STANDIN_DROPPED=N       print the runtime's "N trace events were dropped" warning
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
        run = Path(kw["profile_output_dir"]) / f"i-0standin0000000_pid_{os.getpid()}" / time.strftime("%Y%m%dT%H%M%S")
        run.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(run / "trace.json"))
        modes = set(kw["modes"])
        if ProfileMode.RUNTIME in modes:
            (run / "trace_info.pb").write_bytes(b"standin")
            (run / "ntrace.pb").write_bytes(b"standin")
        if ProfileMode.CPU_UTIL in modes:
            (run / "cpu_util.pb").write_bytes(b"standin")
        if ProfileMode.HOST_MEMORY in modes:
            (run / "host_mem.pb").write_bytes(b"standin")
        if ProfileMode.DEVICE in modes:
            graphs = int(os.environ.get("STANDIN_NEFFS", "1"))
            cores = int(os.environ.get("STANDIN_CORES", "1"))
            empty = int(os.environ.get("STANDIN_EMPTY_NTFFS", "0"))
            if os.environ.get("STANDIN_NO_NEFF") != "1":
                for i in range(graphs):
                    (run / f"neff_{395760075800974 + i}_vnc_0.neff").write_bytes(b"NEFF" * 64)
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
