"""Plain JSON from a client → typed records, with cattrs (as lsprotocol itself does).

One converter for the initialization options (`settings.py`) and the commands' arguments
(`arguments.py`): dataclass fields are camelCase on the wire (`hint_threshold` ↔ `hintThreshold`)
unless a field names its own wire key (`wire("run_id")`); values are taken as JSON gives them,
never coerced (`"3"` is not an integer, `true` is not a number). A value that does not fit raises
`Invalid`, whose problems name each bad field by its wire path (`pathMappings[0].host`).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, override

T = TypeVar("T")
WIRE = "oplens.wire"  # dataclass field metadata: the field's key on the wire, when not its camelCase name


def wire(key: str, **kwargs: Any) -> Any:
    """A dataclass field whose wire key is `key` (e.g. `run_id`, kept as the commands always had it)."""
    return dataclasses.field(metadata={WIRE: key}, **kwargs)


def not_on_the_wire(**kwargs: Any) -> Any:
    """A dataclass field the converter leaves at its default (filled in by other means)."""
    return dataclasses.field(metadata={WIRE: None}, **kwargs)


def camel(name: str) -> str:
    """snake_case → camelCase: `timeout_seconds` → `timeoutSeconds`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def snake(key: str) -> str:
    """camelCase → snake_case: `maxEventsPerNc` → `max_events_per_nc`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def wire_key(f: dataclasses.Field[Any]) -> str | None:
    key = f.metadata.get(WIRE, camel(f.name))
    return None if key is None else str(key)


class Invalid(ValueError):
    """Data that does not fit a record: `problems` are sentences, each starting with a wire path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _strict(kind: type[Any], allowed: tuple[type[Any], ...], what: str) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, bool) and kind is not bool or not isinstance(value, allowed):
            raise TypeError(f"must be {what} (got {_describe(value)})")
        return kind(value)

    return structure


def _object(value: Any, _: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"must be an object (got {_describe(value)})")
    return dict(value)


def _make_converter() -> cattrs.Converter:
    c = cattrs.Converter(detailed_validation=True)
    c.register_structure_hook(str, _strict(str, (str,), "a string"))
    c.register_structure_hook(int, _strict(int, (int,), "an integer"))
    c.register_structure_hook(float, _strict(float, (int, float), "a number"))
    c.register_structure_hook(bool, _strict(bool, (bool,), "true or false"))
    c.register_structure_hook_func(lambda tp: tp == dict[str, Any], _object)

    def dataclass_hook(cls: type[Any]) -> Callable[[Any, Any], Any]:
        renames: dict[str, Any] = {f.name: override(rename=key) if (key := wire_key(f)) else override(omit=True)
                                   for f in dataclasses.fields(cls)}
        fn = make_dict_structure_fn(cls, c, **renames)

        def structure(value: Any, tp: Any) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"must be an object (got {_describe(value)})")
            return fn(value, tp)

        return structure

    def list_hook(tp: Any) -> Callable[[Any, Any], Any]:
        items = list_structure_factory(tp, c)

        def structure(value: Any, _: Any) -> Any:
            if not isinstance(value, list):  # a string or an object is iterable, not a list
                raise TypeError(f"must be a list (got {_describe(value)})")
            return items(value, tp)

        return structure

    def dict_hook(tp: Any) -> Callable[[Any, Any], Any]:
        entries = mapping_structure_factory(tp, c)

        def structure(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):  # a list of pairs is no object
                raise TypeError(f"must be an object (got {_describe(value)})")
            return entries(value, tp)

        return structure

    c.register_structure_hook_factory(dataclasses.is_dataclass, dataclass_hook)
    c.register_structure_hook_factory(_is_list, list_hook)
    c.register_structure_hook_factory(_is_typed_dict, dict_hook)  # dict[str, str]: each value checked
    return c


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) is list


def _is_typed_dict(tp: Any) -> bool:
    return typing.get_origin(tp) is dict and tp != dict[str, Any]


converter = _make_converter()


def structure(data: Any, cls: type[T], path: str = "") -> T:
    """`data` as a `cls`, or `Invalid` naming every bad field from `path` on."""
    try:
        return converter.structure(data, cls)
    except Exception as e:  # cattrs gathers what failed; any other failure is the data's too
        raise Invalid(problems(e, path, cls)) from None


def problems(e: BaseException, path: str, cls: Any = None) -> list[str]:
    """What went wrong, one sentence per bad value, by wire path."""
    if isinstance(e, ClassValidationError):
        keys = {f.name: wire_key(f) or f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        found: list[str] = []
        with_notes, without = e.group_exceptions()
        for sub, note in with_notes:
            key = keys.get(note.name, note.name)
            found += problems(sub, f"{path}.{key}" if path else key, note.type)
        return found + [p for sub in without for p in problems(sub, path)]
    if isinstance(e, IterableValidationError):
        found = []
        with_notes_i, without_i = e.group_exceptions()
        for sub, inote in with_notes_i:
            found += problems(sub, f"{path}[{inote.index}]", inote.type)
        return found + [p for sub in without_i for p in problems(sub, path)]
    where = path or "the value"
    if isinstance(e, KeyError):
        return [f"{where} is missing"]
    return [f"{where} {e}" if str(e).startswith("must") else f"{where} is not valid ({e})"]
