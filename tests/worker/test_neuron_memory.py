"""Device memory per line on Neuron (issue 33, part 5), against the STAND-IN torch_neuronx (tests/standins/): its
tensors on `neuron:0` (STANDIN_TENSORS=device) counted by a stand-in of TorchNeuron's memory counters
(`torch_neuronx.memory_stats()`, the memory profiling guide's API; the dict's layout TorchNeuron's early source's),
which rounds a small block up to 256 bytes as the memory-management guidelines say, so that the device's figures
differ from the host's. Every test here runs on the faked vendor module, and says so in its name ("stand_in")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.cli import oplens_cli
from support.neuron import calibrated, profile_on_stand_ins
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

MIB = 1 << 20

# x is 256 × 1024 float32, 1 MiB, moved to the device by the backend
TARGET = """\
import torch

X = torch.ones(256, 1024)


def grow(x):
    y = x * 2
    z = torch.cat([y, y])
    del y
    s = z.sum()
    return s
"""
Y, Z, DEL, S = 7, 8, 9, 10


def profile(tmp_path: Path, *extra: str, **env: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    record = tmp_path / "calls.jsonl"
    run, _ = profile_on_stand_ins(tmp_path, TARGET, "grow.py::grow", "--args", "(X,)", "--warmup", "2", "--iters", "3",
                                  *extra, **{"STANDIN_TENSORS": "device", "STANDIN_EXEC_US": "aten::mul=3",
                                  "STANDIN_RECORD": str(record),
                                  "OPLENS_CACHE_DIR": calibrated(tmp_path), **env})  # fmt: skip
    calls = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return run, calls


def by_line(run: dict[str, Any]) -> dict[int, tuple[int, int, int]]:
    return {s["line"]: (s["alloc_bytes"], s["freed_bytes"], s["peak_bytes"]) for s in run["lines"]}


def test_each_line_s_device_memory_is_the_stand_in_device_s_counters_read_synchronised(tmp_path: Path) -> None:
    """Each line shows what the device's allocator counted while it ran (not the host's allocations), every read
    comes after a synchronize, and the run says where the figures were read."""
    run, calls = profile(tmp_path)
    lines = by_line(run)
    assert lines[Y] == (MIB, 0, MIB)
    assert lines[Z] == (2 * MIB, 0, 3 * MIB)
    assert lines[DEL][:2] == (0, MIB)
    assert lines[S][:2] == (256, 0)  # a 4-byte scalar is a 256-byte block on the device (4 bytes on the host)
    totals = run["totals"]
    assert totals["memory"] == "device" and totals["peak_bytes"] == 3 * MIB
    note = totals["memory_note"]
    assert "torch_neuronx.memory_stats()" in note and "synchronised" in note and "host's allocations are not" in note
    reads = [c for c in calls if c["event"] == "memory_read"]
    assert reads and all(c["synced"] for c in reads), reads
    # kept with the run: re-derived from its trace, the memory view says where the figures were read
    shown = oplens_cli(tmp_path, "analyze", run["run_dir"], "--view", "memory", timeout=120, PYTHONPATH=str(STANDINS))
    assert shown.returncode == 0, shown.stderr
    assert "Alloc (device)" in shown.stdout and "torch_neuronx.memory_stats()" in " ".join(shown.stdout.split()), shown.stdout


def test_a_torch_like_flat_layout_reads_the_same_on_the_stand_in(tmp_path: Path) -> None:
    """ASSUMPTION (no page shows the dict): a later TorchNeuron might lay memory_stats() out as torch's CUDA one."""
    run, _ = profile(tmp_path, STANDIN_MEMORY_STATS="flat")
    assert by_line(run)[Z] == (2 * MIB, 0, 3 * MIB) and run["totals"]["memory"] == "device"


def test_without_the_stand_in_s_memory_api_the_figures_are_the_host_s_and_the_run_says_why(tmp_path: Path) -> None:
    run, calls = profile(tmp_path, STANDIN_MEMORY_STATS="none")
    totals = run["totals"]
    assert totals["memory"] == "host"
    assert "has no memory_stats() or memory_allocated()" in totals["memory_note"], totals["memory_note"]
    assert 0 < by_line(run)[S][0] < 256  # the host's small allocations (the scalar and its like), no 256-byte block
    assert not [c for c in calls if c["event"] == "memory_read"]
