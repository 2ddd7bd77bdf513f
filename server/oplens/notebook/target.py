"""What a notebook's statement profiles: a live callable of the kernel, as the function whose lines are marked.

`%oplens model.forward(x)` or `%oplens -f rmsnorm run(x)`: the function is a live object (a function defined
in a cell, one imported from a file, a method of a module object, a `torch.compile`d function), unwrapped to
the plain function whose code runs (`Live`), and described as a run's `Target` from its source: the cell's
text as IPython keeps it (`linecache`, under the cell's file name) or the file's.
"""

from __future__ import annotations

import ast
import linecache
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oplens.engine.targets import FunctionDef, function_text, list_functions, source_sha256
from oplens.records.errors import bad_input
from oplens.records.run import Target
from oplens.worker.linemarks import codes_in


@dataclass(frozen=True)
class Live:
    """A function of the kernel: its function object (its code is what runs) and its run target."""

    fn: types.FunctionType
    target: Target
    definition: FunctionDef
    compiled: bool  # reached through torch.compile: its lines run fused in a compiled region


def called_function(statement: str, namespace: dict[str, Any]) -> Any:
    """The callable a one-line statement calls (`f(x)`, `y = model(x)`, `obj.method(x)`), from the namespace."""
    try:
        tree = ast.parse(statement.strip(), mode="exec")
    except SyntaxError as e:
        raise bad_input(f"the statement is not Python: {e.msg}", "%oplens STATEMENT, e.g. %oplens f(x)") from None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if len(tree.body) != 1 or not calls:
        raise bad_input("the statement calls no function OpLens can tell",
                        "name the function to profile: %oplens -f FUNCTION STATEMENT")  # fmt: skip
    expr = ast.unparse(calls[0].func)  # the outermost call (ast.walk is breadth first)
    try:
        return eval(expr, namespace)  # noqa: S307 (the user's own expression, in their kernel)
    except Exception as e:
        raise bad_input(f"{expr} cannot be evaluated: {type(e).__name__}: {e}", "define it in a cell first") from None


def live(obj: Any) -> Live:
    """`obj` (a callable of the kernel) as the function whose lines are marked."""
    compiled = False
    seen: set[int] = set()
    while id(obj) not in seen:
        seen.add(id(obj))
        orig = getattr(obj, "_torchdynamo_orig_callable", None)  # torch.compile(fn)
        if orig is not None:
            obj, compiled = orig, True
            continue
        inner = getattr(obj, "_orig_mod", None)  # torch.compile(module)
        if inner is not None:
            obj, compiled = inner, True
            continue
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
            continue
        forward = getattr(type(obj), "forward", None)
        if forward is not None and hasattr(obj, "_call_impl"):  # an nn.Module instance: its forward
            obj = forward
            continue
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None:
            obj = wrapped
            continue
    if not isinstance(obj, types.FunctionType):
        raise bad_input(f"{obj!r} is not a Python function OpLens can mark line by line",
                        "profile a function defined in Python: %oplens -f FUNCTION STATEMENT")  # fmt: skip
    code = obj.__code__
    source = "".join(linecache.getlines(code.co_filename)) or _file_text(code.co_filename)
    if not source:
        raise bad_input(f"the source of {obj.__qualname__} is not available ({code.co_filename})",
                        "define it in a cell or a file of the notebook's folder")  # fmt: skip
    functions = list_functions(source, Path(code.co_filename))
    found = [f for f in functions if f.first_line == code.co_firstlineno or f.def_line == code.co_firstlineno]
    if not found:
        raise bad_input(f"{obj.__qualname__} is not found in the source of {code.co_filename}",
                        "run its cell again, then profile")  # fmt: skip
    fn = found[-1]
    target = Target(file=code.co_filename, qualname=fn.qualname, first_line=fn.first_line, last_line=fn.last_line,
                    source_sha256=source_sha256(source, fn.first_line, fn.last_line), def_line=fn.def_line,
                    source=function_text(source, fn.first_line, fn.last_line),
                    module=str(obj.__module__ or ""))  # fmt: skip
    return Live(obj, target, fn, compiled)


def same_file_codes(fn: types.FunctionType, namespace: dict[str, Any]) -> set[types.CodeType]:
    """The code objects of `fn`'s file (its cell) that the namespace reaches, `fn`'s own among them: the
    target's helpers, marked as inner lines (as `linemarks.code_objects` finds a module's)."""
    return codes_in(namespace, fn.__code__.co_filename, str(namespace.get("__name__", "__main__"))) | {fn.__code__}


def _file_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
