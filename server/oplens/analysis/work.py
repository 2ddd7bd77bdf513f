"""The work an op does, from its input shapes and dtypes as the profiler records them: floating-point
operations and bytes moved (pure; the rules written down here, one per kind of op). Which op is of
which kind, and each dtype's element size, is the table in ops.py (the insights read the same one);
an input of a dtype it does not know is not counted.

    matmul       mm, addmm, bmm, baddbmm: 2·M·N·K per product (torch.utils.flop_counter's formulas,
                 which a test checks these against); bytes: the operands read and the product written
    attention    _scaled_dot_product_*_attention: 4·B·H·Sq·Sk·D (its two products, as flop_counter's
                 sdpa formula); bytes: q, k, v read and the output (q-shaped) written
    elementwise  one operation per output element (the inputs' broadcast shape); bytes: each tensor
                 input read, the output written (in place, `op_`: the first input is the output)
    reduction    one operation per input element; bytes: the input read (the output is small and its
                 size is not recorded: not counted)
    normalisation  the fused ones: a few operations per input element (softmax 5, layer/group/batch
                 norm 8); bytes: the input read and an output of its shape written
    copy         copy_, fill_, zero_, clone: no operation; bytes: what is read and written
    gather       embedding: no operation; bytes: the indices read, and a row of the table read and
                 one written per index
    view         views, allocations and bookkeeping (t, transpose, as_strided, empty, ...): no work
    unknown      any other op: its work is not guessed (convolutions among them: their output shape,
                 which the formula needs, is not recorded)

A composite op (linear, matmul, softmax, to, contiguous, ...) has no rule of its own: the ops it calls
do the work. `line_work` gives each line's work in one call: it nests the shapes call's events
(`attribution.nest`) and counts an op only where no op around it was counted.

A torch.compile region runs fused kernels whose shapes say little. Its work is the graph's
(`graph_work`), counted from the graph's own ops run on fake tensors (worker/graphwork.py) with the
rules above: its FLOPs those ops', its bytes the graph's inputs read and outputs written (the least
a fused graph moves; the ops' sum would count intermediates the kernels keep on chip, and a floor
must not be above the time). A line calling one is marked `work_estimate`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from oplens.analysis import ops
from oplens.analysis.attribution import AnyEvents, Node, nest
from oplens.analysis.ops import NORMALISATION, TORCH_DTYPES
from oplens.records.run import LineStat, Totals


@dataclass(frozen=True)
class OpWork:
    kind: str  # ops.kind: matmul | attention | elementwise | reduction | normalisation | copy | gather | view | unknown
    flops: float = 0.0
    bytes: float = 0.0
    dtype: str = ""  # the first tensor input's, as torch names it (float32, bfloat16, ...)

    @property
    def known(self) -> bool:
        return self.kind != "unknown"

    @property
    def computes(self) -> bool:
        """Work of its own: an op around it that computes is counted instead of what it calls."""
        return self.kind not in ("view", "unknown")


UNKNOWN = OpWork("unknown")
NO_WORK = OpWork("view")


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def _broadcast(shapes: list[list[int]]) -> list[int]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            out[j] = max(out[j], d)
    return out


def _elementwise_out(tensors: list[tuple[list[int], int]], in_place: bool) -> tuple[int, int]:
    """An elementwise op's output: (elements, element size). Its shape is the inputs' broadcast one
    (the first input's, in place); its element the largest input's: a Python number arrives as a 0-d
    double tensor, which does not set the result's dtype."""
    shape = tensors[0][0] if in_place else _broadcast([s for s, _ in tensors])
    return _numel(shape), max(tensors, key=lambda t: _numel(t[0]) if t[0] else 0)[1]


def op_work(name: str, shapes: list[list[int]], dtypes: list[str]) -> OpWork:
    """The work of one call of op `name` with these inputs (module docstring: the rules)."""
    w = _op_work(name, shapes, dtypes)
    first = next((TORCH_DTYPES.get(d, d) for d in dtypes if d in ops.DTYPE_BYTES), "")
    return dataclasses.replace(w, dtype=first) if w.flops else w


def _op_work(name: str, shapes: list[list[int]], dtypes: list[str]) -> OpWork:
    kind = ops.kind(name)
    if kind in ("view", "unknown"):
        return NO_WORK if kind == "view" else UNKNOWN
    tensors = ops.tensors(shapes, dtypes)
    base, stem, in_place = ops.split_name(name)
    if kind == "matmul":
        mats = [(s, b) for s, b in tensors if len(s) >= 2]
        if len(mats) < 2:
            return UNKNOWN
        (a, ea), (b, _) = mats[-2], mats[-1]
        if name in ("aten::mm", "aten::addmm"):
            m, k, n = a[0], a[1], b[1]
            flops, out = 2 * m * n * k, m * n
        else:
            batch, m, k, n = a[0], a[1], a[2], b[2]
            flops, out = 2 * batch * m * n * k, batch * m * n
        read = sum(_numel(s) * e for s, e in tensors)
        return OpWork(kind, float(flops), float(read + out * ea))
    if kind == "attention":
        if len(tensors) < 3 or len(tensors[0][0]) != 4:
            return UNKNOWN
        q_shape, q_elem = tensors[0]
        batch, heads, sq, dim = q_shape
        sk = tensors[1][0][2]
        flops = 2 * (2 * batch * heads * sq * sk * dim)  # q·kᵀ and (·)·v
        read = sum(_numel(s) * size for s, size in tensors[:3])
        return OpWork(kind, float(flops), float(read + _numel(q_shape) * q_elem))
    if kind == "copy":
        if not tensors:
            return NO_WORK
        if base == "copy_" and len(tensors) >= 2:
            return OpWork(kind, 0.0, float(_numel(tensors[0][0]) * (tensors[0][1] + tensors[1][1])))
        if base == "clone":  # read and written
            return OpWork(kind, 0.0, float(2 * _numel(tensors[0][0]) * tensors[0][1]))
        return OpWork(kind, 0.0, float(_numel(tensors[0][0]) * tensors[0][1]))
    if kind == "gather":
        if len(tensors) < 2 or len(tensors[0][0]) != 2:
            return UNKNOWN
        (table, elem), (indices, index_elem) = tensors[0], tensors[1]
        rows = _numel(indices)
        return OpWork(kind, 0.0, float(rows * index_elem + 2 * rows * table[1] * elem))
    if not tensors:
        return UNKNOWN
    if kind == "elementwise":
        n, out_elem = _elementwise_out(tensors, in_place)
        read = sum(_numel(s) * e for s, e in tensors)
        return OpWork(kind, float(n), float(read + n * out_elem))
    shape, e = tensors[0]
    n = _numel(shape)
    if kind == "normalisation":
        return OpWork(kind, float(NORMALISATION[stem] * n), float(2 * n * e))
    return OpWork(kind, float(n), float(n * e))  # a reduction


def output_bytes(name: str, shapes: list[list[int]], dtypes: list[str]) -> int:
    """The size of the tensor one call of an elementwise or reduction op makes, by the rules above: an
    elementwise op's output, a normalisation's (its input's shape); a plain reduction's output size
    is not recorded: its input's, the most it can be. 0 where it is not known (another kind of op,
    or no input of a known dtype)."""
    kind = ops.kind(name)
    tensors = ops.tensors(shapes, dtypes)
    if not tensors or kind not in ("elementwise", "reduction", "normalisation"):
        return 0
    if kind == "elementwise":
        n, elem = _elementwise_out(tensors, ops.split_name(name)[2])
        return n * elem
    shape, elem = tensors[0]
    return _numel(shape) * elem


@dataclass
class LineWork:
    """A line's work in one call: what it computes and moves, and the ops with no rule."""

    flops: float = 0.0
    bytes: float = 0.0
    unknown: set[str] = field(default_factory=set)
    dtype: str = ""  # of the op with the most FLOPs
    top_flops: float = 0.0
    estimate: bool = False  # includes compiled graphs' work (graph_work)

    def add(self, other: LineWork) -> None:
        self.flops += other.flops
        self.bytes += other.bytes
        self.unknown |= other.unknown
        self.estimate |= other.estimate
        if other.top_flops > self.top_flops:
            self.top_flops, self.dtype = other.top_flops, other.dtype


def graph_work(ops: Sequence[tuple[str, list[list[int]], list[str]]], io_bytes: float) -> LineWork:
    """A compiled graph's work in one call: its ops' FLOPs by the rules above (as the profiler
    would record them: name, input shapes, dtypes), `io_bytes` its inputs and outputs."""
    found = LineWork(bytes=io_bytes, estimate=True)
    for name, shapes, dtypes in ops:
        w = op_work(name, shapes, dtypes)
        if not w.known:
            found.unknown.add(name)
        found.flops += w.flops
        if w.flops > found.top_flops:
            found.top_flops, found.dtype = w.flops, w.dtype
    return found


def line_work(events: AnyEvents, def_line: int, graphs: Mapping[str, LineWork] | None = None) -> dict[int, LineWork]:
    """Each line's work in the first iteration of a profile recorded with input shapes: an op is
    counted where it has a rule and no op around it was counted (a composite op's work is that of
    the ops it calls); an op with no rule is unknown where nothing it calls was counted. A
    torch.compile region whose graph's work is in `graphs` counts as that (graph_work)."""
    nodes, locate = nest(events, def_line)
    found: dict[int, LineWork] = {}
    unknown: list[Node] = []
    counted: set[int] = set()  # id() of each op whose work counts (its own, or that of an op around it)
    counts_below: set[int] = set()  # id() of each op around a counted one
    for node in nodes:  # by start time within a thread: an op's parents come first
        if node.is_marker:
            continue
        if node.ctx[0] < 0:
            node.ctx = locate(node.ev.start_ns)
        if node.ctx[0] != 0:
            continue
        if node.parent is not None and id(node.parent) in counted:
            counted.add(id(node))  # inside an op whose work was counted
            continue
        work = (graphs or {}).get(node.ev.name)
        if work is None:
            w = op_work(node.ev.name, *node.ev.inputs())
            if not w.computes:
                if not w.known:
                    unknown.append(node)
                continue
            work = LineWork(flops=w.flops, bytes=w.bytes, dtype=w.dtype, top_flops=w.flops)
        counted.add(id(node))
        p = node.parent
        while p is not None and id(p) not in counts_below:
            counts_below.add(id(p))
            p = p.parent
        found.setdefault(node.ctx[1] or def_line, LineWork()).add(work)
    for node in unknown:
        if id(node) not in counts_below:
            found.setdefault(node.ctx[1] or def_line, LineWork()).unknown.add(node.ev.name)
    return found


def assign(lines: Sequence[LineStat], totals: Totals, work: Mapping[int, LineWork]) -> None:
    """Each line's work (and the function's) into the run's records."""
    for s in lines:
        w = work.get(s.line, LineWork())
        s.flops, s.bytes = w.flops, w.bytes
        s.intensity = w.flops / w.bytes if w.bytes > 0 else None
        s.work_unknown = sorted(w.unknown)
        s.work_estimate = w.estimate
        s.dtype = w.dtype
    totals.flops = sum(s.flops or 0.0 for s in lines)
    totals.bytes = sum(s.bytes or 0.0 for s in lines)
