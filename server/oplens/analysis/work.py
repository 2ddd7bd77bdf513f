"""The work an op does, from its input shapes and dtypes as the profiler records them: floating-point
operations and bytes moved (pure; the rules written down here, one per kind of op).

    matmul       mm, addmm, bmm, baddbmm: 2·M·N·K per product (torch.utils.flop_counter's formulas,
                 which a test checks these against); bytes: the operands read and the product written
    attention    _scaled_dot_product_*_attention: 4·B·H·Sq·Sk·D (its two products, as flop_counter's
                 sdpa formula); bytes: q, k, v read and the output (q-shaped) written
    elementwise  one operation per output element (the inputs' broadcast shape); bytes: each tensor
                 input read, the output written (in place, `op_`: the first input is the output)
    reduction    one operation per input element; a few for the fused normalisations (softmax 5,
                 layer/group/batch norm 8 per element); bytes: the input read and, for the
                 normalisations, an output of its shape written (a plain reduction's output is small
                 and its size is not recorded: not counted)
    copy         copy_, fill_, zero_, clone: no operation; bytes: what is read and written
    gather       embedding: no operation; bytes: the indices read, and a row of the table read and
                 one written per index
    view         views, allocations and bookkeeping (t, transpose, as_strided, empty, ...): no work
    unknown      any other op: its work is not guessed (convolutions among them: their output shape,
                 which the formula needs, is not recorded)

A composite op (linear, matmul, softmax, to, contiguous, ...) has no rule of its own: the ops it calls
do the work (`attribution.line_work` counts an op only where no op around it was counted).

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

from oplens.records.run import LineStat, Temporary, Totals

DTYPE_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "long int": 8, "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16,
}  # fmt: skip

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
ATTENTION = {"aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu"}  # fmt: skip
ELEMENTWISE = {
    "add", "sub", "mul", "div", "neg", "abs", "exp", "exp2", "log", "log1p", "sqrt", "rsqrt", "pow", "tanh", "sigmoid",
    "relu", "gelu", "silu", "elu", "leaky_relu", "hardtanh", "clamp", "clamp_min", "clamp_max", "maximum", "minimum",
    "where", "masked_fill", "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "sin", "cos", "reciprocal", "erf", "lerp", "addcmul", "addcdiv", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
    "sign", "floor", "ceil", "round", "square", "rsub", "mish", "softplus",
}  # fmt: skip
REDUCTION = {"sum", "mean", "amax", "amin", "max", "min", "var", "std", "var_mean", "std_mean", "norm",
             "linalg_vector_norm", "prod", "argmax", "argmin", "logsumexp", "all", "any"}  # fmt: skip
NORMALISATION = {"_softmax": 5, "_log_softmax": 5, "native_layer_norm": 8, "native_group_norm": 8,
                 "native_batch_norm": 8, "_native_batch_norm_legit": 8, "_native_batch_norm_legit_no_training": 8}  # fmt: skip
COPY = {"copy_", "fill_", "zero_", "clone"}
VIEW = {
    "t", "transpose", "as_strided", "view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "permute", "select",
    "slice", "unsqueeze", "squeeze", "resolve_conj", "resolve_neg", "detach", "alias", "numpy_T", "unbind", "split",
    "chunk", "narrow", "unflatten", "flatten", "view_as", "expand_as", "lift_fresh", "empty", "empty_strided",
    "empty_like", "zeros_like", "ones_like", "result_type", "item", "_local_scalar_dense", "is_nonzero", "size",
    "stride", "set_", "split_with_sizes",
}  # fmt: skip


TORCH_DTYPES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
                "c10::Float8_e4m3fn": "float8", "c10::Float8_e5m2": "float8"}  # fmt: skip


@dataclass(frozen=True)
class OpWork:
    kind: str  # matmul | attention | elementwise | reduction | copy | view | unknown
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


def _tensors(shapes: list[list[int]], dtypes: list[str]) -> list[tuple[list[int], int]]:
    """(shape, element size) of each tensor input (a scalar argument has no element size here)."""
    out = []
    for shape, dtype in zip(shapes, dtypes, strict=False):
        size = DTYPE_BYTES.get(dtype)
        if size is not None and dtype not in ("Scalar", "ScalarList", ""):
            out.append((shape, size))
    return out


def _broadcast(shapes: list[list[int]]) -> list[int]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            out[j] = max(out[j], d)
    return out


def op_work(name: str, shapes: list[list[int]], dtypes: list[str]) -> OpWork:
    """The work of one call of op `name` with these inputs (module docstring: the rules)."""
    w = _op_work(name, shapes, dtypes)
    first = next((TORCH_DTYPES.get(d, d) for d in dtypes if d in DTYPE_BYTES), "")
    return dataclasses.replace(w, dtype=first) if w.flops else w


def _op_work(name: str, shapes: list[list[int]], dtypes: list[str]) -> OpWork:
    tensors = _tensors(shapes, dtypes)
    if name in MATMUL:
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
        return OpWork("matmul", float(flops), float(read + out * ea))
    if name in ATTENTION:
        if len(tensors) < 3 or len(tensors[0][0]) != 4:
            return UNKNOWN
        q_shape, q_elem = tensors[0]
        batch, heads, sq, dim = q_shape
        sk = tensors[1][0][2]
        flops = 2 * (2 * batch * heads * sq * sk * dim)  # q·kᵀ and (·)·v
        read = sum(_numel(s) * size for s, size in tensors[:3])
        return OpWork("attention", float(flops), float(read + _numel(q_shape) * q_elem))
    base = name.removeprefix("aten::")
    in_place = base.endswith("_") and not base.endswith("__")
    stem = base[:-1] if in_place else base
    if base in COPY or stem in COPY:
        if not tensors:
            return NO_WORK
        if base == "copy_" and len(tensors) >= 2:
            return OpWork("copy", 0.0, float(_numel(tensors[0][0]) * (tensors[0][1] + tensors[1][1])))
        if base == "clone":  # read and written
            return OpWork("copy", 0.0, float(2 * _numel(tensors[0][0]) * tensors[0][1]))
        return OpWork("copy", 0.0, float(_numel(tensors[0][0]) * tensors[0][1]))
    if base == "embedding":
        if len(tensors) < 2 or len(tensors[0][0]) != 2:
            return UNKNOWN
        (table, elem), (indices, index_elem) = tensors[0], tensors[1]
        rows = _numel(indices)
        return OpWork("copy", 0.0, float(rows * index_elem + 2 * rows * table[1] * elem))
    if base in VIEW or stem in VIEW:
        return NO_WORK
    if stem in ELEMENTWISE:
        if not tensors:
            return UNKNOWN
        out_shape = tensors[0][0] if in_place else _broadcast([s for s, _ in tensors])
        # the output's element as the largest input's: a Python number arrives as a 0-d double
        # tensor, which does not set the result's dtype
        out_elem = max(tensors, key=lambda t: _numel(t[0]) if t[0] else 0)[1]
        read = sum(_numel(s) * e for s, e in tensors)
        return OpWork("elementwise", float(_numel(out_shape)), float(read + _numel(out_shape) * out_elem))
    if stem in NORMALISATION:
        if not tensors:
            return UNKNOWN
        shape, e = tensors[0]
        n = _numel(shape)
        return OpWork("reduction", float(NORMALISATION[stem] * n), float(2 * n * e))
    if stem in REDUCTION:
        if not tensors:
            return UNKNOWN
        shape, e = tensors[0]
        return OpWork("reduction", float(_numel(shape)), float(_numel(shape) * e))
    return UNKNOWN


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


@dataclass
class LineMemory:
    """A line's memory in one call: bytes its ops allocated and freed, and the peak while it ran."""

    alloc: int = 0
    freed: int = 0
    peak: int = 0
    temp_bytes: int = 0  # the largest block it allocated that the call freed again
    temp_freed_line: int = 0  # the line that freed it


def assign_memory(lines: list[LineStat], totals: Totals, memory: tuple[Mapping[int, LineMemory], int, str]) -> None:
    """Each line's memory into the run's records; a line that only frees (`del x`) or allocates
    without an op of its own joins the lines, with no time."""
    by_line, peak, kind = memory
    have = {s.line for s in lines}
    for n, m in by_line.items():
        if n not in have and (m.alloc or m.freed):
            zeros = [0.0] * len(totals.device_samples_us)  # per call, as every line has them
            lines.append(LineStat(line=n, self_cpu_us=0.0, self_device_us=0.0, pct_device=0.0, pct_cpu=0.0, op_calls=0.0,
                                  device_samples_us=zeros, cpu_samples_us=list(zeros)))  # fmt: skip
    lines.sort(key=lambda s: s.line)
    for s in lines:
        m = by_line.get(s.line, LineMemory())
        s.alloc_bytes, s.freed_bytes, s.peak_bytes = m.alloc, m.freed, m.peak
        s.temporary = Temporary(m.temp_bytes, m.temp_freed_line) if m.temp_bytes else None
    totals.peak_bytes, totals.memory = peak, kind


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
