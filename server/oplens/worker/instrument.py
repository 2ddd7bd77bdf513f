"""Instrument the target functions of a capture where Python compiles them (worker side).

`oplens run` must reach the function however the program calls it: a bound method, through
`nn.Module.__call__`, a reference taken at import time, an inherited method, the file imported
under its package name or by path, or the script itself running as `__main__`. So OpLens does not
patch objects after the fact: when the target's file is compiled, the function's definition gets
one more decorator, innermost, that hands it to the capture (`worker/capture.py`). Every function
object made from that definition is the captured one from birth, and the code of every other file
is untouched: no trace or profile hook runs outside the capture window.

The decorator is an expression that needs no name in the module's namespace; line numbers and the
function's own code object are unchanged (the line markers and tracebacks still point at the user's
lines).
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass

from oplens.records.run import Target

# The decorator each target gets: `wrap(index)` of the capture module, imported without a name.
_DECORATOR = "__import__('oplens.worker.capture', fromlist=['wrap']).wrap({index})"


@dataclass(frozen=True)
class Instrumented:
    """A target of the capture: its position (the decorator's argument) and its record."""

    index: int
    target: Target


def instrument(source: bytes | str, path: str, targets: Sequence[Instrumented]) -> types.CodeType:
    """The module code of `path` with each target's definition decorated (matched by its `def` line
    and name: the parent resolved them from this file's text)."""
    tree = ast.parse(source, filename=path)
    by_line = {t.target.def_line: t for t in targets}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno in by_line:
            t = by_line[node.lineno]
            if node.name == t.target.qualname.rsplit(".", 1)[-1]:
                decorator = ast.parse(_DECORATOR.format(index=t.index), mode="eval").body
                for part in ast.walk(decorator):  # on the `def` line: a traceback through it points there
                    part.lineno = part.end_lineno = node.lineno  # type: ignore[attr-defined]
                    part.col_offset = part.end_col_offset = node.col_offset  # type: ignore[attr-defined]
                node.decorator_list.append(decorator)  # innermost: other decorators wrap the captured function
    return compile(tree, path, "exec", dont_inherit=True)


def code_objects(code: types.CodeType) -> set[types.CodeType]:
    """Every code object compiled from one file: the module's, and each function's within it."""
    found = {code}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= code_objects(const)
    return found


class _Loader(importlib.machinery.SourceFileLoader):
    """A source loader that compiles the file with its targets instrumented (never from, nor into,
    the bytecode cache: a cached .pyc holds the plain code)."""

    def __init__(self, fullname: str, path: str, finder: ImportHook) -> None:
        super().__init__(fullname, path)
        self._finder = finder

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self._finder.compile(self.get_data(path), path)


class ImportHook(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path` while the program runs: a module found (by the finders after it)
    in a target's file is loaded by `_Loader`. Only names whose last part could be that file are
    looked at twice; every other import goes straight to the usual finders."""

    def __init__(self, targets: Sequence[Instrumented]) -> None:
        self._by_file: dict[str, list[Instrumented]] = {}
        for t in targets:
            self._by_file.setdefault(os.path.realpath(t.target.file), []).append(t)
        self._names = {_module_name(f) for f in self._by_file}
        self.codes: dict[str, set[types.CodeType]] = {}  # file → its code objects, as instrumented
        self.loaded: list[str] = []  # module names loaded instrumented, in order

    def targets_of(self, path: str) -> list[Instrumented]:
        return self._by_file.get(os.path.realpath(path), [])

    def compile(self, source: bytes | str, path: str) -> types.CodeType:
        """`path`'s module code, instrumented where it holds targets."""
        targets = self.targets_of(path)
        code = instrument(source, path, targets) if targets else compile(source, path, "exec", dont_inherit=True)
        self.codes.setdefault(os.path.realpath(path), set()).update(code_objects(code))
        return code

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.rpartition(".")[2] not in self._names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            origin = spec.origin
            if origin and isinstance(spec.loader, importlib.machinery.SourceFileLoader) and self.targets_of(origin):
                spec.loader = _Loader(fullname, origin, self)
                self.loaded.append(fullname)
                return spec
            return None  # found elsewhere: leave it to the usual machinery
        return None

    def __enter__(self) -> ImportHook:
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def _module_name(path: str) -> str:
    """The last part of the module name a file is imported as (`model.py` → model, `pkg/__init__.py` → pkg)."""
    folder, base = os.path.split(path)
    stem = base.rsplit(".", 1)[0]
    return os.path.basename(folder) if stem == "__init__" else stem


def modules_from_file_named(path: str) -> list[str]:
    """Loaded modules from another file of the same name as `path` (a likely reason a target was not
    called: the program imported a different copy)."""
    real, base = os.path.realpath(path), os.path.basename(path)
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.basename(file) == base and os.path.realpath(file) != real:
            found.append(f"{name} ({file})")
    return found
