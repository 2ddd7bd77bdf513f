"""The Neuron engine breakdown, read from a STAND-IN processed profile (Neuron Explorer's Parquet tables).

No Neuron Explorer runs here, so the processed profile is written by the test with pyarrow, table by
table and column by column as `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0)
gives them: `ExecutionInfo`, `ActiveTime`, `DmaPacket`, `Summary`, `NeffHeader`. The end-to-end test
runs the stand-in `torch_neuronx` and the stand-in `neuron-explorer` (tests/standins/), whose ingest
copies that profile to where the docs put a processed profile (`<data-path>/profiles/global/<name>@latest/`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oplens.records.run import GraphEngines, Run
from support.neuron import two_calls_of_one_graph
from support.paths import STANDINS
from support.processes import stop_group

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron


# --------------------------------------------------------------------------- end to end


def _cli(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NEURON_RT_NUM_CORES") and not k.startswith("STANDIN_")}
    full.update(env, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "oplens", *argv], cwd=cwd, env=full, capture_output=True, text=True, timeout=180)


def test_engines_reach_the_calling_line_with_stand_in_torch_neuronx_explorer_and_processed_profile(
    tmp_path: Path, ports: tuple[int, int]
) -> None:
    """profile → note (not processed) → `oplens explorer` processes it (stand-in) → the line that
    calls the graph carries its engines, in result.json and in the explorer's answer."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "neuron-explorer"
    exe.write_text(f"#!{sys.executable}\n" + (STANDINS / "neuron_explorer.py").read_text())
    exe.chmod(0o755)
    record = tmp_path / "explorer.jsonl"
    two_calls_of_one_graph(tmp_path / "processed")
    (tmp_path / "t.py").write_text("import torch\n\n\ndef fn():\n    return (torch.ones(8, 8) @ torch.ones(8, 8)).sum()\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "STANDIN_EXPLORER_RECORD": str(record)}
    profiled = _cli(tmp_path, "profile", "t.py::fn", "--backend", "neuron", "--warmup", "1", "--iters", "2", "--json", "-",
                    PYTHONPATH=str(STANDINS), **env)  # fmt: skip
    assert profiled.returncode == 5, profiled.stderr  # no device time: exit 5 (issue 33)
    run = json.loads(profiled.stdout)
    assert run["engine_graphs"] == [] and "not processed" in run["engine_note"]
    assert f"oplens explorer {run['run_id']}" in run["engine_note"]
    ui, api = ports
    try:
        opened = _cli(tmp_path, "explorer", run["run_id"], "--ui-port", str(ui), "--api-port", str(api), "--json", "-",
                      STANDIN_EXPLORER_PROCESSED=str(tmp_path / "processed"), **env)  # fmt: skip
    finally:
        for call in (json.loads(r) for r in record.read_text().splitlines()) if record.is_file() else []:
            if "serving" in call:
                stop_group(call["pid"])
    assert opened.returncode == 0, opened.stderr
    assert any(m.startswith("engine breakdown of 1 graph(s)") for m in json.loads(opened.stdout)["messages"])
    stored = json.loads((Path(run["run_dir"]) / "result.json").read_text())
    (graph,) = stored["engine_graphs"]
    assert (graph["graph"], graph["calls"], graph["device_us"], graph["line"]) == ("neff_395760075800974_vnc_0.neff", 2, 10.0, 5)
    (on_line,) = [s for s in stored["lines"] if s["engines"]]
    assert on_line["line"] == 5 and on_line["engine_graph"] == graph["graph"]
    assert {e["engine"]: e["active_us"] for e in on_line["engines"]} == {"Tensor": 6.0, "Vector": 2.0, "GpSimd": 0.0, "DMA": 3.0}
    assert stored["engine_note"] == ""
    again = Run.from_dict(stored)
    assert isinstance(again.engine_graphs[0], GraphEngines)
    assert [s.engines[0].pct for s in again.lines if s.line == 5] == [60.0]
    # the CLI's listing shows it under the lines
    from oplens.cli.render import engine_lines

    (text,) = engine_lines(again)
    assert "line 5: graph neff_395760075800974_vnc_0.neff, 10.0 µs on the device per call" in text
    assert "Tensor 6.0 µs (60%)" in text and "DMA 3.0 µs (30%)" in text
