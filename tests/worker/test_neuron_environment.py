"""Issue 33, part 6: the NEFF cache and the compile-time debug info as documented, against STAND-INS of torch_neuronx
and neuron-explorer (tests/standins/), each test saying so in its name ("stand_in").

- `TORCH_NEURONX_NEFF_CACHE_DIR` "before running your profiling script" (how-to-profile-workload.rst): `import torch`
  loads TorchNeuron by itself (PyTorch's autoload of `torch.backends` entry points; tests/standins/autoload/ gives the
  stand-in one), so the parent puts the variable into the worker's environment when it starts it; the stand-in records
  what it saw when it was imported, and whether that import was torch's autoload.
- The debug info: `XLA_IR_DEBUG=1`, `XLA_HLO_DEBUG=1` (Neuron 2.33, environment-variables.rst and
  how-to-link-view-source-code.rst) and `NEURON_FRAMEWORK_DEBUG=1` (older pages) where the user asks for the
  compiled-region split (`--neuron-debug-info`, or one of them exported); the run records which were set, and when.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from oplens.backends.neuron import environment
from oplens.backends.neuron.options import NEFF_CACHE_ENV, NeuronOptions
from oplens.backends.spec import NoOptions
from oplens.engine.process import WorkerProcess, fits, run_environment
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, profile_on_stand_ins, write_stand_in_explorer
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "3"]
AUTOLOAD = STANDINS / "autoload"  # the stand-in's `torch.backends` entry point: `import torch` imports it


def profile(tmp_path: Path, *extra: str, target: str = "rmsnorm.py::rmsnorm_naive", **env: str) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "rmsnorm.py").write_text(NAIVE_TARGET)  # beside the target, which may be another file of the folder
    return profile_on_stand_ins(tmp_path, None, target, *FAST, *extra,
                                **{"PYTHONPATH": f"{AUTOLOAD}{os.pathsep}{STANDINS}", "STANDIN_EXEC_US": NAIVE_KNOWN,
                                   "STANDIN_API": "documented", "STANDIN_RECORD": str(tmp_path / "calls.jsonl"),
                                   **env})[0]  # fmt: skip


def imports(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "import"]


def test_the_stand_in_torch_neuronx_sees_the_run_s_neff_cache_when_import_torch_loads_it(tmp_path: Path) -> None:
    """The run's own NEFF cache is in the worker's environment from its start: the stand-in, autoloaded by the
    worker's `import torch` (before any job arrives), saw it; the run records it as set before the import."""
    run = profile(tmp_path)
    (first, *_) = imports(tmp_path)
    own = Path(run["run_dir"]) / "neuron_profile" / "neff_cache"
    assert first["autoloaded"] is True  # imported by `import torch` itself, as an installed TorchNeuron is
    # the run is built in .staging/<run-id>/ and moved into place: the staged run's own cache
    assert first["neff_cache_env"] and Path(first["neff_cache_env"]).parts[-4:] == (".staging", *own.parts[-3:]), first
    recorded = run["backend"]["details"]["environment"]
    assert recorded["set_before_import"] == {NEFF_CACHE_ENV: first["neff_cache_env"]}
    assert recorded["set_after_import"] == {}
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)
    assert run["artifacts"]["neffs"], "the NEFFs written to the run's own cache are in the profile"


def test_a_given_neff_cache_dir_is_there_at_the_stand_in_s_import(tmp_path: Path) -> None:
    cache = tmp_path / "neffs"
    run = profile(tmp_path, "--neff-cache-dir", str(cache))
    (first, *_) = imports(tmp_path)
    assert first["autoloaded"] is True and first["neff_cache_env"] == str(cache.resolve())
    assert run["backend"]["details"]["environment"]["set_before_import"] == {NEFF_CACHE_ENV: str(cache.resolve())}


def test_a_neff_cache_the_user_exported_is_left_alone() -> None:
    env = {NEFF_CACHE_ENV: "/shared/neffs"}
    assert environment.before_import(NeuronOptions(), Path("/nowhere"), env) == {}


def test_a_warm_worker_started_without_the_run_s_variables_is_not_used(tmp_path: Path) -> None:
    """A worker started ahead (the language server's warm one) has imported torch already: where a run needs
    variables there, `profile` starts a fresh worker (`fits`); where it needs none (no TorchNeuron here) the warm one
    is used."""
    assert run_environment({"cpu": NoOptions()}, tmp_path) == {}
    wanted = environment.before_import(NeuronOptions(debug_info=True), tmp_path, {})
    assert {"XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG"} <= set(wanted)
    warm = WorkerProcess.__new__(WorkerProcess)
    warm.env = {}
    assert fits(warm, {}) and not fits(warm, wanted)
    warm.env = dict(wanted)
    assert fits(warm, wanted)


# --------------------------------------------------------------------------- (a) the debug info for the split

COMPILED = """\
import torch

X, W, EPS = torch.randn(1, 8, 16), torch.ones(16), 1e-6


def naive(x, w, eps):
    x_sq = x * x
    mean_sq = x_sq.mean(dim=-1, keepdim=True)
    denom = mean_sq + eps
    inv_rms = torch.rsqrt(denom)
    normed = x * inv_rms
    return normed * w


compiled = torch.compile(naive, backend="eager", fullgraph=True)


def rmsnorm_compiled():
    return compiled(X, W, EPS)
"""


def profile_compiled(tmp_path: Path, *extra: str, **env: str) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "c.py").write_text(COMPILED)
    f = str(tmp_path / "c.py")
    frames = f"{f}:naive:7=0.2;{f}:naive:8+{f}:naive:9=0.3;{f}:naive:10=0.1;{f}:naive:11=0.2;{f}:naive:12=0.2"
    return profile(tmp_path, *extra, target="c.py::rmsnorm_compiled", STANDIN_EXEC_US="Torch-Compiled Region*=50",
                   STANDIN_NEFF_FRAMES=frames, **env)  # fmt: skip


def split(run: dict[str, Any]) -> dict[int, float]:
    (line,) = [s for s in run["lines"] if s["line"] == 19]
    (region,) = line["compiled"]
    return {s["line"]: s["self_device_us"] for s in region["split"]}


def test_neuron_debug_info_sets_the_2_33_variables_and_the_stand_in_compiles_the_split(tmp_path: Path) -> None:
    """--neuron-debug-info: XLA_IR_DEBUG=1 and XLA_HLO_DEBUG=1 (and NEURON_FRAMEWORK_DEBUG=1) are in the worker's
    environment from its start; a stand-in TorchNeuron that reads only the 2.33 pair (STANDIN_DEBUG_VARS=xla) embeds
    the debug info, and the compiled region's device time is split over its lines; the run records what was set."""
    run = profile_compiled(tmp_path, "--neuron-debug-info", STANDIN_DEBUG_VARS="xla")
    assert split(run) == pytest.approx({7: 10.0, 8: 7.5, 9: 7.5, 10: 5.0, 11: 10.0, 12: 10.0}, rel=0.01)
    recorded = run["backend"]["details"]["environment"]
    assert recorded["debug_info"] == {"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1", "NEURON_FRAMEWORK_DEBUG": "1"}
    assert set(recorded["set_before_import"]) >= {"XLA_IR_DEBUG", "XLA_HLO_DEBUG", "NEURON_FRAMEWORK_DEBUG"}
    assert recorded["debug_info_asked_by"] == "--neuron-debug-info"
    (first, *_) = imports(tmp_path)
    assert first["debug_env"] == {"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1", "NEURON_FRAMEWORK_DEBUG": "1"}


def test_an_exported_neuron_framework_debug_asks_for_the_split_and_adds_the_2_33_pair_on_a_stand_in(tmp_path: Path) -> None:
    """A user of an older page exports NEURON_FRAMEWORK_DEBUG=1: OpLens adds XLA_IR_DEBUG and XLA_HLO_DEBUG, so a
    2.33 TorchNeuron (the stand-in reading only those) compiles with the debug info too."""
    run = profile_compiled(tmp_path, NEURON_FRAMEWORK_DEBUG="1", STANDIN_DEBUG_VARS="xla")
    assert split(run)
    recorded = run["backend"]["details"]["environment"]
    assert recorded["debug_info_asked_by"] == "NEURON_FRAMEWORK_DEBUG=1 in the environment"
    assert set(recorded["set_before_import"]) == {"XLA_IR_DEBUG", "XLA_HLO_DEBUG", NEFF_CACHE_ENV}


def test_without_asking_no_debug_variable_is_set_and_the_stand_in_region_says_how(tmp_path: Path) -> None:
    run = profile_compiled(tmp_path)
    assert split(run) == {}
    (line,) = [s for s in run["lines"] if s["line"] == 19]
    note = line["compiled"][0]["split_note"]
    assert "--neuron-debug-info" in note and "XLA_IR_DEBUG=1 and XLA_HLO_DEBUG=1" in note, note
    recorded = run["backend"]["details"]["environment"]
    assert recorded["debug_info"] == {} and recorded["debug_info_asked_by"] == ""


def per_line(run: dict[str, Any]) -> dict[int, float]:
    return {s["line"]: s["self_device_us"] for s in run["lines"] if s["self_device_us"]}


# --------------------------------------------------------------------------- part 7: file(line) names for Explorer


def python_frames(run: dict[str, Any]) -> list[str]:
    trace = json.loads((Path(run["run_dir"]) / run["artifacts"]["trace_json"]).read_text(encoding="utf-8"))
    return [e["name"] for e in trace["traceEvents"] if e.get("cat") == "python_function"]


def test_a_neuron_run_s_framework_trace_names_the_user_s_lines_and_attribution_is_unchanged_with_stand_ins(
    tmp_path: Path,
) -> None:
    """with_stack=True (how-to-profile-workload.rst lists it with NeuronConfig; overview-system-profiles.rst: it
    "will record source information in the framework events"): the framework trace the profile keeps for Explorer
    has `file(line): function` events of the user's code; the per-line figures are the same without it."""
    run = profile(tmp_path / "with")
    assert run["backend"]["details"]["with_stack"] is True
    assert any(re.fullmatch(r"(.*/)?rmsnorm\.py\(\d+\): rmsnorm_naive", n) for n in python_frames(run)), python_frames(run)[:5]
    without = profile(tmp_path / "without", "--no-neuron-with-stack")
    assert without["backend"]["details"]["with_stack"] is False and python_frames(without) == []
    assert per_line(run) == per_line(without) == pytest.approx(NAIVE_PER_LINE, rel=0.01)
    assert {o["name"] for o in run["ops"]} == {o["name"] for o in without["ops"]}  # no Python frame counted as an op


def warm_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  options: NeuronOptions | None = None) -> tuple[dict[str, str], WorkerProcess]:  # fmt: skip
    """The editor's warm worker as the language server starts it (`warm_environment`, for the editor's Neuron
    `options` where given), where the server's interpreter sees the stand-in TorchNeuron installed and its worker
    autoloads it; the target written."""
    from oplens.engine.process import warm_environment

    monkeypatch.syspath_prepend(str(STANDINS))
    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    for name, value in {"PYTHONPATH": f"{AUTOLOAD}{os.pathsep}{STANDINS}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                        "STANDIN_EXEC_US": NAIVE_KNOWN, "PATH": path, "STANDIN_API": "documented",
                        "STANDIN_RECORD": str(tmp_path / "calls.jsonl")}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    (tmp_path / "rmsnorm.py").write_text(NAIVE_TARGET)
    staging = tmp_path / ".oplens" / "runs" / ".staging"
    env = warm_environment(staging, {"neuron": options} if options is not None else None)
    return env, WorkerProcess(staging, cwd=tmp_path, env=env)


def profile_in(worker: WorkerProcess, tmp_path: Path, options: NeuronOptions) -> dict[str, Any]:
    """`engine.profile` of the stand-in target on Neuron, offered `worker` as the language server offers its warm one."""
    from oplens.engine.profile import ProfileRequest, profile
    from oplens.records.job import TargetSpec

    req = ProfileRequest(TargetSpec("rmsnorm.py", "rmsnorm_naive"), backend="neuron", warmup=1, iters=3, workspace=tmp_path,
                         backend_options={"neuron": options})  # fmt: skip
    return profile(req, worker=worker).to_dict()


def test_the_warm_worker_s_own_neff_cache_serves_a_stand_in_run_and_its_neffs_land_in_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's warm worker, started before any run where TorchNeuron is installed (the stand-in, autoloaded),
    has a NEFF cache of its own from its start: a Neuron run takes it (no fresh worker, one import of TorchNeuron),
    the NEFFs written there during the run are copied into the run's own cache, and the scratch folder is gone."""
    from oplens.engine.process import SCRATCH_ENV

    env, warm = warm_stand_in(tmp_path, monkeypatch)
    cache = env[NEFF_CACHE_ENV]
    assert env[environment.WARM_CACHE_ENV] == "1" and cache.startswith(env[SCRATCH_ENV])
    run = profile_in(warm, tmp_path, NeuronOptions())
    (first, *more) = imports(tmp_path)
    assert not more and first["neff_cache_env"] == cache and first["autoloaded"] is True  # the warm worker ran it
    own = Path(run["run_dir"]) / "neuron_profile" / "neff_cache"
    assert list(own.rglob("*.neff")), "the NEFFs the run compiled are in its own cache"
    assert any("copied the NEFF(s)" in w for w in run["backend"]["warnings"]), run["backend"]["warnings"]
    assert not Path(env[SCRATCH_ENV]).exists()
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)


def test_a_run_needing_more_than_the_warm_worker_has_starts_a_fresh_one_with_its_own_stand_in_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--neuron-debug-info must be there at the import too: the warm worker (its own cache, no debug info) is dropped,
    its scratch removed, and the fresh worker starts with the debug variables and the run's own NEFF cache."""
    from oplens.engine.process import SCRATCH_ENV

    env, warm = warm_stand_in(tmp_path, monkeypatch)
    run = profile_in(warm, tmp_path, NeuronOptions(debug_info=True))
    fresh = [e for e in imports(tmp_path) if e["pid"] != warm.proc.pid]
    assert len(fresh) == 1 and fresh[0]["debug_env"].get("XLA_IR_DEBUG") == "1"
    assert fresh[0]["neff_cache_env"] != env[NEFF_CACHE_ENV] and fresh[0]["neff_cache_env"].endswith("neuron_profile/neff_cache")
    assert not Path(env[SCRATCH_ENV]).exists()
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)


def test_a_warm_worker_started_for_the_editor_s_settings_serves_a_debug_info_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The waiting worker is started for the editor's Neuron settings (issue 38, part 3: `WarmPool.refill` with the
    last run's options): with the debug info asked for, the variables are there at its import, so the run takes it
    (one import of TorchNeuron, in the warm worker) instead of starting a fresh one."""
    from oplens.engine.process import SCRATCH_ENV

    options = NeuronOptions(debug_info=True)
    env, warm = warm_stand_in(tmp_path, monkeypatch, options)
    assert env.get("XLA_IR_DEBUG") == "1" and env[environment.WARM_CACHE_ENV] == "1"
    run = profile_in(warm, tmp_path, options)
    (only,) = imports(tmp_path)
    assert only["pid"] == warm.proc.pid and only["debug_env"].get("XLA_IR_DEBUG") == "1"
    assert not Path(env[SCRATCH_ENV]).exists()
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)


def test_no_warm_cache_where_torch_neuronx_is_missing_or_the_user_exported_one(tmp_path: Path) -> None:
    assert environment.warm_worker(tmp_path, {NEFF_CACHE_ENV: "/shared/neffs"}) == {}
    if importlib.util.find_spec("torch_neuronx") is None:  # this interpreter, without the stand-in on its path
        assert environment.warm_worker(tmp_path, {}) == {}
