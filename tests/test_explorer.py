"""Neuron Explorer, against a STAND-IN `neuron-explorer` executable (tests/standins/neuron_explorer.py).

The stand-in records its command lines, serves two ports for `view`, and checks its inputs for
`view ... --ingest-only`. The tests check what OpLens does: which profile it ingests and how
(directory, or a device-only NEFF/NTFF pair), the command lines, the URL and tunnel command,
reusing a viewer already serving, the messages when the ports are taken or the tools missing.
Ports are free ephemeral ones, never 3001/3002 (a real viewer may run on this machine).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import STANDINS, stop_group, write_stand_in_explorer
from oplens.backends.neuron import explorer
from oplens.backends.neuron.artifacts import PROFILE_DIR, find_artifacts
from oplens.engine import runs
from oplens.records.errors import OpLensError
from oplens.records.run import BackendInfo, Config, Run, Target, Totals

# --------------------------------------------------------------------------- fixtures


@dataclass
class StandIn:
    bin: Path
    record: Path

    def calls(self) -> list[dict[str, Any]]:
        if not self.record.is_file():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def argvs(self) -> list[list[str]]:
        return [c["argv"] for c in self.calls() if "argv" in c]

    def serving_pids(self) -> list[int]:
        return [c["pid"] for c in self.calls() if "serving" in c]


@pytest.fixture
def stand_in_explorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    stand_in = StandIn(write_stand_in_explorer(tmp_path / "bin").parent, tmp_path / "explorer-calls.jsonl")
    monkeypatch.setenv("PATH", f"{stand_in.bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_EXPLORER_RECORD", str(stand_in.record))
    monkeypatch.setattr(explorer, "NEURON_BIN", tmp_path / "no-neuron-bin")
    yield stand_in
    for pid in stand_in.serving_pids():  # the viewers OpLens (or the test) started, detached
        stop_group(pid)


def open_run(run: Run, *args: Any, **kw: Any) -> explorer.ExplorerLink:
    """A stored run opened as the CLI and the server open it."""
    return explorer.open_in_explorer(explorer.run_source(run), *args, **kw)


def make_run(root: Path, kind: str = "system", sizes: tuple[int, ...] = (100,), run_id: str = "20260101-000000-fn-abc123") -> Run:
    """A stored run whose profile is laid out as the Neuron runtime writes it; its artifacts are
    found by OpLens's own `find_artifacts`. kind: system (DEVICE+RUNTIME), device (DEVICE only), cpu."""
    run_dir = root / run_id
    profile = run_dir / PROFILE_DIR / "i-0abc_pid_4242" / "20260101T000000"
    profile.mkdir(parents=True)
    if kind == "cpu":
        (run_dir / PROFILE_DIR).rename(run_dir / "unused")
    if kind == "system":
        (profile / "trace_info.pb").write_bytes(b"t")
        (profile / "ntrace.pb").write_bytes(b"n")
    if kind in ("system", "device"):
        for i, size in enumerate(sizes):
            (profile / f"neff_{111000 + i}.neff").write_bytes(b"neff")
            (profile / f"{111000 + i}_instid_0_vnc_0.ntff").write_bytes(b"x" * size)
    run = Run(
        target=Target("/ws/t.py", "fn", 1, 3, "0" * 64, 1),
        backend=BackendInfo("cpu" if kind == "cpu" else "neuron", "CPU" if kind == "cpu" else "NEURON"),
        config=Config(3, 20),
        totals=Totals(0.0, 0.0, 0.0),
        lines=[],
        ops=[],
        artifacts=find_artifacts(run_dir),
        run_id=run_id,
        run_dir=str(run_dir),
    )
    runs.write_json_atomic(run_dir / runs.RESULT, run.to_dict())
    return runs.find(root, run_id)


def listen(port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def ingest_calls(stand_in: StandIn) -> list[list[str]]:
    return [a for a in stand_in.argvs() if "--ingest-only" in a]


# --------------------------------------------------------------------------- the link


def test_starts_the_viewer_and_ingests_the_profile_directory_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    run = make_run(tmp_path / "runs")
    link = open_run(run, tmp_path, ui, api, start_timeout_s=20)
    host = socket.gethostname()
    assert link.url == f"http://localhost:{ui}/profile/{run.run_id}"
    assert link.tunnel == f"ssh -L {ui}:localhost:{ui} -L {api}:localhost:{api} {host}"
    assert (link.host, link.display_name, link.viewer) == (host, run.run_id, "started")
    serve, ingest = stand_in_explorer.argvs()
    data = str((tmp_path / "runs" / ".explorer" / "data").resolve())  # one absolute data path for both
    assert serve == ["view", "--data-path", data, "--port", str(ui), "--api-port", str(api)]
    profile_dir = str(Path(run.run_dir) / PROFILE_DIR)
    # -d for a system profile; --framework-source-root is documented with -n/-s only
    assert ingest == ["view", "-d", profile_dir, "--data-path", data, "--ingest-only", "--display-name", run.run_id]
    assert (Path(data) / "profiles" / "global" / f"{run.run_id}@latest").is_dir()  # where the viewer looks
    assert link.data_path == data and link.commands == [[link.ingest_command[0], *serve], link.ingest_command]
    assert link.ingest_command[1:] == ingest and Path(link.ingest_command[0]).name == "neuron-explorer"
    assert link.viewer_pid == stand_in_explorer.serving_pids()[0]
    assert Path(link.viewer_log).is_file() and "View a list of profiles" in Path(link.viewer_log).read_text()
    assert explorer.probe(ui).listening and explorer.probe(api).listening and explorer.probe(ui).explorer
    assert json.loads(json.dumps(link.to_dict()))["url"] == link.url


def test_a_second_open_reuses_the_viewer_and_the_ingest_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    run = make_run(tmp_path / "runs")
    open_run(run, tmp_path, *ports, start_timeout_s=20)
    again = open_run(run, tmp_path, *ports, start_timeout_s=20)
    assert again.viewer == "already serving" and again.viewer_pid == 0 and again.ingest_command == []
    assert any(m.startswith("already ingested") for m in again.messages)
    assert len(stand_in_explorer.serving_pids()) == 1 and len(ingest_calls(stand_in_explorer)) == 1
    forced = open_run(run, tmp_path, *ports, reingest=True)
    assert forced.ingest_command and len(ingest_calls(stand_in_explorer)) == 2


def test_a_viewer_started_elsewhere_is_used_as_it_is_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    viewer = subprocess.Popen(
        [str(stand_in_explorer.bin / "neuron-explorer"), "view", "--port", str(ui), "--api-port", str(api)],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while not (explorer.probe(ui).listening and explorer.probe(api).listening):
        assert time.monotonic() < deadline and viewer.poll() is None
        time.sleep(0.05)
    link = open_run(make_run(tmp_path / "runs"), tmp_path, ui, api)
    assert (link.viewer, link.viewer_pid) == ("already serving", 0)
    assert len(stand_in_explorer.serving_pids()) == 1  # no second viewer
    assert len(ingest_calls(stand_in_explorer)) == 1


def test_a_device_only_profile_opens_by_its_neff_ntff_pair_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    run = make_run(tmp_path / "runs", kind="device", sizes=(10, 300, 0))
    assert run.artifacts.system_trace_files == []
    link = open_run(run, tmp_path, *ports, start_timeout_s=20)
    profile = Path(run.run_dir) / run.artifacts.device_profile_dir
    (ingest,) = ingest_calls(stand_in_explorer)
    assert ingest[:5] == ["view", "-n", str(profile / "neff_111001.neff"), "-s", str(profile / "111001_instid_0_vnc_0.ntff")]
    assert link.profile == "NEFF/NTFF pair 111001" and link.display_name == run.run_id
    assert any("device-only profile" in m for m in link.messages)
    assert any("opened 111001 (the largest trace)" in m and "111000, 111002" in m for m in link.messages)
    chosen = open_run(run, tmp_path, *ports, pair="111000")
    assert chosen.display_name == f"{run.run_id}-111000" and chosen.url.endswith(f"/profile/{run.run_id}-111000")
    assert ingest_calls(stand_in_explorer)[-1][2] == str(profile / "neff_111000.neff")
    with pytest.raises(OpLensError, match="matches 3 NEFFs") as e:
        open_run(run, tmp_path, *ports, pair="111")
    assert e.value.exit_code == 2 and "111000, 111001, 111002" in e.value.detail


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


def test_ports_served_by_an_unseen_program_are_taken_to_be_the_viewer_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explorer, "_listener_pid", lambda port: 0)  # as for another user's or a container's viewer
    with listen(ports[0]), listen(ports[1]):
        link = open_run(make_run(tmp_path / "runs"), tmp_path, *ports)
    assert link.viewer == "already serving" and any("taken to be Neuron Explorer" in m for m in link.messages)
    assert len(ingest_calls(stand_in_explorer)) == 1 and stand_in_explorer.serving_pids() == []


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


def test_a_viewer_that_fails_to_start_is_reported_with_its_log_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_FAIL_START", "1")
    with pytest.raises(OpLensError) as e:
        open_run(make_run(tmp_path / "runs"), tmp_path, *ports, start_timeout_s=20)
    assert e.value.kind == "tool_failed" and e.value.exit_code == 4
    assert "neuron-explorer view exited with status 1" in e.value.message and "--api-port" in e.value.message
    assert "unknown flag: --api-port" in e.value.detail and ingest_calls(stand_in_explorer) == []


def test_a_failed_ingest_shows_the_tool_output_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_FAIL_INGEST", "1")
    run = make_run(tmp_path / "runs")
    with pytest.raises(OpLensError) as e:
        open_run(run, tmp_path, *ports, start_timeout_s=20)
    assert e.value.kind == "tool_failed" and "could not ingest the profile directory" in e.value.message
    assert "ERROR_PROCESS_INCOMPLETE" in e.value.detail and "--ingest-only" in e.value.detail
    assert not (Path(run.run_dir).parent / ".explorer" / "ingested.json").exists()  # not remembered as ingested


def test_dropped_events_reported_by_the_ingest_become_a_message_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_DROPPED", "77")
    link = open_run(make_run(tmp_path / "runs"), tmp_path, *ports, start_timeout_s=20)
    assert any("dropped 77 trace events" in m and "--neuron-max-events" in m for m in link.messages)


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


# --------------------------------------------------------------------------- the CLI, end to end


def _cli(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "COLUMNS" and not k.startswith("STANDIN_")}
    full.update(env, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "oplens", *argv], cwd=cwd, env=full, capture_output=True, text=True, timeout=180)


def test_oplens_explorer_after_a_profile_with_stand_in_torch_neuronx_and_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    (tmp_path / "t.py").write_text("import torch\n\n\ndef fn():\n    return torch.ones(4, 4) * 2\n")
    env = {"PATH": os.environ["PATH"], "STANDIN_EXPLORER_RECORD": str(stand_in_explorer.record)}
    profiled = _cli(tmp_path, "profile", "t.py::fn", "--backend", "neuron", "--json", "-", PYTHONPATH=str(STANDINS), **env)
    assert profiled.returncode == 0, profiled.stderr
    run_id = json.loads(profiled.stdout)["run_id"]
    proc = _cli(tmp_path, "explorer", "latest", "--ui-port", str(ui), "--api-port", str(api), **env)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    url = f"http://localhost:{ui}/profile/{run_id}"
    assert f"Neuron Explorer: {url}" in out and f"then open {url}" in out
    assert f"ssh -L {ui}:localhost:{ui} -L {api}:localhost:{api} {socket.gethostname()}" in out
    assert "without the API port the page loads empty" in out and "viewer started (pid" in out
    # the profile's own ingest (its system trace, for device time) and the explorer's, into the viewer's data path
    own, ingest = ingest_calls(stand_in_explorer)
    assert own[own.index("--display-name") + 1] == "system_trace"
    assert ingest[1:3] == ["-d", str(tmp_path / ".oplens" / "runs" / run_id / PROFILE_DIR)]
    as_json = _cli(tmp_path, "explorer", run_id, "--ui-port", str(ui), "--api-port", str(api), "--json", "-", **env)
    assert as_json.returncode == 0, as_json.stderr
    link = json.loads(as_json.stdout)
    assert (link["url"], link["viewer"], link["ingest_command"]) == (url, "already serving", [])


def test_oplens_explorer_exit_codes(tmp_path: Path, ports: tuple[int, int]) -> None:
    make_run(tmp_path / ".oplens" / "runs")
    if (explorer.NEURON_BIN / explorer.TOOL).exists():
        pytest.skip("the real neuron-explorer is installed on this machine")
    missing = _cli(tmp_path, "explorer", "latest", "--ui-port", str(ports[0]), "--api-port", str(ports[1]),
                   PATH=str(tmp_path / "empty"))  # fmt: skip
    assert missing.returncode == 5 and "neuron-explorer is not installed here" in " ".join(missing.stderr.split())
    unknown = _cli(tmp_path, "explorer", "nope")
    assert unknown.returncode == 2 and "is neither a run directory nor a run id" in " ".join(unknown.stderr.split())
