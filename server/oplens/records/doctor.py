"""What `oplens doctor` finds on a host: one `Check` per named line, and the `DoctorReport`.

A check's `status` is `ok`, `warning` (profiling works, something is worth fixing) or `problem`
(it does not work until fixed); `fix` says what to do where the status is not `ok`; `remedy` names
what an editor can do about it itself (Check Setup's checklist: its buttons), `command` the command
line that fixes it where one does. The report's `to_dict` is what `oplens doctor --json -` prints:
`{backend, checks [{name, status, detail, fix, remedy, command}], usable}`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["ok", "warning", "problem"]
OK: Status = "ok"
WARNING: Status = "warning"
PROBLEM: Status = "problem"

# What an editor can do about a check itself, beside showing its fix (extension/src/doctor/checklist.ts):
# run `command` (torch's install for this host's device), pick another interpreter (one with the vendor's
# module), install OpLens into the interpreter, or pick another backend.
Remedy = Literal["", "install_torch", "select_interpreter", "install_oplens", "choose_backend"]


@dataclass(frozen=True)
class Check:
    name: str  # what was checked, in the user's words: "torch", "tiny profile", "NEURON_RT_NUM_CORES"
    status: Status
    detail: str  # what was found
    fix: str = ""  # what to do about it (empty where there is nothing to do)
    remedy: Remedy = ""  # what an editor can do about it itself ("" where only the fix can be shown)
    command: str = ""  # the command line that fixes it, where one does ("install_torch": the host's pip install)


@dataclass
class DoctorReport:
    backend: str  # what the user asked for: auto | cpu | cuda | neuron
    checks: list[Check] = field(default_factory=list)
    exit_code: int = 0  # 0 usable; 5 the backend (or torch) is unavailable; 2 a bad --out; 1 another problem

    @property
    def usable(self) -> bool:
        """Profiling works here: no check is a problem (warnings allowed)."""
        return all(c.status != PROBLEM for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "checks": [dataclasses.asdict(c) for c in self.checks], "usable": self.usable}
