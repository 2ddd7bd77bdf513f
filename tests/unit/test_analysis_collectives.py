"""`analysis.collectives`: which op names are collectives (c10d's, gloo's and NCCL's ranges, the
functional and vendor forms), and the attribution's collective figures on synthetic events and on
the stored distributed run."""

from __future__ import annotations

import json

import pytest

from oplens.analysis.attribution import RawEvent, attribute
from oplens.analysis.collectives import COLLECTIVE, category, is_collective
from support.paths import FIXTURES

COLLECTIVES = [
    "c10d::allreduce_", "c10d::barrier", "c10d::broadcast_", "c10d::recv_", "c10d::allgather_",
    "c10d::reduce_scatter_", "c10d_functional::reduce_scatter_tensor", "_c10d_functional::all_reduce",
    "_c10d_functional::all_gather_into_tensor", "gloo:all_reduce", "gloo:send", "nccl:all_reduce",
    "nccl:_all_gather_base", "nccl:recv", "record_param_comms", "ProcessGroupNCCL::allreduce",
    "xla::all_reduce", "all_reduce", "all_gather", "reduce_scatter",
]  # fmt: skip
NOT_COLLECTIVES = [
    "aten::add", "aten::scatter", "aten::gather", "aten::all", "aten::broadcast_tensors", "aten::scatter_reduce",
    "aten::index_reduce", "aten::allclose", "aten::send", "_c10d_functional::wait_tensor", "oplens.line:3",
    "Torch-Compiled Region: 0/0", "cudaLaunchKernel",
]  # fmt: skip


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collectives_by_their_recorded_names(name: str) -> None:
    assert is_collective(name) and category(name) == COLLECTIVE


@pytest.mark.parametrize("name", NOT_COLLECTIVES)
def test_ops_that_only_look_like_one(name: str) -> None:
    assert not is_collective(name) and category(name) == ""


def test_a_lines_collective_time_in_its_ops_line_and_totals() -> None:
    events = [
        RawEvent("oplens.iter:0", 1, 0, 10_000),
        RawEvent("oplens.line:11", 1, 100, 2_000),
        RawEvent("aten::mul", 1, 200, 1_200),
        RawEvent("oplens.line:12", 1, 2_000, 9_000),
        RawEvent("c10d::allreduce_", 1, 2_100, 8_100),
        RawEvent("gloo:all_reduce", 1, 2_200, 8_000),  # the backend's range inside c10d's op
    ]
    a = attribute(events, iters=1, def_line=10)
    ops = {o.name: o for o in a.ops}
    assert ops["c10d::allreduce_"].category == ops["gloo:all_reduce"].category == COLLECTIVE
    assert ops["aten::mul"].category == ""
    lines = {s.line: s for s in a.lines}
    assert lines[11].collective_us == 0
    assert lines[12].collective_us == pytest.approx(6.0)  # self times: 0.2 µs of c10d's + 5.8 µs of gloo's
    assert a.totals.collective_us == pytest.approx(6.0)


def test_the_stored_distributed_runs_categories_are_these_rules() -> None:
    run = json.loads((FIXTURES / "rmsnorm_naive.ranks.result.json").read_text())
    ops = [*run["ops"], *(o for s in run["lines"] for o in s["ops"])]
    assert {o["name"] for o in ops if o.get("category")} == {"c10d::allreduce_"}
    assert all(o.get("category", "") == category(o["name"]) for o in ops)
