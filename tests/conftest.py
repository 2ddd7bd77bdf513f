from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from oplens.analysis.attribution import Attribution, RawEvent, attribute
from oplens.analysis.chrome_trace import read_events
from oplens.records import names

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLE = ROOT / "examples" / "rmsnorm.py"
STANDINS = Path(__file__).resolve().parent / "standins"  # the Neuron vendor tools' stand-ins (standins/README.md)


def oplens_cli(cwd: Path, *argv: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m oplens ARGV` in `cwd` as a user runs it from a plain shell: no terminal size, no
    stand-in or Neuron runtime variables of the caller's, no GPU, unbuffered; `env` added on top."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("COLUMNS", "LINES", "FORCE_COLOR") and not k.startswith(("STANDIN_", "NEURON_RT_"))}  # fmt: skip
    full.update(env, PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "oplens", *argv], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


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


# The stored run of the analysis tests: the extension's fixture, a real CPU profile of examples/rmsnorm.py's
# `rmsnorm_naive` (extension/test/fixtures/make_fixtures.py says how it was made), its trace recorded with shapes.
FIXTURES = ROOT / "extension" / "test" / "fixtures"
STORED_RESULT = FIXTURES / "rmsnorm_naive.cpu.result.json"
STORED_TRACE = FIXTURES / "rmsnorm_naive.cpu.trace.json"


def stored_run() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(STORED_RESULT.read_text())
    return data


def stored_events(shapes: bool = False) -> list[RawEvent]:
    """The stored trace's events; with `shapes`, each op's input shapes and dtypes as the trace
    records them (its "Input Dims" and "Input type"), as the worker's shapes call reads them."""
    events = read_events(STORED_TRACE)
    if shapes:
        data = json.loads(STORED_TRACE.read_text())
        base = int(data.get("baseTimeNanoseconds", 0))  # read_events makes times absolute
        args = {(e["name"], base + round(float(e["ts"]) * 1000)): e.get("args", {}) for e in data["traceEvents"]
                if e.get("ph") == "X"}  # fmt: skip
        for e in events:
            a = args.get((e.name, e.start_ns), {})
            e.shapes, e.dtypes = list(a.get("Input Dims", [])), list(a.get("Input type", []))
    return events


def stored_attribution(shapes: bool = False) -> Attribution:
    run = stored_run()
    return attribute(stored_events(shapes), run["config"]["iters"], run["target"]["def_line"], "cpu")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def ports() -> tuple[int, int]:
    """Two free loopback ports (a viewer's UI and API), both found before either is released."""
    found: list[int] = []
    sockets = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        found.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return found[0], found[1]


def stop_group(pid: int) -> None:
    """End a detached process group (a viewer the test or OpLens started) and wait for its leader."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def processes_with(text: str) -> list[int]:
    """The pids of live processes (not zombies) whose command line holds `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def killed_parent_leaves_nothing(argv: list[str], cwd: Path, marker: str, ready: str, within_s: float = 30) -> list[int]:
    """Start OpLens (`argv`), wait for the output line `ready`, kill it with SIGKILL, and return the
    processes with `marker` in their command line (its workers, the program's) still there after
    `within_s`: none, when the workers see their parent gone and end the program."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if ready in line:
            break
    else:
        raise AssertionError("OpLens ended before the program got going:\n" + "".join(seen[-40:]))
    assert processes_with(marker), "no worker found to watch"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + within_s
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in left:  # what a failure leaves must not outlive the test
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


# The language server's tests: a real client speaking LSP to `oplens serve`.


@contextlib.asynccontextmanager
async def served_client(workspace: Path, editor: str = "visual-studio-code",
                        **initialization_options: Any) -> AsyncIterator[LanguageClient]:  # fmt: skip
    """A real LSP client of `oplens serve --stdio --no-warm` in `workspace` (its one folder), as `editor`
    initializes it (pytest-lsp's capabilities of that editor): the `oplens/result` notifications it gets kept
    in `.results` and the `oplens/document` ones in `.documents` (as plain dicts), the lens and hint
    refreshes answered; shut down on exit."""
    c = make_test_lsp_client()
    c.results = []  # type: ignore[attr-defined]
    c.documents = []  # type: ignore[attr-defined]

    @c.feature(names.RESULT_NOTIFICATION)
    def on_result(params: Any) -> None:
        c.results.append(plain(params))  # type: ignore[attr-defined]

    @c.feature(names.DOCUMENT_NOTIFICATION)
    def on_document(params: Any) -> None:
        c.documents.append(plain(params))  # type: ignore[attr-defined]

    @c.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params: Any) -> None:
        return None

    @c.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def hint_refresh(params: Any) -> None:
        return None

    await c.start_io(sys.executable, "-m", "oplens", "serve", "--stdio", "--no-warm", cwd=str(workspace))
    await c.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities(editor),
            root_uri=workspace.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
            initialization_options=initialization_options or None,
        )
    )
    try:
        yield c
    finally:
        await c.shutdown_session()


def open_doc(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())
        )
    )
    return uri


def plain(value: Any) -> Any:
    """pygls hands unknown JSON objects over as namedtuples: back to dicts and lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
