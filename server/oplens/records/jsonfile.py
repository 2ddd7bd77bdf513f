"""A JSON file read with orjson where the environment has it, else with the standard library's json:
the same values either way (pure: no torch).

orjson is compiled, so the editor extension cannot bundle it (arrays.py says the same of numpy); it
reads a stored trace faster than json (docs/benchmarks.md, bench/pure_python.py). What orjson refuses
and json takes (NaN and Infinity, as Python writes them) is read by json. (orjson reads an integer
beyond 64 bits as a float; no file OpLens reads has one.) `OPLENS_PURE_PYTHON=1` uses json even where
orjson is there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

try:
    if os.environ.get("OPLENS_PURE_PYTHON", "") not in ("", "0"):
        raise ImportError("OPLENS_PURE_PYTHON")
    import orjson

    ORJSON = True
except ImportError:
    ORJSON = False


def loads(data: bytes | str) -> Any:
    """The value of a JSON text."""
    if ORJSON:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # NaN, Infinity: json reads them
    return json.loads(data)


def read(path: Path) -> Any:
    """The value of the JSON file at `path` (UTF-8)."""
    return loads(path.read_bytes())


def dumps(value: Any) -> bytes:
    """`value` as compact JSON (UTF-8), with orjson where the environment has it (a million trace events: seconds
    instead of a minute with json's streaming encoder); json where orjson refuses it (NaN, an int beyond 64 bits)."""
    if ORJSON:
        try:
            return orjson.dumps(value)
        except TypeError:
            pass
    return json.dumps(value, separators=(",", ":")).encode()
