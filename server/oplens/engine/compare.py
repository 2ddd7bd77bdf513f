"""The side-by-side summary of several runs (the case study's table), for every front end."""

from __future__ import annotations

from typing import Any

from oplens.records.run import Run


def compare_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One row per run; `speedup` is the first run's device time over this run's."""
    base = runs[0].totals.self_device_us if runs else 0.0
    return [
        {
            "variant": r.target.qualname,
            "run_id": r.run_id,
            "device_label": r.backend.device_label,
            "self_device_us": r.totals.self_device_us,
            "self_cpu_us": r.totals.self_cpu_us,
            "op_calls": r.totals.op_calls,
            "wall_median_us": r.totals.wall_us.median,
            "compile_us": r.compile.compile_us,
            "speedup": base / r.totals.self_device_us if r.totals.self_device_us > 0 else 0.0,
        }
        for r in runs
    ]
