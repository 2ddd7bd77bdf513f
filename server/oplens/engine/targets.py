"""Find the function to profile from the file's AST (no import, no torch).

A target is named by a `TargetSpec` (`FILE::QUALNAME` — `fn`, `Class.method`, `outer.inner` — or
`FILE:LINE`, the innermost function enclosing that line); `resolve` turns it into the `Target`
record of the function's current text.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from oplens.records.errors import bad_input
from oplens.records.names import CELL_QUALNAME
from oplens.records.run import Target


@dataclass(frozen=True)
class FunctionDef:
    qualname: str
    first_line: int  # first decorator, or the def
    def_line: int
    last_line: int
    signature: str  # "rmsnorm_naive(x, w)"
    params: str  # the parameter list as written: "x, w"
    required_params: int  # positional parameters without a default (self included)
    in_class: bool
    kind: str = "function"  # "function" | "generator" | "async" (a capture needs a plain function)


def whole_cell(last_line: int) -> FunctionDef:
    """A `%%oplens` notebook cell as the one function its run names: the cell's lines 1..last_line, the
    magic's line first."""
    return FunctionDef(qualname=CELL_QUALNAME, first_line=1, def_line=1, last_line=last_line, signature="<cell>()",
                       params="", required_params=0, in_class=False)  # fmt: skip


def read_source(file: Path) -> str:
    if not file.is_file():
        what = "is a directory" if file.is_dir() else "does not exist"
        raise bad_input(f"{file} {what}", "give the path of a Python file (relative to the current directory)")
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise bad_input(f"cannot read {file}: {e}") from None


def list_functions(source: str, file: Path) -> list[FunctionDef]:
    try:
        tree = ast.parse(source, filename=str(file))
    except SyntaxError as e:
        raise bad_input(
            f"{file}:{e.lineno}: syntax error: {e.msg}",
            (e.text or "").rstrip() + "\nfix the file, then profile again",
        ) from None
    found: list[FunctionDef] = []

    def visit(node: ast.AST, prefix: str, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = prefix + child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                params = ast.unparse(child.args)
                found.append(
                    FunctionDef(
                        qualname=qual,
                        first_line=first,
                        def_line=child.lineno,
                        last_line=child.end_lineno or child.lineno,
                        signature=f"{qual}({params})",
                        params=params,
                        required_params=_required_positional(child.args),
                        in_class=in_class,
                        kind=_kind(child),
                    )
                )
                visit(child, qual + ".", False)
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".", True)

    visit(tree, "", False)
    return found


def _kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    if isinstance(node, ast.AsyncFunctionDef):
        return "async"
    own: list[ast.AST] = list(node.body)
    while own:  # the function's own statements, not those of functions or classes nested in it
        n = own.pop()
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return "generator"
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            own.extend(ast.iter_child_nodes(n))
    return "function"


def _required_positional(args: ast.arguments) -> int:
    positional = args.posonlyargs + args.args
    return len(positional) - len(args.defaults)


def function_text(source: str, first_line: int, last_line: int) -> str:
    """The function's lines (first_line..last_line, 1-based), joined by "\n"."""
    return "\n".join(source.splitlines()[first_line - 1 : last_line])


def source_sha256(source: str, first_line: int, last_line: int) -> str:
    """Hash of the function's text: results are valid while this is unchanged."""
    return hashlib.sha256(function_text(source, first_line, last_line).encode()).hexdigest()


def resolve(file: str | Path, qualname: str | None = None, line: int | None = None) -> tuple[Target, FunctionDef]:
    path = Path(file).resolve()
    source = read_source(path)
    functions = list_functions(source, path)
    fn = _find(functions, path, qualname, line)
    target = Target(
        file=str(path),
        qualname=fn.qualname,
        first_line=fn.first_line,
        last_line=fn.last_line,
        source_sha256=source_sha256(source, fn.first_line, fn.last_line),
        def_line=fn.def_line,
        source=function_text(source, fn.first_line, fn.last_line),
    )
    return target, fn


def _find(functions: list[FunctionDef], path: Path, qualname: str | None, line: int | None) -> FunctionDef:
    if qualname is not None:
        wanted = qualname.replace(".<locals>.", ".")
        for fn in functions:
            if fn.qualname == wanted:
                return fn
        names = ", ".join(f.qualname for f in functions) or "(none)"
        raise bad_input(f"{path.name} has no function {qualname!r}", f"functions in {path}: {names}")
    assert line is not None
    enclosing = [f for f in functions if f.first_line <= line <= f.last_line]
    if enclosing:
        return max(enclosing, key=lambda f: f.first_line)  # the innermost
    spans = ", ".join(f"{f.qualname} ({f.first_line}-{f.last_line})" for f in functions) or "(none)"
    raise bad_input(f"{path.name}:{line} is not inside a function", f"functions in {path}: {spans}")
