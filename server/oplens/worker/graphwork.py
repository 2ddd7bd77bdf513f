"""The work of a torch.compile graph, counted from the graph itself (worker side).

Its fused kernels' profiler events carry no shapes a rule could read, but Dynamo hands OpLens each
graph it compiles (worker/compiled.py). Run once on fake tensors shaped as the graph's example
inputs, under a dispatch mode that records every aten op with its inputs, the graph gives its ops
as the profiler would record them; `analysis.work.graph_work` applies the rules to them. Fake
tensors allocate nothing and compute nothing: this costs a few ms per op (0.2 s for the 4-layer
tinylm), once per graph, after the calls.

The shapes are those the graph was compiled for (a dynamic graph's at its first compile).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from oplens.analysis.work import LineWork, graph_work

# torch's dtypes as the profiler names them (its record_shapes "Input type"s; analysis/ops.py).
PROFILER_DTYPES = {
    torch.float32: "float", torch.float64: "double", torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
    torch.int64: "long int", torch.int32: "int", torch.int16: "short int", torch.int8: "signed char",
    torch.uint8: "unsigned char", torch.bool: "bool", torch.complex64: "c10::complex<float>",
    torch.complex128: "c10::complex<double>",
}  # fmt: skip
for _name, _profiler_name in (("float8_e4m3fn", "c10::Float8_e4m3fn"), ("float8_e5m2", "c10::Float8_e5m2")):
    if hasattr(torch, _name):  # torch >= 2.1
        PROFILER_DTYPES[getattr(torch, _name)] = _profiler_name


class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Each aten op called, as (name, input shapes, input dtypes) in the profiler's spelling."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.ops: list[tuple[str, list[list[int]], list[str]]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = str(func.overloadpacket)
        if name.startswith("aten."):
            shapes, dtypes = [], []
            for a in [*args, *(kwargs or {}).values()]:
                if isinstance(a, torch.Tensor):
                    shapes.append(list(a.shape))
                    dtypes.append(PROFILER_DTYPES.get(a.dtype, str(a.dtype)))
                else:  # a number or a list: the profiler records it as a scalar, with no shape
                    shapes.append([])
                    dtypes.append("Scalar")
            self.ops.append((name.replace("aten.", "aten::", 1), shapes, dtypes))
        return func(*args, **(kwargs or {}))


def _size(value: Any) -> int:
    """A concrete size: a symbolic one (a dynamic graph) as its hint, the value it was traced with."""
    if isinstance(value, int):
        return value
    hint = getattr(getattr(value, "node", None), "hint", None)
    return int(hint) if hint is not None else int(value)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _attr(gm: Any, target: str) -> Any:
    for part in target.split("."):
        gm = getattr(gm, part, None)
    return gm


def work_of(gm: Any) -> LineWork | None:
    """The graph's work in one call (analysis.work.graph_work), or None where it cannot be run on
    fake tensors (an input with no example value, an op with no fake implementation)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    examples = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
    if any(e is None for e in examples):
        return None
    recorder = _Recorder()
    with FakeTensorMode(allow_non_fake_inputs=True):
        inputs = [
            torch.empty_strided([_size(s) for s in e.shape], [_size(s) for s in e.stride()], dtype=e.dtype, device=e.device)
            if isinstance(e, torch.Tensor)
            else (_size(e) if isinstance(e, torch.SymInt) else e)
            for e in examples
        ]
        with torch.no_grad(), recorder:
            outputs = gm(*inputs)
    attrs = [_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr"]  # parameters an older Dynamo kept
    read = sum(_nbytes(t) for t in [*inputs, *attrs] if isinstance(t, torch.Tensor))
    written = sum(_nbytes(t) for t in tree_leaves(outputs) if isinstance(t, torch.Tensor))
    return graph_work(recorder.ops, float(read + written))
