"""`oplens doctor`: can this host profile? Each answer a named `Check` with its fix (parent side, no torch).

In order: Python; torch (imports, at least the version OpLens requires); the backend (the very
`resolve` a profile meets, in a worker-side process, `oplens.worker.doctor`, which also runs the
backend's `doctor_probe`); the backend's own checks (`BackendSpec.doctor_checks`: for Neuron
torch-neuronx, the NeuronCores, the runtime's environment, neuron-explorer and its ports); the runs
directory (`runs.prepare`); a tiny profile of a function shipped for it (`worker/doctor_probe.py`)
through the real engine and worker, which passes only with device time in the op table, and on a
device backend every device-time source it tried with its figure (the deep check a new host needs:
which path gives device time there); and the
language server's import, in a subprocess so that the doctor stays light.

Exit codes (`DoctorReport.exit_code`): 0 usable (warnings allowed), 5 torch or the backend is
unavailable, 2 a runs directory given with `--out` cannot be written, 1 another problem.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.backends.host import torch_install
from oplens.backends.spec import DoctorContext
from oplens.engine import runs
from oplens.engine.host_backends import worker_facts
from oplens.engine.process import ProgressFn
from oplens.engine.profile import ProfileRequest, profile
from oplens.engine.request import DEFAULT_TIMEOUT_S
from oplens.records.doctor import OK, PROBLEM, WARNING, Check, DoctorReport
from oplens.records.errors import OpLensError, bad_input
from oplens.records.format import device_time_sources, fmt_us
from oplens.records.job import TargetSpec
from oplens.records.run import HOST_CPU, NO_SOURCE, Run

# The function profiled, a file of the worker package (it imports torch): found by path, never imported here.
PROBE_FILE = Path(__file__).resolve().parents[1] / "worker" / "doctor_probe.py"
PROBE_QUALNAME = "probe"
PROBE_ARGS = "make_inputs()"
PROBE_WARMUP = 3  # the first calls compile on Neuron; 3 is what the Neuron docs ask for
PROBE_ITERS = 5
DEVICE_SOURCES = "device time sources"  # the check listing each source's figure side by side
LSP_TIMEOUT_S = 60.0
MESSAGE_CHARS = 300  # a failed tiny profile's message, shortened (its worker log has all of it)
FALLBACK_MIN_TORCH = "2.4"  # where the installed metadata cannot be read (pyproject.toml says the same)

CheckFn = Callable[[Check], None]


@dataclass
class DoctorRequest:
    backend: str = registry.DEFAULT
    out: str | None = None  # keep the tiny profile's run here; default: a temporary runs directory
    runs_dir: str | None = None  # without `out`, the runs directory checked (a server's --out); default ./.oplens/runs
    workspace: Path = field(default_factory=Path.cwd)
    timeout_s: float = DEFAULT_TIMEOUT_S  # for the tiny profile (a Neuron compile takes a while)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


def doctor(req: DoctorRequest, on_check: CheckFn | None = None, progress: ProgressFn | None = None) -> DoctorReport:
    """Every check, in order; `on_check` sees each as it is made, `progress` the tiny profile's stages."""
    if req.backend not in registry.NAMES:
        raise bad_input(f"unknown backend {req.backend!r}", f"choose one of: {', '.join(registry.NAMES)}")
    report = DoctorReport(req.backend)

    def add(check: Check) -> Check:
        report.checks.append(check)
        if on_check is not None:
            on_check(check)
        return check

    lsp = _start_lsp_import(req.workspace)
    add(python_check())
    found = host_facts(req.backend, req.workspace)
    torch_ok = add(torch_check(found)).status != PROBLEM
    backend = found.get("backend") or {}
    backend_ok = add(backend_check(req.backend, found)).status != PROBLEM
    if torch_ok:
        spec = registry.get(str(backend.get("name") or req.backend))
        context = DoctorContext(found.get("facts") or {}, req.env, str(found.get("torch_version", "")))
        for check in spec.doctor_checks(context):
            add(check)
    root = runs.runs_root(req.workspace, req.out or req.runs_dir)
    runs_ok = add(runs_check(root)).status != PROBLEM
    if not (torch_ok and backend_ok):
        why = "torch does not import" if not torch_ok else "the backend is unavailable"
        add(Check("tiny profile", PROBLEM, f"not run: {why}", "fix the problems above, then run oplens doctor again"))
    elif not runs_ok and req.out:
        add(Check("tiny profile", PROBLEM, f"not run: cannot write runs to {root}", "give a writable --out DIR"))
    else:
        for check in tiny_profile(req, progress):
            add(check)
    add(_finish_lsp_import(lsp))
    if not (torch_ok and backend_ok):
        report.exit_code = 5
    elif not runs_ok and req.out:
        report.exit_code = 2
    else:
        report.exit_code = 0 if report.usable else 1
    return report


# ---------------------------------------------------------------------------- Python and torch


def python_check() -> Check:
    v = sys.version_info
    return Check("python", OK, f"{v.major}.{v.minor}.{v.micro} ({sys.executable})")


def min_torch() -> str:
    """The torch OpLens requires, from its installed metadata (`torch>=2.4` in pyproject.toml)."""
    try:
        requires = importlib.metadata.requires("oplens") or []
    except importlib.metadata.PackageNotFoundError:
        requires = []
    for req in requires:
        m = re.fullmatch(r"torch\s*>=\s*([\d.]+)", req.split(";")[0].strip())
        if m:
            return m.group(1)
    return FALLBACK_MIN_TORCH


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:2])


def torch_check(found: Mapping[str, Any]) -> Check:
    need = min_torch()
    wheels = torch_install(sys.executable)  # the build for the device this host has (backends/host.py)
    where = f" ({wheels.seen})" if wheels.seen else ""
    install = f"install torch {need} or newer, the {wheels.title} build for this host{where}: {wheels.command}"
    version = str(found.get("torch_version") or "")
    if not version:
        return Check("torch", PROBLEM, f"does not import: {found.get('torch_error') or 'no answer'}", install,
                     "install_torch", wheels.command)  # fmt: skip
    if _version_tuple(version) < _version_tuple(need):
        return Check("torch", PROBLEM, f"{version}: OpLens needs {need} or newer", install, "install_torch", wheels.command)
    return Check("torch", OK, f"{version} (OpLens needs {need} or newer)")


def host_facts(backend: str, workspace: Path) -> dict[str, Any]:
    """What torch and the backend report, from a worker-side process (`oplens.worker.doctor`)."""
    return worker_facts([backend], workspace)


def backend_check(requested: str, found: Mapping[str, Any]) -> Check:
    backend = found.get("backend") or {}
    if not found.get("torch_version"):
        return Check("backend", PROBLEM, f"{requested}: not checked (torch does not import)", "install torch first (above)")
    name = str(backend.get("name") or requested)
    if not backend.get("available"):
        fix = "install what the message names, or use --backend auto (the best backend present here)"
        return Check("backend", PROBLEM, str(backend.get("message") or f"{name} is unavailable"), fix, "choose_backend")
    spec = registry.get(name)
    detail = f"{name}: {backend.get('device_name') or spec.title}"
    note = str(backend.get("message") or "")
    return Check("backend", OK, detail + (f" ({note})" if note else ""))


# ---------------------------------------------------------------------------- runs, the tiny profile


def runs_check(root: Path) -> Check:
    try:
        runs.prepare(root)
    except OpLensError as e:
        return Check("runs directory", PROBLEM, e.message, e.detail)
    return Check("runs directory", OK, f"{root} is writable")


def tiny_profile(req: DoctorRequest, progress: ProgressFn | None = None) -> list[Check]:
    """Profile `doctor_probe.py::probe` on the backend through the real engine; ok only with device time.
    On a device backend, a second check lists every device-time source with its figure side by side
    (`sources_check`): on a new host, which path works there."""
    temporary = None if req.out else Path(tempfile.mkdtemp(prefix="oplens-doctor-"))
    keep = False
    try:
        run = profile(
            ProfileRequest(
                target=TargetSpec(str(PROBE_FILE), qualname=PROBE_QUALNAME),
                args=PROBE_ARGS,
                backend=req.backend,
                warmup=PROBE_WARMUP,
                iters=PROBE_ITERS,
                timeout_s=req.timeout_s,
                workspace=req.workspace,
                out=str(temporary) if temporary else req.out,
            ),
            progress=progress,
        )
        check = judge_profile(run, kept=not temporary)
        sources = sources_check(run)
        if temporary is not None and PROBLEM in (check.status, sources and sources.status):
            keep = True  # a failed proof is worth reading: its run stays
            check = judge_profile(run, kept=True)
        return [check] + ([sources] if sources else [])
    except OpLensError as e:
        keep = True  # the failed run's worker log (named in the error) stays
        message = e.message.strip().splitlines()[0] if e.message.strip() else e.kind
        if len(message) > MESSAGE_CHARS:
            message = message[:MESSAGE_CHARS] + " …"
        return [Check("tiny profile", PROBLEM, f"{e.kind}: {message}", _failure_fix(e.detail))]
    finally:
        if temporary is not None and not keep:
            shutil.rmtree(temporary, ignore_errors=True)


def _failure_fix(detail: str) -> str:
    """From a failed profile's detail: its advice (the first line, where it is not a traceback or a
    log tail) and where the whole worker log is."""
    lines = [line.strip() for line in detail.strip().splitlines() if line.strip()]
    advice = lines[:1] if lines and not lines[0].startswith(("Traceback", "worker log", "full worker log")) else []
    log = [line for line in lines if line.startswith("full worker log:")][-1:]
    return "\n".join(advice + log) or "profile a function of yours with oplens profile to see the whole error"


def judge_profile(run: Run, kept: bool = True) -> Check:
    """The proof that device time reaches the op table: the ops' self device time is above zero."""
    label = run.backend.device_label
    device = sum(op.self_device_us for op in run.ops)
    where = f"run {run.run_dir}" if kept else "a temporary run (--out DIR keeps it)"
    what = f"{run.backend.name} ({run.backend.device_name or label}), {run.config.iters} iterations; {where}"
    if device <= 0:
        stray = run.totals.unattributed_device_us
        why = (
            f"the profile holds {fmt_us(stray)} of device time that no op claimed"
            if stray > 0
            else "the profile holds no device time at all"
        )
        return Check(
            "tiny profile", PROBLEM,
            f"the op table shows no Self {label} time ({len(run.ops)} ops, {fmt_us(run.totals.self_cpu_us)} self CPU): "
            f"{why}; {what}",
            "; ".join(run.backend.warnings)
            or f"open the run's trace.json and worker.log: did the ops run on the {label} device?",
        )  # fmt: skip
    top = max(run.ops, key=lambda op: op.self_device_us)
    detail = (
        f"{fmt_us(device)} of Self {label} per iteration over {len(run.ops)} ops "
        f"(top: {top.name} {fmt_us(top.self_device_us)}); {what}"
    )
    if run.backend.warnings:
        return Check("tiny profile", WARNING, detail, "; ".join(run.backend.warnings))
    return Check("tiny profile", OK, detail)


def sources_check(run: Run) -> Check | None:
    """Each device-time source the run tried, its figure and what it found (`DeviceTimeSources`), the
    one used named; a problem where none gave device time, a warning where two disagree. None on the
    CPU (device time is CPU time) and for a run that records no sources."""
    dt = run.device_time
    if dt is None or dt.source == HOST_CPU:
        return None
    listed = "; ".join(device_time_sources(dt)) or "no source measured"
    if dt.source == NO_SOURCE:
        tried = ", ".join(sorted(set(dt.totals_us) | set(dt.found))) or "none"
        return Check(DEVICE_SOURCES, PROBLEM, f"no source gave Self {run.backend.device_label} time (tried: {tried}): "
                     f"{listed}", dt.note or "see docs/trainium-checklist.md")  # fmt: skip
    if dt.mismatch:
        return Check(DEVICE_SOURCES, WARNING, listed, dt.mismatch)
    return Check(DEVICE_SOURCES, OK, listed)


# ---------------------------------------------------------------------------- the language server


def _start_lsp_import(workspace: Path) -> subprocess.Popen[str] | OSError:
    try:
        return subprocess.Popen(
            [sys.executable, "-c", "import oplens.lsp.server"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=workspace,
        )
    except OSError as e:
        return e


def _finish_lsp_import(proc: subprocess.Popen[str] | OSError) -> Check:
    name = "language server"
    fix = (f"install OpLens again into this environment with pygls 2 (in VS Code: OpLens: Install OpLens into the Selected "
           f"Environment; else {sys.executable} -m pip install the OpLens wheel, or -e the checkout)")  # fmt: skip
    if isinstance(proc, OSError):
        return Check(name, PROBLEM, f"cannot start {sys.executable}: {proc}", fix, "install_oplens")
    try:
        _, err = proc.communicate(timeout=LSP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Check(name, PROBLEM, f"importing oplens.lsp.server took more than {LSP_TIMEOUT_S:g} s", fix, "install_oplens")
    if proc.returncode != 0:
        tail = " | ".join(err.strip().splitlines()[-2:]) or f"exit status {proc.returncode}"
        return Check(name, PROBLEM, f"oplens.lsp.server does not import: {tail}", fix, "install_oplens")
    return Check(name, OK, f"oplens.lsp.server imports (pygls {_version('pygls')}); editors start it with oplens serve --stdio")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"
