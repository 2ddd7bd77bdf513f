"""The device's ceilings, measured (worker side, torch): the calibration micro-benchmark and its cache.

On the backend's device: a large matmul per dtype (float32; bfloat16; float16 where the device runs
it; on CUDA also float32 on TF32 tensor cores) gives FLOP/s = 2·M·N·K / time; a large copy (b = a)
and a triad (a = b + s·c) give bytes/s, counting the bytes read and written (STREAM's convention: a
CPU's write-allocate reads are not counted). Each kernel is sized from a first call so that one
timed repeat takes about `TARGET_S` (a fast device makes several calls per repeat, between two
synchronisations); the best of `REPEATS` repeats is kept, their spread beside it. The result is a
`DeviceCeilings` with `source: "measured"`, the vendor's figures beside it where the device is a
known one (`analysis/peaks.py`).

`ceilings(backend)` keeps the result per host, backend and device (`records.ceilings.cache_file`)
and reuses it unless asked to measure again; a cache file that cannot be read is measured again.

`python -m oplens.worker.calibrate [--backend B] [--again] [--spec NAME]` (the parent,
`engine/calibrate.py`, never imports torch) prints one JSON line: `{ok: true, ceilings, cache,
reused, cache_error}` or `{ok: false, error: {kind, message, detail}}`.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from oplens.analysis import peaks
from oplens.backends import registry
from oplens.backends.device import Backend
from oplens.backends.registry import BackendUnavailable, resolve
from oplens.records.ceilings import (
    BFLOAT16,
    COPY,
    FLOAT16,
    FLOAT32,
    MEASURED,
    TF32,
    TRIAD,
    DeviceCeilings,
    FigureSpread,
    cache_file,
    load,
    save,
)
from oplens.records.errors import OpLensError
from oplens.records.run import DeviceRoof

TARGET_S = 0.06  # one timed repeat of a kernel (one call on a CPU; several on a fast device)
REPEATS = 3  # timed repeats of a kernel; the best is kept
MATMUL_START = 4096  # the first (sizing) matmul's side on a device; HOST_MATMUL_START on the host
MATMUL_MAX = 16384  # the largest side on a device (three 1 GiB float32 matrices); HOST_MATMUL_MAX on the host
HOST_MATMUL_START, HOST_MATMUL_MAX = 256, 4096
MEMORY_MIN_BYTES = 64 * 2**20  # one array of the copy and triad: at least this, and 4 × the CPU's last cache
MEMORY_MAX_BYTES = 512 * 2**20
DEVICE_MEMORY_BYTES = 2**30  # one array on a device (its caches are far smaller)
SIZING_STEPS = 3  # matmul sizes tried before the timed one, at most
MAX_INNER = 10_000  # calls per repeat, at most
DTYPES = {FLOAT32: torch.float32, BFLOAT16: torch.bfloat16, FLOAT16: torch.float16}


@dataclass
class Calibrated:
    ceilings: DeviceCeilings
    cache: Path
    reused: bool
    cache_error: str = ""  # the result could not be written to the cache (it is still returned)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "ceilings": self.ceilings.to_dict(),
            "cache": str(self.cache),
            "reused": self.reused,
            "cache_error": self.cache_error,
        }


def ceilings(backend: Backend[Any], again: bool = False, spec_name: str = "", env: Mapping[str, str] | None = None) -> Calibrated:
    """The backend's device's ceilings: from the cache where a usable calibration of this host,
    backend and device is there (unless `again`), else measured now and cached. `spec_name` names the
    vendor's figures where the device's name does not (a NeuronCore: "trn2")."""
    host = socket.gethostname()
    device = backend.device_name()
    path = cache_file(host, backend.name, device, env)
    if not again:
        cached = load(path)
        if cached is not None and cached.backend == backend.name and cached.name == device and cached.host == host:
            cached.spec = peaks.spec(spec_name or device)
            return Calibrated(cached, path, reused=True)
    measured = measure(backend, spec_name=spec_name)
    error = ""
    try:
        save(path, measured)
    except OSError as e:
        error = f"cannot write {path}: {e.strerror or e}"
    return Calibrated(measured, path, reused=False, cache_error=error)


def roof(backend: Backend[Any], warnings: list[str]) -> DeviceRoof | None:
    """The device's ceilings for a run's roofline (`ceilings`: calibrated once per host and device, ~2 s the
    first time, cached), asked for by the derivation only where a line has work. A failed calibration must
    not lose the run: it is a warning."""
    try:
        c = ceilings(backend).ceilings
    except Exception as e:
        warnings.append(f"no roofline: calibrating the device failed ({type(e).__name__}: {e}); "
                        "oplens calibrate --again tells more")  # fmt: skip
        return None
    return DeviceRoof(name=c.name, dtype_peaks=dict(c.dtype_peaks), bytes_per_s=c.bytes_per_s,
                      source=c.source, measured_at=c.measured_at)  # fmt: skip


def measure(
    backend: Backend[Any], spec_name: str = "", target_s: float | None = None, repeats: int | None = None
) -> DeviceCeilings:
    """Calibrate now: the matmuls per dtype, the copy and the triad, on the backend's device (one
    repeat of each about `target_s`, default `TARGET_S`; `repeats`, default `REPEATS`)."""
    started = time.perf_counter()
    target_s = TARGET_S if target_s is None else target_s
    repeats = REPEATS if repeats is None else repeats
    device = backend.device()
    facts = backend.facts
    found = DeviceCeilings(
        name=backend.device_name(),
        source=MEASURED,
        backend=backend.name,
        host=socket.gethostname(),
        details={"torch": torch.__version__, "device": str(device), "target_s": target_s, "repeats": repeats},
    )
    if not facts.on_device:
        found.details["threads"] = torch.get_num_threads()
        found.details["model"] = cpu_model()
    skipped: dict[str, str] = {}
    n0, n_max = (MATMUL_START, MATMUL_MAX) if facts.on_device else (HOST_MATMUL_START, HOST_MATMUL_MAX)
    runs: list[tuple[str, torch.dtype]] = list(DTYPES.items())
    if facts.tf32_matmul:
        runs.insert(1, (TF32, torch.float32))
    for key, dtype in runs:
        reason = _unsupported(dtype, device, backend)
        if reason:
            skipped[key] = reason
            continue
        with _float32_matmul("high" if key == TF32 else "highest", enabled=facts.tf32_matmul):
            spread = _matmul(backend, dtype, n0, n_max, target_s, repeats)
        found.dtype_peaks[key] = spread.best
        found.spread[key] = spread
    elements = memory_elements(facts.on_device)
    for key, spread in _memory(backend, elements, target_s, repeats).items():
        found.memory[key] = spread.best
        found.spread[key] = spread
    found.bytes_per_s = max(found.memory.values())
    if skipped:
        found.details["skipped"] = skipped
    found.spec = peaks.spec(spec_name or found.name)
    found.seconds = time.perf_counter() - started
    found.measured_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    return found


# ---------------------------------------------------------------------------- the kernels


def _timed(fn: Callable[[], object], sync: Callable[[], None], inner: int) -> float:
    """Seconds per call: `inner` calls between two synchronisations."""
    sync()
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    sync()
    return (time.perf_counter() - t0) / inner


def _spread(times: list[float], work: float, size: list[int], inner: int) -> FigureSpread:
    rates = sorted((work / t for t in times), reverse=True)
    return FigureSpread(
        best=rates[0], median=statistics.median(rates), worst=rates[-1], repeats=len(rates), seconds=min(times) * inner,
        size=size, inner=inner,
    )  # fmt: skip


def _inner(per_call_s: float, target_s: float) -> int:
    return max(1, min(MAX_INNER, math.ceil(target_s / max(per_call_s, 1e-9))))


def _randn(shape: tuple[int, ...], dtype: torch.dtype, backend: Backend[Any]) -> torch.Tensor:
    try:
        return torch.randn(shape, dtype=dtype, device=backend.device())
    except (RuntimeError, NotImplementedError):  # a device without its own generator: made here, moved there
        placed: torch.Tensor = backend.place(torch.randn(shape, dtype=dtype))
        return placed


def _matmul(backend: Backend[Any], dtype: torch.dtype, n0: int, n_max: int, target_s: float, repeats: int) -> FigureSpread:
    """A square matmul sized from a first one of side `n0` so that a call takes about `target_s`
    (at most side `n_max`); the first call at each size is a warm-up (on Neuron it compiles)."""
    sync = backend.synchronize

    def operands(side: int) -> Callable[[], object]:
        return functools.partial(torch.mm, _randn((side, side), dtype, backend), _randn((side, side), dtype, backend))

    n = n0
    mm = operands(n)
    _timed(mm, sync, 1)
    t = _timed(mm, sync, 1)
    for _ in range(SIZING_STEPS):  # a larger matmul runs faster per FLOP: grown in steps
        grown = min(n_max, int(n * (target_s / t) ** (1 / 3)) // 64 * 64)
        if t >= target_s * 0.6 or grown <= n:
            break
        n = grown
        mm = operands(n)
        t = _timed(mm, sync, 1)  # also the warm-up at this size (a compile on Neuron)
    inner = _inner(t, target_s)
    times = [_timed(mm, sync, inner) for _ in range(repeats)]
    best = _spread(times, 2.0 * n * n * n, [n, n, n], inner)
    # A ceiling is the most the device reaches: on a CPU a smaller matmul can fit its caches better
    # and run faster per FLOP, so the half size is timed too (an eighth of the time) and the faster kept.
    half = n // 2 // 64 * 64
    if half >= 64:
        small = operands(half)
        _timed(small, sync, 1)
        inner_half = _inner(_timed(small, sync, 1), target_s / 4)
        other = _spread([_timed(small, sync, inner_half) for _ in range(repeats)], 2.0 * half**3, [half] * 3, inner_half)
        if other.best > best.best:
            best = other
    return best


def _memory(backend: Backend[Any], elements: int, target_s: float, repeats: int) -> dict[str, FigureSpread]:
    """b = a (copy) and a = b + s·c (triad) on float32 arrays of `elements`, each touched first."""
    sync = backend.synchronize
    device = backend.device()
    try:
        a = torch.ones(elements, dtype=torch.float32, device=device)
        b = torch.full((elements,), 2.0, dtype=torch.float32, device=device)
        c = torch.full((elements,), 0.5, dtype=torch.float32, device=device)
    except (RuntimeError, NotImplementedError):
        a, b, c = (backend.place(torch.full((elements,), v, dtype=torch.float32)) for v in (1.0, 2.0, 0.5))
    size = 4 * elements
    out: dict[str, FigureSpread] = {}
    for key, fn, moved in (
        (COPY, lambda: b.copy_(a), 2 * size),
        (TRIAD, lambda: torch.add(b, c, alpha=3.0, out=a), 3 * size),
    ):
        t = _timed(fn, sync, 1)  # the arrays' pages are touched: this call sizes the repeats and warms up
        inner = _inner(t, target_s)
        times = [_timed(fn, sync, inner) for _ in range(repeats)]
        out[key] = _spread(times, float(moved), [elements], inner)
    return out


def _unsupported(dtype: torch.dtype, device: torch.device, backend: Backend[Any]) -> str:
    """Why this device cannot run a matmul in `dtype` ("" where it can): a tiny one is tried."""
    try:
        x = _randn((8, 8), dtype, backend)
        torch.mm(x, x)
        backend.synchronize()
    except Exception as e:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:200]
    return ""


@contextmanager
def _float32_matmul(precision: str, enabled: bool) -> Iterator[None]:
    """float32 matmuls where TF32 tensor cores exist: "highest" (FP32) or "high" (TF32), restored after."""
    if not enabled:
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def memory_elements(on_device: bool) -> int:
    """float32 elements of one memory-kernel array: well past the caches (a CPU's last one × 4)."""
    if on_device:
        return DEVICE_MEMORY_BYTES // 4
    return min(MEMORY_MAX_BYTES, max(MEMORY_MIN_BYTES, 4 * last_cache_bytes())) // 4


def last_cache_bytes() -> int:
    """The CPU's largest cache (Linux sysfs), 0 where it cannot be read."""
    best = 0
    for size in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = size.read_text().strip().upper()
            best = max(best, int(text.rstrip("KMG")) * {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1))
        except (OSError, ValueError):
            continue
    return best


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---------------------------------------------------------------------------- the process


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m oplens.worker.calibrate")
    p.add_argument("--backend", default=registry.DEFAULT)
    p.add_argument("--again", action="store_true")
    p.add_argument("--spec", default="")
    args = p.parse_args(argv)
    try:
        backend = resolve(args.backend)
        answer: dict[str, Any] = ceilings(backend, again=args.again, spec_name=args.spec).to_dict()
        answer["note"] = backend.note
    except BackendUnavailable as e:
        answer = {"ok": False, "error": OpLensError("backend_unavailable", str(e)).to_dict()}
    except Exception as e:
        failed = OpLensError("crash", f"the calibration failed: {type(e).__name__}: {e}", traceback.format_exc())
        answer = {"ok": False, "error": failed.to_dict()}
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as the worker: a vendor module's threads must not hang the exit
