"""Each op's work by rule (`analysis/work.py`): SDPA's FLOPs from the flop counters, an op without a rule unknown,
never guessed. The work measured on real profiles is tests/worker/test_work.py's."""

from __future__ import annotations

import torch
from torch.utils.flop_counter import flop_registry

from oplens.analysis.work import op_work
from support.paths import DATA

WORK = DATA / "work_lines.py"


def test_sdpa_rule_is_flop_counters() -> None:
    q = k = v = [2, 4, 128, 64]
    ours = op_work("aten::_scaled_dot_product_flash_attention", [q, k, v], ["float"] * 3).flops
    assert ours == flop_registry[torch.ops.aten._scaled_dot_product_flash_attention](q, k, v)


def test_ops_without_a_rule_are_unknown_never_guessed() -> None:
    w = op_work("aten::_convolution", [[1, 3, 32, 32], [8, 3, 3, 3]], ["float", "float"])
    assert not w.known and w.flops == 0.0
    assert op_work("aten::transpose", [[4, 4], [], []], ["float", "Scalar", "Scalar"]).kind == "view"
    assert op_work("aten::mul_", [[8, 8], []], ["float", "Scalar"]).bytes == 2 * 64 * 4  # in place: read, written
    assert op_work("aten::clone", [[8, 8], []], ["float", "Scalar"]).bytes == 2 * 64 * 4  # read, written
    # a lookup of 4×16 indices into a 100×32 table: the indices read, a row read and written per index
    gather = op_work("aten::embedding", [[100, 32], [4, 16], [], [], []], ["float", "long int", "Scalar", "Scalar", "Scalar"])
    assert gather.bytes == 64 * 8 + 2 * 64 * 32 * 4 and gather.flops == 0.0
