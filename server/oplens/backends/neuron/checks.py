"""The documented traps of Neuron profiling, turned into warnings that name the fix.

Parent side, no torch: each check reads what a finished run left (its result, its artifact
files, the worker's log) and the options and environment it ran with. Sources: the Neuron
Explorer troubleshooting guide (empty NTFFs, dropped events, compile instead of execution,
eager mode's many NEFFs, DEVICE mode's HBM reservation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from oplens.backends.neuron.options import DEFAULT_MAX_EVENTS_PER_NC, NeuronOptions, parse_cores
from oplens.records.errors import OUT_OF_MEMORY, OpLensError
from oplens.records.overview import AnyRun
from oplens.records.run import Artifacts

MIN_WARMUP = 3  # the first runs compile: "run 3+ forward passes before starting the profiler"
MANY_NEFFS = 10  # beyond this many graphs, the function most likely ran in eager mode (one NEFF per op)
HBM_NOTE = "ProfileMode.DEVICE reserves about 5 GB of HBM on Trn2/Trn3 for its hardware notifications"
_DROPPED = re.compile(r"([\d,]+) trace events were dropped")
_DEVICE_OOM = re.compile(OUT_OF_MEMORY.pattern + r"|\bHBM\b", re.I)


def run_warnings(run: AnyRun, options: NeuronOptions, run_dir: Path, log_text: str, env: Mapping[str, str]) -> list[str]:
    """Every trap this Neuron run fell into (an empty list for other backends)."""
    if run.backend.name != "neuron":
        return []
    return [
        *warmup_warnings(run.config.warmup, "--skip" if run.capture is not None else "--warmup"),
        *core_warnings(options, env),
        *artifact_warnings(run.artifacts, run_dir, options),
        *log_warnings(log_text, options),
    ]


def warmup_warnings(warmup: int, option: str = "--warmup") -> list[str]:
    if warmup >= MIN_WARMUP:
        return []
    return [
        f"only {warmup} warm-up run(s): the first runs of a function compile its graphs (NEFFs), so the profile may "
        f"show compilation instead of execution; use {option} {MIN_WARMUP} or more"
    ]


def core_warnings(options: NeuronOptions, env: Mapping[str, str]) -> list[str]:
    """NEURON_RT_NUM_CORES above the cores in use: the runtime writes an NTFF per core, empty for the idle ones."""
    raw = env.get("NEURON_RT_NUM_CORES", "").strip()
    if not raw.isdigit():
        return []
    num = int(raw)
    spec = options.capture_enabled_for_nc
    used = len(parse_cores(str(spec))) if spec else 1  # OpLens runs the function on one NeuronCore
    if num <= used:
        return []
    what = f"{used} captured (--neuron-cores {spec})" if spec else "one it runs on"
    return [
        f"NEURON_RT_NUM_CORES={num} gives this process {num} NeuronCores but the profile uses the {what}: "
        f"the NTFFs of the other {num - used} are empty; set NEURON_RT_NUM_CORES={used} for profiling"
    ]


def artifact_warnings(artifacts: Artifacts, run_dir: Path, options: NeuronOptions) -> list[str]:
    """Traps read from the profile's NEFF and NTFF lists (not from pairs: session captures, PyTorch's
    default, need no 1:1 pairing)."""
    found: list[str] = []
    ntffs = artifacts.ntffs
    # The graphs the run compiled, each once: a NEFF in the run's own cache (artifacts.py, form "cache")
    # is a copy of one the runtime also wrote beside the trace, or the only copy where it wrote none.
    beside = [n for n in artifacts.neffs if n.form != "cache"]
    neffs = beside or artifacts.neffs
    if "DEVICE" in options.modes:
        if not ntffs:
            found.append(
                "DEVICE mode wrote no NTFF (device trace): did the function run on the neuron device? "
                "Check the worker log in the run directory"
            )
        elif not neffs:
            found.append(
                f"{len(ntffs)} NTFF(s) but no NEFF: the compiled graphs stayed in a compiler cache OpLens did not "
                "see (TorchNeuron ignored the run's own cache?); give --neff-cache-dir DIR so each NEFF is kept "
                "beside its NTFF (Neuron Explorer needs both)"
            )
    empty = [t for t in ntffs if t.bytes == 0 and (run_dir / t.path).is_file()]
    if ntffs and len(empty) == len(ntffs):
        found.append(
            "every NTFF is empty: the device trace captured nothing; warm up (--warmup 3 or more) and check "
            "that the function's tensors are on the neuron device"
        )
    elif empty:
        names = ", ".join(Path(t.path).name for t in empty[:3]) + (" …" if len(empty) > 3 else "")
        narrower = "" if options.capture_enabled_for_nc else " or capture only those (--neuron-cores 0)"
        found.append(
            f"{len(empty)} of {len(ntffs)} NTFFs are empty ({names}): NeuronCores that were initialised but ran "
            f"nothing; set NEURON_RT_NUM_CORES to the cores used (1 for one function){narrower}"
        )
    if len(neffs) > MANY_NEFFS:
        found.append(
            f"{len(neffs)} NEFFs: in eager mode every op compiles to its own NEFF, so the device "
            "profile is split into one small graph per op; compile the function "
            '(torch.compile(backend="neuron")) to see it as one graph'
        )
    return found


def log_warnings(text: str, options: NeuronOptions) -> list[str]:
    """The runtime's `Warning: N trace events were dropped during capture` (its buffers filled)."""
    counts = [int(m.group(1).replace(",", "")) for m in _DROPPED.finditer(text)]
    if not counts:
        return []
    limit = options.max_events_per_nc or DEFAULT_MAX_EVENTS_PER_NC
    return [
        f"the Neuron runtime dropped {sum(counts):,} trace events (its buffers filled, the oldest were overwritten): "
        f"raise --neuron-max-events (now {limit:,} per NeuronCore; costs host memory), capture fewer cores "
        "(--neuron-cores), or profile fewer iterations (--iters)"
    ]


def explain_failure(error: OpLensError, backend: str, options: NeuronOptions) -> None:
    """A device out-of-memory error under DEVICE mode: say what that mode reserves, and the way out."""
    if error.kind not in ("user_exception", "crash") or "DEVICE" not in options.modes:
        return
    text = error.message + "\n" + error.detail
    if backend != "neuron" and not (backend == "auto" and "neuron" in text.lower()):
        return
    if not _DEVICE_OOM.search(text):
        return
    error.detail = (
        error.detail.rstrip()
        + f"\n{HBM_NOTE}: profile without it (--neuron-modes RUNTIME), with smaller inputs, or with fewer "
        "captured cores (--neuron-cores 0) and a lower --neuron-max-events"
    ).lstrip()
