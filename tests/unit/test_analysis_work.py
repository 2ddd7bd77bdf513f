"""`analysis.work.line_work` and `analysis.ops` without torch: each line's work from nested synthetic
events (a composite op counted once, an op with no rule named, a compiled graph's work) and from the
stored rmsnorm_naive trace's own input shapes; the one op and dtype table."""

from __future__ import annotations

import pytest

from oplens.analysis import ops, work
from oplens.analysis.attribution import RawEvent
from support.stored import stored_events

T = 1
F = "float"


def op(name: str, start: int, end: int, *shapes: list[int], dtypes: list[str] | None = None) -> RawEvent:
    return RawEvent(name, T, start, end, shapes=list(shapes), dtypes=dtypes or [F] * len(shapes))


def test_a_composite_op_counts_as_the_ops_it_calls_once() -> None:
    events = [
        RawEvent("oplens.iter:0", T, 0, 10_000),
        RawEvent("oplens.line:11", T, 100, 3_000),
        op("aten::linear", 200, 2_900, [64, 32], [16, 32]),  # linear → t (a view) and addmm
        op("aten::t", 300, 400, [16, 32]),
        op("aten::addmm", 500, 2_800, [16], [64, 32], [32, 16]),
        op("aten::mm", 600, 2_700, [64, 32], [32, 16]),  # a dispatch inside addmm: not counted again
        RawEvent("oplens.line:12", T, 3_000, 6_000),
        op("aten::_convolution", 3_100, 5_900, [1, 3, 8, 8], [4, 3, 3, 3]),  # no rule
        RawEvent("oplens.line:13", T, 6_000, 9_000),
        op("aten::softmax", 6_100, 8_900, [8, 8], [], dtypes=[F, "Scalar"]),  # no rule, but what it calls has
        op("aten::_softmax", 6_200, 8_800, [8, 8], [], dtypes=[F, "Scalar"]),
    ]
    found = work.line_work(events + [RawEvent("oplens.iter:1", T, 20_000, 30_000),
                                     op("aten::mm", 21_000, 22_000, [4, 4], [4, 4])], def_line=10)  # fmt: skip
    assert found[11].flops == 2 * 64 * 32 * 16 and not found[11].unknown
    assert found[11].bytes == 4 * (16 + 64 * 32 + 32 * 16 + 64 * 16)  # addmm's operands read, its product written
    assert found[11].dtype == "float32"
    assert found[12].flops == 0 and found[12].unknown == {"aten::_convolution"}
    assert found[13].flops == 5 * 64 and not found[13].unknown  # _softmax: 5 per element
    assert 10 not in found  # the second iteration's mm is not the first call's work


def test_a_compiled_regions_work_is_its_graphs() -> None:
    region = "Torch-Compiled Region: 0/0"
    graph = work.graph_work([("aten::mm", [[8, 8], [8, 8]], [F, F]), ("aten::relu", [[8, 8]], [F])], io_bytes=512.0)
    events = [
        RawEvent("oplens.iter:0", T, 0, 10_000),
        RawEvent("oplens.line:11", T, 100, 9_000),
        RawEvent(region, T, 200, 8_000),
        RawEvent("some_fused_kernel_op", T, 300, 7_000),  # inside the counted region: not unknown
    ]
    (w,) = work.line_work(events, def_line=10, graphs={region: graph}).values()
    assert (w.flops, w.bytes, w.estimate, w.unknown) == (2 * 8**3 + 64, 512.0, True, set())


def test_the_stored_rmsnorm_naive_lines_work() -> None:
    found = work.line_work(stored_events(shapes=True), def_line=23)
    n = 2 * 128 * 256  # x: [2, 128, 256] float32
    assert found[25].flops == n and found[25].bytes == 3 * 4 * n  # x * x: two reads and a write
    assert found[26].flops == n and found[26].bytes == 4 * n  # mean: one read (its small output not counted)
    assert found[29].bytes == 4 * (2 * n + 256)  # x * rsqrt(...): x and the [2, 128, 1] factor read, x-sized written
    assert all(not w.unknown and w.dtype == "float32" for w in found.values())


def test_one_table_of_kinds_and_element_sizes() -> None:
    kinds = {"aten::mm": "matmul", "aten::_scaled_dot_product_flash_attention": "attention", "aten::mul": "elementwise",
             "aten::mul_": "elementwise", "aten::sin": "elementwise", "aten::sum": "reduction",
             "aten::native_layer_norm": "normalisation", "aten::copy_": "copy", "aten::clone": "copy",
             "aten::embedding": "gather", "aten::view": "view", "aten::empty": "view", "aten::linear": "unknown",
             "aten::__and__": "unknown", "prims::mul": "unknown"}  # fmt: skip
    assert {name: ops.kind(name) for name in kinds} == kinds
    for name, kind in kinds.items():  # op_work's kind is the table's (attention's rule wants 4-d q, k, v)
        assert work.op_work(name, [[4, 4], [4, 4]], [F, F]).kind == (kind if kind != "attention" else "unknown")
    assert ops.tensors([[4], [], [2, 2], [3]], ["c10::Half", "Scalar", "bool", "c10::Float8_e4m3fnuz"]) == [
        ([4], 2), ([2, 2], 1)]  # fmt: skip
    # an input of a dtype the table does not know is not counted, in the work as in the insights
    assert work.op_work("aten::add", [[4], [4]], ["c10::Float8_e4m3fnuz", F]).bytes == 2 * 4 * 4
    assert work.output_bytes("aten::add", [[4], [4]], ["c10::Float8_e4m3fnuz"] * 2) == 0


@pytest.mark.parametrize(
    ("name", "shapes", "dtypes", "expected"),
    [
        ("aten::mul", [[64, 1], [1, 32]], [F, F], 64 * 32 * 4),  # broadcast
        ("aten::mul_", [[8, 8], []], [F, "Scalar"], 64 * 4),  # in place: the first input
        ("aten::add", [[8], []], ["c10::BFloat16", "double"], 8 * 2),  # a Python number does not set the dtype
        ("aten::mean", [[8, 8], [], [], []], [F, "ScalarList", "Scalar", ""], 64 * 4),  # its input: the most it can be
        ("aten::_softmax", [[8, 8], [], []], [F, "Scalar", "Scalar"], 64 * 4),
        ("aten::mm", [[8, 8], [8, 8]], [F, F], 0),  # not an elementwise op or a reduction
    ],
)
def test_output_bytes(name: str, shapes: list[list[int]], dtypes: list[str], expected: int) -> None:
    assert work.output_bytes(name, shapes, dtypes) == expected
