"""Instrument the target functions of a capture where Python compiles them (worker side).

`oplens run` must reach the function however the program calls it: a bound method, through
`nn.Module.__call__`, a reference taken at import time, an inherited method, or the script itself
running as `__main__`; and however the program loads its file: imported under its package name,
loaded by path under another name (`importlib.util.spec_from_file_location` + `exec_module`, as
Hugging Face's `trust_remote_code` modules and plugin loaders do), by a hand-made
`SourceFileLoader`, by `runpy.run_path`, or twice under two names. So OpLens does not patch objects
after the fact: when the target's file is compiled from its source, whichever loader asked, the
function's definition gets one more decorator, innermost, that hands it to the capture
(`worker/capture.py`). Every function object made from that definition is the captured one from
birth, and the code of every other file is untouched: no trace or profile hook runs outside the
capture window.

Where Python compiles a file, while the program runs (`ImportHook`, a context manager that undoes
it all on exit): `SourceLoader.get_code`, which every source loader of importlib ends in (a target's
file is compiled there from its source: never from a cached .pyc, which holds the plain code, and
never written back to `__pycache__`, so a later run without OpLens runs the plain code), and the
builtin `compile` as `runpy.run_path` calls it. A file is a target's by `os.path.samefile`, so any
path to it counts (a symlink, a relative path); the same text compiled again (the file under a
second name) is the same code objects, so the line markers see one function. Not reached: a file
the program compiles itself (`exec(open(path).read())`), loaded other than from source (a .pyc
alone, a zip), or imported before the program starts.

The decorator is an expression that needs no name in the module's namespace; line numbers and the
function's own code object are unchanged (the line markers and tracebacks still point at the user's
lines).
"""

from __future__ import annotations

import ast
import builtins
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import _bootstrap_external
from typing import Any

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
    """While the program runs: a target's file, however it is loaded, is compiled instrumented.

    First on `sys.meta_path`, a module found (by the finders after it) in a target's file is
    loaded by `_Loader` (only names whose last part could be that file are looked at twice). A
    file loaded without a finder (by path, by a loader made by hand, by `runpy.run_path`) is met
    where it is compiled: `SourceLoader.get_code` and runpy's `compile` (`_patches`)."""

    def __init__(self, targets: Sequence[Instrumented]) -> None:
        self._by_file: dict[str, list[Instrumented]] = {}
        for t in targets:
            self._by_file.setdefault(os.path.realpath(t.target.file), []).append(t)
        self._names = {_module_name(f) for f in self._by_file}
        self._compiled: dict[tuple[str, bytes | str], types.CodeType] = {}  # (file, text) → its code
        self._undo: list[Callable[[], None]] = []
        self.codes: dict[str, set[types.CodeType]] = {}  # file → its code objects, as instrumented
        self.loaded: list[str] = []  # module names loaded instrumented, in order

    def targets_of(self, path: str | os.PathLike[str]) -> list[Instrumented]:
        """The targets in the file at `path`: the same file by any path to it (`os.path.samefile`,
        checked now, so a file an editor saved anew since the start is still it)."""
        try:
            st = os.stat(path)
        except (OSError, TypeError, ValueError):  # not a file's path (a loader's "<string>")
            return []
        for file, targets in self._by_file.items():
            try:
                if os.path.samestat(st, os.stat(file)):
                    return targets
            except OSError:
                continue
        return []

    def compile(self, source: bytes | str, path: str) -> types.CodeType:
        """`path`'s module code, instrumented where it holds targets. The same text of a target's
        file compiled again (the file loaded under a second name) gives the same code objects: the
        line markers know the target by its code object (`worker/linemarks.py`), so the calls
        through every copy are marked alike."""
        real = os.path.realpath(path)
        targets = self.targets_of(path)
        if targets:
            code = self._compiled.get((real, source)) or instrument(source, path, targets)
            self._compiled[(real, source)] = code
        else:
            code = compile(source, path, "exec", dont_inherit=True)
        self.codes.setdefault(real, set()).update(code_objects(code))
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

    def _patches(self) -> list[tuple[Any, str, Any]]:
        """(owner, attribute, replacement) for each place Python compiles a file's source.

        `SourceLoader.get_code` (importlib's, under `SourceFileLoader` and `importlib.abc.
        SourceLoader` alike) is where `spec_from_file_location(...)` + `exec_module`, a hand-made
        loader's `exec_module`/`load_module`/`get_code` and `runpy`'s `-m` all end, and no finder
        sees the first two. It is also where a valid cached .pyc replaces the source and where the
        code is written to `__pycache__`, so a target's file is compiled here from its source and
        neither read from nor written to the cache. Any other file goes to the original `get_code`
        as it came (the only cost: one `samefile` per file loaded). `source_to_code` is left alone:
        `py_compile` and `compileall` call it to write .pyc files.
        `runpy.run_path` compiles a file with the builtin `compile` (`_get_code_from_file`, CPython
        3.10-3.13), looked up in runpy's globals: a `compile` there instruments a target's file
        and is the builtin for anything else."""
        hook = self
        plain_get_code = _bootstrap_external.SourceLoader.get_code

        def get_code(loader: Any, fullname: str) -> types.CodeType | None:
            path = loader.get_filename(fullname)
            if not hook.targets_of(path):
                return plain_get_code(loader, fullname)
            hook.loaded.append(fullname)
            return hook.compile(loader.get_data(path), path)

        def runpy_compile(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
            if mode == "exec" and not args and not kwargs and hook.targets_of(filename):
                return hook.compile(source, os.fsdecode(filename))
            return builtins.compile(source, filename, mode, *args, **kwargs)

        return [(_bootstrap_external.SourceLoader, "get_code", get_code), (runpy, "compile", runpy_compile)]

    def __enter__(self) -> ImportHook:
        sys.meta_path.insert(0, self)
        self._undo = [_patch(owner, name, value) for owner, name, value in self._patches()]
        return self

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def _patch(owner: Any, name: str, value: Any) -> Callable[[], None]:
    """Set `owner.name` to `value`; the function returned puts back what was there (or nothing)."""
    missing = object()
    before = vars(owner).get(name, missing)
    setattr(owner, name, value)

    def undo() -> None:
        if before is missing:
            delattr(owner, name)
        else:
            setattr(owner, name, before)

    return undo


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
