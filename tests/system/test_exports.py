"""`oplens export`: a real run (a function profiled by the CLI, and a real 2-rank torchrun capture) written for
Perfetto, speedscope and TensorBoard/HTA, each opened by its real consumer where it runs here: Holistic Trace
Analysis loads the folder, a real `tensorboard` process with torch-tb-profiler serves it on a loopback port, the
speedscope file validates against the npm package's own schema; Perfetto's UI cannot run here, so its rules for
a JSON trace are checked (`exports.perfetto.problems`)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest

from oplens.engine import runs
from oplens.exports import formats, perfetto, speedscope
from oplens.exports.traces import rank_traces
from oplens.records import names
from oplens.records.run import Run
from support.cli import oplens_cli
from support.paths import DATA, ROOT

PROGRAMS = DATA / "programs"
SCHEMA = ROOT / "node_modules" / "speedscope" / "dist" / "release" / "file-format-schema.json"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
SOURCE = """\
import torch


def norm(x, w):
    x_sq = x * x
    mean = x_sq.mean(-1, keepdim=True)
    y = x * torch.rsqrt(mean + 1e-6)
    return y * w


def make_inputs():
    return torch.randn(64, 256), torch.randn(256)
"""


def oplens(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return oplens_cli(cwd, *argv, OMP_NUM_THREADS="1")


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    ws = tmp_path_factory.mktemp("cpu")
    (ws / "norm.py").write_text(SOURCE)
    done = oplens("profile", "norm.py::norm", "--args", "make_inputs()", "--iters", "5", cwd=ws)
    assert done.returncode == 0, done.stderr[-3000:]
    run = runs.find(ws / ".oplens" / "runs", "latest")
    assert isinstance(run, Run)
    return run


@pytest.fixture(scope="module")
def ranks_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("ranks")
    done = oplens("run", "--nproc-per-node", "2", "--out", str(out), "--skip", "2", "--profiler-warmup", "1", "--calls", "3",
                  "--target", "ddp_train.py::train_step", "--", "ddp_train.py", "--steps", "8", cwd=PROGRAMS)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = runs.find(out, "latest")
    assert isinstance(run, Run)
    return run


def line_slices(run: Run) -> dict[int, int]:
    """OpLens's own count of line ranges in each rank's trace."""
    def count(events: list[dict[str, Any]]) -> int:
        return sum(1 for e in events if str(e.get("name", "")).startswith(names.LINE_RANGE))

    return {rt.rank if rt.rank is not None else 0: count(rt.events) for rt in rank_traces(run)}


def test_perfetto_a_cpu_run_names_its_lines_and_keeps_perfetto_s_rules(cpu_run: Run, tmp_path: Path) -> None:
    done = oplens("export", cpu_run.run_dir, "--format", "perfetto", "--out", str(tmp_path / "t.json.gz"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ui.perfetto.dev" in done.stdout
    trace = json.loads(gzip.open(tmp_path / "t.json.gz", "rt").read())
    assert perfetto.problems(trace) == []
    events = trace["traceEvents"]
    lines = [e for e in events if e.get("cat") == "oplens.line"]
    assert {e["name"] for e in lines} >= {"L5 x_sq = x * x", "L8 return y * w"}
    x_sq = next(e for e in lines if e["name"].startswith("L5 "))["args"]["oplens"]
    stat = next(s for s in cpu_run.lines if s.line == 5)
    assert x_sq["line"] == 5 and x_sq["file"].endswith("norm.py")
    assert x_sq["self_device_us_per_call"] == round(stat.self_device_us, 3)
    assert not any(str(e.get("name", "")).startswith(("oplens.probe", "oplens.line:")) for e in events)
    (process,) = [e["args"]["name"] for e in events if e.get("name") == "process_name"]
    assert process.startswith("OpLens norm · host")
    # the ops nest under their lines: an aten::mul inside the L5 slice's time on its thread
    l5 = next(e for e in lines if e["name"].startswith("L5 "))
    assert any(e.get("name") == "aten::mul" and l5["ts"] <= e["ts"] <= l5["ts"] + l5["dur"] and e["tid"] == l5["tid"]
               for e in events)  # fmt: skip


def test_speedscope_validates_against_the_package_s_schema_and_its_frames_nest(cpu_run: Run, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test requirement: pip install -e '.[test]'")
    if not SCHEMA.is_file():
        pytest.skip(f"no {SCHEMA}: npm ci installs speedscope (a devDependency)")
    done = oplens("export", cpu_run.run_dir, "--format", "speedscope", "--out", str(tmp_path / "s.json"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "s.json").read_text())
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    frames = data["shared"]["frames"]
    host, device = data["profiles"]
    assert host["type"] == "evented" and device["type"] == "sampled"
    _evented_ok(host, len(frames))
    # the lines are frames with their file and line; the sampled profile's weights are the run's op times per call
    l5 = next(i for i, f in enumerate(frames) if f["name"] == "L5 x_sq = x * x")
    assert frames[l5]["line"] == 5 and frames[l5]["file"].endswith("norm.py")
    ops = sum(o.self_device_us for s in cpu_run.lines for o in s.ops)
    assert abs(sum(device["weights"]) - ops) < 0.01 * cpu_run.totals.self_device_us + 1
    assert any(f["name"] == "norm" and f.get("line") == 4 for f in frames)


def _evented_ok(profile: dict[str, Any], frames: int) -> None:
    """speedscope's rules: frames close last-opened-first, `at` never goes back, every frame index exists."""
    stack: list[int] = []
    at = 0.0
    for ev in profile["events"]:
        assert ev["at"] >= at and 0 <= ev["frame"] < frames
        at = ev["at"]
        if ev["type"] == "O":
            stack.append(ev["frame"])
        else:
            assert stack and stack.pop() == ev["frame"]
    assert not stack and profile["endValue"] >= at


def test_two_ranks_in_perfetto_are_two_processes_on_one_time_base(ranks_run: Run, tmp_path: Path) -> None:
    trace = perfetto.build(ranks_run)
    assert perfetto.problems(trace) == []
    processes = sorted(e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name")
    assert [p.split(" · ")[1] for p in processes] == ["rank 0", "rank 1"] and all("train_step" in p for p in processes)
    calls = [e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("train_step · call")]
    starts = sorted(e["ts"] for e in calls)
    assert len(calls) == 2 * 3 and starts[0] >= 0 and starts[-1] - starts[0] < 60e6  # one time base, from 0
    data = speedscope.build(ranks_run)
    assert [p["name"].split(" · ")[0] for p in data["profiles"]] == ["rank 0", "rank 0", "rank 1", "rank 1"]


def test_hta_loads_the_tensorboard_folder_with_each_rank_s_line_slices(ranks_run: Run, tmp_path: Path) -> None:
    pytest.importorskip("pandas", reason="HTA's requirements are test requirements: make setup installs them")
    hta = pytest.importorskip("hta.trace_analysis", reason="holistictraceanalysis: make setup installs it (--no-deps)")
    done = oplens("export", ranks_run.run_dir, "--format", "tensorboard", "--out", str(tmp_path / "tb" / "job"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "tb" / "job").iterdir()) == ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"]
    # HTA leaves out a trace's last profiler step by default (in a training trace, an incomplete one); each of
    # OpLens's profiler steps is a whole call
    analysis = hta.TraceAnalysis(trace_dir=str(tmp_path / "tb" / "job"), include_last_profiler_step=True)
    assert sorted(analysis.t.traces) == [0, 1]  # each file's rank, as HTA reads it
    symbols = analysis.t.symbol_table.sym_table
    ours = line_slices(ranks_run)
    for rank, df in analysis.t.traces.items():
        theirs = int(df["name"].map(lambda i: str(symbols[i]).startswith(names.LINE_RANGE)).sum())
        assert theirs == ours[rank] > 0


def test_tensorboard_s_profiler_plugin_serves_the_folder(ranks_run: Run, tmp_path: Path) -> None:
    pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler and tensorboard: make setup installs them")
    logdir = tmp_path / "logs"
    done = oplens("export", ranks_run.run_dir, "--format", "tensorboard", "--out", str(logdir / "job"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tb = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1",
                           "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)  # fmt: skip
    base = f"http://127.0.0.1:{port}/data/plugin/pytorch_profiler"

    def get(path: str) -> Any:
        with urllib.request.urlopen(base + path, timeout=10) as r:
            return json.loads(r.read())

    try:
        deadline = time.monotonic() + 90
        found: Any = None
        while time.monotonic() < deadline:
            try:
                found = get("/runs")
                if found["runs"] and not found.get("loading"):
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert found and found["runs"] == ["job"], found
        assert get("/workers?run=job&view=Overview") == ["rank0", "rank1"]
        ops = get("/operation/table?run=job&worker=rank0&span=default&group_by=Operation")["data"]
        assert any(r["name"].startswith(names.LINE_RANGE) for r in ops) and any(r["name"] == "aten::mm" for r in ops)
    finally:
        tb.terminate()
        tb.wait(timeout=30)


def test_bad_input_names_the_fix(cpu_run: Run, tmp_path: Path) -> None:
    done = oplens("export", "no-such-run", "--format", "perfetto", "--runs", str(Path(cpu_run.run_dir).parent), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "no-such-run" in done.stderr


async def test_the_editor_s_export_through_the_real_server(cpu_run: Run) -> None:
    """`oplens.export` (the results page's Export…) over a real LSP client: the file written in the run's exports/
    folder, its path and how to open it answered; an unknown format is invalid params naming the formats."""
    from lsprotocol import types as lsp
    from pygls.exceptions import JsonRpcException

    from support.lsp import plain, served_client

    ws = Path(cpu_run.run_dir).parents[2]
    async with served_client(ws) as client:
        arg = {"run_id": cpu_run.run_id, "format": "speedscope"}
        params = lsp.ExecuteCommandParams(command=names.EXPORT_COMMAND, arguments=[arg])
        answer = plain(await client.workspace_execute_command_async(params))
        assert Path(answer["path"]).is_file() and Path(answer["path"]).parent == Path(cpu_run.run_dir) / "exports"
        assert "speedscope" in answer["opens_in"] and answer["uri"].startswith("file://")
        bad = lsp.ExecuteCommandParams(command=names.EXPORT_COMMAND, arguments=[{"run_id": cpu_run.run_id, "format": "pprof"}])
        with pytest.raises(JsonRpcException) as e:
            await client.workspace_execute_command_async(bad)
        assert "perfetto, speedscope, tensorboard" in str(e.value)


async def test_the_editor_s_flame_graph_through_the_real_server(cpu_run: Run) -> None:
    """`oplens.flameGraph` (Show Flame Graph) over a real LSP client: a speedscope file valid by the npm package's
    schema, self device time by line first, every line frame with the run's file and a line of the function."""
    import jsonschema
    from lsprotocol import types as lsp

    from support.lsp import plain, served_client

    ws = Path(cpu_run.run_dir).parents[2]
    async with served_client(ws) as client:
        params = lsp.ExecuteCommandParams(command=names.FLAME_GRAPH_COMMAND, arguments=[{"run_id": cpu_run.run_id}])
        answer = plain(await client.workspace_execute_command_async(params))
    profile = answer["profile"]
    jsonschema.validate(profile, json.loads(SCHEMA.read_text()))
    assert answer["title"] == "Flame graph: norm (CPU)" and answer["file_name"].endswith(".speedscope.json")
    assert profile["profiles"][profile["activeProfileIndex"]]["type"] == "sampled" and "click" in answer["hint"]
    lines = {f["line"] for f in profile["shared"]["frames"] if f["name"].startswith("L")}
    assert lines == {s.line for s in cpu_run.lines} and {f.get("file") for f in profile["shared"]["frames"] if "line" in f} == {
        cpu_run.target.file}


# A stand-in of Perfetto UI's documented message handler (google/perfetto `docs/visualization/
# deep-linking-to-perfetto-ui.md`: the UI answers 'PING' with 'PONG', then takes `{perfetto: {buffer, title,
# fileName}}`), served on another loopback origin; it reports what it got to its own server.
STANDIN_UI = """<!doctype html><html><body><script>
window.addEventListener('message', (e) => {
  if (e.data === 'PING') { e.source.postMessage('PONG', e.origin); return; }
  if (e.data && e.data.perfetto) {
    const p = e.data.perfetto;
    fetch('/got', { method: 'POST', body: JSON.stringify({ bytes: p.buffer.byteLength, title: p.title, fileName: p.fileName,
                                                            from: e.origin }) });
  }
});
</script></body></html>"""


def test_open_in_perfetto_hands_the_trace_to_the_ui_in_a_real_browser(cpu_run: Run, tmp_path: Path) -> None:
    """The one-shot page in real Chromium (headless, driven over the DevTools protocol): the click opens the UI (a
    stand-in of its documented handler on another loopback origin), PING/PONG, then the trace's bytes are posted."""
    import http.server
    import shutil
    import threading

    from oplens.exports.perfetto_open import OpenPage

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium: bash tests/install_tunnel_deps.sh installs Debian's")
    trace, _ = perfetto.export(cpu_run, tmp_path / "t.perfetto.json.gz")
    got: list[dict[str, Any]] = []

    class UI(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = STANDIN_UI.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return

    ui = http.server.ThreadingHTTPServer(("127.0.0.1", 0), UI)
    threading.Thread(target=ui.serve_forever, daemon=True).start()
    page = OpenPage(trace, "norm · test", ui=f"http://127.0.0.1:{ui.server_address[1]}")
    profile_dir = tmp_path / "chromium"
    browser = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--remote-debugging-port=0", f"--user-data-dir={profile_dir}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        asyncio.run(_click_open(profile_dir, page.url))
        assert page.posted.wait(30), "the page never handed the trace over"
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            time.sleep(0.1)
        assert got and got[0]["bytes"] == trace.stat().st_size and got[0]["fileName"] == trace.name
        assert got[0]["title"] == "norm · test" and got[0]["from"].startswith("http://127.0.0.1:")
    finally:
        browser.terminate()
        browser.wait(timeout=30)
        page.close()
        ui.shutdown()


async def _click_open(profile_dir: Path, url: str) -> None:
    """Open `url` in the browser started with `profile_dir`, wait for the trace to be read, click "Open in Perfetto"
    as a user gesture (a new tab is allowed only from one)."""
    import websockets

    port_file = profile_dir / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not port_file.is_file() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    port, path = port_file.read_text().split()[:2]
    async with websockets.connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws:
        ids = iter(range(1, 10**6))

        async def call(method: str, params: dict[str, Any], session: str | None = None) -> dict[str, Any]:
            mid = next(ids)
            message = {"id": mid, "method": method, "params": params, **({"sessionId": session} if session else {})}
            await ws.send(json.dumps(message))
            while True:
                msg = json.loads(await ws.recv())
                if msg.get("id") == mid:
                    assert "error" not in msg, msg
                    return dict(msg["result"])

        target = (await call("Target.createTarget", {"url": url}))["targetId"]
        session = (await call("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]

        async def evaluate(expression: str) -> Any:
            options = {"expression": expression, "userGesture": True, "returnByValue": True}
            found = await call("Runtime.evaluate", options, session)
            return found["result"].get("value")

        while time.monotonic() < deadline + 30 and await evaluate("document.getElementById('open')?.disabled") is not False:
            await asyncio.sleep(0.1)
        await evaluate("document.getElementById('open').click()")
        said = "document.getElementById('status').textContent"
        while time.monotonic() < deadline + 60 and "Sent to Perfetto UI" not in str(await evaluate(said)):
            await asyncio.sleep(0.1)


def test_perfetto_s_trace_processor_reads_the_lines_where_its_binary_is_given(cpu_run: Run, tmp_path: Path) -> None:
    """Perfetto's own importer, where its binary is at hand (the `perfetto` package downloads it from a host this
    machine cannot reach): the line slices, counted by its SQL, are OpLens's."""
    binary = os.environ.get("OPLENS_TRACE_PROCESSOR", "")
    if not binary:
        pytest.skip("no trace processor: set OPLENS_TRACE_PROCESSOR to Perfetto's trace_processor_shell to run this check")
    trace, _ = perfetto.export(cpu_run, tmp_path / "t.perfetto.json.gz")
    query = tmp_path / "lines.sql"
    query.write_text("select count(*) as n from slice where category = 'oplens.line';\n")
    done = subprocess.run([binary, "-q", str(query), str(trace)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert str(line_slices(cpu_run)[0]) in done.stdout.split()


def test_a_neuron_stand_in_run_exports_with_its_self_neuron_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run on the Neuron stand-ins (tests/standins/: the documented NeuronConfig and a documented-only
    neuron-explorer) in each format: the lines' Self NEURON per call in the Perfetto slices' args and as the
    speedscope device profile's weights; each NeuronCore execution of the system trace a slice on the device's own
    process, a flow from the op that launched it (inside its line), on the profiler's clock (the stand-in's rule is
    flow); the export a ZIP with Explorer's own .pftrace files (`view --output-format perfetto`, view-perfetto.rst)
    and the manifest naming each; the rules hold."""
    from support.neuron import NAIVE_KNOWN, NAIVE_TARGET, write_stand_in_explorer
    from support.paths import STANDINS

    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    env = {"PYTHONPATH": str(STANDINS), "STANDIN_EXEC_US": NAIVE_KNOWN, "PATH": path, "STANDIN_API": "documented",
           "STANDIN_EXPLORER_DOCUMENTED_ONLY": "1"}  # fmt: skip
    (tmp_path / "rmsnorm.py").write_text(NAIVE_TARGET)
    done = oplens_cli(tmp_path, "profile", "rmsnorm.py::rmsnorm_naive", "--backend", "neuron", "--warmup", "1", "--iters", "3",
                      timeout=240, **env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = runs.find(tmp_path / ".oplens" / "runs", "latest")
    assert isinstance(run, Run) and run.backend.device_label == "NEURON"
    trace = perfetto.build(run)
    assert perfetto.problems(trace) == []
    by_line = {e["args"]["oplens"]["line"]: e["args"]["oplens"]["self_device_us_per_call"]
               for e in trace["traceEvents"] if e.get("cat") == "oplens.line"}  # fmt: skip
    assert {s.line: round(s.self_device_us, 3) for s in run.lines if s.line in by_line} == by_line
    events = trace["traceEvents"]
    executions = [e for e in events if e.get("cat") == "device" and e.get("ph") == "X"]
    assert len(executions) == 3 * sum(round(s.op_calls) for s in run.lines if s.self_device_us > 0)  # one per op, per call
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert {names[e["pid"]].rpartition(" · ")[2] for e in executions} == {"NEURON"}
    starts = {e["id"]: e for e in events if e.get("ph") == "s" and e.get("cat") == "oplens.launch"}
    ends = [e for e in events if e.get("ph") == "f" and e.get("cat") == "oplens.launch"]
    assert len(ends) == len(executions) and all(starts[f["id"]]["ts"] <= f["ts"] for f in ends)  # launched, then run
    lines = [e for e in events if e.get("cat") == "oplens.line"]
    for ex in executions:  # its launch inside the slice of the line it is attributed to
        launch = starts[next(f["id"] for f in ends if f["ts"] == ex["ts"] and f["tid"] == ex["tid"])]
        line = ex["args"]["line"]
        assert any(s["args"]["oplens"]["line"] == line and s["ts"] <= launch["ts"] <= s["ts"] + s["dur"] for s in lines)
    assert trace["otherData"]["device_tracks"]["the run"]["clock"].startswith("the system trace's own times")
    monkeypatch.setenv("PATH", path)  # the export runs neuron-explorer (the stand-in) for its own traces
    done = formats.export(run, "perfetto")
    archive = done.path
    assert done.notes == []
    members = zipfile.ZipFile(archive).namelist()
    assert archive.suffix == ".zip" and "system_profile.pftrace" in members, members
    assert any(m.startswith("device_profile_model_") for m in members)
    manifest = json.loads(zipfile.ZipFile(archive).read("perfetto_manifest.json"))["perfetto_manifest"]
    assert sorted(f["path"] for f in manifest["files"]) == sorted(m for m in members if m != "perfetto_manifest.json")
    inside = json.loads(zipfile.ZipFile(archive).read(f"{run.run_id}.oplens.json"))
    assert perfetto.problems(inside) == []
    assert len([e for e in inside["traceEvents"] if e.get("cat") == "device"]) == len(executions)
    run.artifacts.processed_system_trace = ""  # a run whose system trace was never processed: said, with the fix
    bare = perfetto.build(run)
    said = bare["otherData"]["device_tracks"]["the run"]["problems"]
    assert not [e for e in bare["traceEvents"] if e.get("cat") == "device"] and "no processed system trace" in said[0]
    run = runs.find(tmp_path / ".oplens" / "runs", "latest")
    assert isinstance(run, Run)
    data = speedscope.build(run)
    device = data["profiles"][1]
    total = run.totals.self_device_us
    assert "NEURON" in device["name"] and abs(sum(device["weights"]) - total) < 0.02 * total
    out = tmp_path / "tb"
    assert oplens("export", run.run_dir, "--format", "tensorboard", "--out", str(out), cwd=tmp_path).returncode == 0
    assert [p.name for p in out.iterdir()] == ["rank0.pt.trace.json.gz"]


async def test_open_in_perfetto_through_the_real_server_serves_its_page_on_loopback(cpu_run: Run) -> None:
    """`oplens.openPerfetto` (the results page's Open in Perfetto) over a real LSP client: a page on 127.0.0.1 at a
    random path, which serves the trace the export wrote; another path answers 404."""
    from lsprotocol import types as lsp

    from support.lsp import plain, served_client

    ws = Path(cpu_run.run_dir).parents[2]
    async with served_client(ws) as client:
        params = lsp.ExecuteCommandParams(command=names.OPEN_PERFETTO_COMMAND, arguments=[{"run_id": cpu_run.run_id}])
        answer = plain(await client.workspace_execute_command_async(params))
        url = answer["url"]
        assert url.startswith("http://127.0.0.1:") and answer["ui"] == "https://ui.perfetto.dev"
        page = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read().decode())
        assert "Open in Perfetto" in page and "PING" in page
        trace = await asyncio.to_thread(lambda: urllib.request.urlopen(url + "trace", timeout=10).read())
        assert trace == Path(answer["path"]).read_bytes() and gzip.decompress(trace).startswith(b"{")
        elsewhere = url.rsplit("/", 2)[0] + "/guess/"
        with pytest.raises(urllib.error.HTTPError):
            await asyncio.to_thread(lambda: urllib.request.urlopen(elsewhere, timeout=10))
