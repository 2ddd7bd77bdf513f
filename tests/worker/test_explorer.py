"""Neuron Explorer, against a STAND-IN `neuron-explorer` executable (tests/standins/neuron_explorer.py).

The stand-in records its command lines, serves two ports for `view` (a UI that opens only the profiles
uploaded to it, an API that takes uploads and lists them), checks its inputs for `view ... --ingest-only`
and `upload`. The tests check what OpLens does: which profile it uploads and how (the session directory of
a system profile, or a device-only NEFF/NTFF pair), the command lines, that the URL it prints opens the
profile (HTTP), the URL and tunnel command, reusing a viewer already serving, the second ingest only where
the upload left no tables in OpLens's data path, the messages when the ports are taken, the tools missing
or the upload failing. Ports are free ephemeral ones, never 3001/3002 (a real viewer may run on this machine).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from oplens.backends.neuron import explorer
from oplens.backends.neuron.artifacts import PROFILE_DIR
from oplens.engine import runs
from oplens.records.errors import OpLensError
from support.explorer import (
    StandIn,
    api_url,
    ingest_calls,
    make_run,
    open_run,
    opens,
    session_of,
    start_viewer,
    status,
    upload_calls,
)
from support.paths import STANDINS
from support.processes import stop_group

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron


# --------------------------------------------------------------------------- the link


def test_starts_the_viewer_and_uploads_the_session_directory_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    run = make_run(tmp_path / "runs")
    link = open_run(run, tmp_path, ui, api, start_timeout_s=20)
    host = socket.gethostname()
    assert link.url == f"http://localhost:{ui}/profile/{run.run_id}"
    assert link.tunnel == f"ssh -L {ui}:localhost:{ui} -L {api}:localhost:{api} {host}"
    assert (link.host, link.display_name, link.viewer) == (host, run.run_id, "started")
    serve, upload = stand_in_explorer.argvs()
    data = str((tmp_path / "runs" / ".explorer" / "data").resolve())  # the data path OpLens's viewer keeps
    assert serve == ["view", "--data-path", data, "--port", str(ui), "--api-port", str(api)]
    # the session directory (the dirname of its ntrace.pb), registered with the viewer through its API
    session = session_of(run)
    assert Path(session, "ntrace.pb").is_file() and link.profile_directory == session
    assert upload == ["upload", "--endpoint", f"http://localhost:{api}", "--profile-directory", session,
                      "--name", run.run_id, "--overwrite", "--wait", "--source-code", str(tmp_path.resolve())]  # fmt: skip
    # the viewer processed it into OpLens's data path: no second ingest
    assert (Path(data) / "profiles" / "global" / f"{run.run_id}@latest").is_dir() and ingest_calls(stand_in_explorer) == []
    assert link.data_path == data and link.commands == [[link.upload_command[0], *serve], link.upload_command]
    assert link.upload_command[1:] == upload and Path(link.upload_command[0]).name == "neuron-explorer"
    assert link.ingest_command == link.upload_command and link.endpoint == f"http://localhost:{api}"
    assert opens(link)  # the printed URL opens the profile, and the API lists it
    assert status(f"http://localhost:{ui}/profile/not-uploaded") == 404 and status(api_url(api, "not-uploaded")) == 404
    assert link.viewer_pid == stand_in_explorer.serving_pids()[0]
    assert Path(link.viewer_log).is_file() and "View a list of profiles" in Path(link.viewer_log).read_text()
    assert explorer.probe(ui).listening and explorer.probe(api).listening and explorer.probe(ui).explorer
    assert json.loads(json.dumps(link.to_dict()))["url"] == link.url


def test_a_second_open_reuses_the_viewer_and_the_upload_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    run = make_run(tmp_path / "runs")
    open_run(run, tmp_path, *ports, start_timeout_s=20)
    again = open_run(run, tmp_path, *ports, start_timeout_s=20)
    assert again.viewer == "already serving" and again.viewer_pid == 0 and again.upload_command == []
    assert again.ingest_command == [] and any(m.startswith("already uploaded") for m in again.messages)
    assert len(stand_in_explorer.serving_pids()) == 1 and len(upload_calls(stand_in_explorer)) == 1
    forced = open_run(run, tmp_path, *ports, reingest=True)
    assert forced.upload_command and len(upload_calls(stand_in_explorer)) == 2
    # the viewer that had it is gone: OpLens starts another and uploads again, though its state says uploaded
    stop_group(stand_in_explorer.serving_pids()[0])
    restarted = open_run(run, tmp_path, *ports, start_timeout_s=20)
    assert restarted.viewer == "started" and restarted.upload_command and len(upload_calls(stand_in_explorer)) == 3
    assert any("the viewer was started afresh: uploaded again" in m for m in restarted.messages)
    assert opens(restarted) and ingest_calls(stand_in_explorer) == []


def test_a_viewer_started_elsewhere_gets_the_profile_uploaded_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    start_viewer(stand_in_explorer, ui, api, tmp_path / "elsewhere")
    run = make_run(tmp_path / "runs")
    link = open_run(run, tmp_path, ui, api)
    assert (link.viewer, link.viewer_pid) == ("already serving", 0)
    assert len(stand_in_explorer.serving_pids()) == 1  # no second viewer
    (upload,) = upload_calls(stand_in_explorer)
    assert upload[1:5] == ["--endpoint", f"http://localhost:{api}", "--profile-directory", session_of(run)]
    assert opens(link)  # listed by the viewer already serving, whatever its data path
    theirs = tmp_path / "elsewhere" / "neuron-explorer-data" / "profiles" / "global" / f"{run.run_id}@latest"
    assert theirs.is_dir()
    # it processed the upload in its own data path: OpLens ingests into its own for the engine tables it reads
    (ingest,) = ingest_calls(stand_in_explorer)
    data = link.data_path
    assert ingest == ["view", "-d", str(Path(run.run_dir) / PROFILE_DIR), "--framework-source-root", str(tmp_path.resolve()),
                      "--data-path", data, "--ingest-only", "--display-name", run.run_id]  # fmt: skip
    assert link.commands == [link.upload_command, link.ingest_command] and link.ingest_command[1:] == ingest
    assert any(f"processed the upload outside {data}" in m for m in link.messages)
    assert (Path(data) / "profiles" / "global" / f"{run.run_id}@latest").is_dir()
    # another viewer replaces it on the ports (not OpLens's): it does not list the profile, so it is uploaded again
    stop_group(stand_in_explorer.serving_pids()[0])
    start_viewer(stand_in_explorer, ui, api, tmp_path / "another")
    again = open_run(run, tmp_path, ui, api)
    assert again.viewer == "already serving" and any("does not list it: uploaded again" in m for m in again.messages)
    assert len(upload_calls(stand_in_explorer)) == 2 and opens(again)
    assert len(ingest_calls(stand_in_explorer)) == 1  # OpLens's data path holds the tables already


def test_a_device_only_profile_opens_by_its_neff_ntff_pair_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    run = make_run(tmp_path / "runs", kind="device", sizes=(10, 300, 0))
    assert run.artifacts.system_trace_files == []
    link = open_run(run, tmp_path, *ports, start_timeout_s=20)
    profile = Path(run.run_dir) / run.artifacts.device_profile_dir
    neff, ntff = str(profile / "neff_111001.neff"), str(profile / "111001_instid_0_vnc_0.ntff")
    (upload,) = upload_calls(stand_in_explorer)  # Individual Files: a directory upload needs a system profile
    assert upload == ["upload", "--endpoint", f"http://localhost:{ports[1]}", "--neff", neff, "--ntff", ntff,
                      "--name", run.run_id, "--overwrite", "--wait", "--source-code", str(tmp_path.resolve())]  # fmt: skip
    assert (link.upload_files, link.profile_directory) == ([neff, ntff], "") and opens(link)
    assert ingest_calls(stand_in_explorer) == []
    assert link.profile == "NEFF/NTFF pair 111001" and link.display_name == run.run_id
    assert any("device-only profile" in m for m in link.messages)
    assert any("opened 111001 (the largest trace)" in m and "111000, 111002" in m for m in link.messages)
    chosen = open_run(run, tmp_path, *ports, pair="111000")
    assert chosen.display_name == f"{run.run_id}-111000" and chosen.url.endswith(f"/profile/{run.run_id}-111000")
    assert upload_calls(stand_in_explorer)[-1][3:5] == ["--neff", str(profile / "neff_111000.neff")] and opens(chosen)
    with pytest.raises(OpLensError, match="matches 3 NEFFs") as e:
        open_run(run, tmp_path, *ports, pair="111")
    assert e.value.exit_code == 2 and "111000, 111001, 111002" in e.value.detail


def test_ports_served_by_an_unseen_program_are_taken_to_be_the_viewer_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_viewer(stand_in_explorer, *ports, tmp_path / "theirs")
    monkeypatch.setattr(explorer, "_listener_pid", lambda port: 0)  # as for another user's or a container's viewer
    link = open_run(make_run(tmp_path / "runs"), tmp_path, *ports)
    assert link.viewer == "already serving" and any("taken to be Neuron Explorer" in m for m in link.messages)
    assert len(upload_calls(stand_in_explorer)) == 1 and len(stand_in_explorer.serving_pids()) == 1 and opens(link)


def test_a_viewer_that_fails_to_start_is_reported_with_its_log_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_FAIL_START", "1")
    with pytest.raises(OpLensError) as e:
        open_run(make_run(tmp_path / "runs"), tmp_path, *ports, start_timeout_s=20)
    assert e.value.kind == "tool_failed" and e.value.exit_code == 4
    assert "neuron-explorer view exited with status 1" in e.value.message and "--api-port" in e.value.message
    assert "unknown flag: --api-port" in e.value.detail and upload_calls(stand_in_explorer) == []


def test_a_failed_processing_of_the_upload_shows_the_tool_output_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_FAIL_INGEST", "1")  # the viewer started with it fails to process uploads
    run = make_run(tmp_path / "runs")
    with pytest.raises(OpLensError) as e:
        open_run(run, tmp_path, *ports, start_timeout_s=20)
    assert e.value.kind == "tool_failed" and e.value.exit_code == 4
    assert f"could not upload the profile directory {Path(run.run_dir) / PROFILE_DIR}" in e.value.message
    assert f"to the viewer at http://localhost:{ports[1]} (exit 1)" in e.value.message
    assert "ERROR_PROCESS_INCOMPLETE" in e.value.detail and "upload --endpoint" in e.value.detail
    assert not (Path(run.run_dir).parent / ".explorer" / "ingested.json").exists()  # not remembered as uploaded
    assert status(f"http://localhost:{ports[0]}/profile/{run.run_id}") == 404


def test_an_upload_that_fails_or_hangs_is_a_clear_error_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(tmp_path / "runs")
    monkeypatch.setenv("STANDIN_EXPLORER_UPLOAD_DELAY", "5")
    with pytest.raises(OpLensError) as e:
        open_run(run, tmp_path, *ports, start_timeout_s=20, ingest_timeout_s=0.5)
    assert e.value.kind == "timeout"
    assert "neuron-explorer upload did not finish processing the profile directory" in e.value.message
    assert "within 0.5 s" in e.value.message and "--timeout" in e.value.detail and "upload --endpoint" in e.value.detail
    monkeypatch.delenv("STANDIN_EXPLORER_UPLOAD_DELAY")
    # nothing answers on the API port: the upload says so, and OpLens what to do
    nobody = explorer.upload_command(explorer.find_tool(), "http://localhost:9", explorer.ingest_target(
        explorer.run_source(run), None, tmp_path), run.run_id)  # fmt: skip
    with pytest.raises(OpLensError) as e:
        explorer.run_upload(nobody, tmp_path, "profile directory", 30, "http://localhost:9")
    assert e.value.kind == "tool_failed" and "the viewer's API does not answer at http://localhost:9" in e.value.detail
    assert "connection refused" in e.value.detail and "neuron-explorer view" in e.value.detail


def test_oplens_explorer_falls_back_to_the_documented_ingest_after_a_failed_upload_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    """issue 33: `upload` (users' scripts, not the docs) fails: the profile is registered by the documented
    `view -d ... --ingest-only --data-path <the viewer's data path>`, and the failure is said, without a traceback."""
    run = make_run(tmp_path / ".oplens" / "runs")
    env = {"PATH": os.environ["PATH"], "STANDIN_EXPLORER_RECORD": str(stand_in_explorer.record)}
    proc = _cli(tmp_path, "explorer", run.run_id, "--ui-port", str(ports[0]), "--api-port", str(ports[1]),
                STANDIN_EXPLORER_FAIL_UPLOAD="1", **env)  # fmt: skip
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "upload failed" in out and "Failed to upload NTFF (HTTP 400)" in out and "documented ingest" in out, out
    assert len(upload_calls(stand_in_explorer)) == 1 and len(ingest_calls(stand_in_explorer)) == 1


def test_the_stand_in_upload_checks_its_inputs_as_the_docs_say(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    """The stand-in itself: a directory upload needs a system profile, a name is not replaced without
    --overwrite, and no viewer is a clear error (so the tests above rest on a faithful stand-in)."""
    ui, api = ports
    exe = str(stand_in_explorer.bin / "neuron-explorer")

    def upload(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([exe, "upload", "--endpoint", f"http://localhost:{api}", *argv], capture_output=True,
                              text=True, timeout=60)  # fmt: skip

    device_only = make_run(tmp_path / "runs", kind="device", run_id="r-device")
    refused = upload("--profile-directory", session_of(device_only), "--name", "d", "--wait")
    assert refused.returncode == 1 and "needs ntrace.pb and trace_info.pb" in refused.stderr
    assert "--neff and --ntff" in refused.stderr
    nobody = upload("--profile-directory", session_of(make_run(tmp_path / "runs")), "--name", "s", "--wait")
    assert nobody.returncode == 1 and "connection refused" in nobody.stderr
    start_viewer(stand_in_explorer, ui, api, tmp_path / "viewer")
    system = session_of(make_run(tmp_path / "runs", run_id="r-system"))
    done = upload("--profile-directory", system, "--name", "s", "--wait")
    assert done.returncode == 0 and f"View it at http://localhost:{ui}/profile/s" in done.stdout, done.stderr
    assert status(f"http://localhost:{ui}/profile/s") == 200
    with urllib.request.urlopen(api_url(api, "s"), timeout=10) as answer:
        assert json.loads(answer.read())["status"] == "PROCESSED"
    assert (tmp_path / "viewer" / "neuron-explorer-data" / "profiles" / "global" / "s@latest").is_dir()
    again = upload("--profile-directory", system, "--name", "s")
    assert again.returncode == 1 and "already exists" in again.stderr and "--overwrite" in again.stderr
    assert upload("--profile-directory", system, "--name", "s", "--overwrite", "--wait").returncode == 0


def test_dropped_events_reported_by_the_ingest_become_a_message_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_DROPPED", "77")
    link = open_run(make_run(tmp_path / "runs"), tmp_path, *ports, start_timeout_s=20)
    assert any("dropped 77 trace events" in m and "--neuron-max-events" in m for m in link.messages)


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
    assert profiled.returncode == 5, profiled.stderr  # no device time: exit 5 (issue 33)
    run_id = json.loads(profiled.stdout)["run_id"]
    proc = _cli(tmp_path, "explorer", "latest", "--ui-port", str(ui), "--api-port", str(api), **env)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    url = f"http://localhost:{ui}/profile/{run_id}"
    assert f"Neuron Explorer: {url}" in out and f"then open {url}" in out
    assert f"ssh -L {ui}:localhost:{ui} -L {api}:localhost:{api} {socket.gethostname()}" in out
    assert "without the API port the page loads empty" in out and "viewer started (pid" in out
    uploaded = f"uploaded to the viewer at http://localhost:{api} as '{run_id}'"
    assert f"profile directory {tmp_path / '.oplens' / 'runs' / run_id / PROFILE_DIR} {uploaded}" in out
    # the profile's own ingest (its system trace, for device time), then the upload of its session to the viewer
    (own,) = ingest_calls(stand_in_explorer)
    assert own[own.index("--display-name") + 1] == "system_trace"
    (upload,) = upload_calls(stand_in_explorer)
    session = runs.find(tmp_path / ".oplens" / "runs", run_id).artifacts.device_profile_dir
    assert upload[3:5] == ["--profile-directory", str(tmp_path / ".oplens" / "runs" / run_id / session)]
    assert status(url) == 200 and status(api_url(api, run_id)) == 200  # the printed URL opens the profile
    as_json = _cli(tmp_path, "explorer", run_id, "--ui-port", str(ui), "--api-port", str(api), "--json", "-", **env)
    assert as_json.returncode == 0, as_json.stderr
    link = json.loads(as_json.stdout)
    assert (link["url"], link["viewer"], link["ingest_command"], link["upload_command"]) == (url, "already serving", [], [])


def test_oplens_explorer_against_a_running_viewer_uploads_and_its_url_opens_the_profile_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    ui, api = ports
    start_viewer(stand_in_explorer, ui, api, tmp_path / "viewer")
    run = make_run(tmp_path / ".oplens" / "runs")
    env = {"PATH": os.environ["PATH"], "STANDIN_EXPLORER_RECORD": str(stand_in_explorer.record)}
    proc = _cli(tmp_path, "explorer", "latest", "--ui-port", str(ui), "--api-port", str(api), **env)
    assert proc.returncode == 0, proc.stderr
    printed = next(line.split(": ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("Neuron Explorer: "))
    assert printed == f"http://localhost:{ui}/profile/{run.run_id}" and "viewer already serving" in proc.stdout
    (upload,) = upload_calls(stand_in_explorer)
    assert upload == ["upload", "--endpoint", f"http://localhost:{api}", "--profile-directory", session_of(run),
                      "--name", run.run_id, "--overwrite", "--wait", "--source-code", str(tmp_path.resolve())]  # fmt: skip
    assert status(printed) == 200 and status(api_url(api, run.run_id)) == 200
    assert len(stand_in_explorer.serving_pids()) == 1  # the viewer already serving, no other


def test_oplens_explorer_exit_codes(tmp_path: Path, ports: tuple[int, int]) -> None:
    make_run(tmp_path / ".oplens" / "runs")
    if (explorer.NEURON_BIN / explorer.TOOL).exists():
        pytest.skip("the real neuron-explorer is installed on this machine")
    missing = _cli(tmp_path, "explorer", "latest", "--ui-port", str(ports[0]), "--api-port", str(ports[1]),
                   PATH=str(tmp_path / "empty"))  # fmt: skip
    assert missing.returncode == 5 and "neuron-explorer is not installed here" in " ".join(missing.stderr.split())
    unknown = _cli(tmp_path, "explorer", "nope")
    assert unknown.returncode == 2 and "is neither a run directory nor a run id" in " ".join(unknown.stderr.split())


# --------------------------------------------------------------------------- issue 33, part 7: the source with the profile


def test_the_upload_registers_the_workspace_s_sources_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    """`upload --source-code <workspace>` (the vendor's notes: "upload a source archive alongside the profile"): the
    stand-in viewer keeps the sources as `source_folder.tar.gz` beside the processed profile, as those notes say."""
    (tmp_path / "model.py").write_text("x = 1\n")
    run = make_run(tmp_path / "runs")
    link = open_run(run, tmp_path, *ports, start_timeout_s=20)
    (upload,) = upload_calls(stand_in_explorer)
    assert upload[-2:] == ["--source-code", str(tmp_path.resolve())] and link.source_root == str(tmp_path.resolve())
    assert link.sources == {"--source-code": "accepted"}
    archive = Path(link.data_path) / "profiles" / "global" / f"{run.run_id}@latest" / "source_folder.tar.gz"
    with tarfile.open(archive) as tar:
        assert "model.py" in tar.getnames()


def test_a_tool_that_refuses_source_code_uploads_again_without_it_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_EXPLORER_REFUSE_FLAGS", "--source-code")
    run = make_run(tmp_path / "runs")
    link = open_run(run, tmp_path, *ports, start_timeout_s=20)
    first, second = upload_calls(stand_in_explorer)
    assert "--source-code" in first and "--source-code" not in second and second == first[:-2]
    assert link.upload_command[1:] == second and opens(link)
    assert link.sources["--source-code"].startswith("refused (Error: unknown flag: --source-code)")
    assert any("refused --source-code" in m and "without it" in m for m in link.messages)
    assert ingest_calls(stand_in_explorer) == []  # the upload worked: no documented ingest


def test_the_documented_ingest_passes_the_source_root_and_drops_it_where_refused_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload fails: the documented `view -d ... --ingest-only --framework-source-root <workspace>`
    (how-to-link-view-source-code.rst); a release that refuses the flag with -d is asked again without it."""
    monkeypatch.setenv("STANDIN_EXPLORER_FAIL_UPLOAD", "1")
    run = make_run(tmp_path / "runs")
    link = open_run(run, tmp_path, *ports, start_timeout_s=20)
    (ingest,) = ingest_calls(stand_in_explorer)
    assert ingest[ingest.index("--framework-source-root") + 1] == str(tmp_path.resolve())
    assert link.sources == {"--framework-source-root": "accepted"} and opens(link)
    monkeypatch.setenv("STANDIN_EXPLORER_REFUSE_FLAGS", "--framework-source-root")
    again = open_run(run, tmp_path, *ports, start_timeout_s=20, reingest=True)
    refused, plain = ingest_calls(stand_in_explorer)[1:]
    assert "--framework-source-root" in refused and "--framework-source-root" not in plain
    assert again.ingest_command[1:] == plain and again.sources["--framework-source-root"].startswith("refused")


def test_explorer_dry_run_prints_the_fallback_chain_with_stand_in_explorer(
    stand_in_explorer: StandIn, ports: tuple[int, int], tmp_path: Path
) -> None:
    """`oplens explorer --dry-run`: the registration it would try, in order: upload (with the sources, then without),
    the documented `view --ingest-only`, then starting the viewer again on that data path; nothing runs."""
    run = make_run(tmp_path / ".oplens" / "runs")
    env = {"PATH": os.environ["PATH"], "STANDIN_EXPLORER_RECORD": str(stand_in_explorer.record)}
    argv = ("explorer", run.run_id, "--ui-port", str(ports[0]), "--api-port", str(ports[1]), "--dry-run")
    text = _cli(tmp_path, *argv, **env)
    assert text.returncode == 0, text.stderr
    steps = ["start a viewer", "upload", "upload without the source", "view --ingest-only (documented)",
             "view --ingest-only without the source", "start the viewer again on that data path"]  # fmt: skip
    lines = [next(ln.strip() for ln in text.stdout.splitlines() if ln.strip().startswith(f"{k}. {step} ("))
             for k, step in enumerate(steps, 1)]  # fmt: skip
    chain = [ln.split("): ", 1)[1] for ln in lines]  # each step's command
    assert "tried in order" in text.stdout and "--source-code" in chain[1] and "--source-code" not in chain[2]
    assert "--framework-source-root" in chain[3] and "--framework-source-root" not in chain[4]
    plan = json.loads(_cli(tmp_path, *argv, "--json", "-", **env).stdout)
    assert [f["step"] for f in plan["fallbacks"]] == steps and plan["source_root"] == str(tmp_path.resolve())
    assert stand_in_explorer.argvs() == []  # nothing ran
