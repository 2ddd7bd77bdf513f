"""The user's code as the worker meets it: import their file, find the function, build its
arguments from `--args`, and turn their exceptions into errors located at their own line.

Worker side (imports torch, runs user code). Every failure is an `OpLensError` naming the fix.

Their file is imported as the program would import it: a module of a package under its dotted name from
its import root (one module object, relative imports resolved), a standalone script by its path.

How Python itself would name the file, in order:
1. the interpreter already reaches it: some ancestor folder of the file is an import root of this
   interpreter (a `sys.path` entry: site-packages, a `.pth` of an editable install, `PYTHONPATH`) or a
   meta-path finder (setuptools' editable finder) maps the top-level name to it; the deepest such
   ancestor names it (`transformers.models.llama.modeling_llama`);
2. a regular package not installed: the folder above its topmost `__init__.py` becomes an import root
   (a repository's `mypkg/model.py`, a src layout's `src/mypkg/...`);
3. a folder with no `__init__.py` whose file uses a relative import (a namespace package): the
   workspace's `src/`, else the workspace, is its root;
4. anything else is a standalone script, imported by path as it always was (its folder on `sys.path`).

The rules are the interpreter's, read from this process's `sys.path`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import oplens
from oplens.records.errors import OUT_OF_MEMORY, OpLensError, bad_input
from oplens.records.job import Job
from oplens.records.run import SCRIPT_MODULE as SCRIPT
from oplens.records.run import Target
from oplens.worker.linemarks import code_objects

_OPLENS_DIR = str(Path(oplens.__file__).parent)


def call(fn: Callable[..., Any], args: tuple[Any, ...], target: Target) -> Any:
    """The user's function, its exception (SystemExit and KeyboardInterrupt included) as theirs."""
    try:
        return fn(*args)
    except BaseException as e:
        raise user_error(e, target, f"{target.qualname} raised") from None


def load_module(file: Path, workspace: Path) -> tuple[types.ModuleType, str]:
    """The user's file imported as the program would (`import_file`: a package module under its dotted name,
    a script by path), and the module's name (`SCRIPT` for a script)."""
    try:
        return import_file(file, workspace)
    except OpLensError:
        raise
    except Exception as e:
        raise user_error(e, None, f"importing {file.name} raised", file=str(file)) from None


EARLIER = "__oplens_earlier"  # the name's mark of an edited function's earlier version (load_earlier)


def load_earlier(file: Path, workspace: Path, text: str) -> tuple[types.ModuleType, str]:
    """An edited file's earlier text (`text`, as an earlier run imported it) as a module of its own beside the
    file's: under the file's package (its relative imports resolve as the program's do, to the package's
    modules as they are now), its code named after the file (its lines are the earlier run's lines), its own
    module-level statements run once more. A script's earlier text: with the script's folder on `sys.path`."""
    file = file.resolve()
    how = plan(file, workspace)
    if how.name == SCRIPT:
        name, package = EARLIER, ""
    else:
        import_file(file, workspace)  # the package and its import root, as for the file itself
        name = how.name + EARLIER
        package = how.name if file.name == "__init__.py" else how.name.rpartition(".")[0]
    module = types.ModuleType(name)
    module.__file__ = str(file)
    module.__package__ = package
    sys.modules[name] = module  # what a dataclass or a typing lookup of the module's classes needs
    try:
        exec(compile(text, str(file), "exec"), module.__dict__)
    except Exception as e:
        del sys.modules[name]
        raise user_error(e, None, f"loading the earlier version of {file.name} raised", file=str(file)) from None
    return module, name


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


def find_code(module: types.ModuleType, target: Target, fn: Any = None) -> types.CodeType:
    """The target's code object by its name and line among what the module's names reach (linemarks.codes_in:
    through decorators' wrappers, an object's forward or __call__, closures, functools.partial, lru_cache); `fn`,
    what the target's name holds, for the message where it is not there."""
    name = target.qualname.rsplit(".", 1)[-1]
    if isinstance(fn, (torch.jit.ScriptFunction, torch.jit.ScriptModule)):
        raise bad_input(
            f"{target.qualname} is compiled by torch.jit.script ({type(fn).__name__}): TorchScript runs it without "
            "Python lines, so they cannot be marked",
            f"profile the Python code that calls {target.qualname}, or the function before it is scripted",
        )
    for code in code_objects(module):
        if code.co_name == name and code.co_firstlineno in (target.first_line, target.def_line):
            return code
    if _changed(target):
        raise bad_input(f"{Path(target.file).name} changed since {target.qualname} was read (line {target.def_line})",
                        "profile again: the function is read from the file as it is then")  # fmt: skip
    holds = f" it holds a {type(fn).__module__}.{type(fn).__qualname__}," if fn is not None else ""
    raise bad_input(
        f"cannot find the code of {target.qualname} (line {target.def_line}) in the imported module:{holds} and its "
        "code is not among what that reaches (__wrapped__, forward or __call__, closures, functools.partial)",
        f"profile the function it calls, or the function that calls {target.qualname}; the decorator's wrapper "
        "may keep the original where OpLens cannot see it",
    )


def _changed(target: Target) -> bool:
    """The target's text in its file differs from the text read when the job was made."""
    try:
        lines = Path(target.file).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return True
    now = "\n".join(lines[target.first_line - 1 : target.last_line])
    return bool(target.source) and now.strip() != target.source.strip()


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


# Importing the user's file as the program would (the module's doc has the rules).
@dataclass(frozen=True)
class ModulePlan:
    """How the file is imported: under `name` (SCRIPT: by path), with `root` put on `sys.path` first
    (None: the interpreter already reaches it)."""

    name: str
    root: Path | None
    how: str  # in words, for messages: "an import root of this interpreter", "its package's root", ...


def plan(file: Path, workspace: Path) -> ModulePlan:
    """The name and import root under which Python would import `file` (see the module's doc)."""
    file = file.resolve()
    package_root, parts = _package_chain(file)
    found = _reached(file, package_root, workspace)
    if found is not None:
        return found
    if package_root != file.parent or file.name == "__init__.py":
        return ModulePlan(".".join(parts), package_root, f"its package's root {package_root}")
    relative = _relative_import(file)
    if relative is not None:
        for root in (workspace / "src", workspace):
            name = _dotted(file, root.resolve())
            if name is not None and "." in name:
                return ModulePlan(name, root.resolve(), f"the namespace package's root {root.resolve()}")
        raise bad_input(
            f"{file.name} uses a relative import (line {relative}) but {file.parent} is not a package "
            "(no __init__.py) and is not under the workspace",
            f"add an __init__.py to {file.parent} (and to each folder up to the package's root), or install "
            "the package into this interpreter (pip install -e .)",
        )
    return ModulePlan(SCRIPT, None, "a standalone script")


def import_file(file: Path, workspace: Path) -> tuple[types.ModuleType, str]:
    """The module object of `file` as the program imports it, and its name (SCRIPT: imported by path).

    Raises ImportError or the user's own exception from the module's import; `bad_input` when the file
    cannot be imported as part of its package."""
    file = file.resolve()
    how = plan(file, workspace)
    if how.name == SCRIPT:
        return _load_script(file, workspace), SCRIPT
    for folder in ([str(how.root)] if how.root is not None else []) + [str(workspace)]:
        if folder not in sys.path:
            sys.path.insert(0 if folder == str(how.root) else len(sys.path), folder)
    try:
        module = importlib.import_module(how.name)
    except ImportError as e:
        if "relative import" in str(e):  # beyond the top-level package: a folder above lacks its __init__.py
            raise bad_input(
                f"{file.name} cannot be imported as {how.name} (from {how.how}): {e}",
                f"its relative imports reach above the package {how.name.split('.')[0]}: add an __init__.py to "
                f"{_package_chain(file)[0]} (and to each folder up to the package's root)",
            ) from None
        if e.name is not None and (how.name == e.name or how.name.startswith(e.name + ".")):
            raise bad_input(
                f"{file.name} cannot be imported as {how.name} (from {how.how}): {e}",
                "is every folder of the package named as Python names (an identifier) and importable from "
                "this interpreter? install it (pip install -e .) or open the workspace at its repository root",
            ) from None
        raise
    loaded = getattr(module, "__file__", None)
    if loaded is None or Path(loaded).resolve() != file:
        raise bad_input(
            f"importing {how.name} gave {loaded or 'a module without a file'}, not {file}",
            f"another package named {how.name.split('.')[0]!r} is imported first; "
            "profile the file Python imports, or uninstall the other copy",
        )
    return module, how.name


def _load_script(file: Path, workspace: Path) -> types.ModuleType:
    """A standalone script as a fresh module, with its folder and the workspace on sys.path."""
    for folder in (str(workspace), str(file.parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    for loaded in (sys.modules.get(file.stem), sys.modules.get("__oplens_target__")):  # a compare's second variant
        if loaded is not None and _resolved(getattr(loaded, "__file__", None) or "") == file:
            return loaded
    name = file.stem if file.stem not in sys.modules and file.stem.isidentifier() else "__oplens_target__"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise bad_input(f"cannot import {file}", "is it a Python source file?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _package_chain(file: Path) -> tuple[Path, list[str]]:
    """The folder above the file's topmost regular package (`__init__.py` folders), and the dotted parts
    from there (the file's own folder and [stem] for a script)."""
    parts = [] if file.name == "__init__.py" else [file.stem]
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, parts


def _reached(file: Path, package_root: Path, workspace: Path) -> ModulePlan | None:
    """The name under which this interpreter already imports the file, from the deepest ancestor of its
    package's root that is an import root (`sys.path`, or a meta-path finder's top-level name)."""
    # The worker runs as `python -m` in the workspace, which put the workspace on sys.path: a root the
    # program itself may not have. It names a namespace package of the workspace's folders only when the
    # file has no package of its own (rule 3 decides those).
    # A script's own folder under the workspace (put on sys.path by an earlier import, or by the user's
    # PYTHONPATH) does not make it a module of that name: rule 4 imports it by path, as always.
    # Nor does a root above the workspace make a namespace package of a script's folders.
    ws = workspace.resolve()
    entries = {_resolved(p) for p in sys.path if p} - {None, ws}
    folder = package_root
    script_here = file.name != "__init__.py" and folder == file.parent and folder.is_relative_to(ws)
    if script_here:
        folder = folder.parent
    while True:
        name = _dotted(file, folder)
        if name is None or (script_here and not folder.is_relative_to(ws)):
            return None
        if folder in entries:
            return ModulePlan(name, None, f"the import root {folder} of this interpreter")
        if "." in name and _finder_maps(name.split(".")[0], folder, workspace):
            return ModulePlan(name, None, "this interpreter's installed package")
        if folder.parent == folder:
            return None
        folder = folder.parent


def _finder_maps(top: str, folder: Path, workspace: Path) -> bool:
    """Whether a finder of this interpreter resolves the top-level name `top` to `folder/top` (an editable
    install's finder, a namespace package spread over several roots). Finding a top-level spec runs no
    package code."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    wanted = folder / top
    locations = list(spec.submodule_search_locations or [])
    if spec.origin is None:  # a namespace package: only a portion under a real root counts, not the workspace's
        locations = [loc for loc in locations if _resolved(str(Path(loc).parent)) != workspace.resolve()]
    return any(_resolved(loc) == wanted for loc in locations)


def _dotted(file: Path, root: Path) -> str | None:
    """The module name of `file` under the import root `root`, or None where Python could not name it."""
    try:
        rel = file.relative_to(root)
    except ValueError:
        return None
    parts = list(rel.parent.parts) + ([] if file.name == "__init__.py" else [file.stem])
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def _relative_import(file: Path) -> int | None:
    """The line of the file's first relative import (`from . import x`), if it has one."""
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None
    lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
    return min(lines) if lines else None


def _resolved(path: str) -> Path | None:
    try:
        return Path(os.path.abspath(path)).resolve()
    except OSError:
        return None
