"""A line's device executions in words where they are not one op, one execution: executions the runtime fused over
several ops (Neuron's Adaptive Eager Execution, `LineStat.runtime_fused`) and ops that ran on the CPU instead
(TorchNeuron's CPU fallback, `LineStat.cpu_fallback`). One text for the CLI and the hover."""

from __future__ import annotations

from oplens.records.format import fmt_us
from oplens.records.run import LineStat, RuntimeFusion

FUSED = "fused by the runtime"
EXACT_HINT = "--neuron-exact gives one execution per op"


def _lines(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)


def fused_sentence(line: int, f: RuntimeFusion) -> str:
    """On the launching line: what its time holds; on another line: where its ops' time is."""
    per = f"{f.executions:g} execution(s) per iteration, {fmt_us(f.device_us)}"
    if f.launched_by == line:
        others = [n for n in f.lines if n != line]
        covered = f"the ops of this line and of lines {_lines(others)}" if others else "several ops of this line"
        return f"{FUSED}: {per}, carried {covered} ({', '.join(f.ops)}); all of it is shown on this line ({EXACT_HINT})"
    return (f"{FUSED}: this line's ops ran in line {f.launched_by}'s execution ({per} over lines {_lines(f.lines)}), "
            "whose time is shown there: no time here is not no work")  # fmt: skip


def fallback_sentence(stat: LineStat) -> str:
    return f"ran on the CPU: no Neuron kernel for {', '.join(stat.cpu_fallback)}" if stat.cpu_fallback else ""


def execution_notes(stat: LineStat) -> list[str]:
    """Every note of the line's executions: each fused execution it took part in, then its CPU fallbacks."""
    out = [fused_sentence(stat.line, f) for f in stat.runtime_fused]
    return out + ([fallback_sentence(stat)] if stat.cpu_fallback else [])
