"""One profiling session inside the worker: load the user's module, build the arguments,
warm up, profile with line markers, attribute, and describe the run.

Runs only in the worker process (imports torch and the user's code). Errors come out as
`OpLensError`s whose messages name the problem and the fix.
"""

from __future__ import annotations

import gc
import importlib.util
import inspect
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import oplens
from oplens import backends
from oplens.engine import events, insights
from oplens.engine.attribution import attribute
from oplens.engine.compiled import FusedLines
from oplens.engine.errors import OUT_OF_MEMORY, OpLensError, bad_input
from oplens.engine.linemarks import LineMarker, Range, code_objects
from oplens.engine.records import Compile, Config, Run, Target
from oplens.engine.stats import spread

Progress = Callable[[str, int, int], None]  # (stage, done, total)
_OPLENS_DIR = str(Path(oplens.__file__).parent)


@dataclass
class Job:
    """What the parent asks the worker to do (sent as JSON)."""

    target: Target
    signature: str
    args: str
    backend: str
    warmup: int
    iters: int
    stage_dir: str
    workspace: str
    backend_options: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 0.0


def run(job: Job, progress: Progress) -> Run:
    clock = _Clock()
    try:
        backend = backends.resolve(job.backend, job.backend_options)
    except backends.BackendUnavailable as e:
        raise OpLensError("backend_unavailable", str(e)) from None
    backend.note = backend.note or ("" if job.backend == backend.name else f"{job.backend} chose {backend.name}")
    progress("importing", 0, 1)
    module = load_module(Path(job.target.file), Path(job.workspace))
    fn = find_callable(module, job.target)
    target_code = find_code(module, job.target)
    args = build_args(module, job, fn)
    args = backend.place(args)
    clock.lap("import_ms")

    stage = Path(job.stage_dir)
    wall_warmup: list[float] = []
    marker = LineMarker(target_code, code_objects(module))
    # Input shapes (for the insights) come from one call of their own, profiled on the CPU:
    # recording them costs as much as a small op, so the timed iterations go without. That
    # call is the last warm-up one where there are two or more (the first compiles and gives
    # the first-call time), else one after the timed iterations.
    shapes_in_warmup = job.warmup >= 2
    shapes_prof: Any = None
    with FusedLines() as fused:
        for i in range(job.warmup):
            if shapes_in_warmup and i == job.warmup - 1:
                shapes_prof = _record_shapes(fn, args, marker, backend.synchronize, job.target)
            else:
                wall_warmup.append(_timed_call(fn, args, backend.synchronize, job.target))
            progress("warmup", i + 1, job.warmup)
        clock.lap("warmup_ms")

        wall: list[float] = []
        with torch.profiler.profile(
            activities=backend.activities(), record_shapes=False, **backend.profiler_options(stage)
        ) as prof:
            for i in range(job.iters):
                t0 = time.perf_counter_ns()
                with Range(f"oplens.iter:{i}"), marker:
                    _call(fn, args, job.target)
                backend.synchronize()  # outside the iteration range: not attributed to a line
                wall.append((time.perf_counter_ns() - t0) / 1000.0)
                progress("profile", i + 1, job.iters)
        clock.lap("profile_ms")
        progress("processing", 0, 1)
        if shapes_prof is None:
            shapes_prof = _record_shapes(fn, args, marker, backend.synchronize, job.target)

    gc.disable()  # tens of thousands of small records: the collector alone took ~40 % of this step
    try:
        raw = events.from_profiler(prof, legacy_privateuse1=backend.name == "neuron")
        result = attribute(raw, job.iters, job.target.def_line, backend.device_time, fused.regions)
        result.sequence = attribute(events.from_profiler(shapes_prof), 1, job.target.def_line).sequence
    finally:
        gc.enable()
    found = insights.find_insights(result, backend.device_label, backend.device().type != "cpu", job.iters)
    clock.lap("processing_ms")
    artifacts = backend.artifacts(stage)
    if not backend.writes_own_trace() or not artifacts.trace_json:  # the vendor's export may write none
        prof.export_chrome_trace(str(stage / "trace.json"))
        artifacts.trace_json = "trace.json"
    clock.lap("export_ms")

    result.totals.wall_us = spread(wall)
    steady = result.totals.wall_us.median
    first = wall_warmup[0] if wall_warmup else 0.0
    info = backend.info()
    info.requested = job.backend
    return Run(
        target=job.target,
        backend=info,
        config=Config(warmup=job.warmup, iters=job.iters, args=job.args, timeout_s=job.timeout_s),
        totals=result.totals,
        lines=result.lines,
        ops=result.ops,
        insights=found,
        artifacts=artifacts,
        compile=Compile(
            first_call_us=first,
            compile_us=max(0.0, first - steady) if fused.graphs else 0.0,
            graphs=fused.graphs,
        ),
        timings_ms=clock.laps,
    )


class _Clock:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = (now - self._t) * 1000.0
        self._t = now


def _call(fn: Callable[..., Any], args: tuple[Any, ...], target: Target) -> Any:
    try:
        return fn(*args)
    except BaseException as e:  # SystemExit and KeyboardInterrupt from user code included
        raise user_error(e, target, f"{target.qualname} raised") from None


def _record_shapes(
    fn: Callable[..., Any], args: tuple[Any, ...], marker: LineMarker, sync: Callable[[], None], target: Target
) -> Any:
    """One more call, on the CPU activity only, with input shapes: what the insights read."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        with Range("oplens.iter:0"), marker:
            _call(fn, args, target)
        sync()
    return prof


def _timed_call(fn: Callable[..., Any], args: tuple[Any, ...], sync: Callable[[], None], target: Target) -> float:
    t0 = time.perf_counter_ns()
    _call(fn, args, target)
    sync()
    return (time.perf_counter_ns() - t0) / 1000.0


def load_module(file: Path, workspace: Path) -> types.ModuleType:
    """Import the user's file as a fresh module, with its folder and the workspace on sys.path."""
    for folder in (str(workspace), str(file.parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    name = file.stem if file.stem not in sys.modules and file.stem.isidentifier() else "__oplens_target__"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise bad_input(f"cannot import {file}", "is it a Python source file?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise user_error(e, None, f"importing {file.name} raised", file=str(file)) from None
    return module


def find_callable(module: types.ModuleType, target: Target) -> Callable[..., Any]:
    obj: Any = module
    parts = target.qualname.split(".")
    for i, part in enumerate(parts):
        nxt = getattr(obj, part, None)
        if nxt is None and callable(obj) and hasattr(obj, "__code__"):
            nxt = _nested_function(module, obj, part, ".".join(parts[: i + 1]))
        if nxt is None:
            raise bad_input(
                f"{Path(target.file).name} defines {target.qualname!r} in its source, but the imported module has no "
                f"{'.'.join(parts[: i + 1])!r}",
                "is it defined under an `if`, deleted, or replaced at import time?",
            )
        obj = nxt
    if not callable(obj):
        raise bad_input(f"{target.qualname} is not callable after import (it is a {type(obj).__name__})")
    return obj  # type: ignore[no-any-return]


def _nested_function(module: types.ModuleType, outer: Any, name: str, qual: str) -> Any:
    for const in outer.__code__.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            if const.co_freevars:
                raise bad_input(
                    f"nested function {qual} uses variables of its enclosing function ({', '.join(const.co_freevars)})",
                    f"it cannot be called on its own: profile the enclosing function {qual.rsplit('.', 1)[0]} instead",
                )
            return types.FunctionType(const, module.__dict__, name)
    return None


def find_code(module: types.ModuleType, target: Target) -> types.CodeType:
    name = target.qualname.rsplit(".", 1)[-1]
    for code in code_objects(module):
        if code.co_name == name and code.co_firstlineno in (target.first_line, target.def_line):
            return code
    raise bad_input(
        f"cannot find the code of {target.qualname} (line {target.def_line}) in the imported module",
        "was the file changed since it was read? profile again",
    )


def build_args(module: types.ModuleType, job: Job, fn: Callable[..., Any]) -> tuple[Any, ...]:
    """Evaluate `--args` in the module's namespace (with torch) and check it fits the signature."""
    expr = job.args.strip()
    if expr:
        namespace = dict(vars(module))
        namespace.setdefault("torch", torch)
        try:
            code = compile(expr, "<--args>", "eval")
        except SyntaxError as e:
            raise bad_input(
                f"the argument expression is not valid Python: {e.msg}: {expr!r}",
                f"write the positional arguments of {job.signature} as a Python expression, "
                'e.g. --args "torch.randn(8, 64), 3"',
            ) from None
        try:
            value = eval(code, namespace)
        except Exception as e:
            err = user_error(e, None, f"the argument expression {expr!r} raised")
            hint = (
                f"\n--args is evaluated in {Path(job.target.file).name}'s namespace, with torch available: "
                "define or import the names it uses there, or fix the expression"
            )
            raise OpLensError("bad_input", err.message, err.detail + hint, err.location) from None
        args = value if isinstance(value, tuple) else (value,)
    else:
        args = ()
    try:
        inspect.signature(fn).bind(*args)
    except TypeError as e:
        raise bad_input(
            f"the arguments do not fit {job.signature}: {e}",
            "pass the positional arguments with --args (a Python expression; a tuple for several), "
            'e.g. --args "make_inputs()" or --args "torch.randn(8, 64), torch.ones(64)"',
        ) from None
    except ValueError:
        pass  # no signature to check (a builtin or an opaque wrapper): the call will tell
    return args


def user_error(exc: BaseException, target: Target | None, what: str, file: str = "") -> OpLensError:
    """The user's exception, its traceback trimmed of OpLens's frames, located at the user's line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_OPLENS_DIR)]
    user_file = target.file if target else file
    located = [f for f in frames if f.filename == user_file] or [
        f for f in frames if "site-packages" not in f.filename and not f.filename.startswith("<")
    ]
    location: dict[str, Any] = {}
    if located:
        f = located[-1]
        location = {"file": f.filename, "line": f.lineno, "function": f.name}
    detail = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    detail += "".join(traceback.format_exception_only(type(exc), exc))
    where = f" at {Path(location['file']).name}:{location['line']}" if location else ""
    message = f"{what}{where}: {type(exc).__name__}: {exc}"
    if _out_of_memory(exc):
        message += "\nout of memory: try smaller inputs (--args)"
    return OpLensError("user_exception", message, detail, location)


def _out_of_memory(exc: BaseException) -> bool:
    """A failed allocation on any device (torch.OutOfMemoryError is CUDA's; the CPU allocator
    raises a RuntimeError, vendors word theirs alike)."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return OUT_OF_MEMORY.search(str(exc)) is not None
