"""The user's code as the worker meets it: import their file, find the function, build its
arguments from `--args`, and turn their exceptions into errors located at their own line.

Worker side (imports torch, runs user code). Every failure is an `OpLensError` naming the fix.
"""

from __future__ import annotations

import inspect
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import oplens
from oplens.records.errors import OUT_OF_MEMORY, OpLensError, bad_input
from oplens.records.job import Job
from oplens.records.run import Target
from oplens.worker.importing import import_file
from oplens.worker.linemarks import code_objects

_OPLENS_DIR = str(Path(oplens.__file__).parent)


def call(fn: Callable[..., Any], args: tuple[Any, ...], target: Target) -> Any:
    """The user's function, its exception (SystemExit and KeyboardInterrupt included) as theirs."""
    try:
        return fn(*args)
    except BaseException as e:
        raise user_error(e, target, f"{target.qualname} raised") from None


def load_module(file: Path, workspace: Path) -> tuple[types.ModuleType, str]:
    """The user's file imported as the program would (`worker/importing.py`: a package module under its
    dotted name, a script by path), and the module's name (`importing.SCRIPT` for a script)."""
    try:
        return import_file(file, workspace)
    except OpLensError:
        raise
    except Exception as e:
        raise user_error(e, None, f"importing {file.name} raised", file=str(file)) from None


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
        top = module.__name__.partition(".")[0]  # a package module's top-level package, as `mypkg.Layer(8)`
        if "." in module.__name__ and top in sys.modules:
            namespace.setdefault(top, sys.modules[top])
        try:
            code = compile(expr, "<--args>", "eval")
        except SyntaxError as e:
            raise bad_input(
                f"the argument expression is not valid Python: {e.msg}: {expr!r}",
                f'write the positional arguments of {job.signature} as a Python expression, e.g. --args "torch.randn(8, 64), 3"',
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
