"""The Neuron stand-ins' writers: the `neuron-explorer` executable, the documented Parquet tables of a processed
profile, folders laid out as the runtime writes them; and the targets and figures the stand-in runtime is told of."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from oplens.records.ceilings import DeviceCeilings, FigureSpread, cache_file, save
from support.cli import oplens_cli
from support.paths import STANDINS

# The Neuron stand-in tests' target: examples/rmsnorm.py's rmsnorm_naive, its inputs built where the stand-in
# device leaves them (on the CPU)
NAIVE_TARGET = """\
import torch

X, W, EPS = torch.randn(1, 8, 16), torch.ones(16), 1e-6


def rmsnorm_naive():
    x, w = X, W
    x_sq = x * x
    mean_sq = x_sq.mean(dim=-1, keepdim=True)
    mean_eps = mean_sq + EPS
    inv_rms = torch.rsqrt(mean_eps)
    x_norm = x * inv_rms
    return x_norm * w
"""
# its six device executions per call, known to the stand-in runtime trace (STANDIN_EXEC_US), and per line
NAIVE_KNOWN = "aten::mul=7,aten::mean=5,aten::add=2,aten::rsqrt=3"
NAIVE_PER_LINE = {8: 7.0, 9: 5.0, 10: 2.0, 11: 3.0, 12: 7.0, 13: 7.0}  # µs per iteration: 6 executions


def write_stand_in_explorer(folder: Path) -> Path:
    """The stand-in as an executable named `neuron-explorer` (so its command line names the tool)."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "neuron-explorer"
    exe.write_text(f"#!{sys.executable}\n" + (STANDINS / "neuron_explorer.py").read_text())
    exe.chmod(0o755)
    return exe


# The stand-in TorchNeuron tests' small target, and a function that fails as the runtime says it is out of memory
TARGET = """\
import torch


def fn():
    x = torch.ones(32, 32)
    y = x * x
    return (y @ x).sum()


def oom():
    raise RuntimeError("NRT: failed to allocate 6442450944 bytes of device memory (out of memory)")
"""


def calls(record: Path, event: str) -> list[dict[str, Any]]:
    """The stand-in TorchNeuron's recorded calls of `event` (its record file, one JSON object a line)."""
    if not record.is_file():
        return []
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    return [r for r in rows if r["event"] == event]


# the column types of the documented tables
I64, I32, F32, STR = pa.int64(), pa.int32(), pa.float32(), pa.string()


def write_table(folder: Path, name: str, schema: list[tuple[str, pa.DataType]], rows: list[tuple[Any, ...]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    columns = {field: [row[i] for row in rows] for i, (field, _) in enumerate(schema)}
    pq.write_table(pa.table(columns, schema=pa.schema(schema)), folder / f"{name}.parquet")


def execution_info(folder: Path, runs: list[tuple[str, int, int]]) -> None:
    schema = [("execution_index", I32), ("neff_name", STR), ("execution_start_ts", I64), ("execution_end_ts", I64),
              ("num_subgraphs", I32), ("row_count", I64)]  # fmt: skip
    write_table(folder, "ExecutionInfo", schema, [(i, n, s, e, 1, 100) for i, (n, s, e) in enumerate(runs)])


def active_time(folder: Path, spans: list[tuple[str, int, int, int]]) -> None:
    """(engine, pcore_idx, start_ts, end_ts) rows, in ns."""
    schema = [("start_ts", I64), ("end_ts", I64), ("engine", STR), ("pcore_idx", I64), ("duration_ns", I64)]
    write_table(folder, "ActiveTime", schema, [(s, e, engine, core, e - s) for engine, core, s, e in spans])


def dma_packets(folder: Path, spans: list[tuple[int, int]]) -> None:
    schema = [("start_ts", I64), ("end_ts", I64), ("duration_ns", I64), ("pcore_idx", I64), ("id", I64), ("packet_idx", I32),
              ("packet_aggregation_id", I64), ("engine_idx", I64), ("read_bytes", I64), ("write_bytes", I64),
              ("transfer_bytes", I64), ("throughput", F32), ("queue_type", STR), ("crc", I64)]  # fmt: skip
    rows = [(s, e, e - s, 0, i, 0, i, 0, 4096, 4096, 4096, 4096 / (e - s) * 1e9, "input", 0) for i, (s, e) in enumerate(spans)]
    write_table(folder, "DmaPacket", schema, rows)


def two_calls_of_one_graph(folder: Path) -> None:
    """neff_395760075800974.neff run twice (0-10 µs, 20-30 µs): the Tensor engine busy 6 µs a call, on
    two physical cores that overlap (union, not sum), Vector 2 µs, DMA packets overlapping each other."""
    neff = "neff_395760075800974_vnc_0.neff"
    execution_info(folder, [(neff, 0, 10_000), (neff, 20_000, 30_000)])
    active_time(folder, [
        ("tensor", 0, 1_000, 5_000), ("tensor", 1, 3_000, 7_000),  # union 1-7 µs: 6 µs
        ("Vector", 0, 8_000, 10_000),
        ("tensor", 0, 21_000, 27_000), ("Vector", 0, 28_000, 30_000),
        ("gpsimd", 0, 12_000, 18_000),  # between the executions: no graph's
    ])  # fmt: skip
    dma_packets(folder, [(0, 2_000), (1_000, 3_000), (20_000, 23_000)])  # 3 µs in each call


def tree(root: Path, files: dict[str, bytes]) -> Path:
    """`files` (relative path → bytes) written under `root`: a profile folder as some layout has it."""
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


EPOCH = "1778711290599971590"  # Pidem/equiformer-trainium: output/i-0d2719a23697e0eff_pid_99188/1778711290599971590/


def calibrated(tmp_path: Path) -> str:
    """An OPLENS_CACHE_DIR holding a calibration of the stand-in's NeuronCore (this host's CPU figures),
    as a host keeps its first one: the stand-in device runs each kernel through Python, far too slowly
    for the calibration's large matmuls."""
    device = "NeuronCore (1 visible)"
    figure = FigureSpread(best=1e11, median=1e11, worst=1e11, repeats=1, seconds=0.01, size=[256])
    path = cache_file(socket.gethostname(), "neuron", device, {"OPLENS_CACHE_DIR": str(tmp_path / "cache")})
    save(path, DeviceCeilings(name=device, dtype_peaks={"float32": 1e11}, bytes_per_s=2e10, source="measured",
                              measured_at="2026-12-02T00:00:00.000+00:00", backend="neuron", host=socket.gethostname(),
                              spread={"float32": figure, "triad": figure}))  # fmt: skip
    return str(tmp_path / "cache")


# The probe's ops (worker/doctor_probe.py) with known executions in the stand-in's runtime trace, µs per call.
PROBE_EXEC = {"aten::mm": 30.0, "aten::relu": 5.0, "aten::mul": 7.0, "aten::sum": 8.0}


def profile_on_stand_ins(folder: Path, source: str | None, target: str, *argv: str, expect: int = 0, explorer: bool = True,
                         **env: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:  # fmt: skip
    """`oplens profile TARGET --backend neuron ARGV --json -` in `folder`, TARGET's file written with `source`
    (None: it is there already), on the stand-ins: TorchNeuron on PYTHONPATH, `neuron-explorer` on PATH (unless
    `explorer` is false), `env` on top; the exit status must be `expect`. The run printed (empty where nothing
    was) and the process."""
    folder.mkdir(parents=True, exist_ok=True)
    if source is not None:
        (folder / target.split("::")[0]).write_text(source)
    path = os.environ["PATH"]
    if explorer:
        path = f"{write_stand_in_explorer(folder / 'bin').parent}{os.pathsep}{path}"
    proc = oplens_cli(folder, "profile", target, "--backend", "neuron", *argv, "--json", "-", timeout=240,
                      **{"PYTHONPATH": str(STANDINS), "PATH": path, **env})  # fmt: skip
    assert proc.returncode == expect, proc.stderr
    run: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return run, proc
