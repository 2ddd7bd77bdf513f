"""Adaptive Eager Execution and CPU fallback: what the run records about them (issue 33, part 4).

What the documentation says (aws-neuron-sdk, `frameworks/torch/pytorch-native-overview.rst`, Neuron 2.33):

- "TorchNeuron takes advantage of this mechanism by analyzing sequences of queued operators and fusing them into
  single operators based on fusion heuristics. These fused operations are then dispatched as single operator
  calls": one device execution may carry the work of several ops, so of several lines.
- "When ``torch.use_deterministic_algorithms()`` or ``torch.set_deterministic_debug_mode()`` is called,
  TorchNeuron will ensure reproducible order of execution and Adaptive Eager Execution optimizations are
  disabled": the switch `--neuron-exact` turns on around the profiled calls (one op, one execution).
- Best practices (`torch/reference/best-practices-pytorch-neuron`): "Unsupported ops fall back to CPU by default".

What TorchNeuron's early source shows (`parmoham-aws/test-repo-parmoham`): fusion ("concatenation") is on only with
`TORCH_NEURONX_ENABLE_CONCATENATION=1` there (`OperationExecutionEngine.cpp`, with "TODO: Use
torch.use_deterministic_algorithms instead"); the ops that fell back are listed by `torch_neuronx.get_fallback_ops()`
("List of operation names that were executed on CPU instead of Neuron"), reset by `clear_op_tracking()`.

No public page says whether a release exposes the fusion switch other than by these; `details()` records what was
read, and says which rule decided "active".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EARLY_SWITCH_ENV = "TORCH_NEURONX_ENABLE_CONCATENATION"  # the early source's switch (off unless "1")
FALLBACK_FILE = "neuron_cpu_fallback.json"  # in the run's folder: the ops that ran on the CPU, by TorchNeuron


def details(early: bool, deterministic: bool, debug_mode: int, exact: bool, env: Mapping[str, str]) -> dict[str, Any]:
    """The run's `backend.details["adaptive_eager"]`: whether Adaptive Eager Execution was active during the profiled
    calls, and what decided it. `early`: the early profiling API is installed (its source's switch applies)."""
    if deterministic or debug_mode:
        active, by = False, ("--neuron-exact: torch.use_deterministic_algorithms(True) around the profiled calls"
                             if exact else "deterministic algorithms were on (torch.use_deterministic_algorithms / "
                             "set_deterministic_debug_mode), which disables it (pytorch-native-overview.rst)")  # fmt: skip
    elif early:
        active = env.get(EARLY_SWITCH_ENV) == "1"
        by = f"the early TorchNeuron fuses only with {EARLY_SWITCH_ENV}=1 (its source), " + ("set" if active else "not set")
    else:
        active, by = True, "on in eager mode unless deterministic algorithms are on (pytorch-native-overview.rst)"
    return {"active": active, "decided_by": by, "deterministic_algorithms": deterministic,
            "deterministic_debug_mode": debug_mode, "exact": exact}  # fmt: skip


def write_fallback(run_dir: Path, ops: list[str]) -> None:
    (run_dir / FALLBACK_FILE).write_text(json.dumps({"ops": ops}), encoding="utf-8")


def read_fallback(run_dir: Path) -> list[str]:
    """The ops TorchNeuron ran on the CPU during the run (aten::-qualified), [] where none were recorded."""
    try:
        data = json.loads((run_dir / FALLBACK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    ops = data.get("ops", []) if isinstance(data, dict) else []
    return [qualified(str(o)) for o in ops if o] if isinstance(ops, list) else []


def qualified(op: str) -> str:
    """TorchNeuron names an op with or without its namespace (CPUFallbackExecutor adds "aten::" where missing)."""
    return op if "::" in op else f"aten::{op}"
