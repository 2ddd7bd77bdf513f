"""The Neuron backend (AWS Trainium, TorchNeuron): Self NEURON per op through PrivateUse1.

Follows the documented API (docs/architecture.md, "Facts about the Neuron side"), line for line:

    config = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=...)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                 experimental_config=config, on_trace_ready=NeuronProfiler(config).export_trace):
        ...; torch.neuron.synchronize()

The device profile lands in the run's directory (`neuron_profile/`), so it is kept with the run.

Which generation of the profiling API is installed is read from its signatures (`api.py`) and recorded in
the run (`backend.details["api"]`). Under the early one (TorchNeuron's early `NeuronProfiler(pytorch_activities=...,
neuron_output_dir=...)` context manager, no NeuronConfig) OpLens keeps its own torch.profiler session (its schedule,
its line ranges) and runs the early profiler's runtime capture beside it, NRT only (`pytorch_activities=[]`, the
early docstring's "NRT profiling only" form: two torch profilers cannot run at once), from the profiler's start to
its `on_trace_ready`, where the Chrome trace is written as the early profiler writes its own
(`<neuron_output_dir>/pytorch_trace.json`) and the framework mapping too (`_sync_framework_mapping_state` enables
it only while the early profiler's own torch profiler runs, so OpLens sets the same switch for its own,
`_C._set_profiler_mapping_enabled`, and writes `_C._get_profiler_mappings()` as `_dump_profiler_mappings` does).

Around the profiled calls (from `configure`, before the warm-up, to `artifacts`, after the last call): deterministic
mode where `--neuron-exact` asks (Adaptive Eager Execution off), TorchNeuron's op tracking cleared then read (its CPU
fallbacks kept with the run), and whether Adaptive Eager Execution was active recorded (`adaptive.py`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import json
import os
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity

from oplens.backends.device import Backend, DeviceMemory
from oplens.backends.neuron import adaptive, api, environment, install, memory
from oplens.backends.neuron.artifacts import COLLECT_FROM_ENV, COLLECT_SINCE_ENV, DEFAULT_NEFF_CACHE, PROFILE_DIR, find_artifacts
from oplens.backends.neuron.facts import NEURON
from oplens.backends.neuron.options import DEFAULT_MODES, DEFAULT_NEFF_CACHE_ENV, NEFF_CACHE_ENV, NeuronOptions
from oplens.records.errors import bad_input
from oplens.records.job import RUN_DIR_ENV
from oplens.records.run import Artifacts


def install_hint() -> str:
    """Where TorchNeuron comes from, for this torch's version (one text, in `install.py`)."""
    return install.install_hint(torch.__version__)


class NeuronBackend(Backend[NeuronOptions]):
    facts = NEURON
    options_type = NeuronOptions
    _configured: dict[str, Any] | None = None  # the profiler's options, once configured
    _generation: api.Generation | None = None
    _restore: tuple[bool, bool] | None = None  # the user's deterministic setting, while --neuron-exact holds it
    _calls_open = False  # between _begin_calls and _end_calls: the settings of the profiled calls hold

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import torch_neuronx  # noqa: F401  (registers the "neuron" device with torch)
            import torch_neuronx.profiling as profiling
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] != "torch_neuronx":
                return f"torch_neuronx needs {e.name!r}, which is missing ({e}); {install_hint()}"
            if e.name == "torch_neuronx.profiling":
                return "this torch_neuronx has no torch_neuronx.profiling (too old for native profiling); " + install_hint()
            return f"torch_neuronx is not installed; {install_hint()}"
        except Exception as e:  # the PyPI stub raises ImportError on import; a broken install raises anything
            return f"torch_neuronx {_installed_version()}does not import ({type(e).__name__}: {e}); {install_hint()}"
        generation, why = api.detect(profiling)
        if generation is None:
            return f"{why}; {install_hint()}"
        if generation.name != api.EARLY and not hasattr(profiling, "ProfileMode"):
            return f"this torch_neuronx.profiling has NeuronConfig but no ProfileMode; {install_hint()}"
        neuron = getattr(torch, "neuron", None)
        if neuron is None:
            return "torch_neuronx imported but registered no torch.neuron device module (is it TorchNeuron 2.13+?)"
        try:
            if hasattr(neuron, "is_available") and not neuron.is_available():
                return (
                    "torch_neuronx imported but sees no NeuronCore "
                    "(is this a Trn2/Trn3 host? is another process holding the cores?)"
                )
        except Exception as e:
            return f"torch.neuron.is_available() failed: {e}"
        return None

    def device(self) -> torch.device:
        return torch.device("neuron", self.options.device_index)

    def activities(self) -> list[ProfilerActivity]:
        if self.generation().name == api.EARLY:
            # PrivateUse1 would start the runtime's capture a second time, through Kineto ("profile().__enter__ →
            # Kineto calls our factory → ... nrt_inspect_begin_with_options()", the early source's
            # torch_neuronx/csrc/profiler/README.md); the early docstring's combined form passes CPU only
            return [ProfilerActivity.CPU]
        return [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

    def generation(self) -> api.Generation:
        """The installed profiling API's generation (api.py), detected once and recorded in the run."""
        found = self._generation
        if found is None:
            import torch_neuronx.profiling as profiling

            found, why = api.detect(profiling)
            if found is None:
                raise bad_input(why, install_hint())
            self._set_generation(found.name, found.evidence)
        return found

    def _set_generation(self, name: str, evidence: str) -> None:
        self._generation = api.Generation(name, evidence)
        self.details["api"], self.details["api_detected_by"] = name, evidence

    def synchronize(self) -> None:
        torch.neuron.synchronize()  # type: ignore[attr-defined]  # execution is asynchronous

    def device_memory(self) -> tuple[DeviceMemory | None, str]:
        """TorchNeuron's own counters (memory.py): its allocator does not report to torch's profiler."""
        import torch_neuronx

        return memory.device_memory(torch_neuronx, self.options.device_index)

    def neuron_config(self, run_dir: Path) -> Any:
        self.generation()  # recorded in the run
        from torch_neuronx.profiling import NeuronConfig, ProfileMode

        names = list(self.options.modes)
        missing = [m for m in names if not hasattr(ProfileMode, m)]
        if missing:
            known = [m for m in ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY") if hasattr(ProfileMode, m)]
            raise bad_input(f"this torch_neuronx has no ProfileMode.{missing[0]}", f"choose from {', '.join(known)}")
        kwargs: dict[str, Any] = {
            "modes": [getattr(ProfileMode, m) for m in names],
            "profile_output_dir": str(run_dir / PROFILE_DIR),
        }
        for key, value in self.options.given().items():
            if _accepts(NeuronConfig, key) is not False:  # documented arguments: pass unless clearly refused
                kwargs[key] = value
            else:
                self.warnings.append(f"this torch_neuronx's NeuronConfig takes no {key}: the option was ignored")
        self.details["neuron_config"] = {**kwargs, "modes": names, "profile_output_dir": PROFILE_DIR}  # run-relative
        # correlate_device_time (device time propagated into key_averages) is newer than the rest:
        # pass it where this version takes it, else say where device time comes from instead.
        accepts = _accepts(NeuronConfig, "correlate_device_time")
        if accepts is not False:
            try:
                config = NeuronConfig(**kwargs, correlate_device_time=True)
                self.details["neuron_config"]["correlate_device_time"] = True
                if accepts is None:  # no signature to read: what the call itself showed
                    self._set_generation(api.CORRELATE, "NeuronConfig(correlate_device_time=True) accepted (no signature)")
                return config
            except TypeError:
                if accepts:
                    raise
        # The documented form (how-to-profile-pytorch, Neuron 2.33) names no correlate_device_time: not a warning.
        # Where each op's device time comes from is decided after the run, from every source (analysis/sources.py:
        # Kineto's linked events, the op table, the runtime's system trace); a run with none says so there, and
        # `oplens profile --backend neuron` exits non-zero. The generation (details.api) records what it offered.
        return NeuronConfig(**kwargs)

    @classmethod
    def environment(cls, options: Any) -> dict[str, str]:
        """The run's NEFF bookkeeping, set by the worker at the job: which caches to copy this run's NEFFs from
        afterwards (`artifacts.collect_neffs`), with its start. `TORCH_NEURONX_NEFF_CACHE_DIR` and the debug info
        are set by the parent as it starts the worker, before `import torch` loads TorchNeuron (`environment.py`);
        a worker started without them (a notebook's kernel, an older parent) gets them here, after the import,
        and the run says so (`details["environment"]["set_after_import"]`)."""
        return _neff_cache_environment(options if isinstance(options, NeuronOptions) else NeuronOptions(), os.environ)

    def configure(self, run_dir: Path) -> None:
        """NeuronConfig and NeuronProfiler before the warm-up, in the documented order (`precache_node_info`
        populates per-NEFF metadata during the warm-up iterations). The early generation has nothing to set
        before: its capture starts with the profiler (`profiler_options`)."""
        generation = self.generation()
        self.details["environment"] = environment.recorded(os.environ, self.options)
        self._begin_calls(generation.name == api.EARLY)
        if generation.name == api.EARLY:
            said = f"{generation.line} (detected: {generation.evidence})"
            if said not in self.warnings:  # a capture's later window configures again
                self.warnings.append(said)
            self._configured = {}
            return
        from torch_neuronx.profiling import NeuronProfiler

        config = self.neuron_config(run_dir)
        self._configured = {"experimental_config": config, "on_trace_ready": NeuronProfiler(config).export_trace}

    def profiler_options(self, run_dir: Path) -> dict[str, Any]:
        """NeuronConfig's (`experimental_config`, `on_trace_ready`), and `with_stack=True` unless the user turned it
        off: "When capturing profiles through the native PyTorch profiling API, using `with_stack=True` will record
        source information in the framework events" (overview-system-profiles.rst; how-to-profile-workload.rst lists
        it among the arguments supported with NeuronConfig), so Explorer names them `file(line): function`. It costs
        host time per op; OpLens's line attribution does not read it (docs/trainium.md)."""
        if not self._calls_open:
            # not configured yet (`configure` opens the calls), or a capture's next window (the last one's `artifacts`
            # ended its calls): its own NeuronConfig, whose profile_output_dir is this window's run (a second
            # NeuronProfiler writing into the first window's folder collides with its trace there), and its calls'
            # settings again
            self.configure(run_dir)
        stack = {"with_stack": True} if self.options.with_stack is not False else {}
        self.details["with_stack"] = bool(stack)
        if self.generation().name == api.EARLY:
            return {"on_trace_ready": self._start_early(run_dir), **stack}
        return {**(self._configured or {}), **stack}

    def writes_own_trace(self) -> bool:
        # NeuronProfiler.export_trace writes trace.json into the profile directory; under the early API,
        # OpLens's on_trace_ready writes pytorch_trace.json where the early profiler writes its own
        return True

    def _start_early(self, run_dir: Path) -> Any:
        """The early NeuronProfiler's runtime capture started (NRT only), the framework mapping switched on; the
        `on_trace_ready` that writes the Chrome trace and the mapping, then stops the capture."""
        from torch_neuronx.profiling import NeuronProfiler

        out = run_dir / PROFILE_DIR
        out.mkdir(parents=True, exist_ok=True)
        accepts = api.parameters(NeuronProfiler) or set()
        kwargs: dict[str, Any] = {"pytorch_activities": [], "neuron_output_dir": str(out)}
        given = self.options.given()
        if self.options.capture_enabled_for_nc and ("event_filters" in accepts or "**" in accepts):
            kwargs["event_filters"] = {"nc": self.options.capture_enabled_for_nc.split(",")}
            given.pop("capture_enabled_for_nc")
        given.pop("neff_cache_dir", None)  # read from TORCH_NEURONX_NEFF_CACHE_DIR when compiling (environment())
        for key in given:
            self.warnings.append(f"the early NeuronProfiler takes no {key}: the option was ignored")
        if list(self.options.modes) != list(DEFAULT_MODES):
            self.warnings.append("the early NeuronProfiler has no profile modes (it always captures the system and device "
                                 f"traces): --neuron-modes {','.join(self.options.modes)} was ignored")  # fmt: skip
        profiler = NeuronProfiler(**{k: v for k, v in kwargs.items() if k in accepts or "**" in accepts})
        profiler.start()
        switch, dump = _mapping_bindings()
        if switch is not None:
            switch(True)
        self.details["neuron_profiler"] = {**kwargs, "neuron_output_dir": PROFILE_DIR, "framework_mapping": switch is not None}
        if switch is None:
            self.warnings.append("this torch_neuronx has no _C._set_profiler_mapping_enabled / _get_profiler_mappings: "
                                 "no framework mapping; executions go to their ops by flow links or order")  # fmt: skip

        def ready(prof: Any) -> None:
            try:
                prof.export_chrome_trace(str(out / api.EARLY_TRACE))
            finally:
                try:
                    if switch is not None and dump is not None:
                        switch(False)
                        self.synchronize()  # as _dump_profiler_mappings: torch_neuronx.synchronize() first
                        _write_mapping(out, dump())
                finally:
                    profiler.stop()

        return ready

    def _begin_calls(self, early: bool) -> None:
        """Before the warm-up (the profiled calls follow), and as each later window of a capture starts its profiler
        (the earlier window's `artifacts` ended its calls): deterministic mode where --neuron-exact asks (Adaptive
        Eager Execution off, adaptive.py), TorchNeuron's op tracking cleared (its CPU fallbacks are this run's), and
        whether Adaptive Eager Execution is active recorded (details["adaptive_eager"])."""
        self._calls_open = True
        if self.options.exact and self._restore is None:
            self._restore = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
            torch.use_deterministic_algorithms(True)
        tracking = _tracking()
        if tracking[1] is not None:
            tracking[1]()
        self.details["adaptive_eager"] = adaptive.details(
            early, torch.are_deterministic_algorithms_enabled(), torch.get_deterministic_debug_mode(),
            bool(self.options.exact), os.environ)  # fmt: skip

    def _end_calls(self, run_dir: Path) -> None:
        """After the profiled calls: the user's deterministic setting back, and the ops TorchNeuron ran on the CPU
        (`torch_neuronx.get_fallback_ops()`) kept with the run (adaptive.FALLBACK_FILE) and in its details."""
        self._calls_open = False
        if self._restore is not None:
            torch.use_deterministic_algorithms(self._restore[0], warn_only=self._restore[1])
            self._restore = None
        get = _tracking()[0]
        if get is None:
            self.details["cpu_fallback"] = "not recorded: this torch_neuronx has no get_fallback_ops()"
            return
        try:
            ops = [adaptive.qualified(str(o)) for o in get()]
        except Exception as e:  # a binding that fails: said, not fatal
            self.details["cpu_fallback"] = f"not recorded: torch_neuronx.get_fallback_ops() failed ({type(e).__name__}: {e})"
            return
        self.details["cpu_fallback"] = ops
        adaptive.write_fallback(run_dir, ops)

    def artifacts(self, run_dir: Path) -> Artifacts:
        """The profile's files (after the profiled calls: their settings undone, their CPU fallbacks recorded);
        which session folder was taken and the NEFFs copied in are said among the run's warnings (artifacts.py)."""
        self._end_calls(run_dir)
        return find_artifacts(run_dir, PROFILE_DIR, notes=self.warnings)

    def device_name(self) -> str:
        count = getattr(torch.neuron, "device_count", None)  # type: ignore[attr-defined]
        try:
            return f"NeuronCore ({count()} visible)" if callable(count) else "NeuronCore"
        except Exception:
            return "NeuronCore"


def _neff_cache_environment(options: NeuronOptions, env: Mapping[str, str]) -> dict[str, str]:
    """The NEFF cache variables for one run (`NeuronBackend.environment`); `env` is the worker's environment."""
    sources = [env.get(DEFAULT_NEFF_CACHE_ENV) or DEFAULT_NEFF_CACHE]  # TorchNeuron's fallback cache
    ours = {v for v in env.get(environment.SET_BEFORE_IMPORT_ENV, "").split(",") if v}
    out: dict[str, str] = {}
    late: dict[str, str] = {}
    if NEFF_CACHE_ENV in ours:  # set by the parent before import torch: the user's --neff-cache-dir or the run's own cache
        if env.get(environment.WARM_CACHE_ENV) == "1":  # or the warm worker's own: this run's NEFFs copied from it
            sources.append(env[NEFF_CACHE_ENV])
    elif options.neff_cache_dir:
        late[NEFF_CACHE_ENV] = options.neff_cache_dir
    elif env.get(NEFF_CACHE_ENV):
        sources.append(env[NEFF_CACHE_ENV])  # the user's own cache: kept, and this run's NEFFs copied from it
    elif env.get(RUN_DIR_ENV) and importlib.util.find_spec("torch_neuronx") is not None:  # auto on a CPU/GPU host: none
        cache = environment.own_neff_cache(Path(env[RUN_DIR_ENV]))
        cache.mkdir(parents=True, exist_ok=True)
        late[NEFF_CACHE_ENV] = str(cache)
    if environment.debug_asked(options, env):
        late.update({v: "1" for v in environment.DEBUG_VARS if env.get(v) != "1"})
    if late:
        out.update(late)
        out[environment.SET_AFTER_IMPORT_ENV] = ",".join(late)
    out[COLLECT_FROM_ENV] = os.pathsep.join(sources)
    out[COLLECT_SINCE_ENV] = str(time.time_ns())
    return out


def _tracking() -> tuple[Any, Any]:
    """TorchNeuron's op tracking (`torch_neuronx.get_fallback_ops`, `clear_op_tracking`; the early source's
    `torch_neuronx/__init__.py`), or None where this build has none."""
    import torch_neuronx

    get, clear = getattr(torch_neuronx, "get_fallback_ops", None), getattr(torch_neuronx, "clear_op_tracking", None)
    return (get if callable(get) else None), (clear if callable(clear) else None)


def _mapping_bindings() -> tuple[Any, Any]:
    """TorchNeuron's framework-mapping switch and reader (the early source's `_C._set_profiler_mapping_enabled`,
    `_C._get_profiler_mappings`), or None where this build has none."""
    try:
        import torch_neuronx._C as c_module
    except Exception:
        return None, None
    switch, dump = getattr(c_module, "_set_profiler_mapping_enabled", None), getattr(c_module, "_get_profiler_mappings", None)
    return (switch, dump) if callable(switch) and callable(dump) else (None, None)


def _write_mapping(out: Path, mappings: Any) -> Path | None:
    """`framework_mapping_<YYYYmmdd_HHMMSS_mmm>.json` in the output dir, as the early `_dump_profiler_mappings`
    names it ("Match NRT timestamp format: YYYYMMDD_HHMMSS_MMM"), where the mapping holds data."""
    if not isinstance(mappings, dict) or not mappings.get("data"):
        return None
    now = datetime.now()
    path = out / f"framework_mapping_{now.strftime('%Y%m%d_%H%M%S')}_{now.microsecond // 1000:03d}.json"
    path.write_text(json.dumps(mappings, indent=2), encoding="utf-8")
    return path


def _installed_version() -> str:
    try:
        return importlib.metadata.version("torch-neuronx") + " "
    except importlib.metadata.PackageNotFoundError:
        return ""


def _accepts(cls: Any, name: str) -> bool | None:
    """Whether `cls(name=...)` is accepted; None where there is no signature to read (a C++ class)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
