"""`oplens calibrate [--backend B] [--again] [--spec NAME] [--json PATH|-] [--timeout S]`: the device's ceilings.

Arguments → `engine.calibrate.calibrate` (a worker-side process measures, or reads the cache) → a
table: per dtype the measured FLOP/s, the vendor's figure beside it and the ratio measured/spec, then
the memory bandwidth (copy and triad); where the cache is and when it was measured. `--json -` prints
only the calibration object.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from oplens.analysis import peaks
from oplens.backends import registry
from oplens.engine.calibrate import DEFAULT_TIMEOUT_S, CalibrateRequest, Calibration, calibrate
from oplens.records.ceilings import COPY, TRIAD

HELP = "measure this device's ceilings (peak FLOP/s per dtype, memory bandwidth), cached per host and device"
DASH = "—"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default=registry.DEFAULT, choices=registry.NAMES,
                   help=f"the device to calibrate (default: {registry.DEFAULT}, as a profile)")
    p.add_argument("--again", action="store_true", help="measure again even where a cached calibration exists")
    p.add_argument("--spec", default="", metavar="NAME",
                   help="the vendor figures to compare with where the device's name does not say which (a NeuronCore): "
                   f"{', '.join(peaks.keys())}")  # fmt: skip
    p.add_argument("--json", metavar="PATH", help="write the calibration as JSON to PATH ('-': stdout, nothing else)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="seconds for the measurement")


def run(args: argparse.Namespace, out: Console, err: Console, emit_json: Callable[[str | None, Any], None]) -> int:
    req = CalibrateRequest(backend=args.backend, again=args.again, spec=args.spec, timeout_s=args.timeout)
    if args.json == "-":
        result = calibrate(req)
    else:
        with err.status(f"oplens calibrate: {'measuring' if args.again else 'reading the cache or measuring'} …"):
            result = calibrate(req)
    emit_json(args.json, result.to_dict())
    if args.json != "-":
        show(out, result)
    return 0


def rate(n: float, unit: str) -> str:
    """`1.2e12, "FLOP/s"` → `1.20 TFLOP/s`: decimal steps, as the vendors write them."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {prefix}{unit}"
    return f"{n:,.0f} {unit}"


def show(console: Console, result: Calibration) -> None:
    c = result.ceilings
    spec = c.spec
    model = c.details.get("model")
    device = f"{c.name} ({model})" if model and model != c.name else c.name
    console.print(f"[bold]oplens calibrate[/]  ·  backend {escape(c.backend)}  ·  {escape(c.host)}  ·  {escape(device)}",
                  highlight=False)  # fmt: skip
    if result.note:
        console.print(f"[dim]{escape(result.note)}[/]", highlight=False)
    ratios = result.ratios()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("Ceiling", no_wrap=True)
    table.add_column("Measured", justify="right", no_wrap=True)
    table.add_column("Spread (median … worst)", justify="right", no_wrap=True)
    table.add_column(f"Spec ({spec.unit})" if spec else "Spec", justify="right", no_wrap=True)
    table.add_column("Measured/spec", justify="right", no_wrap=True)
    table.add_column("Size", style="dim", no_wrap=True)
    keys = list(dict.fromkeys([*c.dtype_peaks, *(spec.dtype_peaks if spec else {})]))
    for key in keys:
        s = c.spread.get(key)
        measured = c.dtype_peaks.get(key)
        spec_value = spec.dtype_peaks.get(key) if spec else None
        table.add_row(
            f"{key} matmul",
            rate(measured, "FLOP/s") if measured else "not measured",
            f"{rate(s.median, 'FLOP/s')} … {rate(s.worst, 'FLOP/s')}" if s else "",
            rate(spec_value, "FLOP/s") if spec_value else DASH,
            f"{ratios[key]:.0%}" if key in ratios else DASH,
            "×".join(str(n) for n in s.size) if s else "",
        )
    for key in (COPY, TRIAD):
        s = c.spread.get(key)
        if s is None:
            continue
        best = key == max(c.memory, key=lambda k: c.memory[k])
        spec_bw = spec.bytes_per_s if spec and best else None
        table.add_row(
            f"memory, {key}" + (" (kept)" if best else ""),
            rate(s.best, "B/s"),
            f"{rate(s.median, 'B/s')} … {rate(s.worst, 'B/s')}",
            rate(spec_bw, "B/s") if spec_bw else DASH,
            f"{ratios['bytes_per_s']:.0%}" if best and "bytes_per_s" in ratios else DASH,
            f"{s.size[0] * 4 / 2**20:,.0f} MiB arrays" if s.size else "",
        )
    console.print(table)
    for key, why in (c.details.get("skipped") or {}).items():
        console.print(f"[dim]{escape(key)}: not measured ({escape(str(why))})[/]", highlight=False)
    if spec:
        console.print(f"spec: {escape(spec.name)}, per {escape(spec.unit)}; {escape(spec.source_url_or_doc)}",
                      highlight=False, soft_wrap=True)  # fmt: skip
        if spec.notes:
            console.print(f"[dim]      {escape(spec.notes)}[/]", highlight=False, soft_wrap=True)
    elif not registry.facts_of(c.backend).on_device:
        console.print("spec: none (a CPU's ceilings come from the calibration only)", highlight=False)
    else:
        console.print(
            f"spec: no published figures known for {escape(c.name)} (--spec NAME names them: {', '.join(peaks.keys())})",
            highlight=False,
        )
    when = f"measured {c.measured_at} in {c.seconds:.1f} s"
    if result.reused:
        console.print(f"{when}; read from the cache {escape(result.cache)} (--again measures anew)",
                      highlight=False, soft_wrap=True)  # fmt: skip
    elif result.cache_error:
        console.print(f"{when}; [yellow]not cached[/]: {escape(result.cache_error)}", highlight=False, soft_wrap=True)
    else:
        console.print(f"{when}; cached in {escape(result.cache)}", highlight=False, soft_wrap=True)
