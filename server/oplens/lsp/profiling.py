"""`oplens.profile`, `oplens.compare` and cancelling them, with `$/progress` while they run.

Progress goes to the request's own `workDoneToken` where it gave one (client-initiated: the VS Code
extension shows it in a notification with Cancel), else to a token the server asks the client for
(VS Code's language client shows that in the status bar). Either token's
`window/workDoneProgress/cancel` cancels that command's run; `oplens.cancel` cancels every run of the
client. A compare is one command: one progress, each function's stages after its name.

A command's arguments become a `ProfileRequest` (its target a `TargetSpec`; what the arguments
leave out comes from the client's settings), checked by the engine's one check (`request.check`,
its settings named as the arguments name them; a bad one is invalid params) before it is queued,
and run on the shared device queue. The client that
asked gets `oplens/result` with the whole run; every client hears of it through its listener
(`results.Redraw`).

`oplens.profile` with `program` instead of `args` captures the function inside the user's own
program (`oplens run`): a `ProgramRequest`, on the same queue; the program's output comes to the
client as `window/logMessage` while it runs.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import shutil
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from oplens.backends import registry
from oplens.engine import program as programs
from oplens.engine.compare import compare_rows
from oplens.engine.profile import ProfileRequest
from oplens.engine.program import ProgramRequest
from oplens.engine.request import FILL_S, Names, Options, check
from oplens.lsp import arguments, documents, progress, results, views
from oplens.lsp.arguments import ProfileArgs, ProgramArgs
from oplens.lsp.client import ClientState
from oplens.lsp.protocol import work_done_token
from oplens.records.errors import OpLensError
from oplens.records.job import ProgramSpec, TargetSpec
from oplens.records.names import COMPARE_COMMAND, PROFILE_COMMAND
from oplens.records.overview import AnyRun
from oplens.records.run import Run
from oplens.views.compare import compare_page

STAGE_WORDS = {"queued": "queued", "importing": "importing", "warmup": "warm-up", "profile": "iteration",
               "ingesting": "reading the device runtime's trace", "processing": "attributing"}
LOG_LINE_LIMIT = 8192  # characters of a line without its end yet, sent as they are
# The settings as a command's arguments name them, in a bad one's message.
PROFILE_NAMES = Names(warmup="warmup", iters="iters", timeout="timeoutSeconds")
CAPTURE_NAMES = Names(warmup="skip", iters="calls", timeout="timeoutSeconds")


async def profile(client: ClientState, arg: Any) -> dict[str, Any]:
    a = arguments.parse(PROFILE_COMMAND, arg, ProfileArgs, arguments.PROFILE_SHAPE)
    program = arguments.check_program(PROFILE_COMMAND, a)
    if program is not None and program.slurm is not None:
        run = await run_on_slurm(client, capture_request(client, PROFILE_COMMAND, a, program), program.slurm)
    elif program is not None:
        run = await run_capture(client, capture_request(client, PROFILE_COMMAND, a, program))
    else:
        run = await run_profile(client, request(client, PROFILE_COMMAND, a))
    return reply(client, run)


def reply(client: ClientState, run: AnyRun) -> dict[str, Any]:
    """What a command that made a run answers (oplens.profile, oplens.merge): `{run_id, uri, qualname, title}`."""
    return {"run_id": run.run_id, "uri": client.uri(run.target.file), "qualname": run.target.qualname,
            "title": views.totals_title(run)}


async def compare(client: ClientState, arg: Any) -> dict[str, Any]:
    """Measure the targets side by side in one worker (every one checked before it starts; `engine.compare`):
    `summary`, the side-by-side rows with each speed-up's interval and verdict, `failed`, the variants not
    measured, and `page`, the comparison as the results page shows it (`views.compare.ComparePage`)."""
    targets = arguments.compare_targets(COMPARE_COMMAND, arg)
    if any(t.program is not None for t in targets):
        raise JsonRpcInvalidParams(f"{COMPARE_COMMAND} calls each function with args; it takes no program "
                                   f"(capture inside a program with {PROFILE_COMMAND})")  # fmt: skip
    reqs = [request(client, COMPARE_COMMAND, t) for t in targets]
    if all(t.iters is None for t in targets):  # rounds not counted: the setting's iterations are the least
        for req in reqs:
            req.fill_s = FILL_S
    names = [req.target.qualname or str(req.target).rsplit("/", 1)[-1] for req in reqs]
    tracker = await track(client, f"comparing {', '.join(names)}")
    tracker.part = (f"{len(reqs)} functions side by side: ", 0, 1)
    try:
        try:
            compared = await client.shared.compare(reqs, tracker.report, tracker.cancel,
                                                   functools.partial(results.announce, client))  # fmt: skip
        except OpLensError as e:
            _mark(client, e, reqs[0].target.file)
            raise client.request_error(e) from None
        except asyncio.CancelledError:
            tracker.cancel.set()
            raise
    except BaseException as e:
        tracker.end(ending(e))
        raise
    tracker.end(f"{len(compared.runs)} functions compared side by side")
    summary = compare_rows(compared.runs)
    return {"summary": summary, "page": compare_page(compared.runs, compared.failed, summary).to_dict(),
            "failed": [{"variant": name, "message": e.message} for name, e in compared.failed]}  # fmt: skip


def request(client: ClientState, command: str, a: ProfileArgs) -> ProfileRequest:
    """The engine's request for `a`: completed from the client's settings, and checked."""
    target = _target(client, command, a)
    s, shared = client.settings, client.shared
    req = ProfileRequest(target=target, args=a.args or "", backend=s.backend if a.backend is None else a.backend,
                         warmup=s.warmup if a.warmup is None else a.warmup,
                         iters=s.iterations if a.iters is None else a.iters,
                         timeout_s=s.timeout_seconds if a.timeout_seconds is None else a.timeout_seconds,
                         workspace=shared.workspace, out=str(shared.runs_root), names=PROFILE_NAMES)  # fmt: skip
    req.backend_options = _checked(client, command, req.options())
    return req


def capture_request(client: ClientState, command: str, a: ProfileArgs, p: ProgramArgs) -> ProgramRequest:
    """The engine's request to capture `a`'s function inside program `p`: completed from the client's
    settings, and checked (the program's paths too, before it waits for the device)."""
    target = _target(client, command, a)
    s, shared = client.settings, client.shared
    spec = ProgramSpec(program=_host(client, p.program or ""), module=p.module or "", args=list(p.args),
                       cwd=_host(client, p.cwd or ""), env=dict(p.env))  # fmt: skip
    req = ProgramRequest(targets=[target], program=spec, skip=s.capture_skip if a.skip is None else a.skip,
                         calls=s.capture_calls if a.calls is None else a.calls,
                         stop=s.capture_stop if a.stop is None else a.stop,
                         backend=s.backend if a.backend is None else a.backend,
                         timeout_s=s.timeout_seconds if a.timeout_seconds is None else a.timeout_seconds,
                         workspace=shared.workspace, out=str(shared.runs_root), names=CAPTURE_NAMES)  # fmt: skip
    req.backend_options = _checked(client, command, req.options())
    try:
        programs.validate(req)  # a missing script or folder is told now, not after the queue
    except OpLensError as e:
        raise client.request_error(e) from None
    return req


def _target(client: ClientState, command: str, a: ProfileArgs) -> TargetSpec:
    """`a`'s function, in a file of the workspace or of a package installed in this interpreter."""
    shared = client.shared
    path = Path(client.host_path(a.uri)).resolve()
    if not path.is_relative_to(shared.workspace) and not _installed(path):
        raise JsonRpcInvalidParams(
            f"{path} is outside the workspace {shared.workspace} and every import root of this interpreter "
            f"({sys.executable}); OpLens profiles the workspace's files and the files of packages installed in the "
            "interpreter it runs on (select the environment that has the package: Python: Select Interpreter)"
        )
    if a.qualname:
        return TargetSpec(str(path), qualname=a.qualname)
    if a.line is not None and a.line >= 0:
        return TargetSpec(str(path), line=a.line + 1)  # LSP lines are 0-based
    raise JsonRpcInvalidParams(f"{command}: give the function as qualname (e.g. 'Block.forward') or line (0-based)")


def _installed(path: Path) -> bool:
    """`path` is under one of this interpreter's import roots (site-packages, an editable install's folder), where
    "Go to Definition" opens a library's model file: the worker, started from the same interpreter, imports it
    from there as the program does."""
    roots = (Path(p).resolve() for p in sys.path if p and Path(p).is_dir())
    return any(path.is_relative_to(root) for root in roots if root != Path(root.anchor))


def _checked(client: ClientState, command: str, options: Options) -> dict[str, Any]:
    """`options` checked by the engine's one check (a bad setting is invalid params); the backends'
    options records, from the client's settings."""
    try:
        check(options)
    except OpLensError as e:
        raise JsonRpcInvalidParams(f"{command}: {e.message}" + (f"; {e.detail}" if e.detail else "")) from None
    try:
        return registry.parse_options(options.backend, client.settings.backend_options, client.shared.workspace)
    except OpLensError as e:
        raise client.request_error(e) from None


def _host(client: ClientState, path: str) -> str:
    """A program's path as the host names it: an absolute one through the client's path mappings
    (a relative one is the engine's to resolve, against the workspace)."""
    return client.paths.to_host(path) if path.startswith("/") else path


async def run_profile(client: ClientState, req: ProfileRequest, within: Tracker | None = None) -> Run:
    """Run `req` on the shared queue with progress; `oplens/result` to this client when it is done.
    `within`: the progress of a command that runs several (a compare), which it ends itself."""
    tracker = within or await track(client, str(req.target).rsplit("/", 1)[-1])
    try:  # oplens/result to this client before every client redraws: it knows the run first
        try:
            run = await client.shared.profile(req, tracker.report, tracker.cancel, functools.partial(results.announce, client))
        except OpLensError as e:
            _mark(client, e, req.target.file)
            raise client.request_error(e) from None
        except asyncio.CancelledError:
            tracker.cancel.set()  # the client went: the worker stops, nothing is stored
            raise
    except BaseException as e:
        if within is None:
            tracker.end(ending(e))
        raise
    if within is None:
        tracker.end(views.totals_title(run))
    return run


async def run_capture(client: ClientState, req: ProgramRequest) -> AnyRun:
    """Run the program of `req` on the shared queue with progress, its output to the client's log;
    `oplens/result` to this client for each stored run (a partial one too); the first target's run."""
    target = req.targets[0]
    name = _program_name(req.program)
    tracker = await track(client, f"{str(target).rsplit('/', 1)[-1]} in {name}")
    output = ProgramOutput(client, name, asyncio.get_running_loop())

    announce = functools.partial(results.announce, client)
    try:
        return await _first_run(client, tracker, target.file,
                                client.shared.capture(req, tracker.report, tracker.cancel, announce, output.echo),
                                output.flush)  # fmt: skip
    finally:
        output.flush()


def slurm_here() -> dict[str, Any]:
    """`oplens.slurm`: whether this host submits Slurm jobs (`sbatch` on the server's PATH), in the server's words."""
    sbatch = shutil.which("sbatch") or ""
    note = (f"Slurm's sbatch is at {sbatch}: Profile Function in Program… can run the program as a Slurm job" if sbatch
            else "no sbatch on the server host's PATH: a Slurm job is submitted from the cluster's login node")  # fmt: skip
    return {"sbatch": sbatch, "note": note}


async def run_on_slurm(client: ClientState, req: ProgramRequest, sbatch: list[str]) -> AnyRun:
    """Capture `req` as a Slurm job with the `sbatch` options (engine/slurm.py): its state and the nodes' parts in
    the client's log and progress, a cancel cancels the job; `oplens/result` for the merged runs, the first
    target's returned."""
    target = req.targets[0]
    tracker = await track(client, f"{str(target).rsplit('/', 1)[-1]} in {_program_name(req.program)} (Slurm job)")
    loop = asyncio.get_running_loop()

    def say(words: str) -> None:  # on the job's watching thread: to the client's log, as the program's output goes
        params = lsp.LogMessageParams(type=lsp.MessageType.Log, message=f"[slurm] {words}")
        loop.call_soon_threadsafe(client.ls.window_log_message, params)

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "queued":
            tracker.say("the job is pending in Slurm's queue", 0)
        else:
            tracker.say(f"the job is running: {done} of {total} nodes' parts stored", 30 + 65 * done // max(total, 1))

    announce = functools.partial(results.announce, client)
    return await _first_run(client, tracker, target.file,
                            client.shared.capture_on_slurm(req, sbatch, say, progress, tracker.cancel, announce))  # fmt: skip


async def _first_run(client: ClientState, tracker: Tracker, target_file: str, work: Awaitable[list[AnyRun]],
                     before_error: Callable[[], None] | None = None) -> AnyRun:  # fmt: skip
    """The first run of `work` (a capture's), its progress ended with its totals; an error marked at the user's line
    and answered as the request's (`before_error` first: the program's last output), a cancel passed to the work."""
    try:
        try:
            done = await work
        except OpLensError as e:
            if before_error is not None:
                before_error()
            _mark(client, e, target_file)
            raise client.request_error(e) from None
        except asyncio.CancelledError:
            tracker.cancel.set()
            raise
    except BaseException as e:
        tracker.end(ending(e))
        raise
    run = done[0]
    tracker.end(views.totals_title(run))
    return run


def _mark(client: ClientState, e: OpLensError, target_file: str) -> None:
    """The user's exception as a diagnostic at its line: a profile's (in the target's file unless it
    says where), a program's where it says where."""
    if e.kind == "user_exception" or (e.kind == "program_failed" and e.location.get("file")):
        file = e.location.get("file", target_file)
        client.errors[file] = e
        documents.redraw(client, file)


def _program_name(p: ProgramSpec) -> str:
    """How the program is named in the progress title and before each line of its output."""
    return f"-m {p.module}" if p.module else Path(p.program).name


class ProgramOutput:
    """The program's stdout and stderr as `window/logMessage` (Log), line by line as they come,
    each line after `[NAME]` (`[NAME stderr]`). `echo` runs on the engine's reader threads (one
    per stream); the messages are sent from the event loop."""

    def __init__(self, client: ClientState, name: str, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop
        self._prefix = {1: f"[{name}] ", 2: f"[{name} stderr] "}
        self._decoders = {n: codecs.getincrementaldecoder("utf-8")(errors="replace") for n in (1, 2)}
        self._pending = {1: "", 2: ""}  # each stream's line without its end yet
        self._lock = threading.Lock()

    def echo(self, stream: int, data: bytes) -> None:
        with self._lock:
            text = self._pending[stream] + self._decoders[stream].decode(data)
            *lines, rest = text.split("\n")
            if len(rest) > LOG_LINE_LIMIT:
                lines, rest = [*lines, rest], ""
            self._pending[stream] = rest
        self._send(stream, lines)

    def flush(self) -> None:
        """What is left of each stream (a last line without its end), once the program is over."""
        for stream in (1, 2):
            with self._lock:
                rest = self._pending[stream] + self._decoders[stream].decode(b"", final=True)
                self._pending[stream] = ""
            if rest:
                self._send(stream, [rest])

    def _send(self, stream: int, lines: list[str]) -> None:
        if not lines:
            return
        prefix = self._prefix[stream]
        message = "\n".join(prefix + line.rstrip("\r") for line in lines)
        params = lsp.LogMessageParams(type=lsp.MessageType.Log, message=message)
        self._loop.call_soon_threadsafe(self._client.ls.window_log_message, params)


def cancel_progress(client: ClientState, token: str) -> None:
    """The client cancelled the progress of `token` (`window/workDoneProgress/cancel`)."""
    event = client.cancels.get(token)
    if event is not None:
        event.set()


def cancel_all(client: ClientState) -> None:
    """`oplens.cancel`: every profile this client is running."""
    for event in client.cancels.values():
        event.set()


@dataclass
class Tracker:
    """One command's progress and its cancel, under `token` (the request's own or the server's, see
    the module): `report` is thread-safe; `end` once, which also forgets the cancel."""

    client: ClientState
    token: str
    cancel: threading.Event
    send: progress.Sender | None
    # the words before each stage, and which part of how many the command is in (a compare: its variants, side by side)
    part: tuple[str, int, int] = ("", 0, 1)

    def report(self, stage: str, done: int, total: int) -> None:
        self.say(stage_message(stage, done, total), stage_percentage(stage, done, total))

    def say(self, message: str, percentage: int) -> None:
        words, index, count = self.part
        if self.send is not None:
            self.send(lsp.WorkDoneProgressReport(message=words + message, cancellable=True,
                                                 percentage=(100 * index + percentage) // count))  # fmt: skip

    def end(self, message: str) -> None:
        progress.end(self.client, self.token, message)
        self.client.cancels.pop(self.token, None)


def ending(e: BaseException) -> str:
    """The last words of a command's progress that did not finish."""
    if isinstance(e, JsonRpcException):
        return e.message or "failed"
    return "cancelled" if isinstance(e, asyncio.CancelledError) else "failed"


async def track(client: ClientState, title: str) -> Tracker:
    """Begin a command's progress, `OpLens: <title>`, on the request's `workDoneToken` or the server's
    own; its cancel is known by that token from now on."""
    given = work_done_token()
    token = given or str(uuid.uuid4())
    cancel = client.cancels.setdefault(token, threading.Event())
    start = lsp.WorkDoneProgressBegin(title=f"OpLens: {title}", cancellable=True, message="starting", percentage=0)
    try:
        send = await progress.begin(client, token, start, given=given is not None)
    except BaseException:
        client.cancels.pop(token, None)
        raise
    return Tracker(client, token, cancel, send)


def stage_message(stage: str, done: int, total: int) -> str:
    """A progress report's words: a profile's (`iteration 3/20`) or a capture's (`captured 4 of 10`)."""
    if stage == "queued":
        return f"waiting for the device: {done} job(s) ahead"
    if stage == "waiting":  # a capture: the program runs until the function's calls come
        return "waiting for the first call" if done == 0 else f"waiting: call {done} of {total} skipped"
    if stage == "capture":
        return f"captured {done} of {total}"
    if stage == "warmup" and done == 0:  # the first call: where the device compiles (Neuron: minutes), now
        return "warm-up: the first call (compiling, where the device compiles)"
    word = STAGE_WORDS.get(stage, stage)
    return f"{word} {done}/{total}" if total > 1 else word


def stage_percentage(stage: str, done: int, total: int) -> int:
    share = done / max(total, 1)
    if stage in ("warmup", "waiting"):
        return 5 + int(25 * share)
    if stage in ("profile", "capture"):
        return 30 + int(65 * share)
    return {"importing": 2, "ingesting": 96, "processing": 97}.get(stage, 0)
