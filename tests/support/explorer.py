"""The stand-in `neuron-explorer` as the tests drive it: its record of calls, the fixture that puts it on PATH,
stored runs laid out as the Neuron runtime writes them, and the HTTP checks of a viewer's pages."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oplens.backends.neuron import explorer
from oplens.backends.neuron.artifacts import PROFILE_DIR, find_artifacts
from oplens.engine import runs
from oplens.records.run import BackendInfo, Config, Run, Target, Totals
from support.neuron import write_stand_in_explorer
from support.processes import stop_group


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


def ingest_calls(stand_in: StandIn) -> list[list[str]]:
    return [a for a in stand_in.argvs() if "--ingest-only" in a]


def upload_calls(stand_in: StandIn) -> list[list[str]]:
    return [a for a in stand_in.argvs() if a[:1] == ["upload"]]


def status(url: str) -> int:
    """The HTTP status a GET of `url` answers with."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return e.code


def api_url(api: int, name: str) -> str:
    """Where the viewer's API answers for a profile (a user's notes: .../namespace/global/profile_name/<name>)."""
    return f"http://localhost:{api}/api/v1/profiles/namespace/global/profile_name/{name}"


def opens(link: explorer.ExplorerLink) -> bool:
    """The link's page and its API entry both answer 200: the viewer serving there lists the profile."""
    return status(link.url) == 200 and status(api_url(link.api_port, link.display_name)) == 200


def start_viewer(stand_in: StandIn, ui: int, api: int, cwd: Path) -> subprocess.Popen[bytes]:
    """A viewer started elsewhere (by the user, without --data-path: its profiles under cwd), serving once it returns."""
    cwd.mkdir(parents=True, exist_ok=True)
    viewer = subprocess.Popen(
        [str(stand_in.bin / "neuron-explorer"), "view", "--port", str(ui), "--api-port", str(api)],
        stdout=subprocess.DEVNULL,
        cwd=cwd,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while not (explorer.listening(ui) and explorer.listening(api)):
        assert time.monotonic() < deadline and viewer.poll() is None
        time.sleep(0.05)
    return viewer


def session_of(run: Run) -> str:
    return str(Path(run.run_dir) / run.artifacts.device_profile_dir)
