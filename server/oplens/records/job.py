"""What the parent side asks a worker to do, and what the worker says back.

`TargetSpec` is a function as a user names it (parsed once, at the edge: CLI or LSP); `Job` is the
whole request sent to a worker (as one JSON line on its stdin); `WorkerMessage` is each JSON line
the worker writes back on its message pipe:

    Ready                      torch is imported; send the job
    Progress(stage, done, total)
    Finished(run)              the Run (an overview: the OverviewRun), as stored (a capture: one per target)
    Failed(error)              an OpLensError (kind, message, detail, location)
    Dropped(variant, error)    a compare's variant that could not be measured (the others go on)
    Ended(exit_code, calls)    a capture's program ended (its exit status, each target's calls); a compare's
                               variants are all measured (each one's calls)
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from oplens.records.errors import OpLensError, bad_input
from oplens.records.overview import AnyRun, read_run
from oplens.records.run import Target, from_dict


@dataclass(frozen=True)
class TargetSpec:
    """`FILE::QUALNAME` (`fn`, `Class.method`, `outer.inner`) or `FILE:LINE` (the function enclosing it)."""

    file: str
    qualname: str | None = None
    line: int | None = None  # 1-based

    def __post_init__(self) -> None:
        if (self.qualname is None) == (self.line is None):
            raise bad_input(f"target {self.file!r} needs a function name or a line (exactly one)")

    @classmethod
    def parse(cls, spec: str) -> TargetSpec:
        """`a/b.py::Cls.fn` → (a/b.py, Cls.fn); `a/b.py:12` → (a/b.py, line 12)."""
        if "::" in spec:
            file, _, qualname = spec.partition("::")
            if not qualname:
                raise bad_input(f"target {spec!r} names no function", "write FILE::FUNCTION, e.g. model.py::forward")
            return cls(file, qualname=qualname)
        m = re.fullmatch(r"(.+):(\d+)", spec)
        if m:
            return cls(m.group(1), line=int(m.group(2)))
        raise bad_input(
            f"target {spec!r} names no function",
            "write FILE::FUNCTION (e.g. examples/rmsnorm.py::rmsnorm_naive) or FILE:LINE",
        )

    def __str__(self) -> str:
        return f"{self.file}::{self.qualname}" if self.qualname is not None else f"{self.file}:{self.line}"


@dataclass
class ProgramSpec:
    """The user's own program, run as `python SCRIPT ARGS...` or `python -m MODULE ARGS...` (`oplens run`)."""

    program: str = ""  # a script path (absolute once the engine checked it)
    module: str = ""  # or a module name (exactly one of the two)
    args: list[str] = field(default_factory=list)
    cwd: str = ""  # "" : the workspace
    env: dict[str, str] = field(default_factory=dict)  # added to OpLens's own environment

    def __post_init__(self) -> None:
        if bool(self.program) == bool(self.module):
            raise bad_input(
                "a program needs a script or a module (exactly one)",
                "write `-- script.py ARGS...` or `-m package.module ARGS...`",
            )

    def __str__(self) -> str:
        return f"-m {self.module}" if self.module else self.program


@dataclass
class StagedTarget:
    """One more function of a capture, with the directory its run is written to."""

    target: Target
    stage_dir: str


@dataclass
class Variant:
    """Another function of a compare, measured beside the job's own target in the same worker, their calls
    interleaved round by round (worker/sidebyside.py), with arguments of its own."""

    target: Target
    signature: str
    args: str
    stage_dir: str
    # An edited function's earlier version: the module's text as that run imported it, loaded as a module of its
    # own beside the file's (worker/usercode.py: load_earlier); "": the file as it is
    module_source: str = ""


@dataclass
class Job:
    """One profile, as the worker receives it. With `program`, a capture inside that program:
    `warmup` calls of each target are skipped, the next `iters` are profiled (`oplens run`)."""

    target: Target
    signature: str  # "rmsnorm_naive(x, w)", for messages about the arguments
    args: str  # the Python expression of the positional arguments
    backend: str  # a backend name or "auto"
    warmup: int
    iters: int
    stage_dir: str  # where the worker writes the run's files
    workspace: str
    # Each backend's options record as data, by backend name (backends/registry.py types them).
    backend_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    timeout_s: float = 0.0
    profiler_warmup: int = 0  # iterations under the started profiler, not recorded (its start-up cost)
    program: ProgramSpec | None = None  # a capture: the program to run
    more_targets: list[StagedTarget] = field(default_factory=list)  # a capture's other targets, in order
    stop: bool = False  # a capture: end the program once every window is captured
    overview: bool = False  # a program overview: `target` is the step function, profiled whole with Python stacks
    # An overview without a step function (`target.qualname` empty): the window opens this long after the
    # program starts and lasts `window_s` seconds.
    window_delay_s: float = 0.0
    window_s: float = 0.0
    # A distributed capture (torchrun): each rank writes its messages to <ranks_dir>/rank-<R>.jsonl
    # and its part of each run to <stage_dir>/ranks/<R>/.
    ranks_dir: str = ""
    # A compare: the other variants, measured beside `target` (the baseline) in this worker, interleaved.
    side_by_side: list[Variant] = field(default_factory=list)
    # A compare whose rounds the user did not count: more than `iters` rounds, as many as take about this long
    # (from the warm-up's calls; at most `max_rounds`). 0: exactly `iters`.
    fill_s: float = 0.0
    max_rounds: int = 200
    module_source: str = ""  # the target's module text to load instead of its file (Variant.module_source)

    def variants(self) -> list[Job]:
        """A compare's variants, each as the job of one function (the baseline first)."""
        return [self] + [replace(self, target=v.target, signature=v.signature, args=v.args, stage_dir=v.stage_dir,
                                 module_source=v.module_source, side_by_side=[]) for v in self.side_by_side]  # fmt: skip

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, line: str) -> Job:
        return from_dict(cls, json.loads(line))


@dataclass
class Ready:
    pass


@dataclass
class Progress:
    stage: str  # one of names.STAGES
    done: int
    total: int


@dataclass
class Finished:
    run: AnyRun  # a function's run, or a program overview's


@dataclass
class Failed:
    error: OpLensError


@dataclass
class Dropped:
    """A compare's variant (its index, 0 the baseline) that could not be measured; the others are still compared."""

    variant: int
    error: OpLensError


@dataclass
class ModuleSnapshot:
    """What a profile leaves for a later edit of its function (`<run>/module.json`, worker/snapshot.py): the
    module's text as the worker imported it, and the other files of the user's code it imported, each with its
    sha256, so that a later profile can load this version beside the edit (engine/earlier.py), or say which
    file changed since."""

    text: str
    imports: dict[str, str] = field(default_factory=dict)  # absolute path → sha256 of its bytes


MODULE_SNAPSHOT = "module.json"  # a run folder's ModuleSnapshot


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, as `ModuleSnapshot.imports` keeps it ("" where it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


# The parent's request to a capture's worker to end the program now (its --timeout, a cancel): the
# program unwinds, and what the windows captured is sent as partial runs before the worker exits.
STOP_SIGNAL = signal.SIGUSR1
STOP_GRACE_S = 20.0  # how long the parent waits for that before it kills the worker

# The environment variable that gives a worker (and, through torchrun, every rank) its parent's pid:
# a worker whose parent is gone ends itself and the program's processes (worker/parent.py).
PARENT_ENV = "OPLENS_PARENT_PID"
# The program's log (worker.log to be), where a worker appends torch's profiler chatter (worker/calls.py: `to_log`).
LOG_ENV = "OPLENS_WORKER_LOG"
# The node a rank runs on, in a job of several (engine/multinode.py): its scheduler's name for it (Slurm's node name,
# the pod's), which the ranks report as their host (RankInfo.host) where the host names do not tell the nodes apart
NODE_ENV = "OPLENS_NODE"
# The run's staging folder, set in the worker before the backends' `environment()` is read (Neuron keeps
# the run's own NEFF cache there).
RUN_DIR_ENV = "OPLENS_RUN_DIR"


@dataclass
class Ended:
    """A capture's program ended: its exit status and, per target in order, the calls it made."""

    exit_code: int
    calls: list[int] = field(default_factory=list)


WorkerMessage = Ready | Progress | Finished | Failed | Dropped | Ended


def encode(message: WorkerMessage) -> str:
    """One message as a JSON line."""
    if isinstance(message, Ready):
        data: dict[str, Any] = {"type": "ready"}
    elif isinstance(message, Progress):
        data = {"type": "progress", **asdict(message)}
    elif isinstance(message, Finished):
        data = {"type": "result", "run": message.run.to_dict()}
    elif isinstance(message, Ended):
        data = {"type": "ended", **asdict(message)}
    elif isinstance(message, Dropped):
        data = {"type": "dropped", "variant": message.variant, "error": message.error.to_dict()}
    else:
        data = {"type": "error", "error": message.error.to_dict()}
    return json.dumps(data) + "\n"


def decode(line: str) -> WorkerMessage | None:
    """A message from its JSON line; None for a line that is not one (never raises)."""
    try:
        data = json.loads(line)
        kind = data["type"]
        if kind == "ready":
            return Ready()
        if kind == "progress":
            return Progress(str(data["stage"]), int(data.get("done", 0)), int(data.get("total", 0)))
        if kind == "result":
            return Finished(read_run(data["run"]))
        if kind == "error":
            return Failed(OpLensError.from_dict(data["error"]))
        if kind == "dropped":
            return Dropped(int(data["variant"]), OpLensError.from_dict(data["error"]))
        if kind == "ended":
            return Ended(int(data["exit_code"]), [int(c) for c in data.get("calls", [])])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return None
