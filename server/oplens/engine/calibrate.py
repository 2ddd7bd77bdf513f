"""`oplens calibrate`: the device's ceilings, measured (parent side, no torch).

Runs `python -m oplens.worker.calibrate --backend B [--again] [--spec NAME]` (worker/calibrate.py:
the matmuls, copy and triad on the device, and the cache per host and device) with a timeout, and
reads back its one JSON line as a `Calibration`: the measured `DeviceCeilings`, the vendor's figures
beside them where the device is a known one, the ratios measured/spec, and where the cache is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.engine.process import STARTUP_TIMEOUT_S
from oplens.records.ceilings import DeviceCeilings
from oplens.records.errors import OpLensError, bad_input

# A CPU calibration takes a few seconds; a Neuron one compiles each matmul size first. The worker's
# torch import has its own allowance (STARTUP_TIMEOUT_S) on top.
DEFAULT_TIMEOUT_S = 600.0
TAIL_LINES = 20


@dataclass
class CalibrateRequest:
    backend: str = registry.DEFAULT
    again: bool = False  # measure even where a cached calibration exists
    spec: str = ""  # the vendor figures to set beside, by name, where the device's own name does not say ("trn2")
    timeout_s: float = DEFAULT_TIMEOUT_S
    workspace: Path = field(default_factory=Path.cwd)
    env: Mapping[str, str] | None = None  # the worker's environment (default: this one)


@dataclass
class Calibration:
    ceilings: DeviceCeilings
    cache: str  # the cache file (written, or read when `reused`)
    reused: bool  # from the cache, not measured now
    cache_error: str = ""  # measured, but the cache could not be written
    note: str = ""  # the backend's note (`auto`'s choice)

    def ratios(self) -> dict[str, float]:
        return self.ceilings.ratios()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ceilings": self.ceilings.to_dict(),
            "ratios": self.ratios(),
            "cache": self.cache,
            "reused": self.reused,
            "cache_error": self.cache_error,
            "note": self.note,
        }


def calibrate(req: CalibrateRequest) -> Calibration:
    """The ceilings of the backend's device, from its cache or measured now, in a worker-side process."""
    if req.backend not in registry.NAMES:
        raise bad_input(f"unknown backend {req.backend!r}", f"choose one of: {', '.join(registry.NAMES)}")
    cmd = [sys.executable, "-m", "oplens.worker.calibrate", "--backend", req.backend]
    cmd += ["--again"] * req.again + (["--spec", req.spec] if req.spec else [])
    limit = req.timeout_s + STARTUP_TIMEOUT_S
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=limit, cwd=req.workspace, stdin=subprocess.DEVNULL,
            env=dict(req.env) if req.env is not None else None,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        raise OpLensError(
            "timeout",
            f"the calibration on {req.backend} took more than {limit:g} s and was stopped",
            "give it longer with --timeout S (a Neuron device compiles each matmul size first); " + _tail(_text(e.stderr)),
        ) from None
    except OSError as e:
        raise OpLensError("crash", f"cannot start {sys.executable}: {e}") from None
    answer = _answer(proc.stdout)
    if answer is None:
        raise OpLensError(
            "crash",
            f"the calibration process ended without an answer (exit status {proc.returncode})",
            _tail(proc.stderr) or "it printed nothing on stderr",
        )
    if not answer.get("ok"):
        raise OpLensError.from_dict(answer.get("error") or {})
    return Calibration(
        ceilings=DeviceCeilings.from_dict(answer.get("ceilings") or {}),
        cache=str(answer.get("cache", "")),
        reused=bool(answer.get("reused")),
        cache_error=str(answer.get("cache_error", "")),
        note=str(answer.get("note", "")),
    )


def _answer(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def _tail(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()][-TAIL_LINES:]
    return ("its last output:\n" + "\n".join(lines)) if lines else ""
