"""Run the user's own program with its targets captured (`oplens run`, worker side).

The program runs in this process as `python SCRIPT ARGS` or `python -m MODULE ARGS` would run it:
`sys.argv`, `sys.path[0]` and `__main__` as Python sets them, its stdin, stdout and stderr its own.
While it runs, the import hook instruments the targets' files and the capturer counts the calls
(`worker/capture.py`). When it ends (returning, `sys.exit`, an exception), its exit status is what
Python's would be, its traceback is printed as Python prints it, and `atexit` handlers run; then
whatever a window captured before the end goes out as a partial run, and an unfinished window is
explained (never called, compiled, the program failed first).
"""

from __future__ import annotations

import atexit
import functools
import gc
import os
import runpy
import signal
import sys
import threading
import time
import traceback
import types
from pathlib import Path
from typing import Any

from oplens.backends.device import Backend
from oplens.records.errors import OpLensError
from oplens.records.job import STOP_SIGNAL, Failed, Job, ProgramSpec
from oplens.worker.capture import Capturer, Lines, Send, StopProgram, Window, WindowKind
from oplens.worker.compiled import FusedLines
from oplens.worker.instrument import ImportHook, Instrumented, modules_from_file_named
from oplens.worker.overview import Steps, TimeWindow
from oplens.worker.usercode import user_error


def run(job: Job, backend: Backend[Any], send: Send, stop_signals: tuple[int, ...] = (STOP_SIGNAL,)) -> int:
    """Run `job.program` to its end (or until `job.stop` ends it, or the parent's STOP_SIGNAL);
    the program's exit status."""
    program = job.program
    assert program is not None
    timed = job.overview and not job.target.qualname  # an overview over a time window: nothing to instrument
    targets = [] if timed else [job.target] + [t.target for t in job.more_targets]
    hook = ImportHook([Instrumented(i, t) for i, t in enumerate(targets)])
    error: BaseException | None = None
    kind: WindowKind = TimeWindow(job) if timed else Steps(job) if job.overview else Lines()
    with FusedLines() as fused, hook, Capturer(job, backend, hook, fused, send, kind) as capture:
        capture.send_waiting()
        for sig in stop_signals:
            signal.signal(sig, functools.partial(_stop, stop_signals))
        _Watcher(capture, stop_signals).start()
        # A forked child (a DataLoader worker) is the program's, not a capture: its signals are its own.
        os.register_at_fork(after_in_child=lambda: _plain_signals(stop_signals))
        _freeze_loaded()
        exit_code: int | None = None
        try:
            try:
                _run_main(program, hook)
                exit_code = 0
            except SystemExit as e:
                exit_code = _exit_status(e)
            except StopProgram:
                raise
            except BaseException as e:  # the program's own exception: printed as Python prints it
                error, exit_code = e, 1
                _print_traceback(e)
            finally:  # what was captured is about to be sent: a stop now must not cut that short
                for sig in stop_signals:
                    signal.signal(sig, signal.SIG_IGN)
        except StopProgram:
            # The parent stopped it; also where the stop came while the program's own end was being
            # handled (a rank whose collective failed when a peer died, as torchrun stops it): that
            # end's status stands, and what was captured is sent either way.
            pass
        if exit_code is None:
            capture.finish_windows(None, None)
            capture.end(-1, stopped=False)
            return 1
        code = exit_code
        capture.finish_windows(code, lambda w: Failed(_unfinished(w, capture, hook, code, error)))
        _shut_down()
        capture.end(code, stopped=False)
    return code


def _freeze_loaded() -> None:
    """Move everything loaded so far (torch, OpLens, their modules) out of the cyclic collector's
    sight, as a forking server does before it forks. The program's own objects, all made after
    this, are collected as usual; a full collection walks them and not the libraries'.

    Why: the window's profiler imports torch._inductor and torch._dynamo (~116,000 tracked objects
    with torch 2.13) into a program that may never have imported them (a training program has: an
    optimizer imports torch._dynamo). Left tracked, every later full collection of an inference loop
    walks 75 % more objects than it does plainly. They are not imported here, before the program:
    imported before a DDP program's `init_process_group`, they made its exit deadlock in gloo's
    teardown (docs/benchmarks.md), which this freeze alone does not."""
    gc.freeze()


def _stop(stop_signals: tuple[int, ...], signum: int, frame: object) -> None:
    for sig in stop_signals:  # one stop unwinds the program: a second must not cut that unwinding short
        signal.signal(sig, signal.SIG_IGN)
    raise StopProgram()


def _plain_signals(stop_signals: tuple[int, ...]) -> None:
    try:
        signal.set_wakeup_fd(-1)
        for sig in stop_signals:
            signal.signal(sig, signal.SIG_DFL)
    except ValueError:  # not the main thread of the child: nothing of ours runs there
        pass


class _Watcher(threading.Thread):
    """The stop signal, seen from a thread of its own: where the main thread cannot unwind (it waits in
    native code, e.g. a rank in a collective whose peer died), what the windows captured is sent from
    here after STOP_FLUSH_S, and the process ends. (A Python handler runs only in the main thread,
    between bytecodes; the C-level handler also writes the signal to the wakeup fd, even then.)"""

    def __init__(self, capture: Capturer, stop_signals: tuple[int, ...]) -> None:
        super().__init__(name="oplens-stop-watcher", daemon=True)
        self._capture = capture
        self._signals = set(stop_signals)
        read, write = os.pipe()
        os.set_blocking(write, False)
        self._read = read
        signal.set_wakeup_fd(write)

    def run(self) -> None:
        while True:
            try:
                data = os.read(self._read, 16)
            except OSError:
                return
            if not data:
                return
            if not self._signals & set(data):  # the fd hears every signal with a Python handler
                continue
            time.sleep(STOP_FLUSH_S)  # the main thread's own unwinding, where it can, comes first
            if self._capture.begin_finishing():
                self._capture.finish_windows(None, None, already_begun=True)
                self._capture.end(-1, stopped=False)
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                os._exit(1)


STOP_FLUSH_S = 2.0


def _run_main(program: ProgramSpec, hook: ImportHook) -> None:
    cwd = Path(program.cwd or os.getcwd())
    os.chdir(cwd)
    if program.module:
        sys.argv = [program.module, *program.args]
        sys.path[0] = str(cwd)  # as `python -m` does
        runpy.run_module(program.module, run_name="__main__", alter_sys=True)
        return
    script = Path(program.program)
    sys.argv = [str(script), *program.args]
    sys.path[0] = str(script.resolve().parent)  # as `python script.py` does
    code = hook.compile(script.read_bytes(), str(script))
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=str(script), __builtins__=__builtins__, __cached__=None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _exit_status(e: SystemExit) -> int:
    """What Python's own exit would make of `sys.exit(code)`."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _print_traceback(e: BaseException) -> None:
    """The program's traceback, as the interpreter prints it (chained exceptions too), without
    OpLens's frames (the runner's and the capture's wrapper around a target)."""
    te = traceback.TracebackException(type(e), e, e.__traceback__)
    link: traceback.TracebackException | None = te
    while link is not None:
        link.stack = traceback.StackSummary.from_list([f for f in link.stack if not _is_oplens(f.filename)])
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    sys.stderr.write("".join(te.format()))
    sys.stderr.flush()


def _is_oplens(filename: str) -> bool:
    return filename.startswith(str(Path(__file__).resolve().parents[1])) or filename.startswith("<frozen runpy>") or (
        filename == runpy.__file__
    )


def _shut_down() -> None:
    """What Python does when a program ends: wait for its non-daemon threads (after telling thread
    pools to finish: `threading._shutdown` runs their exit hooks), then run `atexit` handlers."""
    shutdown = getattr(threading, "_shutdown", None)
    try:
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except BaseException:  # the program's exit hooks failing: Python prints them and exits all the same
        traceback.print_exc()


def _unfinished(w: Window, capture: Capturer, hook: ImportHook, exit_code: int, error: BaseException | None) -> OpLensError:
    """Why `w`'s window is not complete, with the counts and the likely cause."""
    t = w.target
    if isinstance(capture.kind, TimeWindow):
        job, elapsed_s = capture.job, capture.kind.elapsed_s()
        ended = f"the program raised {type(error).__name__}: {error}" if error is not None else (
            f"the program exited with status {exit_code}" if exit_code else "the program ended")  # fmt: skip
        if w.wall_us:
            return OpLensError("program_failed", f"{ended} {elapsed_s:.1f} s after it started, during the "
                               "overview's window: what it saw is kept as a partial run")  # fmt: skip
        return OpLensError("not_called", f"{ended} {elapsed_s:.1f} s after it started, before the overview's "
                           f"window opened (at {job.window_delay_s:g} s)",
                           f"open it sooner (--delay {max(0.0, elapsed_s / 2):.1f}), or name the program's "
                           "step: --step FILE::FUNCTION profiles whole steps, however long the program runs")  # fmt: skip
    name = f"{t.qualname} ({Path(t.file).name}:{t.def_line})"
    need = capture.skip + capture.warm + capture.calls
    counts = (
        f"called {w.seen} time{'s' if w.seen != 1 else ''}; the capture needs {need} "
        f"({capture.skip} skipped + {capture.warm} profiler warm-up + {capture.calls} profiled)"
    )
    partial = f"; the {len(w.wall_us)} profiled call(s) are kept as a partial run" if w.wall_us else ""
    if error is not None or exit_code != 0:
        what = (
            f"the program raised {type(error).__name__}: {error}" if error is not None
            else f"the program exited with status {exit_code}"
        )  # fmt: skip
        if error is not None:
            e = user_error(error, t, "the program raised")
            detail, location = e.detail, e.location
        else:
            detail, location = "", {}
        return OpLensError("program_failed", f"{what} before the capture of {name} was complete: {counts}{partial}",
                           detail, location)  # fmt: skip
    causes = []
    graphs = capture.compiled_graphs(w)
    if graphs:
        causes.append(
            f"it runs compiled under torch.compile ({len(graphs)} graph(s) fused its lines): its Python lines never execute "
            "in the compiled graph. Capture it with compilation disabled (environment TORCH_COMPILE_DISABLE=1), "
            "or capture the function that calls the compiled module"
        )
    if w.elsewhere:
        causes.append(
            f"{w.elsewhere} call(s) came from other threads: OpLens captures the thread that calls a target first"
        )
    if os.path.realpath(t.file) not in hook.codes:
        others = modules_from_file_named(t.file)
        if others:
            causes.append(f"the program imported another file of the same name: {', '.join(others)}")
        else:
            causes.append(f"the program never imported {t.file}: is it the file the program runs?")
    if w.seen and not causes:
        causes.append("the program called it too few times: lower --skip or --calls, or run the program longer")
    if not w.seen and not causes:
        causes.append("the program imported the file but never called the function (another code path?)")
    return OpLensError("not_called", f"{name} was {counts if w.seen else 'never called'}{partial}",
                       "likely cause: " + "; ".join(causes) + (f"\n({counts})" if not w.seen else ""))  # fmt: skip
