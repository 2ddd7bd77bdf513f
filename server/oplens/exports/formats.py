"""The export formats by name, and where an export goes unless told (`<run dir>/exports/`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oplens.exports import perfetto, speedscope, tensorboard
from oplens.exports.traces import paused_gc
from oplens.records.errors import bad_input
from oplens.records.run import Run


@dataclass(frozen=True)
class Exported:
    path: Path
    notes: list[str]  # what the export could not hold, and why (a Neuron run's executions without their tables…)


@dataclass(frozen=True)
class Format:
    write: Callable[[Run, Path], tuple[Path, list[str]]]
    suffix: str  # the default output's name after the run id (a folder where it ends with "/")
    opens_in: str  # how a user opens it, in words


FORMATS = {
    "perfetto": Format(perfetto.export, ".perfetto.json.gz",
                       "open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing"),
    "speedscope": Format(lambda run, out: (speedscope.export(run, out), []), ".speedscope.json",
                         "open it in https://www.speedscope.app or `speedscope FILE`"),
    "tensorboard": Format(lambda run, out: (tensorboard.export(run, out), []), ".tensorboard/",
                          "tensorboard --logdir <its parent folder> (torch-tb-profiler), or HTA: TraceAnalysis(trace_dir=<it>, "
                          "include_last_profiler_step=True): each profiler step is a whole call"),
}  # fmt: skip


def export(run: Run, name: str, out: Path | None = None) -> Exported:
    """`run` (stored) written as format `name` at `out` (default: `<run dir>/exports/<run id><suffix>`)."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise bad_input(f"no export format {name!r}", f"choose one of: {', '.join(FORMATS)}")
    if out is None:
        out = Path(run.run_dir) / "exports" / f"{run.run_id}{fmt.suffix.rstrip('/')}"
    with paused_gc():
        return Exported(*fmt.write(run, out))
