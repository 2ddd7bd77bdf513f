"""The `oplens` commands `profile` (one function), `run` (functions captured inside the user's own
program), `compare` (several), `diff` (one function across
an edit), `analyze` (a stored run attributed again from its trace), `doctor` (is this host ready:
`cli/doctor.py`), `calibrate` (the device's ceilings: `cli/calibrate.py`), and each backend's own
commands on a stored run (from the backend registry: Neuron's `explorer`).

A thin layer: arguments → `engine.profile` (or the backend's command) → a renderer (rich, or
`--json`). `serve` is parsed here for `--help` but runs from `oplens.cli.serve` without this module.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import webbrowser
from pathlib import Path
from typing import Any

from rich.console import Console

from oplens import __version__
from oplens.backends import registry
from oplens.backends.registry import NAMES as BACKENDS
from oplens.backends.spec import BackendCommand, CommandContext
from oplens.cli import calibrate, doctor, render, serve
from oplens.cli.progress import capture_display, progress_display
from oplens.engine import multinode, runs, slurm
from oplens.engine.analyze import reanalyze
from oplens.engine.compare import compare, compare_rows
from oplens.engine.diff import DEVICE, MEASURES, diff_runs
from oplens.engine.merge import merge_dirs, rank_part
from oplens.engine.multinode import DEFAULT_GATHER_TIMEOUT_S
from oplens.engine.overview_diff import diff_overviews
from oplens.engine.profile import ProfileRequest, profile
from oplens.engine.program import DEFAULT_CALLS, DEFAULT_DELAY_S, DEFAULT_DURATION_S, DEFAULT_SKIP, ProgramRequest
from oplens.engine.request import DEFAULT_ITERS, DEFAULT_PROFILER_WARMUP, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, FILL_S, MAX_ROUNDS
from oplens.exports.formats import FORMATS
from oplens.exports.formats import export as export_run
from oplens.exports.perfetto_open import PAGE_WAIT_S, OpenPage
from oplens.records.errors import OpLensError, bad_input
from oplens.records.job import ProgramSpec, TargetSpec
from oplens.records.overview import AnyRun, OverviewRun
from oplens.records.run import NO_SOURCE, Run
from oplens.views.compare import compare_page


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. `command`, where the command line names one: the arguments of the
    commands that live in other modules (doctor, calibrate, serve, a backend's) are built for that one
    only, the others listed by name and help, so that a command reads only its own (None: all, for help)."""

    def wanted(name: str) -> bool:
        return command is None or command == name

    parser = argparse.ArgumentParser(
        prog="oplens",
        description="Per-line self device time (NEURON / CUDA / CPU) for a PyTorch function.",
    )
    parser.add_argument("--version", action="version", version=f"oplens {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, iters: tuple[int | None, str] = (DEFAULT_ITERS, "profiled iterations")) -> None:
        p.add_argument("--backend", default=registry.DEFAULT, choices=BACKENDS,
                       help=f"where to run (default: {registry.DEFAULT}, {registry.AUTO_WORDS})")
        p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="unprofiled runs first (compiles)")
        p.add_argument("--iters", type=int, default=iters[0], help=iters[1])
        p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per function")
        p.add_argument("--out", metavar="DIR", help="runs directory (default: ./.oplens/runs)")
        p.add_argument("--json", metavar="PATH", help="write the result.json object to PATH ('-': stdout)")
        view_option(p)
        for spec in registry.SPECS.values():
            spec.add_cli_options(p)

    p = sub.add_parser("profile", help="profile one function line by line")
    p.add_argument("target", help="FILE::QUALNAME (fn, Class.method, outer.inner) or FILE:LINE")
    p.add_argument("--args", default="", metavar="EXPR",
                   help="positional arguments as a Python expression, evaluated in the module with torch")
    p.add_argument("--alone", action="store_true",
                   help="after an edit, profile the function alone: without its earlier version (its latest run's) "
                   "measured beside it, interleaved, for `oplens diff`")  # fmt: skip
    common(p)

    r = sub.add_parser("run", help="capture functions inside your own program: oplens run --target F -- script.py ARGS",
                       description="Run your program (`-- script.py ARGS...` or `-m module ARGS...`) with the "
                       "targets captured: each target's first --skip calls run untouched, the next --calls are "
                       "profiled line by line, the rest run untouched. With --step instead of --target: an overview "
                       "of the whole program, each of its functions' self and total time over --calls steps.")  # fmt: skip
    r.add_argument("--target", action="append", default=[], metavar="TARGET",
                   help="FILE::QUALNAME or FILE:LINE; repeat for several (captured one after another)")
    r.add_argument("--delay", type=float, default=DEFAULT_DELAY_S, metavar="S",
                   help="no --target nor --step: the overview's window opens S seconds after the start "
                   f"(default {DEFAULT_DELAY_S:g})")  # fmt: skip
    r.add_argument("--duration", type=float, default=DEFAULT_DURATION_S, metavar="S",
                   help=f"no --target nor --step: the overview's window lasts S seconds (default {DEFAULT_DURATION_S:g})")
    r.add_argument("--step", metavar="STEP", help="FILE::QUALNAME of the program's step (the training step, "
                   "Model.forward): an overview of every function over --calls steps, not one function's lines")  # fmt: skip
    r.add_argument("--skip", type=int, default=DEFAULT_SKIP, help=f"calls run untouched first (default {DEFAULT_SKIP})")
    r.add_argument("--calls", type=int, default=DEFAULT_CALLS, help=f"calls profiled (default {DEFAULT_CALLS})")
    r.add_argument("--profiler-warmup", type=int, default=DEFAULT_PROFILER_WARMUP,
                   help=f"calls under the started profiler, dropped (default {DEFAULT_PROFILER_WARMUP})")
    r.add_argument("--stop", action="store_true", help="end the program once every target is captured")
    r.add_argument("--rank", type=int, metavar="R", help="a distributed run: show rank R's own figures")
    view_option(r)
    r.add_argument("--cwd", metavar="DIR", help="the program's working directory (default: .)")
    r.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="set in the program's environment")
    t = r.add_argument_group("ranks", "launch the program through torchrun (torch.distributed.run), every rank "
                             "captured; the same options as torchrun's, passed through")  # fmt: skip
    for option in TORCHRUN_OPTIONS:
        t.add_argument(option, dest="torchrun_" + option[2:].replace("-", "_"), metavar="VALUE")
    t.add_argument("--standalone", dest="torchrun_standalone", action="store_true", help="torchrun --standalone")
    r.add_argument("--backend", default=registry.DEFAULT, choices=BACKENDS,
                   help=f"where to run (default: {registry.DEFAULT}, {registry.AUTO_WORDS})")
    r.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds for the whole program")
    r.add_argument("--slurm", action="store_true",
                   help="submit the capture as a Slurm job (sbatch): the options oplens run does not know, given "
                   "before --, are sbatch's (-N2, --partition P, --time T, --account A); one OpLens per node, the "
                   "nodes' parts merged into one run, shown here")  # fmt: skip
    r.add_argument("--gather-timeout", type=float, default=DEFAULT_GATHER_TIMEOUT_S, metavar="S",
                   help="a job of several nodes (srun, a PyTorchJob): how long the first node waits for the others' "
                   f"parts once its own is captured (default {DEFAULT_GATHER_TIMEOUT_S:g})")  # fmt: skip
    r.add_argument("--out", metavar="DIR", help="runs directory (default: ./.oplens/runs)")
    r.add_argument("--json", metavar="PATH", help="write the result.json object to PATH ('-': stdout; the "
                   "program's output then goes to stderr); several targets: a list")  # fmt: skip
    for spec in registry.SPECS.values():
        spec.add_cli_options(r)
    r.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE ARGS",
                   help="run a module as `python -m` does")  # fmt: skip
    r.add_argument("program", nargs=argparse.REMAINDER, metavar="-- SCRIPT ARGS", help="run a script as python does")

    m = sub.add_parser("merge", help="combine the runs of one distributed capture stored on several hosts")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="each host's run directory (oplens run --nnodes ...)")
    m.add_argument("--out", metavar="DIR", help="runs directory for the merged run (default: ./.oplens/runs)")
    m.add_argument("--rank", type=int, metavar="R", help="show rank R's own figures")
    m.add_argument("--json", metavar="PATH", help="write the merged result.json object to PATH ('-': stdout)")
    view_option(m)

    c = sub.add_parser("compare", help="profile several functions and compare them side by side")
    c.add_argument("targets", nargs="+", help="FILE::QUALNAME ... (the first is the baseline)")
    c.add_argument("--args", action="append", default=[], metavar="EXPR",
                   help="arguments for every target, or once per target in order")
    c.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 where a variant is slower than the baseline by more than PCT %% over its whole "
                   "interval (a CI gate)")  # fmt: skip
    # --iters not given (None): as many rounds as take about FILL_S, at least DEFAULT_ITERS
    common(c, iters=(None, f"rounds, each calling every target once (default: as many as take about {FILL_S:g} s, "
                           f"at least {DEFAULT_ITERS}, at most {MAX_ROUNDS})"))  # fmt: skip

    d = sub.add_parser("diff", help="one function before and after an edit: each line's change, with a verdict")
    d.add_argument("before", help="the earlier run: a run id (or its start, or `latest`) or a run directory")
    d.add_argument("after", nargs="?", default=None, help="the later run (default: the latest run of the same function)")
    d.add_argument("--out", metavar="DIR", help="runs directory (default: ./.oplens/runs)")
    d.add_argument("--json", metavar="PATH", help="write the diff as JSON to PATH ('-': stdout)")
    d.add_argument("--by", choices=MEASURES, default=DEVICE,
                   help="what the figures and verdicts are of: each line's self device time (default) or its wall time "
                   "(a line whose time is Python, a wait or I/O)")  # fmt: skip
    d.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 where the later run's median call is slower than the earlier's by more than PCT %% "
                   "over its whole 95 %% interval (a CI gate)")  # fmt: skip

    x = sub.add_parser("export", help="a run for the viewers you already use: Perfetto, speedscope, TensorBoard/HTA")
    x.add_argument("run", help="a run id (or its start, or `latest`) or a run directory")
    x.add_argument("--format", required=True, choices=list(FORMATS),
                   help="perfetto: a Chrome trace (.json.gz) with the lines as named slices and the ranks as processes; "
                   "speedscope: flame graphs of host and device time by line; tensorboard: a folder of "
                   "rank<R>.pt.trace.json.gz for TensorBoard's profiler plugin and HTA")  # fmt: skip
    x.add_argument("--out", metavar="PATH", help="where to write it (default: the run's exports/ folder)")
    x.add_argument("--runs", metavar="DIR", help="runs directory (default: ./.oplens/runs)")
    x.add_argument("--open", action="store_true",
                   help="perfetto: serve a one-shot page on 127.0.0.1 that opens Perfetto UI with the trace (its button), "
                   "and open it in the browser; wait until it handed the trace over (Ctrl-C ends it)")  # fmt: skip

    a = sub.add_parser("analyze", help="attribute a stored run again from its trace.json, without running it (rewrites nothing)")
    a.add_argument("run", help="a run id (or its start, or `latest`) or a run directory")
    a.add_argument("--out", metavar="DIR", help="runs directory (default: ./.oplens/runs)")
    a.add_argument("--json", metavar="PATH", help="write the re-derived result.json object to PATH ('-': stdout)")
    view_option(a)

    for _, cmd in registry.commands():
        e = sub.add_parser(cmd.name, help=cmd.help)
        e.add_argument("run", metavar="TARGET",
                       help="a run id (or its start, or `latest`) in the runs directory, a run directory, or what the "
                       "command also takes (explorer: any Neuron profile output directory)")  # fmt: skip
        e.add_argument("--out", metavar="DIR", help="runs directory (default: ./.oplens/runs)")
        e.add_argument("--workspace", metavar="DIR", help="the workspace (source root) of the run (default: .)")
        e.add_argument("--json", metavar="PATH", help="write the answer as JSON to PATH ('-': stdout)")
        if wanted(cmd.name):
            cmd.add_arguments(e)
        e.set_defaults(backend_command=cmd)

    for name, module in (("doctor", doctor), ("calibrate", calibrate), ("serve", serve)):
        command_parser = sub.add_parser(name, help=module.HELP)
        if wanted(name):
            module.add_arguments(command_parser)
    return parser


def view_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--view", choices=render.VIEWS, default="time",
                   help="the per-line listing: time (default), work (FLOPs, bytes, intensity), "
                   "memory (alloc, freed, peak)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(given[0] if given and not given[0].startswith("-") else None)
    sbatch_options: list[str] | None = None
    if given[:1] == ["run"] and "--slurm" in given[: given.index("--") if "--" in given else len(given)]:
        given, sbatch_options = _split_sbatch(parser, given)
    args = parser.parse_args(given)
    args.sbatch = sbatch_options
    out = Console()
    if not out.is_terminal:
        out = Console(width=140)  # piped: wide enough for the source beside the figures
    err = Console(stderr=True)
    if not err.is_terminal:
        err = Console(stderr=True, soft_wrap=True)  # piped: never break paths and messages mid-word
    try:
        _check_json_dest(getattr(args, "json", None))
        if (getattr(args, "fail_if_slower", None) or 0) < 0:
            raise bad_input(f"--fail-if-slower {args.fail_if_slower:g} is below 0", "give the slowdown to fail on, in %, e.g. 10")
        if args.command == "serve":
            return serve.run(args)
        if args.command == "doctor":
            return doctor.run(args, out, err, _emit_json)
        if args.command == "calibrate":
            return calibrate.run(args, out, err, _emit_json)
        if args.command == "diff":
            return _diff(args, out)
        if args.command == "analyze":
            return _analyze(args, out)
        if args.command == "export":
            return _export(args, out)
        if getattr(args, "backend_command", None) is not None:
            return _backend_command(args.backend_command, args, out)
        if args.command == "run":
            return _run(args, out, err)
        if args.command == "merge":
            run = merge_dirs([Path(d) for d in args.dirs], runs.runs_root(Path.cwd(), args.out))
            _emit_json(args.json, _json_of(run))
            if args.json != "-":
                _show(out, run if args.rank is None else rank_part(run, args.rank), args.view)
            return 0
        if args.command == "profile":
            run = _profile_one(args, args.target, args.args, err)
            _emit_json(args.json, run.to_dict())
            if args.json != "-":
                render.profile(out, run, args.view)
            _require_device_time([run])
        else:
            return _compare(args, out, err)
    except OpLensError as e:
        render.error(err, e)
        return e.exit_code
    except KeyboardInterrupt:
        err.print("oplens: interrupted")
        return 130
    return 0


def _request(args: argparse.Namespace, target: str, expr: str) -> ProfileRequest:
    return ProfileRequest(
        target=TargetSpec.parse(target),
        args=expr,
        backend=args.backend,
        warmup=args.warmup,
        iters=args.iters,
        timeout_s=args.timeout,
        workspace=Path.cwd(),
        out=args.out,
        backend_options=_backend_options(args),
    )


def _backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """Each backend's options record from its flags; a flag of a backend the request cannot end on is bad input.
    The rest of the request's settings are checked by the engine (`request.check`)."""
    given = {name: spec.cli_options(args) for name, spec in registry.SPECS.items()}
    return registry.parse_options(args.backend, given, Path.cwd(), strict=True)


def _split_sbatch(parser: argparse.ArgumentParser, given: list[str]) -> tuple[list[str], list[str]]:
    """`oplens run --slurm ...` as (the run's own arguments, `--slurm` kept; sbatch's options): what `oplens run`
    does not know, before the program, is sbatch's."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = sub.choices["run"]._option_string_actions
    tokens = [t for t in given[1:] if t != "--slurm"]
    sbatch, rest = slurm.split_options(tokens, set(actions), lambda key: actions[key].nargs != 0)
    return ["run", "--slurm", *rest], sbatch


def _run_slurm(args: argparse.Namespace, req: ProgramRequest, out: Console, err: Console) -> int:
    """`oplens run --slurm`: the capture as a Slurm job, watched until it ends; its merged runs shown."""

    def say(words: str) -> None:
        err.print(f"oplens: {words}", highlight=False)

    done = slurm.run_job(req, args.sbatch or [], say, gather_timeout_s=args.gather_timeout)
    data = [_json_of(r) for r in done]
    _emit_json(args.json, data[0] if len(data) == 1 else data)
    if args.json != "-":
        for run in done:
            _show(out, run if args.rank is None else rank_part(run, args.rank), args.view)
    return 0


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    """`oplens run`: the program's output passes through (to stderr when stdout carries --json -)."""
    program = _program(args)
    if args.step and args.target:
        raise bad_input("--step and --target go one at a time", "run the overview (--step) first, then capture the hot "
                        "function line by line (--target)")  # fmt: skip
    req = ProgramRequest(
        targets=[TargetSpec.parse(t) for t in ([args.step] if args.step else args.target)],
        overview=not args.target,
        delay_s=args.delay,
        duration_s=args.duration,
        program=program,
        skip=args.skip,
        calls=args.calls,
        stop=args.stop,
        backend=args.backend,
        timeout_s=args.timeout,
        profiler_warmup=args.profiler_warmup,
        workspace=Path.cwd(),
        out=args.out,
        backend_options=_backend_options(args),
        launcher=_torchrun_options(args),
    )
    if args.slurm:
        return _run_slurm(args, req, out, err)
    streams = {1: sys.stderr if args.json == "-" else sys.stdout, 2: sys.stderr}

    def echo(stream: int, data: bytes) -> None:
        target = streams[stream]
        target.buffer.write(data) if hasattr(target, "buffer") else target.write(data.decode(errors="replace"))
        target.flush()

    kept: list[AnyRun] = []
    if not args.target and not args.step:
        err.print(f"oplens: an overview of the program from {args.delay:g} s after its start, for {args.duration:g} s "
                  "(--delay, --duration: past its start-up and first compiles; --step FILE::FUNCTION for whole steps)",
                  highlight=False)  # fmt: skip
    with capture_display(err, args.step or ", ".join(args.target) or "the program") as on_progress:
        try:
            done = multinode.run(req, progress=on_progress, echo=echo, stdin=None, on_run=kept.append,
                                 gather_timeout_s=args.gather_timeout, note=lambda words: err.print(f"oplens: {words}",
                                                                                                   highlight=False))  # fmt: skip
        except OpLensError:
            for run in kept:  # partial runs were stored: show what they hold before the error
                if args.json != "-":
                    _show(out, run, args.view)
            raise
    data = [_json_of(r) for r in done]
    if done:  # a node of several that does not merge has none (the merging node writes them)
        _emit_json(args.json, data[0] if len(data) == 1 else data)
    if args.json != "-":
        for run in done:
            _show(out, run if args.rank is None else rank_part(run, args.rank), args.view)
    _require_device_time([r for r in done if isinstance(r, Run)])
    return 0


def _json_of(run: AnyRun) -> dict[str, Any]:
    """A stored run as `--json` writes it: its record; an overview's (`overview.json`) with `lines` and `ops`
    empty besides, as `--json` wrote an overview before it had a record of its own (a script that reads a
    run's lines reads none)."""
    data = run.to_dict()
    if isinstance(run, OverviewRun):
        data |= {"lines": [], "ops": []}
    return data


def _show(out: Console, run: AnyRun, view: str) -> None:
    """A stored run as the terminal shows it: a function's lines, or a program overview's functions."""
    if isinstance(run, OverviewRun):
        render.overview(out, run)
    else:
        render.profile(out, run, view)



# torchrun's options `oplens run` passes through (each takes a value; --standalone is a flag).
TORCHRUN_OPTIONS = ("--nproc-per-node", "--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-backend", "--rdzv-id",
                    "--rdzv-conf", "--master-addr", "--master-port", "--max-restarts", "--monitor-interval",
                    "--start-method", "--local-addr")  # fmt: skip


def _torchrun_options(args: argparse.Namespace) -> list[str] | None:
    options = []
    for option in TORCHRUN_OPTIONS:
        value = getattr(args, "torchrun_" + option[2:].replace("-", "_"))
        if value is not None:
            options += [option, value]
    if args.torchrun_standalone:
        options.append("--standalone")
    return options or None


def _program(args: argparse.Namespace) -> ProgramSpec:
    module: list[str] | None = args.module
    rest: list[str] = args.program[1:] if args.program[:1] == ["--"] else args.program
    env = {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise OpLensError("bad_input", f"--env {item!r} is not NAME=VALUE", "write e.g. --env TORCH_LOGS=graph_breaks")
        env[name] = value
    if module:
        return ProgramSpec(module=module[0], args=module[1:], cwd=args.cwd or "", env=env)
    if not rest:
        raise OpLensError("bad_input", "oplens run needs a program",
                          "give it after the options: `-- script.py ARGS...` or `-m package.module ARGS...`")  # fmt: skip
    return ProgramSpec(program=rest[0], args=rest[1:], cwd=args.cwd or "", env=env)


def _diff(args: argparse.Namespace, out: Console) -> int:
    _check_json_dest(args.json)
    root = runs.runs_root(Path.cwd(), args.out)
    before = runs.find(root, args.before)
    if args.after is None:  # the latest run of the same function (an overview: the latest overview with its step)
        later = [r for r in runs.history(root, before.target.home(), before.target.qualname)
                 if r.run_id != before.run_id and isinstance(r, OverviewRun) == isinstance(before, OverviewRun)]  # fmt: skip
        if not later:
            raise OpLensError(
                "bad_input",
                f"{before.target.qualname} has no run besides {before.run_id}",
                "profile the function again after your edit, then diff the two runs",
            )
        after = later[-1]
    else:
        after = runs.find(root, args.after)
    if isinstance(before, OverviewRun) or isinstance(after, OverviewRun):
        changes = diff_overviews(before, after)
        _emit_json(args.json, changes.to_dict())
        if args.json != "-":
            render.overview_diff(out, changes)
        return 0
    result = diff_runs(before, after, args.by)
    _emit_json(args.json, result.to_dict())
    if args.json != "-":
        render.diff(out, result)
    return 1 if slower_beyond(result.totals.ratio_interval[0], args.fail_if_slower) else 0


def _export(args: argparse.Namespace, out: Console) -> int:
    """`oplens export RUN --format F`: the path written, and how to open it."""
    run = runs.find(runs.runs_root(Path.cwd(), args.runs), args.run)
    if not isinstance(run, Run):
        raise bad_input(f"{run.run_id} is a program overview", "export a function's run (its lines)")
    done = export_run(run, args.format, Path(args.out) if args.out else None)
    path = done.path
    out.print(f"{args.format}: {path}\n{FORMATS[args.format].opens_in}", highlight=False)
    for note in done.notes:
        out.print(f"note: {note}", highlight=False)
    if args.open:
        if args.format != "perfetto":
            raise bad_input(f"--open opens a Perfetto trace, not a {args.format} export", "export with --format perfetto --open")
        page = OpenPage(path, f"{run.target.qualname} · {run.run_id}")
        out.print(f"the page that opens it in Perfetto UI ({page.ui}): {page.url}", highlight=False)
        webbrowser.open(page.url)
        try:
            if page.posted.wait(PAGE_WAIT_S):
                out.print("handed to Perfetto UI", highlight=False)
        except KeyboardInterrupt:
            pass
        finally:
            page.close()
    return 0


def _analyze(args: argparse.Namespace, out: Console) -> int:
    _check_json_dest(args.json)
    run = reanalyze(runs.find_run(runs.runs_root(Path.cwd(), args.out), args.run))
    _emit_json(args.json, run.to_dict())
    if args.json != "-":
        render.profile(out, run, args.view)
    return 0


def _backend_command(cmd: BackendCommand, args: argparse.Namespace, out: Console) -> int:
    _check_json_dest(args.json)
    workspace = Path(args.workspace or ".").resolve()
    root = runs.runs_root(workspace, args.out)
    answer = cmd.run_cli(args.run, args, CommandContext(workspace, root, lambda spec: runs.find_run(root, spec)))
    _emit_json(args.json, answer.data)
    if args.json != "-":
        render.command_output(out, answer.text)
    return 0


def _profile_one(args: argparse.Namespace, target: str, expr: str, err: Console) -> Run:
    req = _request(args, target, expr)
    req.beside_earlier = not args.alone
    with progress_display(err, target) as on_progress:
        return profile(req, progress=on_progress)


def _compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    exprs: list[str] = args.args
    if len(exprs) not in (0, 1, len(args.targets)):
        raise OpLensError(
            "bad_input",
            f"{len(exprs)} --args for {len(args.targets)} targets",
            "give --args once (shared by every target) or once per target, in the same order",
        )
    fill = FILL_S if args.iters is None else 0.0  # rounds not counted by the user: fill the time
    args.iters = DEFAULT_ITERS if args.iters is None else args.iters
    reqs = [_request(args, target, exprs[i] if len(exprs) > 1 else (exprs[0] if exprs else ""))
            for i, target in enumerate(args.targets)]  # fmt: skip
    for req in reqs:
        req.fill_s = fill
    with progress_display(err, " vs ".join(t.rsplit("::", 1)[-1] for t in args.targets)) as on_progress:
        compared = compare(reqs, progress=on_progress)
    runs = compared.runs
    summary = compare_rows(runs)
    failed = [{"variant": name, "error": e.to_dict()} for name, e in compared.failed]
    _emit_json(args.json, {"runs": [r.to_dict() for r in runs], "summary": summary, "failed": failed})
    if args.json != "-":
        render.compare_table(out, compare_page(runs, compared.failed, summary))
    _require_device_time(runs)
    return _gate(args.fail_if_slower, summary)


def _gate(pct: float | None, summary: list[dict[str, Any]]) -> int:
    """`--fail-if-slower PCT` of a compare: 1 where a variant (after the baseline) is slower by more than PCT over its
    whole interval (its time over the baseline's is the speed-up's inverse: its fast end 1 / the speed-up's high)."""
    slowest = [1.0 / row["speedup_interval"][1] for row in summary[1:] if row["speedup_interval"][1] > 0]
    return 1 if any(slower_beyond(fast_end, pct) for fast_end in slowest) else 0


def slower_beyond(fast_end: float, pct: float | None) -> bool:
    """`--fail-if-slower PCT` (compare's and diff's): the later or the variant's time over the earlier's or the
    baseline's, at its interval's fast end, is above 1 + PCT/100; never without PCT."""
    return pct is not None and fast_end > 1.0 + pct / 100.0


def _require_device_time(runs: list[Run]) -> None:
    """A device backend asked for by name (`--backend neuron`) whose run found device time in no source fails (exit
    5) after its output, naming every source tried and the fix: never 0 µs on every line with exit 0. `auto` and
    the CPU keep exit 0 (the run says what it measured)."""
    for run in runs:
        dt = run.device_time
        named = run.backend.requested
        if dt is None or dt.source != NO_SOURCE or named not in registry.SPECS or not registry.facts_of(named).on_device:
            continue
        label = run.backend.device_label
        tried = "; ".join(f"{name}: {found}" for name, found in sorted(dt.found.items()))
        measured = ", ".join(f"{name} {us:.1f} µs" for name, us in sorted(dt.totals_us.items()))
        raise OpLensError(
            "backend_unavailable",
            f"no Self {label} time from any source for {run.target.qualname} (run {run.run_id}: every line would read "
            f"0 µs {label}); sources tried: {measured or 'none'}" + (f"; {tried}" if tried else ""),
            dt.note or f"oplens doctor --backend {run.backend.name} lists each source",
        )


def _check_json_dest(dest: str | None) -> None:
    """Fail before the work, not after it, when --json cannot be written."""
    if not dest or dest == "-":
        return
    folder = Path(dest).resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK) or Path(dest).is_dir():
        raise OpLensError("bad_input", f"cannot write --json {dest}", "give a file in an existing, writable folder, or '-'")


def _emit_json(dest: str | None, data: Any) -> None:
    if not dest:
        return
    text = json.dumps(data, indent=1)
    if dest == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        Path(dest).write_text(text + "\n", encoding="utf-8")
    except OSError as e:
        raise OpLensError("bad_input", f"cannot write --json {dest}: {e.strerror or e}") from None
