"""The commands' arguments (`workspace/executeCommand`, one object each), typed.

Structured with the same converter as the settings (`convert.py`); a bad argument is an LSP
invalid-params error (-32602) that names the command's shape and each bad field. Keys a command
does not know are ignored. What the values mean (a function that exists, a known backend, a file
in the workspace) is checked by the handlers, which know the client and the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcInvalidParams

from oplens.lsp.convert import Invalid, structure, wire

T = TypeVar("T")


@dataclass
class ProgramArgs:
    """The user's own program, in which `oplens.profile` captures the function (`oplens run`)."""

    program: str | None = None  # a script, relative to `cwd` (as `python SCRIPT` takes it)
    module: str | None = None  # or a module (as `python -m MODULE`): exactly one of the two
    args: list[str] = field(default_factory=list)  # the program's arguments
    cwd: str | None = None  # its working directory, relative to the workspace; None: the workspace
    env: dict[str, str] = field(default_factory=dict)  # added to the server's environment
    # As a Slurm job (engine/slurm.py), with these sbatch options (`-N2 --partition trn2`, split like a shell);
    # None: on the server's host. Only where `oplens.slurm` says sbatch is there.
    slurm: list[str] | None = None


@dataclass
class ProfileArgs:
    uri: str
    qualname: str | None = None  # "Block.forward"
    line: int | None = None  # 0-based, as LSP counts: the function enclosing it
    args: str | None = None  # the Python expression of the positional arguments
    program: ProgramArgs | None = None  # instead of `args`: capture the function inside this program
    backend: str | None = None  # None: the client's `backend` setting; so for the rest
    warmup: int | None = None
    iters: int | None = None
    skip: int | None = None  # a capture's calls run untouched first (the `captureSkip` setting)
    calls: int | None = None  # a capture's calls profiled (`captureCalls`)
    stop: bool | None = None  # a capture: end the program once captured (`captureStop`)
    timeout_seconds: float | None = None


PROFILE_SHAPE = ("{uri, qualname or line (0-based), args? or program? {program or module, args?, cwd?, env?, slurm?}, "
                 "backend?, warmup?, iters?, skip?, calls?, stop?, timeoutSeconds?}")


@dataclass
class CompareArgs:
    targets: list[dict[str, Any]]  # each ProfileArgs' fields; the compare's other fields fill in what one omits


COMPARE_SHAPE = ("{targets: [{uri, qualname or line, args?}, ...] (two or more), "
                 "args?, backend?, warmup?, iters?, timeoutSeconds?}")


@dataclass
class RunArgs:
    """A command on one stored run: oplens.showRun, and each backend command (which may read more keys)."""

    run_id: str = wire("run_id")


RUN_SHAPE = "{run_id}"


@dataclass
class UriArgs:
    uri: str


URI_SHAPE = "{uri}"


@dataclass
class ClearArgs:
    uri: str | None = None  # None: every file


CLEAR_SHAPE = "{uri?}"


@dataclass
class DiffArgs:
    after: str | None = None  # a run id; None: the latest run of the function `uri` + `qualname`
    before: str | None = None  # a run id; None: the run of the same function just before `after`
    uri: str | None = None
    qualname: str | None = None
    by: str = "device"  # what the figures and verdicts are of: "device" (self device time) or "wall"


DIFF_SHAPE = ("{after?, before?, uri?, qualname?, by?: 'device' or 'wall'} (after: a run id, else the latest run of uri's "
              "qualname)")


@dataclass
class DoctorArgs:
    backend: str | None = None  # None: the client's `backend` setting


DOCTOR_SHAPE = "{backend?}"


@dataclass
class MergeArgs:
    """`oplens.merge`: the run directories of one distributed capture, one per host (`oplens merge DIR...`)."""

    dirs: list[str]  # each absolute (the client's, through its path mappings) or relative to the workspace


MERGE_SHAPE = "{dirs: [run directory, ...]} (one per host; absolute, or relative to the workspace)"


@dataclass
class HotFunctionsArgs:
    """`oplens.hotFunctions`: an overview's functions (the latest, or run `run_id`'s), by which figure,
    how many (0: all)."""

    sort: str = "self"  # "self" or "total" device time
    limit: int = 0
    run_id: str = wire("run_id", default="")


HOT_FUNCTIONS_SHAPE = "{sort?: 'self' or 'total', limit?, run_id?}"


def only(command: str, values: tuple[Any, ...]) -> Any:
    """The one argument of a command (None when the client sent none)."""
    if len(values) > 1:
        raise JsonRpcInvalidParams(f"{command} takes one argument, an object (got {len(values)})")
    return values[0] if values else None


def parse(command: str, arg: Any, cls: type[T], shape: str) -> T:
    """`arg` as a `cls`, or invalid params naming the shape and what is wrong."""
    try:
        return structure({} if arg is None else arg, cls)  # no argument: an empty object
    except Invalid as e:
        raise JsonRpcInvalidParams(f"{command} takes one object {shape}: {'; '.join(e.problems)}") from None


def compare_targets(command: str, arg: Any) -> list[ProfileArgs]:
    """Each target of a compare, completed with the compare's shared fields."""
    compare = parse(command, arg, CompareArgs, COMPARE_SHAPE)
    if len(compare.targets) < 2:
        raise JsonRpcInvalidParams(f"{command} takes one object {COMPARE_SHAPE}: give two or more targets")
    shared = {k: v for k, v in arg.items() if k != "targets"}
    found = []
    for i, target in enumerate(compare.targets):
        try:
            found.append(structure({**shared, **target}, ProfileArgs, f"targets[{i}]"))
        except Invalid as e:
            raise JsonRpcInvalidParams(f"{command} takes one object {COMPARE_SHAPE}: {'; '.join(e.problems)}") from None
    return found


def check_program(command: str, a: ProfileArgs) -> ProgramArgs | None:
    """The program of `a` (None: a plain profile), or invalid params where it contradicts itself."""
    p = a.program
    if p is None:
        return None
    wrong = None
    if a.args is not None:
        wrong = "give args (the function called with them) or program (the function captured inside it), not both"
    elif p.program and p.module:
        wrong = "program takes program (a script) or module, not both"
    elif not p.program and not p.module:
        wrong = "program needs program (a script, e.g. 'train.py') or module (e.g. 'pkg.train')"
    if wrong:
        raise JsonRpcInvalidParams(f"{command} takes one object {PROFILE_SHAPE}: {wrong}")
    return p
