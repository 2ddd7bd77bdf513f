"""The program overview: which of the user's functions (and modules, and files) spend the time.

`oplens run --step FILE::QUALNAME` without `--target` profiles whole steps of the program with
Python stacks; every op's self time goes to the user's function innermost on its stack (self) and to
every user function on it (total, each counted once per op), and to the `nn.Module` instance path
it ran under. Figures are µs *per step* (mean over the profiled steps).

A stored overview is an `OverviewRun`: the `Overview` with what a stored run says of how it ran (its id,
target, backend, program, steps, time), written as `overview.json` in its run directory (a line profile's
is `result.json`), so it is listed, kept and compared beside the runs of functions without being one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from oplens.records.run import Artifacts, BackendInfo, Capture, Config, RankInfo, Run, Target, Totals, from_dict
from oplens.records.spread import RankSpread

OVERVIEW_SCHEMA = "oplens.overview/1"
OVERVIEW_RUN_SCHEMA = "oplens.overview-run/1"


@dataclass
class FunctionStat:
    """One user function: where its `def` is, and its time per step."""

    file: str  # absolute path on the host
    qualname: str  # "Block.forward", "train_step", "outer.<locals>.inner" as "outer.inner"
    def_line: int
    self_device_us: float = 0.0  # ops whose innermost user frame is this function
    total_device_us: float = 0.0  # ops with this function anywhere on their stack (once per op)
    self_cpu_us: float = 0.0
    total_cpu_us: float = 0.0
    calls: float = 0.0  # frames of it entered, per step
    pct_self: float = 0.0  # self device time, % of all device time in the steps
    pct_total: float = 0.0
    self_samples_us: list[float] = field(default_factory=list)  # self device time in each profiled step, in order
    ranks: RankSpread | None = None  # a distributed run: its self device time per step on each rank (figures: the mean)


@dataclass
class FileStat:
    file: str
    self_device_us: float = 0.0  # its functions' self time
    self_cpu_us: float = 0.0
    pct: float = 0.0
    functions: int = 0  # of its functions, how many the overview saw


@dataclass
class ModuleStat:
    """One `nn.Module` instance, by its attribute path from the root module (`model.blocks.3.attn`)."""

    path: str
    type: str  # the class name
    self_device_us: float = 0.0  # ops under it and under none of its children
    total_device_us: float = 0.0
    self_cpu_us: float = 0.0
    total_cpu_us: float = 0.0
    calls: float = 0.0  # forward calls per step
    pct_total: float = 0.0
    ranks: RankSpread | None = None  # a distributed run: its total device time per step on each rank


@dataclass
class FrameStat:
    """One node of the user's call tree (the icicle chart): a user function reached along one path of
    user frames from the step (frames of torch and site-packages between them are left out)."""

    function: int  # its function, an index into `Overview.functions`
    parent: int  # the node it was called from, an index into `Overview.frames`; -1 at the top
    self_device_us: float = 0.0  # ops whose innermost user frame is this node, per step
    total_device_us: float = 0.0  # this node and every node under it
    self_cpu_us: float = 0.0
    total_cpu_us: float = 0.0


@dataclass
class Overview:
    step: str = ""  # "FILE::QUALNAME" of the step function ("": a time window)
    per: str = "step"  # what the figures are per: "step", or "window" (a time window: its whole length)
    steps: int = 0  # the profiled steps the figures are the mean of (a time window: 1)
    delay_s: float = 0.0  # a time window: when it opened, seconds after the program started
    window_s: float = 0.0  # a time window: its length
    step_wall_us: list[float] = field(default_factory=list)  # each profiled step, synchronised
    device_label: str = "CPU"
    total_device_us: float = 0.0  # per step: every op's self device time
    total_cpu_us: float = 0.0
    outside_user_device_us: float = 0.0  # under no user frame (e.g. a C++ thread of torch's own)
    functions: list[FunctionStat] = field(default_factory=list)  # by self device time, highest first
    files: list[FileStat] = field(default_factory=list)
    modules: list[ModuleStat] = field(default_factory=list)  # by total device time
    frames: list[FrameStat] = field(default_factory=list)  # the call tree, a parent before its children
    user_roots: list[str] = field(default_factory=list)  # what counted as the user's code
    note: str = ""
    schema: str = OVERVIEW_SCHEMA


@dataclass
class OverviewRun:
    """A stored program overview (`overview.json`): the `Overview` and how it ran. `target` is the step
    function (a time window: the program, `qualname` empty); `config.iters` the profiled steps; `totals`
    the overview's per step (or window); `capture` the program and its calls; `ranks` a distributed
    overview's parts (`ranks/<R>/overview.json`, each an `OverviewRun`)."""

    target: Target
    backend: BackendInfo
    config: Config
    totals: Totals
    overview: Overview
    artifacts: Artifacts = field(default_factory=Artifacts)
    capture: Capture | None = None
    ranks: list[RankInfo] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)  # where the worker spent its time
    run_id: str = ""
    run_dir: str = ""
    created: str = ""
    schema: str = OVERVIEW_RUN_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OverviewRun:
        return from_dict(cls, data)


AnyRun: TypeAlias = Run | OverviewRun  # what a run directory holds: a function's lines, or a program overview


def read_run(data: dict[str, Any]) -> AnyRun:
    """A stored run from its JSON: an `OverviewRun` (its schema, or an older `result.json` that carried the
    overview inside a run with no lines, `"overview": {...}`), else a `Run`. The one place that tells them
    apart on reading."""
    if data.get("schema") == OVERVIEW_RUN_SCHEMA or data.get("overview") is not None:
        run = OverviewRun.from_dict(data)
        run.schema = OVERVIEW_RUN_SCHEMA
        return run
    return Run.from_dict(data)
