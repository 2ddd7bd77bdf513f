"""`%load_ext oplens`: the `%oplens` and `%%oplens` magics in an IPython kernel (IPython glue).

    %oplens [-f FUNC] [--iters N] [--warmup N] [--profiler-warmup N] [--backend B] [--out DIR] [--notebook PATH]
            STATEMENT
    %%oplens [options]
    <the cell>

The line magic runs STATEMENT warm-up + N times in the kernel, on its live objects, and profiles FUNC line
by line (an expression of the namespace: a function, a method of a live object, a module, a torch.compile'd
function; default: the function the statement calls). The cell magic profiles the cell's own lines, the cell
run as one function whose assignments land in the namespace as the cell's would. Each writes a run to the
runs directory (`.oplens/runs` under the kernel's folder, the notebook's; `--out`) and shows it in the output
cell (`notebook/display.py`). A run of a function a cell defines names its notebook (`--notebook`, else as the
front end tells the kernel: `session.notebook_path`), so that the editor shows it on that cell. A statement
that raises shows the user's traceback, not OpLens's; a problem with the magic's own input is one line with
its fix.
"""

from __future__ import annotations

import ast
import re
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from oplens.engine.targets import function_text, source_sha256, whole_cell
from oplens.notebook.display import RunDisplay
from oplens.notebook.session import Settings, StatementRaised, in_cell, notebook_path, profile_statement, user_traceback
from oplens.notebook.target import Live, called_function, live, same_file_codes
from oplens.records.errors import OpLensError, bad_input
from oplens.records.names import CELL_QUALNAME
from oplens.records.run import Target

USAGE = ("%oplens [-f FUNC] [--iters N] [--warmup N] [--profiler-warmup N] [--backend B] [--out DIR] [--notebook PATH] "
         "STATEMENT")
_OPTION = re.compile(r"\s*(-f|--function|--iters|--warmup|--profiler-warmup|--backend|--out|--notebook)(?:\s+|=)(\S+)")


@dataclass
class Options:
    functions: list[str] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)
    statement: str = ""


class MagicUsage(ValueError):
    """The magic's line cannot be read: the message says what and how to write it."""


def parse(line: str) -> Options:
    """The options at the start of `line`, and the statement after them (as written)."""
    opts = Options()
    pos = 0
    while m := _OPTION.match(line, pos):
        name, value = m.group(1), m.group(2)
        pos = m.end()
        if name in ("-f", "--function"):
            opts.functions.append(value)
        elif name == "--backend":
            opts.settings.backend = value
        elif name == "--out":
            opts.settings.out = value
        elif name == "--notebook":
            opts.settings.notebook = value
        else:
            try:
                number = int(value)
            except ValueError:
                raise MagicUsage(f"{name} takes a whole number, not {value!r}: {USAGE}") from None
            setattr(opts.settings, name.lstrip("-").replace("-", "_"), number)
    rest = line[pos:].strip()
    if rest.startswith("-"):
        raise MagicUsage(f"unknown option {rest.split()[0]}: {USAGE}")
    opts.statement = rest
    return opts


def register(ipython: Any) -> None:
    """The magics, on this IPython."""
    magics = OpLensMagics(ipython)
    ipython.register_magic_function(magics.line, "line", "oplens")
    ipython.register_magic_function(magics.cell, "cell", "oplens")


class OpLensMagics:
    def __init__(self, ipython: Any) -> None:
        self.ip = ipython

    def line(self, line: str) -> None:
        try:
            opts = parse(line)
        except MagicUsage as e:
            return self._usage(str(e))
        if not opts.statement:
            return self._usage(f"give the statement to run: {USAGE}")
        ns = self.ip.user_ns
        try:
            targets = [live(self._evaluate(f, ns)) for f in opts.functions] or [live(called_function(opts.statement, ns))]
            code = compile(opts.statement, self.ip.compile.cache(opts.statement), "exec")
        except OpLensError as e:
            return self._usage(_message(e))
        except SyntaxError as e:
            return self._usage(f"the statement is not Python: {e.msg}")
        for target in targets:
            if not self._profile(lambda: exec(code, ns), target, same_file_codes(target.fn, ns), opts):  # noqa: S102
                return None
        return None

    def cell(self, line: str, cell: str) -> None:
        try:
            opts = parse(line)
        except MagicUsage as e:
            return self._usage(str(e))
        if opts.statement or opts.functions:
            return self._usage("%%oplens profiles the cell's own lines: give only options on its first line")
        try:
            target, fn = self._cell_function(f"%%oplens {line}".rstrip(), cell)
        except SyntaxError as e:
            return self._usage(f"the cell is not Python: line {e.lineno}: {e.msg}")
        self._profile(fn, target, [target.fn.__code__], Options(settings=opts.settings, statement="%%oplens cell"))
        return None

    # -- the parts -------------------------------------------------------------------------------

    def _usage(self, message: str) -> None:
        """One line with the problem and its fix, no traceback (IPython's way for a magic's bad input)."""
        from IPython.core.error import UsageError

        raise UsageError(f"oplens: {message}")

    def _profile(self, run_once: Any, target: Live, helpers: Iterable[types.CodeType], opts: Options) -> bool:
        from IPython.display import display

        target = in_cell(target, notebook_path(self.ip.user_ns, opts.settings.notebook))
        try:
            run = profile_statement(run_once, target, helpers, opts.statement, opts.settings)
        except StatementRaised as e:
            error = user_traceback(e.error)
            self.ip.showtraceback((type(error), error, error.__traceback__))
            return False
        except OpLensError as e:
            self._usage(_message(e))
            return False
        display(RunDisplay(run, run.run_dir))  # type: ignore[no-untyped-call]
        return True

    def _evaluate(self, expr: str, ns: dict[str, Any]) -> Any:
        try:
            return eval(expr, ns)  # noqa: S307 (the user's own expression, in their kernel)
        except Exception as e:
            raise bad_input(f"-f {expr}: {type(e).__name__}: {e}",
                            "name a function, method or module the notebook has defined") from None

    def _cell_function(self, magic: str, cell: str) -> tuple[Live, Any]:
        """The cell as one function of its own lines, numbered as the notebook shows them (the `%%oplens`
        line is line 1), in IPython's file for this cell's text; the names it assigns at its top level are
        the namespace's, as when the cell runs."""
        text = f"{magic}\n{cell}"
        filename = self.ip.compile.cache(text)
        tree = ast.parse(cell, filename)
        ast.increment_lineno(tree, 1)
        assigned = sorted(_assigned(tree))
        body: list[ast.stmt] = [ast.Global(names=assigned)] if assigned else []
        body += tree.body or [ast.Pass()]
        extra: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}
        fn = ast.FunctionDef(name=CELL_QUALNAME, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                             defaults=[]), body=body, decorator_list=[], returns=None, **extra)  # fmt: skip
        module = ast.Module(body=[fn], type_ignores=[])
        for node in (fn, *body[:1]):
            node.lineno, node.col_offset = 1, 0  # the def and its global declaration sit on the cell's first line
        ast.fix_missing_locations(module)
        ns = self.ip.user_ns
        scope: dict[str, Any] = {}
        exec(compile(module, filename, "exec"), ns, scope)  # noqa: S102 (defines the cell's function)
        function = scope[CELL_QUALNAME]
        last = len(text.splitlines())
        target = Target(file=filename, qualname=CELL_QUALNAME, first_line=1, last_line=last,
                        source_sha256=source_sha256(text, 1, last), def_line=1, source=function_text(text, 1, last))  # fmt: skip
        return Live(function, target, whole_cell(last), compiled=False), function


def _assigned(tree: ast.Module) -> set[str]:
    """The names a cell binds at its top level (not inside the functions and classes it defines)."""
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names if a.name != "*")
        todo.extend(ast.iter_child_nodes(n))
    return names


def _message(e: OpLensError) -> str:
    return f"{e.message}\n{e.detail}".strip() if e.detail else e.message
