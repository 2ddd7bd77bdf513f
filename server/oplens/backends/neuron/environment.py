"""What a Neuron run's worker must have in its environment from its start, before `import torch` (no torch here).

`import torch` loads TorchNeuron by itself: torch discovers out-of-tree device backends through the entry points of
the `torch.backends` group and imports them at the end of its own import (PyTorch's "Autoload Mechanism",
docs.pytorch.org accelerator/autoload; `torch._import_device_backends`), and TorchNeuron "registers Trainium as a
standard PyTorch device, so a model written in standard PyTorch runs on it by setting the device to `neuron`"
(Neuron 2.33, torch/about-pytorch-neuron.rst). What TorchNeuron reads when it loads must therefore be in the
worker's environment when the process starts, not set by the worker after its (warm) `import torch`:

- `TORCH_NEURONX_NEFF_CACHE_DIR`: "Set `neff_cache_dir` in NeuronConfig (or the `TORCH_NEURONX_NEFF_CACHE_DIR`
  environment variable) **before running your profiling script** to automatically include all relevant NEFFs in
  the profiler output directory" (tools/neuron-explorer/how-to-profile-workload.rst, "Ensuring NEFFs are in your
  output directory"). The user's `--neff-cache-dir`; else a cache the user exported (left alone); else the run's own
  `neuron_profile/neff_cache/`, where TorchNeuron is installed.
- The compile-time debug info, where the user asks for the compiled-region split (`--neuron-debug-info`, or one of
  these exported as 1): `XLA_IR_DEBUG=1` and `XLA_HLO_DEBUG=1`, which the 2.33 pages name ("Compile time.
  `NKI_DEBUG_INFO`, `XLA_IR_DEBUG`, and `XLA_HLO_DEBUG` change what the compiler writes into the NEFF",
  environment-variables.rst; "To enable tracking of the stack trace information, you set these environment variables
  before compiling your NEFF", how-to-link-view-source-code.rst), and `NEURON_FRAMEWORK_DEBUG=1`, which older pages
  name for the same ("Enables HLO-level stack trace capture. Required for the Source Code Viewer to map hardware
  instructions to Python model code", environment-variables.rst of 2.31): the pages disagree, so all three.

The parent sets these when it starts the worker of a run (`NeuronSpec.worker_environment`), and lists the ones it
set in `OPLENS_NEURON_SET`, so the worker records in the run which were set, and when (`recorded`).

The editor's warm worker is started before any run exists (`warm_worker`): where TorchNeuron is installed it gets a
NEFF cache of its own (one job per worker, so the cache holds that job's NEFFs only), marked `OPLENS_NEURON_WARM_CACHE`;
a run that would set its own cache takes it instead of starting a fresh worker (the cache was there at the import),
and the worker copies the NEFFs written there during the run into the run's own `neuron_profile/neff_cache/`
(`artifacts.collect_neffs`); the parent removes the worker's scratch folder, cache and all, after its job.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from oplens.backends.neuron.artifacts import NEFF_CACHE_DIR, PROFILE_DIR
from oplens.backends.neuron.options import MEASURED_ENV, NEFF_CACHE_ENV, NeuronOptions

DEBUG_VARS = ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG")  # 2.33's two first, the older page's last
WARM_CACHE_ENV = "OPLENS_NEURON_WARM_CACHE"  # 1: the NEFF cache is a warm worker's own (`warm_worker`), not a run's
SET_BEFORE_IMPORT_ENV = "OPLENS_NEURON_SET"  # comma-separated: what the parent set at the worker's start
SET_AFTER_IMPORT_ENV = "OPLENS_NEURON_SET_LATE"  # what the worker had to set itself, after import torch


def debug_asked(options: NeuronOptions, env: Mapping[str, str], ours: tuple[str, ...] = ()) -> str:
    """How the user asked for the compiled-region split ("" where not): the option, or a variable exported as 1
    (`ours`: those OpLens set, not the user)."""
    if options.debug_info is False:
        return ""
    if options.debug_info:
        return "--neuron-debug-info"
    exported = [v for v in DEBUG_VARS if env.get(v) == "1" and v not in ours]
    return f"{exported[0]}=1 in the environment" if exported else ""


def own_neff_cache(run_dir: Path) -> Path:
    return run_dir / PROFILE_DIR / NEFF_CACHE_DIR


def before_import(options: NeuronOptions, run_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The variables a Neuron run's worker starts with (`env`: the environment it would inherit); {} where none."""
    out: dict[str, str] = {}
    if options.neff_cache_dir:
        out[NEFF_CACHE_ENV] = options.neff_cache_dir
    elif not env.get(NEFF_CACHE_ENV) and importlib.util.find_spec("torch_neuronx") is not None:
        cache = own_neff_cache(run_dir)  # without a cache dir the runtime writes no NEFF into the profile
        cache.mkdir(parents=True, exist_ok=True)
        out[NEFF_CACHE_ENV] = str(cache)
    if debug_asked(options, env):
        out.update({v: "1" for v in DEBUG_VARS if env.get(v) != "1"})
    if options.measured and env.get(MEASURED_ENV) != "1":  # read where the run's system trace is ingested
        out[MEASURED_ENV] = "1"
    if out:
        out[SET_BEFORE_IMPORT_ENV] = ",".join(out)
    return out


def warm_worker(cache_root: Path, env: Mapping[str, str], options: NeuronOptions | None = None) -> dict[str, str]:
    """The variables a worker started ahead of any run begins with (`env`: what it would inherit), where TorchNeuron
    is installed: a NEFF cache of its own under `cache_root` where the user exported none, and what `options` (the
    editor's settings) would have a run set before the import that does not depend on the run (the compile-time
    debug info, the measured efficiency, the user's own cache folder), so that the next run finds the worker
    already fit for it; {} elsewhere."""
    if importlib.util.find_spec("torch_neuronx") is None:
        return {}
    out: dict[str, str] = {}
    if not env.get(NEFF_CACHE_ENV) and not (options is not None and options.neff_cache_dir):
        cache = cache_root / NEFF_CACHE_DIR
        cache.mkdir(parents=True, exist_ok=True)
        out = {NEFF_CACHE_ENV: str(cache), WARM_CACHE_ENV: "1"}
    if options is not None:
        out.update({k: v for k, v in before_import(options, cache_root, {**env, **out}).items() if k != SET_BEFORE_IMPORT_ENV})
    if out:
        out[SET_BEFORE_IMPORT_ENV] = ",".join(k for k in out if k != WARM_CACHE_ENV)
    return out


def recorded(env: Mapping[str, str], options: NeuronOptions) -> dict[str, object]:
    """What the run records (`backend.details["environment"]`): each variable OpLens set and when, and the debug
    variables in effect for the compile."""
    early = [v for v in env.get(SET_BEFORE_IMPORT_ENV, "").split(",") if v]
    late = [v for v in env.get(SET_AFTER_IMPORT_ENV, "").split(",") if v]
    return {
        "set_before_import": {v: env.get(v, "") for v in early},
        "set_after_import": {v: env.get(v, "") for v in late},
        "debug_info": {v: env[v] for v in DEBUG_VARS if v in env},
        "debug_info_asked_by": debug_asked(options, env, (*early, *late)),
        NEFF_CACHE_ENV: env.get(NEFF_CACHE_ENV, ""),
    }
