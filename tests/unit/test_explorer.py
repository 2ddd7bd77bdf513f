"""`oplens explorer`'s decisions before any viewer runs, against the STAND-IN `neuron-explorer`: a run without
a Neuron profile, ports taken or bad, the tool missing or found off PATH, the dry run's plan, runs found by id.
The viewer started, uploads and ingests are tests/worker/test_explorer.py's."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from oplens.backends.neuron import explorer
from oplens.engine import runs
from oplens.records.errors import OpLensError
from support.explorer import StandIn, make_run, open_run, session_of
from support.neuron import write_stand_in_explorer

# --------------------------------------------------------------------------- fixtures


def listen(port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def test_a_run_without_a_neuron_profile_is_bad_input(stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path) -> None:
    with pytest.raises(OpLensError, match="has no Neuron profile .it ran on the cpu backend") as e:
        open_run(make_run(tmp_path / "runs", kind="cpu"), tmp_path, *ports)
    assert e.value.exit_code == 2 and "--backend neuron" in e.value.detail
    assert stand_in_explorer.argvs() == []


# --------------------------------------------------------------------------- ports and tools


def test_ports_taken_by_another_program_are_named_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    run = make_run(tmp_path / "runs")
    with listen(ui):
        with pytest.raises(OpLensError) as e:
            open_run(run, tmp_path, ui, api)
        assert e.value.kind == "bad_input" and e.value.exit_code == 2
        assert f"port {ui} is taken by pid {os.getpid()}" in e.value.message
        assert f"UI on {ui}, API on {api}" in e.value.message and "--ui-port N --api-port M" in e.value.detail
        with listen(api), pytest.raises(OpLensError, match=f"port {api} is taken by pid {os.getpid()}"):
            open_run(run, tmp_path, ui, api)
    assert stand_in_explorer.argvs() == []  # neither a viewer started nor an ingest tried


def test_missing_tools_say_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ports: tuple[int, int]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(explorer, "NEURON_BIN", tmp_path / "no-neuron-bin")
    with pytest.raises(OpLensError) as e:
        open_run(make_run(tmp_path / "runs"), tmp_path, *ports)
    assert e.value.kind == "backend_unavailable" and e.value.exit_code == 5
    assert "neuron-explorer is not installed here" in e.value.message
    assert "aws-neuronx-tools" in e.value.detail and "/opt/aws/neuron/bin on PATH" in e.value.detail


def test_the_tool_is_found_in_opt_aws_neuron_bin_off_path_with_stand_in_explorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(explorer, "NEURON_BIN", tmp_path / "opt-aws-neuron-bin")
    exe = write_stand_in_explorer(tmp_path / "opt-aws-neuron-bin")
    assert explorer.find_tool() == exe


def test_a_dry_run_plans_the_viewer_the_upload_and_the_fallback_ingest_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    run = make_run(tmp_path / "runs")
    plan = open_run(run, tmp_path, *ports, dry_run=True).plan()
    viewer, upload, ingest = plan["commands"]
    assert viewer[1] == "view" and upload[1:5] == ["upload", "--endpoint", f"http://localhost:{ports[1]}", "--profile-directory"]
    assert ingest[1:3] == ["view", "-d"] and "--ingest-only" in ingest
    assert plan["profile_directory"] == session_of(run) and plan["endpoint"] == f"http://localhost:{ports[1]}"
    assert any("only where the upload leaves no processed profile" in m for m in plan["messages"])
    assert stand_in_explorer.argvs() == []  # nothing ran


def test_bad_ports_are_bad_input(tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs")
    with pytest.raises(OpLensError, match="need two ports"):
        open_run(run, tmp_path, 4000, 4000)
    with pytest.raises(OpLensError, match="is not a TCP port"):
        open_run(run, tmp_path, 0, 4000)


# --------------------------------------------------------------------------- finding runs


def test_runs_are_found_by_id_prefix_latest_or_directory(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    first = make_run(root, run_id="20260101-000000-fn-aaaaaa")
    second = make_run(root, run_id="20260102-000000-fn-bbbbbb")
    assert runs.find(root, "latest").run_id == second.run_id
    assert runs.find(root, "20260101").run_id == first.run_id
    assert runs.find(root, str(Path(first.run_dir))).run_id == first.run_id
    with pytest.raises(OpLensError, match="matches several runs"):
        runs.find(root, "2026")
    with pytest.raises(OpLensError, match="is neither a run directory nor a run id") as e:
        runs.find(root, "nope")
    assert e.value.exit_code == 2 and "20260102-000000-fn-bbbbbb" in e.value.detail
