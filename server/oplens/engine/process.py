"""Run one job in a worker subprocess, with a timeout, progress and cancellation.

A `WorkerProcess` can be started ahead of time (it imports torch and waits), which is how a
long-lived server keeps a warm one ready. Whatever happens inside it (an exception, a hang,
a segfault, `os._exit`, the OOM killer), the caller gets a result or an `OpLensError`.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from oplens.backends import registry
from oplens.records import job as messages
from oplens.records.errors import OpLensError
from oplens.records.job import Job
from oplens.records.run import Run

ProgressFn = Callable[[str, int, int], None]
Echo = Callable[[int, bytes], None]  # (1 stdout | 2 stderr, bytes)
STARTUP_TIMEOUT_S = 120.0  # for the worker to import torch, before the job's own timeout starts
SCRATCH_ENV = "OPLENS_WORKER_SCRATCH"  # a warm worker's own files (warm_environment), removed after its job
# A worker that calls a function over and over (profile, compare) keeps the memory it frees (glibc's malloc,
# read at the process's start; ignored elsewhere): blocks up to 128 MiB come from the heap, not a mapping of
# their own, and up to 1 GiB of freed heap is kept instead of given back. Otherwise a tensor freed in one call
# is given back to the system and page-faulted in again by the next, at a moment the profiler's own
# allocations decide: measured on this project's CPU machine, naive RMSNorm's profiled calls (4x256x1024)
# spread 0.6-8.3 ms and ran 1.9x slower after another variant than before it; with this, 0.58-0.9 ms, as
# unprofiled (docs/benchmarks.md, bench/verdicts.py). A user's own setting is kept; a program's capture
# (`oplens run`) runs the program as the user does, without it.
STEADY_HEAP = {"MALLOC_MMAP_THRESHOLD_": str(128 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
_EOF = object()
T = TypeVar("T")


class WorkerProcess:
    """A worker process; `log` holds the user's stdout and stderr."""

    def __init__(
        self,
        log_dir: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        job_file: Path | None = None,
        stdin: int | None = subprocess.PIPE,
        echo: Echo | None = None,
        launcher: list[str] | None = None,
        ranks_dir: Path | None = None,
    ) -> None:
        """`job_file`: a capture's job (the program keeps stdin: `stdin` is what it reads, None for
        ours). `echo(stream, data)`: the program's output as it comes (1 stdout, 2 stderr), besides
        the log. `launcher` (torchrun's options): the capture runs in every rank that
        `torch.distributed.run` starts, each writing its messages to `ranks_dir/rank-<R>.jsonl`."""
        log_dir.mkdir(parents=True, exist_ok=True)
        self.env = dict(env or {})  # what it was started with, beyond the parent's own environment
        self.log = log_dir / f"worker-{uuid.uuid4().hex[:8]}.log"
        read_fd, write_fd = os.pipe()
        if launcher is not None and job_file is not None and ranks_dir is not None:
            argv = [sys.executable, "-m", "torch.distributed.run", *launcher, "-m", "oplens.worker.rank", str(job_file)]
        else:
            argv = [sys.executable, "-m", "oplens.worker", str(write_fd)] + ([str(job_file)] if job_file else [])
        self._copiers: list[threading.Thread] = []
        # How the parent asks a capture to end now (what it captured kept): torchrun forwards
        # SIGTERM to its ranks; a single worker has its own signal.
        self.stop_signal = signal.SIGTERM if launcher is not None else messages.STOP_SIGNAL
        heap = {} if job_file is not None else {k: v for k, v in STEADY_HEAP.items() if k not in os.environ}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                argv,
                stdin=stdin,
                stdout=log if echo is None else subprocess.PIPE,
                stderr=subprocess.STDOUT if echo is None else subprocess.PIPE,
                pass_fds=(write_fd,),
                cwd=str(cwd) if cwd else None,
                env={**os.environ, **heap, **(env or {}), "PYTHONUNBUFFERED": "1", messages.PARENT_ENV: str(os.getpid()),
                     messages.LOG_ENV: str(self.log)},
                **own_group(same_session=job_file is None),  # a kill takes its children too
            )
        os.close(write_fd)
        if echo is not None:
            lock = threading.Lock()
            for stream, pipe in ((1, self.proc.stdout), (2, self.proc.stderr)):
                assert pipe is not None
                t = threading.Thread(target=_copy, args=(pipe.fileno(), stream, self.log, lock, echo), daemon=True)
                t.start()
                self._copiers.append(t)
        self.messages: queue.Queue[messages.WorkerMessage | object] = queue.Queue()
        if ranks_dir is not None and launcher is not None:
            os.close(read_fd)
            self._reader = threading.Thread(target=self._tail, args=(ranks_dir,), daemon=True)
        else:
            self._reader = threading.Thread(target=self._read, args=(read_fd,), daemon=True)
        self._reader.start()
        self.ready = False

    def _tail(self, folder: Path) -> None:
        """The ranks' message files, as they grow, until the launcher exits. Progress comes from
        the lowest rank of this host only (the others say the same); the rest from every rank."""
        offsets: dict[Path, int] = {}
        partial: dict[Path, str] = {}
        while True:
            finished = self.proc.poll() is not None
            files = sorted(folder.glob("rank-*.jsonl"), key=lambda p: int(p.stem.split("-")[1]))
            for f in files:
                try:
                    with open(f, encoding="utf-8") as fh:
                        fh.seek(offsets.get(f, 0))
                        data = fh.read()
                        offsets[f] = fh.tell()
                except OSError:
                    continue
                text = partial.pop(f, "") + data
                *lines, rest = text.split("\n")
                if rest:
                    partial[f] = rest
                for line in lines:
                    message = messages.decode(line)
                    if message is None or (isinstance(message, messages.Progress) and f != files[0]):
                        continue
                    self.messages.put(message)
            if finished:
                self.messages.put(_EOF)
                return
            time.sleep(0.05)

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "r", encoding="utf-8") as pipe:
            for line in pipe:
                message = messages.decode(line)
                if message is not None:
                    self.messages.put(message)
        self.messages.put(_EOF)

    def submit(self, job: Job) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((job.to_json() + "\n").encode())
        self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        for t in self._copiers:  # the output's last bytes into the log
            t.join(timeout=5)

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def own_group(same_session: bool) -> dict[str, Any]:
    """Popen's arguments for a worker of its own process group (a kill takes its children too).

    A worker that only calls a function (profile, compare: its stdin is our pipe) stays in our session, so that
    where the kernel groups the CPU time by session (Linux's autogroup) its threads share the user's group and not
    one of their own: in a session of its own, with a busy loop on one of two cores, torch's two threads got one
    core's share and each parallel region waited for a scheduler tick (naive RMSNorm 32 ms a call against
    0.7 ms in the user's session; bench/verdicts.py). A capture runs the user's program, which may read the
    terminal: outside the terminal's session it can (inside it, as a background group, the read would stop it).
    Python 3.10 has no `process_group`: a session of its own there."""
    if same_session and sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"start_new_session": True}


def run_environment(backend_options: Mapping[str, Any], run_dir: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the worker of a run starts with, beyond `base` (default: this process's environment), for the backends
    the run may end on (`BackendSpec.worker_environment`: what a vendor module reads when `import torch` loads it)."""
    env = dict(os.environ if base is None else base)
    extra: dict[str, str] = {}
    for name, options in backend_options.items():
        extra.update(registry.get(name).worker_environment(options, run_dir, {**env, **extra}))
    return extra


def serves(worker: WorkerProcess, backend_options: Mapping[str, Any], run_dir: Path) -> bool:
    """Whether a worker started ahead (torch imported) can run a job: what the run needs there beside what the worker
    was started with is nothing, or what it has already (a warm worker's own NEFF cache serves where the run would set
    one of its own; a worker started without a variable the run needs does not)."""
    return fits(worker, run_environment(backend_options, run_dir, base={**os.environ, **worker.env}))


def warm_environment(log_dir: Path, backend_options: Mapping[str, Any] | None = None) -> dict[str, str]:
    """What a worker started ahead of any run begins with (every backend's `warm_worker_environment`, with the
    editor's settings for it where given), with the scratch folder their files are in (`SCRATCH_ENV`, removed with
    `remove_scratch` after its job); {} where none needs anything. The folder is named here and made by a backend
    that puts files in it (none on a host without a vendor's stack)."""
    scratch = log_dir / f"warm-{uuid.uuid4().hex[:12]}"
    env = dict(os.environ)
    extra: dict[str, str] = {}
    for name, spec in registry.SPECS.items():
        extra.update(spec.warm_worker_environment(scratch, {**env, **extra}, (backend_options or {}).get(name)))
    return {**extra, SCRATCH_ENV: str(scratch)} if extra else {}


def remove_scratch(worker: WorkerProcess) -> None:
    """The files a worker started ahead was given (`warm_environment`), once its job is done or it is dropped."""
    scratch = worker.env.get(SCRATCH_ENV)
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)


def discard(worker: WorkerProcess) -> None:
    """A worker started ahead that will run no job (closed, dead, or unfit for the run): ended, and its log and
    the files it was given gone."""
    worker.kill()
    worker.log.unlink(missing_ok=True)
    remove_scratch(worker)


def fits(worker: WorkerProcess, wanted: Mapping[str, str]) -> bool:
    """Whether a worker started ahead (torch imported) was started with the variables a run needs there."""
    return all(worker.env.get(k) == v for k, v in wanted.items())


def _copy(fd: int, stream: int, log: Path, lock: threading.Lock, echo: Echo) -> None:
    """One of the program's output pipes into the log and to `echo`, as the bytes come."""
    with open(log, "ab") as out:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            with lock:
                out.write(data)
                out.flush()
            try:
                echo(stream, data)
            except Exception:  # a closed terminal must not stop the log
                pass


def run_job(
    worker: WorkerProcess,
    job: Job,
    timeout_s: float,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> Run:
    """Send `job` to `worker` and wait for its result.

    The timeout counts from the moment the worker is ready (torch imported): it limits the
    user's function, not the interpreter's start-up, which has its own generous limit."""

    def take(msg: messages.WorkerMessage) -> Run | None:
        if isinstance(msg, messages.Finished) and isinstance(msg.run, Run):  # a profile's: never an overview
            return msg.run
        return None

    return _converse(worker, job, timeout_s, take, progress, cancel)


def run_side_by_side(
    worker: WorkerProcess,
    job: Job,
    timeout_s: float,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> list[Run | OpLensError]:
    """Send a compare's `job` (`Job.side_by_side`) to `worker`: per variant in order, its run or why it has none."""
    found: dict[int, Run | OpLensError] = {}
    count = 1 + len(job.side_by_side)

    def take(msg: messages.WorkerMessage) -> list[Run | OpLensError] | None:
        if isinstance(msg, messages.Finished) and isinstance(msg.run, Run) and msg.run.config.side_by_side is not None:
            found[msg.run.config.side_by_side.index] = msg.run
        elif isinstance(msg, messages.Dropped):
            found[msg.variant] = msg.error
        elif isinstance(msg, messages.Ended):
            missing = OpLensError("crash", "the variant was not measured", "worker log (tail):\n" + worker.log_tail())
            return [found.get(i, missing) for i in range(count)]
        return None

    return _converse(worker, job, timeout_s, take, progress, cancel)


def _converse(
    worker: WorkerProcess,
    job: Job,
    timeout_s: float,
    take: Callable[[messages.WorkerMessage], T | None],
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
) -> T:
    """`job` sent to `worker`, its messages handed to `take` until it has the answer (progress to `progress`; a
    failure, a timeout, a cancel or the worker's death raised)."""
    deadline = time.monotonic() + max(timeout_s, STARTUP_TIMEOUT_S)
    submitted = worker.ready
    if submitted:  # a warm worker that already said "ready"
        worker.submit(job)
        deadline = time.monotonic() + timeout_s
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise OpLensError("cancelled", "the profile was cancelled; the worker was stopped")
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not submitted:
                raise OpLensError(
                    "timeout",
                    f"the worker did not start within {max(timeout_s, STARTUP_TIMEOUT_S):g} s (importing torch)",
                    "is the machine overloaded, or torch's import hanging? worker log (tail):\n" + worker.log_tail(),
                )
            if remaining <= 0:
                raise OpLensError(
                    "timeout",
                    f"the profile did not finish within {timeout_s:g} s; the worker was stopped",
                    "raise the limit with --timeout SECONDS, lower --iters, or look for a hang in the function\n"
                    "worker log (tail):\n" + worker.log_tail(),
                )
            try:
                msg = worker.messages.get(timeout=min(remaining, 0.1))
            except queue.Empty:
                continue
            if msg is _EOF:
                raise _died(worker)
            if isinstance(msg, messages.Ready) and not submitted:
                worker.ready = True
                worker.submit(job)
                submitted = True
                deadline = time.monotonic() + timeout_s
            elif isinstance(msg, messages.Progress) and progress is not None:
                progress(msg.stage, msg.done, msg.total)
            elif isinstance(msg, messages.Failed):
                raise msg.error
            elif not isinstance(msg, (messages.Ready, messages.Progress)):
                answer = take(msg)  # type: ignore[arg-type]
                if answer is not None:
                    return answer
    finally:
        worker.kill()


def signal_name(number: int) -> str:
    """`9` → `SIGKILL` (a number no signal has: `signal 99`)."""
    return signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"


def _died(worker: WorkerProcess) -> OpLensError:
    code = worker.proc.wait()
    if code < 0:
        sig = signal_name(-code)
        why = {
            "SIGKILL": "killed (SIGKILL), most often by the kernel's out-of-memory killer: try smaller inputs",
            "SIGSEGV": "crashed with a segmentation fault (SIGSEGV) in native code",
            "SIGABRT": "aborted (SIGABRT) in native code",
        }.get(sig, f"was stopped by {sig}")
    else:
        why = f"exited with status {code} before reporting a result (os._exit or sys.exit in the profiled code?)"
    return OpLensError("crash", f"the worker running your function {why}", "worker log (tail):\n" + worker.log_tail())
