"""The user's frames in the overview's window, as profiler ranges (worker side; imports torch).

torch.profiler's `with_stack=True` records an event for every Python call, the library's as well (the
`nn.Module` machinery, torch's own Python): on a step of many small calls that doubled the step's time
(docs/benchmarks.md). The overview needs the user's functions only. So while its window is open, each
function of the user's files runs a variant of its code whose body is one `with` block opening a range
named as torch names a frame, `oplens.frame:<file>(<def line>): <name>`: the same line numbers,
variables and closures, only the body wrapped; swapped into the function objects (`__code__`) when the
window opens and back when it closes. Frames already running then (the program's loop, the step's
caller) cannot change code: they are noted as the first recorded step begins (`note_running`) and given to
the attribution as frames around all the steps, as the Python tracer met them (a range left open would be
cut where the profiler's schedule ends).

Left as they are: generators and coroutines (a range would stay open across their suspensions: their
ops go to their caller), lambdas, a function whose file changed since it was loaded (its code is no
longer the file's). A program that has used torch.compile keeps the Python tracer (`usable`): dynamo
guards on the code of every function it inlined, so swapping code would recompile its graphs.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import gc
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from oplens.records import names
from oplens.worker.linemarks import Range, recording

HOOK = "__oplens_frame__"  # the name the wrapped bodies call: builtins, while the window is open
CodeKey = tuple[str, int]  # (co_qualname, co_firstlineno)


def _key(code: types.CodeType) -> CodeKey:
    return (getattr(code, "co_qualname", code.co_name), code.co_firstlineno)  # co_qualname: Python 3.11+


def usable() -> bool:
    """Whether this process may swap code: not where torch.compile (dynamo) has compiled frames."""
    dynamo = sys.modules.get("torch._dynamo.utils")
    counters = getattr(dynamo, "counters", None)
    return not (counters is not None and sum(counters.get("frames", {}).values()) > 0)


class UserFrames:
    """`swap()` when the window opens, `restore()` when it closes; `note_running` as its first recorded step
    begins."""

    def __init__(self, is_user: Callable[[str], str | None]) -> None:
        self._is_user = is_user
        self._swapped: list[tuple[types.FunctionType, types.CodeType]] = []  # (function, its own code)
        self.running: list[str] = []  # the user frames running around the steps, outermost first (frame names)

    def swap(self) -> int:
        """Each user function's code for its wrapped variant; how many were swapped."""
        setattr(builtins, HOOK, _frame)
        for fn in _functions():
            code = fn.__code__
            found = self._variant(code)
            if found is None or found.wrapped is code:  # not to be wrapped (or its file changed since), or already
                continue
            try:
                fn.__code__ = found.wrapped
            except ValueError:  # its closure does not fit (not for the same source: kept safe)
                continue
            self._swapped.append((fn, code))
        return len(self._swapped)

    def restore(self) -> None:
        """Every function back to its own code (those made during the window from wrapped code too)."""
        for fn, code in self._swapped:
            fn.__code__ = code
        if self._swapped:
            # a function made during the window from wrapped code (a closure): back to the code its maker's own
            # code holds (where its maker was swapped), else to the file's
            back = {v.wrapped: v.plain for variants in _VARIANTS.values() for v in variants.values()}
            for _, code in self._swapped:
                mine = _VARIANTS.get(code.co_filename, {})
                for key, nested in _codes(code).items():
                    if key in mine:
                        back[mine[key].wrapped] = nested
            for fn in _functions():
                plain = back.get(fn.__code__)
                if plain is not None:
                    fn.__code__ = plain
        self._swapped.clear()
        if hasattr(builtins, HOOK):
            delattr(builtins, HOOK)

    def note_running(self, frame: types.FrameType | None) -> None:
        """The user frames running from `frame` outwards (a frame's name as torch's tracer writes it, without
        the prefix), outermost first."""
        outer: list[str] = []
        while frame is not None:
            code = frame.f_code
            path = self._is_user(code.co_filename)
            if path is not None and code.co_name != "<module>":
                found = self._variant(code)
                outer.append(frame_label(path, found.def_line if found else code.co_firstlineno, code.co_name))
            frame = frame.f_back
        self.running = outer[::-1]

    def _variant(self, code: types.CodeType) -> Variant | None:
        path = self._is_user(code.co_filename)
        if path is None:
            return None
        found = variants(code.co_filename, path).get(_key(code))
        return found if found is not None and (found.wrapped is code or _same(found.plain, code)) else None


_OFF = contextlib.nullcontext()


def _frame(name: str) -> Any:
    """A wrapped body's range: where the profiler records now (see `linemarks.recording`), else nothing."""
    return Range(name) if recording() else _OFF


def _same(a: types.CodeType, b: types.CodeType) -> bool:
    """The same compiled code: bytecode, names, constants (nested code by its bytecode) and line table."""

    def consts(c: types.CodeType) -> tuple[object, ...]:
        return tuple(k.co_code if isinstance(k, types.CodeType) else (type(k), k) for k in c.co_consts)

    return (a.co_code == b.co_code and a.co_names == b.co_names and a.co_linetable == b.co_linetable
            and consts(a) == consts(b))  # fmt: skip


def _functions() -> Iterator[types.FunctionType]:
    for o in gc.get_objects():
        if type(o) is types.FunctionType:
            yield o


def frame_label(path: str, def_line: int, name: str) -> str:
    """A frame as torch's Python tracer names it: `<file>(<def line>): <name>`."""
    return f"{path}({def_line}): {name}"


@dataclass(frozen=True)
class Variant:
    plain: types.CodeType  # as Python compiles the file now
    wrapped: types.CodeType  # its body in a range
    def_line: int  # its `def` line (its code's first line is its first decorator's)


_VARIANTS: dict[str, dict[CodeKey, Variant]] = {}


def variants(filename: str, path: str) -> dict[CodeKey, Variant]:
    """Each wrapped function of the file, by (qualname, first line); made once per file."""
    found = _VARIANTS.get(filename)
    if found is None:
        found = _VARIANTS[filename] = _compile_variants(filename, path)
    return found


def _compile_variants(filename: str, path: str) -> dict[CodeKey, Variant]:
    try:
        with open(path, "rb") as f:
            source = f.read()
        plain_tree = ast.parse(source, filename)
        wrapped_tree = _Wrap(path).visit(ast.parse(source, filename))
        plain = compile(plain_tree, filename, "exec", dont_inherit=True)
        wrapped = compile(wrapped_tree, filename, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return {}
    def_lines: dict[tuple[str, int], int] = {}  # (name, first line) → def line
    for node in ast.walk(plain_tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            def_lines[(node.name, min([node.lineno, *(d.lineno for d in node.decorator_list)]))] = node.lineno
    plain_codes, wrapped_codes = _codes(plain), _codes(wrapped)
    return {
        k: Variant(c, wrapped_codes[k], def_lines.get((c.co_name, c.co_firstlineno), c.co_firstlineno))
        for k, c in plain_codes.items()
        if k in wrapped_codes and wrapped_codes[k].co_code != c.co_code  # wrapped: not a generator, lambda, …
    }


def _codes(code: types.CodeType) -> dict[CodeKey, types.CodeType]:
    out: dict[CodeKey, types.CodeType] = {}
    todo = [code]
    while todo:
        c = todo.pop()
        out[_key(c)] = c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


class _Wrap(ast.NodeTransformer):
    """Each plain function's body (after its docstring) inside `with __oplens_frame__("…"):`."""

    def __init__(self, path: str) -> None:
        self.path = path

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        body = node.body
        doc = body[:1] if body and _is_docstring(body[0]) else []
        rest = body[len(doc) :]
        if not rest or _suspends(node):
            return node
        name = names.FRAME_RANGE + frame_label(self.path, node.lineno, node.name)
        call = ast.Call(func=ast.Name(HOOK, ast.Load()), args=[ast.Constant(name)], keywords=[])
        with_ = ast.With(items=[ast.withitem(context_expr=call)], body=rest)
        ast.copy_location(with_, rest[0])
        with_.end_lineno, with_.end_col_offset = rest[-1].end_lineno, rest[-1].end_col_offset
        for n in (call, call.func, *call.args, with_.items[0]):
            ast.copy_location(n, rest[0])
        node.body = [*doc, with_]
        return node


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _suspends(fn: ast.FunctionDef) -> bool:
    """A generator (a `yield` in its own body, not in a function nested in it)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False
