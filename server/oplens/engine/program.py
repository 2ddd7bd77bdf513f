"""Capture functions inside the user's own program (`oplens run`), parent side.

Checks the request (program, targets, numbers) before any work is spent, starts a worker that runs
the program with the targets instrumented (`worker/program.py`), relays its progress and output,
and stores one run per captured target. Whatever the program does (raise, exit, hang, crash), the
runs captured before are stored (partial ones marked), earlier runs are untouched, and the caller
gets an `OpLensError` naming what happened:

    not_called (2)      the program never called a target (often enough): counts and likely cause
    program_failed (3)  it raised or exited non-zero before a window was complete
    timeout (4)         it outlived --timeout before every window was complete
    crash (4)           its process died (a signal, os._exit)
"""

from __future__ import annotations

import dataclasses
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.analysis.ranks import merge_any as merge_parts
from oplens.backends import registry
from oplens.engine import request, runs
from oplens.engine.merge import combine_artifacts
from oplens.engine.process import Echo, ProgressFn, WorkerProcess, run_environment, signal_name
from oplens.engine.request import DEFAULT_PROFILER_WARMUP, DEFAULT_TIMEOUT_S
from oplens.engine.targets import FunctionDef, resolve
from oplens.records import job as messages
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError, bad_input
from oplens.records.job import Job, ProgramSpec, StagedTarget, TargetSpec
from oplens.records.overview import AnyRun
from oplens.records.run import RankInfo, Target

DEFAULT_SKIP = 3
DEFAULT_CALLS = 10
# An overview's time window (no --step): past a typical start-up (imports, data, the first steps' compiles),
# long enough for a few steps of most programs.
DEFAULT_DELAY_S = 10.0
DEFAULT_DURATION_S = 5.0
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass
class ProgramRequest:
    targets: list[TargetSpec]
    program: ProgramSpec
    skip: int = DEFAULT_SKIP
    calls: int = DEFAULT_CALLS
    stop: bool = False
    backend: str = registry.DEFAULT
    timeout_s: float = DEFAULT_TIMEOUT_S
    profiler_warmup: int = DEFAULT_PROFILER_WARMUP
    workspace: Path = field(default_factory=Path.cwd)
    out: str | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    # torchrun's options (`--nproc-per-node 2 ...`): the program runs in each rank torchrun starts,
    # every rank captured; None: one process.
    launcher: list[str] | None = None
    # A program overview: `targets` is the one step function, each profiled step recorded whole with
    # Python stacks and attributed to the user's functions (an `OverviewRun`), not line by line.
    overview: bool = False
    # An overview without a step function (no targets): a time window, `delay_s` after the start, `duration_s` long.
    delay_s: float = DEFAULT_DELAY_S
    duration_s: float = DEFAULT_DURATION_S
    names: request.Names = request.RUN_FLAGS  # how the front end names the numbers in a bad one's message

    def options(self) -> request.Options:
        """The request's settings as the one record `request.check` checks (--skip as its warm-up, --calls as its
        iterations; its backend options the same dict)."""
        return request.Options(self.backend, self.skip, self.calls, self.profiler_warmup, self.timeout_s,
                               self.backend_options, self.names)  # fmt: skip


def validate(req: ProgramRequest) -> ProgramSpec:
    """Check the request; the program with its paths made absolute."""
    request.check(req.options())
    if req.overview and not req.targets:
        if not (req.delay_s >= 0 and req.duration_s > 0):
            raise bad_input(f"an overview's window needs --delay ≥ 0 and --duration > 0 (got {req.delay_s:g} and "
                            f"{req.duration_s:g})", "e.g. --delay 10 --duration 5, or --step FILE::FUNCTION")  # fmt: skip
    elif not req.targets:
        raise bad_input("no --target given", "name the function to capture: --target FILE::FUNCTION (or FILE:LINE), "
                        "or the program's step for an overview of its functions: --step FILE::FUNCTION")  # fmt: skip
    if req.overview and len(req.targets) > 1:
        raise bad_input("an overview takes one --step and no --target", "run the overview first (--step), then "
                        "capture its hot function line by line (--target)")  # fmt: skip
    p = req.program = _module_form(req.program)
    if is_torchrun(p):  # a launch configuration that already runs torchrun: its options kept, not wrapped twice
        options, inner = split_torchrun(p.args)
        req.launcher = [*(req.launcher or []), *options]
        p = req.program = dataclasses.replace(inner, cwd=p.cwd, env=p.env)
    cwd = (req.workspace / p.cwd).resolve() if p.cwd else req.workspace.resolve()
    if not cwd.is_dir():
        raise bad_input(f"the program's working directory {cwd} does not exist", "give an existing folder with --cwd")
    if p.module:
        if not _MODULE.fullmatch(p.module):
            raise bad_input(f"-m {p.module!r} is not a module name", "write it as Python imports it: -m package.module")
        return dataclasses.replace(p, cwd=str(cwd))
    script = (cwd / p.program).resolve()
    if not script.is_file():
        what = "is a directory" if script.is_dir() else "does not exist"
        raise bad_input(f"the program {script} {what}", "give the script as you would to python (relative to --cwd), "
                        "or a module with -m")  # fmt: skip
    return dataclasses.replace(p, program=str(script), cwd=str(cwd))


def _module_form(p: ProgramSpec) -> ProgramSpec:
    """`-- -m pkg.train ARGS` (or `-mpkg.train`), as a user types it by analogy to `python -m`: the module form."""
    if p.module or not p.program.startswith("-m"):
        return p
    if p.program == "-m":
        name, args = (p.args[0], p.args[1:]) if p.args else ("", [])
    else:
        name, args = p.program[2:], p.args
    if not name:
        raise bad_input("-m needs a module name", "write it as python takes it: -m package.module ARGS...")
    return dataclasses.replace(p, program="", module=name, args=args)


def run_program(
    req: ProgramRequest,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    echo: Echo | None = None,
    stdin: int | None = subprocess.DEVNULL,
    on_run: Callable[[AnyRun], None] | None = None,
) -> list[AnyRun]:
    """Run the program with every target captured; the stored runs, in the targets' order.

    `echo` gets the program's output as it comes (it is also the runs' worker.log); `stdin` is the
    program's (None: this process's own). `on_run` hears of each stored run, partial ones included,
    before an error is raised for the rest."""
    program = validate(req)
    workspace = req.workspace.resolve()
    resolved: list[tuple[Target, FunctionDef | None]] = []
    if req.overview and not req.targets:
        resolved.append((_program_target(program), None))
    for spec in req.targets:
        file = Path(spec.file)
        target, fn = resolve(file if file.is_absolute() else workspace / file, spec.qualname, spec.line)
        if fn.kind != "function":
            raise bad_input(f"{fn.qualname} is a{'n async' if fn.kind == 'async' else ' generator'} function",
                            "OpLens captures plain functions: capture the function that consumes it instead")  # fmt: skip
        resolved.append((target, fn))
    with runs.Staging(runs.runs_root(workspace, req.out), req.options()) as staging:
        staged = [staging.add(t.qualname or "overview") for t, _ in resolved]  # one run per target
        (first, first_fn), *more = resolved
        job = Job(
            target=first,
            signature=first_fn.signature if first_fn is not None else "",
            args="",
            backend=req.backend,
            warmup=req.skip,
            iters=req.calls,
            stage_dir=str(staged[0]),
            workspace=str(workspace),
            backend_options={name: dataclasses.asdict(opts) for name, opts in req.backend_options.items()},
            timeout_s=req.timeout_s,
            profiler_warmup=req.profiler_warmup,
            program=program,
            more_targets=[StagedTarget(t, str(d)) for (t, _), d in zip(more, staged[1:], strict=True)],
            stop=req.stop,
            overview=req.overview,
            window_delay_s=req.delay_s if first_fn is None else 0.0,
            window_s=req.duration_s if first_fn is None else 0.0,
        )
        ranks_dir = staged[0].with_name(f"{staged[0].name}.ranks") if req.launcher is not None else None
        if ranks_dir is not None:
            ranks_dir.mkdir()
            job.ranks_dir = str(ranks_dir)
        job_file = staged[0].with_name(f"{staged[0].name}.job.json")
        write_json_atomic(job_file, dataclasses.asdict(job))
        seen = {**os.environ, **program.env}
        env = {**program.env, **run_environment(req.backend_options, staged[0], seen)}
        worker = WorkerProcess(staging.root / ".staging", cwd=Path(program.cwd), env=env, job_file=job_file,
                               stdin=stdin, echo=echo, launcher=launcher(req.launcher, seen), ranks_dir=ranks_dir)  # fmt: skip
        staging.log = worker.log  # the program's output: each run keeps a copy, a failure without runs keeps it
        try:
            outcome = _wait(worker, req, progress, cancel)
        finally:
            worker.kill()
            job_file.unlink(missing_ok=True)
            if ranks_dir is not None:
                shutil.rmtree(ranks_dir, ignore_errors=True)
        if req.launcher is not None:
            outcome.runs = _merge_ranks(staging.root, outcome.runs)
        stored = _store(staging, worker, req, outcome, on_run)
        if outcome.error is not None:
            raise outcome.error  # explained, with the runs kept or the log (runs.Staging)
    return [r for r in stored if r.capture is None or not r.capture.partial]


def _program_target(program: ProgramSpec) -> Target:
    """What an overview over a time window is of: the program (no function: `qualname` empty)."""
    return Target(file=program.program or program.module, qualname="", first_line=0, last_line=0, source_sha256="")


@dataclass
class _Outcome:
    runs: list[AnyRun] = field(default_factory=list)
    error: OpLensError | None = None
    ended: messages.Ended | None = None
    timed_out: bool = False


def _wait(worker: WorkerProcess, req: ProgramRequest, progress: ProgressFn | None,
          cancel: threading.Event | None) -> _Outcome:  # fmt: skip
    """The worker's messages until its program ends (or is ended: cancel, timeout)."""
    out = _Outcome()
    deadline = time.monotonic() + req.timeout_s
    stopping = False  # asked the worker to end the program; waiting for what it captured
    while True:
        if not stopping and cancel is not None and cancel.is_set():
            out.error = OpLensError("cancelled", "the capture was cancelled; the program was stopped")
            stopping, deadline = _ask_to_stop(worker), time.monotonic() + messages.STOP_GRACE_S
        elif not stopping and time.monotonic() >= deadline:
            out.timed_out = True
            if len({r.run_id for r in out.runs}) < len(req.targets):
                out.error = OpLensError(
                    "timeout",
                    f"the program did not finish the capture within {req.timeout_s:g} s; it was stopped",
                    "raise the limit with --timeout SECONDS, lower --skip or --calls, or look for a hang\n"
                    "program output (tail):\n" + worker.log_tail(),
                )
            stopping, deadline = _ask_to_stop(worker), time.monotonic() + messages.STOP_GRACE_S
        elif stopping and time.monotonic() >= deadline:
            return out  # it did not stop in time (stuck in native code?): killed, with what came
        try:
            msg = worker.messages.get(timeout=0.1)
        except queue.Empty:
            continue
        except KeyboardInterrupt:  # Ctrl-C reaches only OpLens (the worker has its own session): stop it as a cancel
            if stopping:
                raise  # a second one: kill it now
            out.error = OpLensError("cancelled", "interrupted: the program was stopped (Ctrl-C again kills it)")
            stopping, deadline = _ask_to_stop(worker), time.monotonic() + messages.STOP_GRACE_S
            continue
        if isinstance(msg, messages.Progress) and progress is not None:
            progress(msg.stage, msg.done, msg.total)
        elif isinstance(msg, messages.Finished):
            out.runs.append(msg.run)
        elif isinstance(msg, messages.Failed):
            out.error = out.error or msg.error
        elif isinstance(msg, messages.Ended):
            out.ended = msg
        elif not isinstance(msg, (messages.Progress, messages.Ready)):  # the message pipe closed: the worker exited
            if out.ended is None and out.error is None and not stopping:
                out.error = _died(worker, len(out.runs), len(req.targets))
            return out


def _store(staging: runs.Staging, worker: WorkerProcess, req: ProgramRequest, out: _Outcome,
           on_run: Callable[[AnyRun], None] | None) -> list[AnyRun]:  # fmt: skip
    """Each run the worker sent (its id: its staging directory's), with what only the parent knows of
    the program (its calls, its exit, a timeout) added, stored (`Staging.store`)."""
    ids = [d.name for d in staging.staged]
    stored = []
    for run in out.runs:
        if run.run_id not in ids:
            continue
        index = ids.index(run.run_id)
        staged = staging.staged[index]
        capture = run.capture
        if capture is not None and out.ended is not None:
            if index < len(out.ended.calls):
                capture.calls_seen = max(capture.calls_seen, out.ended.calls[index])
            if not capture.stopped and out.ended.exit_code >= 0:  # below 0: OpLens stopped the program
                capture.exit_code = out.ended.exit_code
                if out.ended.exit_code != 0 and not capture.partial:
                    run.backend.warnings.append(
                        f"the program exited with status {out.ended.exit_code} after the capture (the capture is complete)"
                    )
        if out.timed_out and capture is not None and not capture.partial:
            run.backend.warnings.append(f"the program was stopped after --timeout {req.timeout_s:g} s, once captured")
        log = None
        if worker.log.is_file():  # every run of the program keeps its whole output
            log = staged / runs.WORKER_LOG
            log.write_bytes(worker.log.read_bytes())
        staging.store(staged, run, log)
        stored.append(run)
        if on_run is not None:
            on_run(run)
    return stored


def launcher(options: list[str] | None, env: Mapping[str, str] = os.environ) -> list[str] | None:
    """torchrun's options as given, with a rendezvous of its own on a free loopback port where neither they nor
    torchrun's environment (`PET_<OPTION>`, which torchrun reads for each option not given: a PyTorchJob's pods)
    name one for several nodes (torchrun's default port 29500 would clash between jobs)."""
    if options is None:
        return None
    given = {o.split("=", 1)[0].replace("_", "-") for o in options if o.startswith("--")}
    given |= {"--" + k[4:].lower().replace("_", "-") for k, v in env.items() if k.startswith("PET_") and v}
    nnodes = _option(options, "--nnodes") or env.get("PET_NNODES") or None
    rendezvous = {"--rdzv-endpoint", "--master-addr", "--master-port", "--standalone"}
    if not given & rendezvous and nnodes in (None, "1", "1:1"):
        return [*options, "--standalone"]
    return list(options)


def _option(options: list[str], name: str) -> str | None:
    for i, o in enumerate(options):
        key, eq, value = o.partition("=")
        if key.replace("_", "-") == name:
            return value if eq else (options[i + 1] if i + 1 < len(options) else None)
    return None


# torchrun's options that take no value; every other option takes one.
_TORCHRUN_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path",
                   "--virtual-local-rank"}  # fmt: skip


def split_torchrun(args: list[str]) -> tuple[list[str], ProgramSpec]:
    """`torchrun OPTIONS SCRIPT ARGS` (or `-m torch.distributed.run ...`) as (its options, the program)."""
    i = 0
    module = False
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("-m", "--module"):
            module = True
        elif a in ("--no-python", "--no_python", "--run-path", "--run_path"):
            raise bad_input(f"torchrun {a} is not supported by oplens run", "launch a Python script or module")
        if a in _TORCHRUN_FLAGS or "=" in a:
            i += 1
        else:
            i += 2
    if i >= len(args):
        raise bad_input("the torchrun command names no program", "write torchrun OPTIONS script.py ARGS (or -m module)")
    options = [a for a in args[:i] if a not in ("-m", "--module")]
    program = args[i]
    spec = ProgramSpec(module=program, args=args[i + 1 :]) if module else ProgramSpec(program=program, args=args[i + 1 :])
    return options, spec


def is_torchrun(program: ProgramSpec) -> bool:
    """A program that is torchrun itself (`-m torch.distributed.run`, or the `torchrun` script)."""
    return program.module in ("torch.distributed.run", "torch.distributed.launch") or Path(program.program).name == "torchrun"


def _merge_ranks(root: Path, parts: list[AnyRun]) -> list[AnyRun]:
    """Each target's rank parts written under its run's `ranks/<R>/` and merged into its run."""
    by_target: dict[str, list[AnyRun]] = {}
    for part in parts:
        by_target.setdefault(part.run_id, []).append(part)
    merged = []
    for run_id, target_parts in by_target.items():
        infos: list[tuple[RankInfo, AnyRun]] = []
        for part in target_parts:
            info = part.ranks[0] if part.ranks else RankInfo(rank=len(infos))
            part_dir = root / ".staging" / run_id / info.part
            part.run_id, part.run_dir = f"{run_id}/{info.part}", ""
            write_json_atomic(part_dir / runs.record_name(part), part.to_dict())
            infos.append((info, part))
        run = merge_parts(infos)
        run.run_id = run_id
        combine_artifacts(root / ".staging" / run_id, sorted(infos, key=lambda p: p[0].rank), run)
        merged.append(run)
    return merged


def _ask_to_stop(worker: WorkerProcess) -> bool:
    """The worker's stop signal to it alone (not its group: the program's own children are not asked)."""
    try:
        worker.proc.send_signal(worker.stop_signal)
    except (ProcessLookupError, OSError):
        pass
    return True


def _died(worker: WorkerProcess, captured: int, wanted: int) -> OpLensError:
    code = worker.proc.wait()
    if code < 0:
        name = signal_name(-code)
        why = f"was killed by {name}" + (" (most often the out-of-memory killer)" if name == "SIGKILL" else "")
    else:
        why = f"exited with status {code} without ending normally (os._exit?)"
    return OpLensError(
        "crash",
        f"the program's process {why}; {captured} of {wanted} capture(s) had completed",
        "program output (tail):\n" + worker.log_tail(),
    )
