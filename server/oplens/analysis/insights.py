"""Insights tied to lines: what the numbers say, in words, with the evidence.

Each rule is a small function of the attribution (per-line stats and the ordered top-level ops
of each line) that returns `Insight`s. Pure Python, no torch. Which op is elementwise or a
reduction is the op table's (ops.kind), and the size of an intermediate tensor the work rules'
(work.output_bytes): the same rules as each line's work, so an op or a dtype they do not know has
no size here either.
"""

from __future__ import annotations

from collections.abc import Callable

from oplens.analysis import ops, work
from oplens.analysis.attribution import (
    MARKS_SAID_SHARE,
    Attribution,
    OpSample,
    marks_matter,
    marks_total_us,
    own_outside_us,
)
from oplens.records.format import fmt_bytes, fmt_us
from oplens.records.run import Insight, LineStat

FUSABLE = frozenset({"elementwise", "reduction"})  # the kinds of op (ops.kind) a fused kernel merges
COPIES = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
SYNCS = frozenset({"aten::item", "aten::_local_scalar_dense"})
HOT_SHARE = 30.0  # % of device time that makes a line the hot spot
MIN_CHAIN = 3

# Known op sequences and the builtin that computes them in one kernel.
BUILTINS: list[tuple[list[set[str]], str]] = [
    ([{"mul", "pow", "square"}, {"mean"}, {"add"}, {"rsqrt"}, {"mul"}], "torch.rms_norm"),
    ([{"mean"}, {"sub"}, {"pow", "mul", "square"}, {"mean"}, {"add"}, {"rsqrt", "sqrt"}], "torch.nn.functional.layer_norm"),
    ([{"exp"}, {"sum"}, {"div"}], "torch.softmax"),
    ([{"mul"}, {"sigmoid"}], "torch.nn.functional.silu"),
]


def base_name(op: str) -> str:
    """`aten::mul_` → `mul`."""
    return op.split("::")[-1].rstrip("_")


def find_insights(a: Attribution, device_label: str, on_device: bool, iters: int, capture: bool = False) -> list[Insight]:
    """Every rule's insights, by line. `capture`: the iterations are a program's calls (`oplens run`)."""
    outside = outside_operators(a.lines, a.totals.call_wall_us)
    rules: list[Callable[[], list[Insight]]] = [
        lambda: outside,
        lambda: [] if outside else hot_line(a, device_label),  # the hot line is one of time of the kind that dominates
        lambda: fusable_chains(a, device_label),
        lambda: compiled_regions(a),
        lambda: host_device_transfers(a) if on_device else [],
        lambda: noisy_lines(a, iters, *(("calls", "--calls") if capture else ("iterations", "--iters"))),
    ]
    found: list[Insight] = []
    for rule in rules:
        found.extend(rule())
    return sorted(found, key=lambda i: (i.kind != OUTSIDE, i.line))  # where the call's time goes, first


OUTSIDE = "outside_operators"
OUTSIDE_SHARE = 50.0  # % of the call's wall time outside every operator that makes it the story


def outside_operators(lines: list[LineStat], call_wall_us: float) -> list[Insight]:
    """Where most of the call's wall time is spent outside every operator (Python, a wait, I/O), the line that
    spends the most of it, named before any operator's time. OpLens's own line marks are not the line's: both the
    line's time and the call's are taken less them (`attribution.own_outside_us`)."""
    marks = marks_total_us(lines)
    call = call_wall_us - marks
    outside = sum(own_outside_us(s) for s in lines)
    if call <= 0 or 100.0 * outside / call < OUTSIDE_SHARE:
        return []
    top = max(lines, key=own_outside_us)
    own = own_outside_us(top)
    share = 100.0 * own / call
    evidence = (f"wall {fmt_us(top.wall_us)} per call, its operators {fmt_us(top.wall_us - top.outside_ops_us)}; the call's "
                f"wall {fmt_us(call_wall_us)}, {100.0 * outside / call:.1f} % of it outside every operator")
    if marks >= MARKS_SAID_SHARE * call_wall_us:
        evidence += f"; both less OpLens's line marks (about {fmt_us(top.marks_us)} of the line's, {fmt_us(marks)} of the call's)"
    return [
        Insight(
            line=top.line,
            kind=OUTSIDE,
            message=f"this line spends {'about ' if marks_matter(top) else ''}{fmt_us(own)} per call outside any operator: "
            "Python, a wait or I/O, "
            f"{share:.1f} % of the call",
            evidence=evidence,
        )
    ]


def hot_line(a: Attribution, label: str) -> list[Insight]:
    if len(a.lines) < 2:
        return []
    # by its share (a trimmed mean, which one slow iteration cannot move), as the listing ranks lines
    top = max(a.lines, key=lambda s: s.pct_device)
    if top.pct_device < HOT_SHARE:
        return []
    top_ops = ", ".join(f"{o.name} ×{o.calls:g}" for o in top.ops[:3])
    return [
        Insight(
            line=top.line,
            kind="hot_line",
            message=f"this line spends {top.pct_device:.1f} % of the function's {label} time",
            evidence=f"{fmt_us(top.self_device_us)} of {fmt_us(a.totals.self_device_us)} per iteration; ops: {top_ops}",
        )
    ]


def _fusable_line(stat: LineStat, seq: list[OpSample]) -> bool:
    return bool(seq) and stat.op_calls <= 2 and all(ops.kind(s.name) in FUSABLE for s in seq)


def fusable_chains(a: Attribution, label: str) -> list[Insight]:
    """Runs of consecutive lines whose ops are separately dispatched elementwise/reduction ops."""
    insights = []
    chain: list[LineStat] = []
    for stat in [*a.lines, None]:
        ok = stat is not None and _fusable_line(stat, a.sequence.get(stat.line, []))
        contiguous = stat is not None and chain and stat.line - chain[-1].line <= 2
        if ok and (not chain or contiguous):
            chain.append(stat)  # type: ignore[arg-type]
            continue
        if len(chain) >= MIN_CHAIN:
            insights.append(_chain_insight(chain, a, label))
        chain = [stat] if ok and stat is not None else []
    return insights


def _chain_insight(chain: list[LineStat], a: Attribution, label: str) -> Insight:
    samples = [s for stat in chain for s in a.sequence.get(stat.line, [])]
    names = [base_name(s.name) for s in samples]
    dev = sum(s.self_device_us for s in chain)
    share = 100.0 * dev / a.totals.self_device_us if a.totals.self_device_us > 0 else 0.0
    builtin = _matching_builtin(names)
    fix = f"{builtin} computes this in one fused kernel, and torch.compile would fuse the chain" if builtin else (
        "torch.compile (or a fused builtin) would merge them into one kernel"
    )
    inter = [_nbytes(s) for s in samples[:-1]]
    inter_txt = ""
    if inter and all(b > 0 for b in inter):
        inter_txt = f"; {len(inter)} intermediate tensors materialised, {fmt_bytes(sum(inter))} per iteration"
    return Insight(
        line=chain[0].line,
        kind="fusable_chain",
        message=(
            f"lines {chain[0].line}–{chain[-1].line}: {len(samples)} separately dispatched ops "
            f"({', '.join(names)}), each a kernel launch and an intermediate tensor; {fix}"
        ),
        evidence=f"{fmt_us(dev)} {label} per iteration ({share:.1f} % of the function){inter_txt}",
    )


def _matching_builtin(names: list[str]) -> str:
    for pattern, builtin in BUILTINS:
        for start in range(len(names) - len(pattern) + 1):
            if all(names[start + i] in allowed for i, allowed in enumerate(pattern)):
                return builtin
    return ""


def _nbytes(sample: OpSample) -> int:
    """The size of the tensor an op of the chain makes (work.output_bytes), 0 where it is not known."""
    return work.output_bytes(sample.name, sample.shapes, sample.dtypes)


def compiled_regions(a: Attribution) -> list[Insight]:
    insights = []
    for stat in a.lines:
        for region in stat.compiled:
            lines = sorted({r.line for r in region.fused})
            where = f"lines {lines[0]}–{lines[-1]} of {region.fused[0].function}" if lines else "its graph"
            insights.append(
                Insight(
                    line=stat.line,
                    kind="compiled_region",
                    message=f"{region.name} runs {where} as one compiled call",
                    evidence=f"{region.calls:g} call per iteration, {stat.op_calls:g} top-level ops on this line",
                )
            )
    return insights


def host_device_transfers(a: Attribution) -> list[Insight]:
    insights = []
    for stat in a.lines:
        copies = [o for o in stat.ops if o.name in COPIES]
        if copies:
            what = ", ".join(f"{o.name} ×{o.calls:g} ({fmt_us(o.self_device_us)})" for o in copies)
            insights.append(
                Insight(
                    line=stat.line,
                    kind="host_to_device_copy",
                    message=(
                        "a copy between host and device on this line: a CPU scalar or tensor meets a device "
                        "tensor; create it on the device once, outside the hot path"
                    ),
                    evidence=what,
                )
            )
        syncs = [o for o in stat.ops if o.name in SYNCS]
        if syncs:
            insights.append(
                Insight(
                    line=stat.line,
                    kind="device_sync",
                    message="this line reads a device value on the host (.item()), which waits for the device",
                    evidence=", ".join(f"{o.name} ×{o.calls:g}" for o in syncs),
                )
            )
    return insights


def noisy_lines(a: Attribution, iters: int, what: str = "iterations", option: str = "--iters") -> list[Insight]:
    return [
        Insight(
            line=s.line,
            kind="noisy",
            message=f"this line's time varies widely between {what}; compare medians, or raise {option}",
            evidence=(
                f"median {fmt_us(s.device_spread.median)}, min {fmt_us(s.device_spread.min)}, "
                f"max {fmt_us(s.device_spread.max)} over {iters} {what}"
            ),
        )
        for s in a.lines
        if s.noisy and s.pct_device >= 5.0
    ]
