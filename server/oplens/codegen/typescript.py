"""The records as TypeScript: each dataclass as an interface and as a reader of its JSON.

`oplens.codegen.generate` writes `extension/shared/generated/*.ts` with this (`make generate`); the
extension reads every `result.json` and `oplens/result` through those readers, so the Python
dataclasses are the one definition of each record and of each field's status on the wire:

- a field without a default is **required**: its reader fails, naming the field's path
  (`lines[0].self_device_us is missing`), where `from_dict` would raise;
- a field with a default is **optional**: absent (or null), it takes that default, as `from_dict`
  gives it (`dataclasses.asdict` of a record default);
- `X | None` is `X | null`; `list[X]` is `X[]`; `dict[str, V]` is `Record<string, V>`; `int` and
  `float` are `number`; keys the record does not know are ignored (a newer writer's extra fields).

The readers are built on the `Reader` of `extension/shared/reader.ts` (its import is given). Each
class's docstring and each field's comments (the line's own, and the comment lines right above it)
become TSDoc; a field with a default carries it as `@default`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import re
import textwrap
import tokenize
import types
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Union

Json = Any
NUMBER = (int, float)
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_TOOL_COMMENT = re.compile(r"^(type:|noqa|pragma)")


class Untranslatable(TypeError):
    """A field whose type has no TypeScript form here (the message names the field and the type)."""


# ---- TypeScript literals and comments --------------------------------------------------------------


def literal(value: Json, indent: str = "", width: int = 100) -> str:
    """A JSON value as a TypeScript literal: `'text'`, `0`, `1.5`, `true`, `null`, `[...]`, `{ key: ... }`;
    a list or an object longer than `width` one item a line (each line after the first at `indent`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    if isinstance(value, str):
        return "'" + "".join(_ESCAPES.get(ch) or (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 else ch) for ch in value) + "'"
    if isinstance(value, (list, tuple, dict)):
        if not value:
            return "{}" if isinstance(value, dict) else "[]"
        inner = indent + "  "
        if isinstance(value, dict):
            items = [f"{key(k)}: {literal(v, inner, width)}" for k, v in value.items()]
            one_line, opening, closing = "{ " + ", ".join(items) + " }", "{", "}"
        else:
            items = [literal(v, inner, width) for v in value]
            one_line, opening, closing = "[" + ", ".join(items) + "]", "[", "]"
        if len(indent) + len(one_line) <= width and "\n" not in one_line:
            return one_line
        return opening + "\n" + "".join(f"{inner}{item},\n" for item in items) + indent + closing
    raise Untranslatable(f"{value!r} is not JSON")


def key(name: str) -> str:
    """An object key: bare where it is an identifier, else quoted."""
    return name if _IDENTIFIER.match(name) else literal(name)


def doc(lines: Sequence[str], indent: str = "") -> list[str]:
    """TSDoc for `lines` (none: nothing)."""
    text = [line.replace("*/", "*\u200b/").rstrip() for line in lines]
    while text and not text[-1]:
        text.pop()
    if not text:
        return []
    if len(text) == 1:
        return [f"{indent}/** {text[0]} */"]
    return [f"{indent}/**", *(f"{indent} *{' ' + t if t else ''}" for t in text), f"{indent} */"]


# ---- what Python says about a record ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    type: Any  # the resolved hint
    required: bool
    default: Json = None  # the default as JSON (where not required)
    comments: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Record:
    cls: type
    fields: tuple[Field, ...]
    docstring: str = ""

    @property
    def name(self) -> str:
        return self.cls.__name__


def as_json(value: Any) -> Json:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def default_of(f: dataclasses.Field[Any]) -> tuple[bool, Json]:
    """(required, its default as JSON)."""
    if f.default is not dataclasses.MISSING:
        return False, as_json(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return False, as_json(f.default_factory())
    return True, None


def field_comments(cls: type) -> dict[str, tuple[str, ...]]:
    """Each field's comments in the class's source: the comment lines right above it, then its own."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # made at run time (make_dataclass): no source, no comments
        return {}
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and not _TOOL_COMMENT.match(text := tok.string.lstrip("#").strip()):
            comments[tok.start[0]] = text
    lines = source.splitlines()
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    out: dict[str, tuple[str, ...]] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        above: list[str] = []
        line = stmt.lineno - 1
        while line >= 1 and lines[line - 1].strip().startswith("#"):
            above.insert(0, comments.get(line, ""))
            line -= 1
        own = [comments[n] for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1) if n in comments]
        out[stmt.target.id] = (*above, *own)
    return out


def record(cls: type) -> Record:
    if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        raise Untranslatable(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    comments: dict[str, tuple[str, ...]] = {}
    for klass in reversed(cls.__mro__):  # an inherited field keeps its comments, unless redeclared
        if dataclasses.is_dataclass(klass):
            comments.update(field_comments(klass))
    fields = []
    for f in dataclasses.fields(cls):
        required, default = default_of(f)
        fields.append(Field(f.name, hints[f.name], required, default, comments.get(f.name, ())))
    own_doc = cls.__doc__ if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}(") else ""  # not the generated one
    return Record(cls, tuple(fields), inspect.cleandoc(own_doc) if own_doc else "")


def nullable(tp: Any) -> tuple[bool, Any]:
    """(whether `tp` admits None, the type without None)."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise Untranslatable(f"{tp} is a union of several types")
        return len(args) < len(typing.get_args(tp)), args[0]
    return False, tp


def records(roots: Iterable[type]) -> list[Record]:
    """Every dataclass reachable from `roots` through field types, in the order of their source
    (module, then line)."""
    seen: dict[type, Record] = {}

    def visit(tp: Any) -> None:
        _, tp = nullable(tp)
        for arg in typing.get_args(tp):
            visit(arg)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type) and tp not in seen:
            seen[tp] = record(tp)
            for f in seen[tp].fields:
                visit(f.type)

    for root in roots:
        visit(root)

    def where(cls: type) -> tuple[str, int]:
        try:
            return cls.__module__, inspect.getsourcelines(cls)[1]
        except (OSError, TypeError):
            return cls.__module__, 1 << 30
    return sorted(seen.values(), key=lambda r: where(r.cls))


# ---- the TypeScript ----------------------------------------------------------------------------


def ts_type(tp: Any, where: str) -> str:
    optional, tp = nullable(tp)
    origin = typing.get_origin(tp)
    if tp is bool:
        out = "boolean"
    elif tp in NUMBER:
        out = "number"
    elif tp is str:
        out = "string"
    elif tp is Any or tp is object:
        out = "unknown"
    elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
        out = tp.__name__
    elif origin is list:
        (item,) = typing.get_args(tp)
        inner = ts_type(item, where)
        out = f"({inner})[]" if " " in inner else f"{inner}[]"
    elif origin is dict:
        k, v = typing.get_args(tp)
        if k is not str:
            raise Untranslatable(f"{where}: {tp}: JSON keys are strings")
        out = f"Record<string, {ts_type(v, where)}>"
    elif origin is Literal:
        out = " | ".join(literal(a) for a in typing.get_args(tp))
    else:
        raise Untranslatable(f"{where}: no TypeScript for {tp!r}")
    return f"{out} | null" if optional else out


def reader_name(cls: type) -> str:
    return f"read{cls.__name__}"


_GUARDS = {bool: "isBoolean", int: "isNumber", float: "isNumber", str: "isString"}


def guard(tp: Any, where: str) -> str:
    """The `Reader.record` guard for a dict's values (entries that fail it are dropped)."""
    if tp is Any or tp is object:
        return "isJson"
    if tp in _GUARDS:
        return _GUARDS[tp]
    raise Untranslatable(f"{where}: a dict of {tp!r} (only of JSON scalars or Any)")


def read_present(tp: Any, k: str, where: str) -> str:
    """The expression that reads key `k` of `r` as `tp` (not null), failing where it is missing."""
    q = literal(k)
    origin = typing.get_origin(tp)
    if tp is bool:
        return f"r.bool({q})"
    if tp in NUMBER:
        return f"r.num({q})"
    if tp is str:
        return f"r.str({q})"
    if origin is Literal:
        return f"r.oneOf({q}, {literal(list(typing.get_args(tp)))})"
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return f"r.obj({q}, {reader_name(tp)})"
    if origin is list:
        (item,) = typing.get_args(tp)
        return _read_list(item, k, where, required=True)
    if origin is dict:
        return f"r.record({q}, {guard(typing.get_args(tp)[1], where)}, false)"
    raise Untranslatable(f"{where}: no reader for {tp!r}")


def _read_list(item: Any, k: str, where: str, required: bool) -> str:
    q = literal(k)
    tail = ", false" if required else ""
    if item is str:
        return f"r.strings({q}{tail})"
    if item in NUMBER and item is not bool:
        return f"r.numbers({q}{tail})"
    if dataclasses.is_dataclass(item) and isinstance(item, type):
        return f"r.list({q}, {reader_name(item)}{tail})"
    raise Untranslatable(f"{where}: a list of {item!r} (only of records, strings or numbers)")


def read_field(f: Field, where: str, indent: str = "    ") -> str:
    """The expression that reads field `f` with its status: required, or its default where absent."""
    can_be_null, tp = nullable(f.type)
    q = literal(f.name)
    present = read_present(tp, f.name, where)
    if f.required:
        return f"r.isNull({q}) ? null : {present}" if can_be_null else present
    if f.default is None:
        if not can_be_null:
            raise Untranslatable(f"{where}: default None for a type without None ({f.type})")
        return f"r.has({q}) ? {present} : null"
    if can_be_null:  # a default other than None, and null allowed: null stays null
        return f"r.isNull({q}) ? null : r.has({q}) ? {present} : {literal(f.default, indent)}"
    origin = typing.get_origin(tp)
    if tp in (bool, str, *NUMBER) and isinstance(f.default, (bool, str, *NUMBER)):
        method = "bool" if tp is bool else "str" if tp is str else "num"
        return f"r.{method}({q}, {literal(f.default)})"
    if origin is list and f.default == []:
        return _read_list(typing.get_args(tp)[0], f.name, where, required=False)
    if origin is dict and f.default == {}:
        return f"r.record({q}, {guard(typing.get_args(tp)[1], where)})"
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if _all_defaults(tp, f.default):  # its defaults are the record's own: written once, in its reader
            return f"r.objOrDefaults({q}, {reader_name(tp)})"
        return f"r.obj({q}, {reader_name(tp)}, () => ({literal(f.default, indent)}))"
    return f"r.has({q}) ? {present} : {literal(f.default, indent)}"


def _all_defaults(tp: type, default: Json) -> bool:
    """`default` (as JSON) is the record `tp` with every field at its default (`tp()`)."""
    try:
        return bool(default == as_json(tp()))
    except TypeError:  # a field without a default
        return False


def interface(rec: Record) -> list[str]:
    out = doc(rec.docstring.splitlines())
    out.append(f"export interface {rec.name} {{")
    for f in rec.fields:
        lines = list(f.comments)
        if not f.required:
            lines.append(f"@default {literal(f.default, width=1 << 30)}")
        out += doc(lines, "  ")
        out.append(f"  {key(f.name)}: {ts_type(f.type, f'{rec.name}.{f.name}')};")
    out.append("}")
    return out


def reader(rec: Record) -> list[str]:
    required = [f.name for f in rec.fields if f.required]
    says = f"requires {', '.join(required)}" if required else "requires nothing"
    article = "An" if rec.name[:1] in "AEIOU" else "A"
    out = [f"/** {article} `{rec.name}` from its JSON: {says}; the rest take their defaults. */",
           f"export function {reader_name(rec.cls)}(r: Reader): {rec.name} {{"]
    if not rec.fields:
        return [*out, "  return {};", "}"]
    out.append("  return {")
    for f in rec.fields:
        out.append(f"    {key(f.name)}: {read_field(f, f'{rec.name}.{f.name}')},")
    out += ["  };", "}"]
    return out


def constant(name: str, value: Json, comment: Sequence[str] = (), as_const: bool = True) -> list[str]:
    """`export const NAME = <value> as const;`, with its TSDoc."""
    return [*doc(comment), f"export const {name} = {literal(value)}{' as const' if as_const else ''};"]


def banner(generator: str, sources: Sequence[str]) -> list[str]:
    return [
        f"// GENERATED by {generator} from {', '.join(sources)}.",
        "// Do not edit: change the Python and run `make generate` (a test fails while this file is stale).",
    ]


def records_module(roots: Sequence[type], *, generator: str, reader_import: str, head: Sequence[str] = ()) -> str:
    """The TypeScript module of every record reachable from `roots`: its interfaces and readers,
    after `head` (constants, comments)."""
    recs = records(roots)
    sources = sorted({r.cls.__module__ for r in recs})
    readers = [line for rec in recs for line in [*reader(rec), ""]]
    used = {name for line in readers for name in re.findall(r"\b(?:isJson|isNumber|isString|isBoolean)\b", line)}
    lines = [*banner(generator, sources), "", f"import {{ {', '.join(sorted(['Reader', *used]))} }} from '{reader_import}';", ""]
    if head:
        lines += [*head, ""]
    for rec in recs:
        lines += [*interface(rec), ""]
    lines += ["// ---- readers ----", "", *readers]
    return "\n".join(lines).rstrip("\n") + "\n"


def constants_module(parts: Sequence[Sequence[str]], *, generator: str, sources: Sequence[str]) -> str:
    """A TypeScript module of constants: `parts` are blocks of lines (from `constant`), one blank line apart."""
    lines = [*banner(generator, sources), ""]
    for part in parts:
        lines += [*part, ""]
    return "\n".join(lines).rstrip("\n") + "\n"
