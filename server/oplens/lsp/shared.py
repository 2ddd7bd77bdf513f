"""What all clients of one `oplens serve` share: the runs (and the diffs between runs of a
function), the device queue, a warm worker.

One `SharedState` lives as long as the server process; each client connection (stdio, or one of
many WebSocket clients) is its own `ClientState` over it, told of every finished run and every
clear through `Listener`. Nothing here imports torch: profiles run in worker processes through
the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from oplens.engine import runs, slurm
from oplens.engine.compare import Compared, compare
from oplens.engine.diff import DEVICE, FunctionDiff, diff_runs
from oplens.engine.merge import merge_dirs
from oplens.engine.process import Echo, WorkerProcess, discard, warm_environment
from oplens.engine.profile import ProfileRequest, profile
from oplens.engine.program import ProgramRequest, run_program
from oplens.lsp.kernel_runs import KernelRuns
from oplens.records.errors import OpLensError
from oplens.records.job import ProgramSpec
from oplens.records.overview import AnyRun, OverviewRun
from oplens.records.run import Run

log = logging.getLogger(__name__)


class Listener(Protocol):
    """A connected client, told what changed for every client."""

    def on_result(self, run: AnyRun) -> None:
        """A run finished (asked for by any client)."""

    def on_clear(self, file: str | None) -> None:
        """The runs of `file` (None: of every file) were cleared from view."""


def result_key(file: str, qualname: str) -> tuple[str, str]:
    return (str(Path(file).resolve()), qualname)


@dataclass
class ResultStore:
    """The latest run of each function, loaded from the runs directory at start."""

    root: Path
    latest: dict[tuple[str, str], Run] = field(default_factory=dict)
    hidden: set[tuple[str, str]] = field(default_factory=set)  # cleared from view, still on disk
    # The latest program overview of the workspace (an `OverviewRun`, stored as `overview.json`): its own
    # slot, apart from the functions' runs, whose lenses and hints it would otherwise replace on its step function.
    overview: OverviewRun | None = None
    overview_hidden: bool = False

    def load(self, seen: Callable[[AnyRun, str], None] | None = None) -> int:
        """Read every stored run (each also to `seen`, with its directory's name); the latest of each
        function is kept."""
        loaded = 0
        for run_dir in runs.list_runs(self.root):  # oldest first: later runs win
            try:
                run = runs.load(run_dir)
            except Exception as e:  # a damaged run must not stop the server
                log.warning("skipping run %s: %s", run_dir, e)
                continue
            self._keep(run)
            if seen is not None:
                seen(run, run_dir.name)
            loaded += 1
        return loaded

    def _keep(self, run: AnyRun) -> None:
        if isinstance(run, OverviewRun):
            self.overview = run
        else:
            self.latest[result_key(run.target.home(), run.target.qualname)] = run

    def add(self, run: AnyRun) -> None:
        self._keep(run)
        if isinstance(run, OverviewRun):
            self.overview_hidden = False
        else:
            self.hidden.discard(result_key(run.target.home(), run.target.qualname))

    def shown_overview(self) -> OverviewRun | None:
        """The latest overview, unless cleared from view."""
        return None if self.overview_hidden else self.overview

    def for_file(self, file: str) -> list[Run]:
        path = str(Path(file).resolve())
        return [r for k, r in self.latest.items() if k[0] == path and k not in self.hidden]

    def by_id(self, run_id: str) -> AnyRun | None:
        """A run (or overview) by id: the latest ones in memory, else read from its directory."""
        if self.overview is not None and self.overview.run_id == run_id:
            return self.overview
        for run in self.latest.values():
            if run.run_id == run_id:
                return run
        run_dir = self.root / run_id
        if run_id and "/" not in run_id and runs.record_file(run_dir) is not None:
            return runs.load(run_dir)
        return None

    def run_by_id(self, run_id: str) -> Run | None:
        """`by_id`, for a function's run (None for an overview)."""
        run = self.by_id(run_id)
        return run if isinstance(run, Run) else None

    def clear(self, file: str | None = None) -> None:
        path = str(Path(file).resolve()) if file else None
        self.hidden.update(k for k in self.latest if path is None or k[0] == path)
        if path is None:
            self.overview_hidden = True


@dataclass(frozen=True)
class StoredRun:
    """What a list of a function's runs needs of one (without keeping the whole run)."""

    run_id: str
    file: str
    qualname: str
    created: str
    self_device_us: float
    device_label: str
    args: str
    overview: bool = False  # a program overview (`OverviewRun`): not a run of its step function to diff against

    def entry(self) -> dict[str, Any]:
        """`{run_id, created, self_device_us, device_label, args}`, as `oplens.diff`'s `earlier` lists it."""
        return {"run_id": self.run_id, "created": self.created, "self_device_us": self.self_device_us,
                "device_label": self.device_label, "args": self.args}


class RunDiffs:
    """Each function's stored runs, and diffs between two of them, kept as they are computed:
    a stored run never changes, so neither does what is read of it (per run directory, which
    function it profiled) or a diff of two (per pair of run ids, the `keep` most recent)."""

    def __init__(self, root: Path, load: Callable[[str], Run | None], keep: int = 64) -> None:
        self.root = root
        self._load = load  # a run by id (the store's: the latest runs are in memory)
        self._keep = keep
        self._stored: dict[str, StoredRun | None] = {}  # run directory name → its run (None: unreadable)
        self._diffs: OrderedDict[tuple[str, str, str], FunctionDiff] = OrderedDict()
        self._previous: OrderedDict[str, FunctionDiff | None] = OrderedDict()  # after run id → vs its previous run

    def remember(self, run: AnyRun, dir_name: str | None = None) -> None:
        """What a list of its function's runs needs of `run` (in directory `dir_name`, by default
        its id), read elsewhere: it is not read again."""
        name = dir_name or run.run_id
        self._stored[name] = _stored_run(run, name)

    def history(self, file: str, qualname: str) -> list[StoredRun]:
        """The stored runs of function `qualname` of `file`, oldest first."""
        found = []
        for run_dir in runs.history_dirs(self.root, qualname):
            if run_dir.name not in self._stored:
                self._stored[run_dir.name] = _stored(run_dir)
            s = self._stored[run_dir.name]
            if s is not None and not s.overview and s.qualname == qualname and runs.same_file(s.file, file):
                found.append(s)
        return found

    def earlier(self, run: Run) -> list[StoredRun]:
        """The stored runs of `run`'s function from before it, newest first."""
        found = self.history(run.target.home(), run.target.qualname)
        ids = [s.run_id for s in found]
        if run.run_id in ids:
            return found[: ids.index(run.run_id)][::-1]
        return [s for s in found if s.created <= run.created][::-1]  # not on disk (yet): by its time

    def diff(self, before: Run, after: Run, by: str = DEVICE) -> FunctionDiff:
        """`engine.diff.diff_runs`, once per pair and measure; raises its OpLensError where two runs do not diff."""
        key = (before.run_id, after.run_id, by)
        found = self._diffs.get(key)
        if found is None:
            found = self._diffs[key] = diff_runs(before, after, by)
        self._diffs.move_to_end(key)
        while len(self._diffs) > self._keep:
            self._diffs.popitem(last=False)
        return found

    def against_previous(self, run: Run) -> FunctionDiff | None:
        """`run` against the run of its function just before it; None where there is none, or
        where the two do not diff (another backend, a run that kept no source)."""
        if run.run_id not in self._previous:
            self._previous[run.run_id] = self._against_previous(run)
        self._previous.move_to_end(run.run_id)
        while len(self._previous) > self._keep:
            self._previous.popitem(last=False)
        return self._previous[run.run_id]

    def _against_previous(self, run: Run) -> FunctionDiff | None:
        earlier = self.earlier(run)
        before = self._load(earlier[0].run_id) if earlier else None
        if before is None:
            return None
        try:
            return self.diff(before, run)
        except OpLensError as e:
            log.info("no diff of %s against %s: %s", run.run_id, before.run_id, e.message)
            return None


def _stored(run_dir: Path) -> StoredRun | None:
    try:
        run = runs.load(run_dir)
    except Exception as e:  # a damaged run must not stop the others from being listed
        log.warning("skipping run %s: %s", run_dir, e)
        return None
    return _stored_run(run, run_dir.name)


def _stored_run(run: AnyRun, run_id: str) -> StoredRun:
    """`run` as a list of runs needs it; `run_id`: its directory's name, which finds it."""
    return StoredRun(run_id, run.target.home(), run.target.qualname, run.created,
                     run.totals.self_device_us, run.backend.device_label, run.config.args, isinstance(run, OverviewRun))


class WarmPool:
    """Keeps one worker started (torch imported) so that a profile does not pay the import.

    One job per worker process: `take()` hands the warm worker out, and `refill()`, called when
    the job is done, starts its replacement, so that the replacement's torch import does not
    compete with the profile being measured."""

    def __init__(self, log_dir: Path, cwd: Path, enabled: bool = True) -> None:
        self._log_dir = log_dir
        self._cwd = cwd
        self._enabled = enabled
        self._lock = threading.Lock()
        self._worker: WorkerProcess | None = None
        self._starting = False
        # The backends' options the waiting worker is started for (the last run's: the editor's settings), so that
        # what a vendor module reads at `import torch` is there (Neuron: the compile-time debug info, the measured
        # efficiency; engine/process.warm_environment)
        self._options: dict[str, Any] = {}
        if enabled:
            self._start_async()

    def _start_async(self) -> None:
        self._starting = True
        options = dict(self._options)

        def start() -> None:
            try:
                env = warm_environment(self._log_dir, options)
                worker: WorkerProcess | None = WorkerProcess(self._log_dir, cwd=self._cwd, env=env)
            except OSError as e:
                log.warning("could not start a warm worker: %s", e)
                worker = None
            with self._lock:
                self._worker, self._starting = worker, False
                stale = worker is not None and options != self._options  # the settings changed meanwhile
                if stale:
                    self._worker = None
            if stale and worker is not None:
                discard(worker)
                self.refill()

        threading.Thread(target=start, daemon=True).start()

    def take(self) -> WorkerProcess | None:
        with self._lock:
            worker, self._worker = self._worker, None
        return worker if worker is not None and worker.alive() else None

    def refill(self, options: Mapping[str, Any] | None = None) -> None:
        """A worker waiting again, started for `options` (the backends' options of the run just done, or the
        editor's settings; None: as before): one waiting for other options is replaced."""
        stale = None
        with self._lock:
            if options is not None and dict(options) != self._options:
                self._options = dict(options)
                stale, self._worker = self._worker, None
            missing = self._enabled and self._worker is None and not self._starting
            if missing:
                self._start_async()
        if stale is not None:
            discard(stale)

    def close(self) -> None:
        self._enabled = False
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            discard(worker)


class SharedState:
    def __init__(self, workspace: Path, runs_dir: str | None = None, warm: bool = True) -> None:
        self.workspace = workspace.resolve()
        self.runs_root = runs.prepare(runs.runs_root(self.workspace, runs_dir))
        self.results = ResultStore(self.runs_root)
        self.diffs = RunDiffs(self.runs_root, self.results.run_by_id)
        self.results.load(self.diffs.remember)  # read once at start: the runs' lists need not read them again
        self.pool = WarmPool(self.runs_root / ".staging", self.workspace, enabled=warm)
        self.device_lock = asyncio.Lock()  # jobs on the device run one at a time
        self.waiting = 0  # jobs queued behind the running one
        self.listeners: list[Listener] = []  # one per connected client
        self.programs: dict[str, ProgramSpec] = {}  # overview run id → the program it ran (its env too)
        self.kernel_runs = KernelRuns(self._from_kernel)  # the `%oplens` magic's runs, beside open notebooks
        self._loop: asyncio.AbstractEventLoop | None = None

    def watch_notebook(self, notebook: str) -> None:
        """Show the runs a kernel of `notebook` writes beside it (its runs folder): those there now, and each
        new one as it appears (every client hears of it as of a profile's run)."""
        with contextlib.suppress(RuntimeError):
            self._loop = self._loop or asyncio.get_running_loop()
        folder = runs.runs_root(Path(notebook).parent)
        for run in self.kernel_runs.watch(folder, own=folder == self.runs_root):  # the server's own: read at start
            self.results.add(run)
            self.diffs.remember(run)

    def _from_kernel(self, run: AnyRun) -> None:  # on the watch's thread
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._finished, run, None)

    def listen(self, listener: Listener) -> None:
        if listener not in self.listeners:  # a second initialize must not listen twice
            self.listeners.append(listener)

    def unlisten(self, listener: Listener) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)

    async def profile(
        self,
        req: ProfileRequest,
        progress: Callable[[str, int, int], None],
        cancel: threading.Event,
        announce: Callable[[AnyRun], object] | None = None,
    ) -> Run:
        """Queue `req` on the device and run it in a warm worker; every client hears of the result
        (after `announce`, which tells the client that asked)."""
        async with self._device(progress, cancel, "profile"):
            try:
                run = await asyncio.to_thread(profile, req, progress, cancel, self.pool.take())
            finally:
                self.pool.refill(req.backend_options)
        self._finished(run, announce)
        return run

    async def compare(
        self,
        reqs: list[ProfileRequest],
        progress: Callable[[str, int, int], None],
        cancel: threading.Event,
        announce: Callable[[AnyRun], object] | None = None,
    ) -> Compared:
        """Queue a compare of `reqs` on the device and run it in a warm worker, the variants side by side; every
        client hears of each run as of a profile's."""
        async with self._device(progress, cancel, "compare"):
            try:
                compared = await asyncio.to_thread(compare, reqs, progress, cancel, self.pool.take())
            finally:
                self.pool.refill(reqs[0].backend_options)
        for run in compared.runs:
            self._finished(run, announce)
        return compared

    async def capture(
        self,
        req: ProgramRequest,
        progress: Callable[[str, int, int], None],
        cancel: threading.Event,
        announce: Callable[[AnyRun], object] | None = None,
        echo: Echo | None = None,
    ) -> list[AnyRun]:
        """Queue `req` on the device and run the user's program with its targets captured (its own
        worker: the program has its own working directory and environment; stdin: none). Every
        stored run, a partial one too, is added and heard of as a profile's is, as soon as it is
        stored: a failure after it (raised here) does not lose it. The complete runs, in order."""
        loop = asyncio.get_running_loop()

        def stored(run: AnyRun) -> None:  # on the capture's thread: the rest happens on the loop, in order,
            loop.call_soon_threadsafe(self._finished, run, announce)  # before the result or error is back

        async with self._device(progress, cancel, "capture"):
            return await asyncio.to_thread(run_program, req, progress, cancel, echo, subprocess.DEVNULL, stored)

    async def capture_on_slurm(
        self,
        req: ProgramRequest,
        sbatch: list[str],
        say: Callable[[str], None],
        progress: Callable[[str, int, int], None],
        cancel: threading.Event,
        announce: Callable[[AnyRun], object] | None = None,
    ) -> list[AnyRun]:
        """`req` as a Slurm job (engine/slurm.py): not on this host's device queue (the job runs on the cluster's
        nodes); its merged runs added and heard of as a capture's are."""
        done = await asyncio.to_thread(slurm.run_job, req, sbatch, say, progress, cancel)
        for run in done:
            self._finished(run, announce)
        return done

    async def merge(
        self,
        dirs: list[Path],
        announce: Callable[[AnyRun], object] | None = None,
        cancel: threading.Event | None = None,
        progress: Callable[[int, int, int], None] | None = None,
    ) -> AnyRun:
        """`oplens merge`: the runs in `dirs` (each a host's part of one distributed capture) as one
        run under the runs root, off the event loop (it reads and links files), not on the device
        queue; every client hears of it as of a profile's run (after `announce`). `cancel` set: it
        stops before its next part and stores nothing (engine/merge.py)."""
        run = await asyncio.to_thread(merge_dirs, dirs, self.runs_root, cancel, progress)
        self._finished(run, announce)
        return run

    @contextlib.asynccontextmanager
    async def _device(self, progress: Callable[[str, int, int], None], cancel: threading.Event,
                      what: str) -> AsyncIterator[None]:  # fmt: skip
        """The device, one job at a time: waits its turn (saying how many jobs are ahead)."""
        self.waiting += 1
        try:
            if self.device_lock.locked():
                progress("queued", self.waiting - 1, self.waiting)
            await self.device_lock.acquire()
        finally:
            self.waiting -= 1
        try:
            if cancel.is_set():
                raise OpLensError("cancelled", f"the {what} was cancelled before it started")
            yield
        finally:
            self.device_lock.release()

    def _finished(self, run: AnyRun, announce: Callable[[AnyRun], object] | None) -> None:
        self.results.add(run)
        self.diffs.remember(run)
        if announce is not None:
            announce(run)
        for listener in list(self.listeners):
            listener.on_result(run)

    def clear(self, file: str | None) -> None:
        """Hide the runs of `file` (None: of every file) from every client; they stay on disk."""
        self.results.clear(file)
        for listener in list(self.listeners):
            listener.on_clear(file)

    def close(self) -> None:
        self.pool.close()
        self.kernel_runs.close()
