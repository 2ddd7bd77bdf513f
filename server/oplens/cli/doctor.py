"""`oplens doctor [--backend B] [--json PATH|-] [--out DIR]`: is this host ready to profile?

Arguments → `engine.doctor.doctor` → one line per check as it is made (ok ✓, warning !, problem ✗,
with the fix under it), then the verdict; `--json -` prints only the report object. The checks and
the exit code are the engine's (`engine/doctor.py`).
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from oplens.backends import registry
from oplens.cli.progress import progress_display
from oplens.engine.doctor import DoctorRequest, doctor
from oplens.engine.request import DEFAULT_TIMEOUT_S
from oplens.records.doctor import OK, PROBLEM, WARNING, Check, DoctorReport

HELP = "check this host: torch, the backend, a tiny profile with device time, Neuron Explorer, the runs directory"
NAME_WIDTH = 28
MARKS = {OK: "[green]✓[/]", WARNING: "[yellow]![/]", PROBLEM: "[red]✗[/]"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default=registry.DEFAULT, choices=registry.NAMES,
                   help=f"the backend to check (default: {registry.DEFAULT}, as a profile)")
    p.add_argument("--out", metavar="DIR",
                   help="runs directory: checked, and the tiny profile's run kept there (default: ./.oplens/runs is "
                   "checked and the tiny profile goes to a temporary directory)")  # fmt: skip
    p.add_argument("--json", metavar="PATH", help="write the checks as JSON to PATH ('-': stdout, nothing else)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="seconds for the tiny profile")


def run(args: argparse.Namespace, out: Console, err: Console, emit_json: Callable[[str | None, Any], None]) -> int:
    req = DoctorRequest(backend=args.backend, out=args.out, workspace=Path.cwd(), timeout_s=args.timeout)
    if args.json == "-":
        report = doctor(req)
    else:
        host = socket.gethostname()
        out.print(f"[bold]oplens doctor[/]  ·  backend {escape(args.backend)}  ·  {escape(host)}", highlight=False)
        with progress_display(out if out.is_terminal else err, "oplens doctor") as on_progress:
            report = doctor(req, on_check=lambda c: check_line(out, c), progress=on_progress)
    emit_json(args.json, report.to_dict())
    if args.json != "-":
        verdict(out, report)
    return report.exit_code


def check_line(console: Console, check: Check) -> None:
    """`  ✓ name   detail`, and for a warning or problem its fix beneath (never wrapped: paths stay whole)."""
    name = escape(check.name.ljust(NAME_WIDTH))
    console.print(f"  {MARKS[check.status]} {name} {escape(check.detail)}", highlight=False, soft_wrap=True)
    if check.fix and check.status != OK:
        for i, line in enumerate(check.fix.splitlines()):
            lead = "fix: " if i == 0 else "     "
            console.print(f"    {' ' * NAME_WIDTH} [dim]{lead}{escape(line)}[/]", highlight=False, soft_wrap=True)


def verdict(console: Console, report: DoctorReport) -> None:
    problems = [c for c in report.checks if c.status == PROBLEM]
    warnings = [c for c in report.checks if c.status == WARNING]
    if report.usable:
        extra = f" ({len(warnings)} warning{'s' * (len(warnings) != 1)})" if warnings else ""
        backend = "" if report.backend == registry.DEFAULT else f" --backend {report.backend}"
        console.print(
            f"[bold green]usable[/]{extra}: oplens profile FILE::FUNCTION --args EXPR{escape(backend)}", highlight=False
        )
        return
    names = ", ".join(c.name for c in problems)
    console.print(
        f"[bold red]not usable[/]: {len(problems)} problem{'s' * (len(problems) != 1)} ({escape(names)}); "
        f"exit {report.exit_code}",
        highlight=False,
    )
