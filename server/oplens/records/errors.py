"""Errors a user can act on, each with the CLI exit code of docs/architecture.md.

Every failure that reaches a user is an `OpLensError`: a message that names the problem and
the fix, never a stack trace from OpLens's insides. The user's own exception keeps its
traceback (`detail`), trimmed to the user's frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# kind → exit code (docs/architecture.md "Exit codes")
EXIT_CODES = {
    "bad_input": 2,  # file, function, arguments, options
    "not_called": 2,  # oplens run: the program never called the target (often enough)
    "user_exception": 3,  # the user's code raised
    "program_failed": 3,  # oplens run: the program raised or exited non-zero before the window was complete
    "timeout": 4,
    "crash": 4,  # the worker died: segfault, os._exit, OOM kill
    "cancelled": 4,
    "backend_unavailable": 5,
    "tool_failed": 4,  # an external tool OpLens runs (neuron-explorer) failed
}

# How allocators word a failed allocation: CUDA's and the Neuron runtime's "out of memory", the
# CPU allocator's "can't allocate memory", XLA's RESOURCE_EXHAUSTED, ...
OUT_OF_MEMORY = re.compile(
    r"out of memory|can't allocate memory|\bOOM\b|RESOURCE_EXHAUSTED|failed to allocate|insufficient (device )?memory", re.I
)


@dataclass
class OpLensError(Exception):
    kind: str
    message: str
    detail: str = ""  # e.g. the user's traceback, or the tail of the worker's log
    location: dict[str, Any] = field(default_factory=dict)  # {file, line, function} of the user's line

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.kind, 4)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "detail": self.detail, "location": self.location}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OpLensError:
        return cls(
            kind=str(data.get("kind", "crash")),
            message=str(data.get("message", "unknown error")),
            detail=str(data.get("detail", "")),
            location=dict(data.get("location") or {}),
        )


def bad_input(message: str, detail: str = "") -> OpLensError:
    return OpLensError("bad_input", message, detail)
