"""The Neuron backend, against a STAND-IN of the vendor module's surface (tests/standins/).

TorchNeuron cannot be installed here, so `torch_neuronx` is a stand-in that accepts the
documented arguments and writes the documented files; it registers `torch.neuron` like the real
one, but nothing runs on a device (tensors stay on the CPU, so device times are 0). What is tested
is what OpLens does with it: the NeuronConfig it builds, the profiler options, the directories and
NEFF/NTFF pairs it finds, the warnings on each documented trap, the messages when Neuron is
missing, and `auto`'s choice. Attribution and tables are OpLens's own, never faked.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from oplens.backends.neuron.artifacts import PROFILE_DIR
from oplens.records.errors import OpLensError
from support.cli import flat, oplens_cli
from support.neuron import TARGET, calls
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "2"]


def oplens(cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return oplens_cli(cwd, *argv, timeout=180, **env)


def with_stand_in(**env: str) -> dict[str, str]:
    return {"PYTHONPATH": str(STANDINS), **env}


def test_a_profile_without_backend_is_autos_and_records_the_choice(tmp_path: Path) -> None:
    """On this host (no torch_neuronx, no GPU) the default ends on the CPU: the figures are the CPU's, the run says so."""
    (tmp_path / "t.py").write_text(TARGET)
    proc = oplens(tmp_path, "profile", "t.py::fn", *FAST)
    assert proc.returncode == 0, proc.stderr
    assert "CPU (cpu, torch" in proc.stdout  # the header names the device chosen
    assert "auto fell back to the CPU (neuron: torch_neuronx is not installed; cuda: " in flat(proc.stdout)
    (result,) = tmp_path.glob(".oplens/runs/*/result.json")
    backend = json.loads(result.read_text())["backend"]
    assert (backend["requested"], backend["name"], backend["device_label"]) == ("auto", "cpu", "CPU")


# --------------------------------------------------------------------------- end to end (worker + CLI)


def test_profile_end_to_end_with_stand_in_torch_neuronx(tmp_path: Path) -> None:
    """The whole path a Trn2 user runs, with the vendor module faked: CLI → worker → NeuronConfig →
    profiler → export → artifacts → traps → result.json. Device times are 0: no device here."""
    (tmp_path / "t.py").write_text(TARGET)
    record = tmp_path / "record.jsonl"
    proc = oplens(
        tmp_path, "profile", "t.py::fn", "--backend", "neuron", *FAST, "--neuron-cores", "0", "--neuron-max-events", "5000",
        "--neff-cache-dir", "neffs", "--json", "-",
        **with_stand_in(STANDIN_RECORD=str(record), STANDIN_CORES="2", STANDIN_EMPTY_NTFFS="1", STANDIN_DROPPED="1001",
                        NEURON_RT_NUM_CORES="4"),
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr  # no device time: exit 5 (issue 33)
    run = json.loads(proc.stdout)
    run_dir = Path(run["run_dir"])
    assert (run["backend"]["name"], run["backend"]["device_label"], run["backend"]["requested"]) == ("neuron", "NEURON", "neuron")
    (config,) = calls(record, "NeuronConfig")
    assert config["profile_output_dir"].endswith(f".staging/{run['run_id']}/{PROFILE_DIR}")
    assert (config["modes"], config["capture_enabled_for_nc"], config["max_events_per_nc"]) == (["DEVICE", "RUNTIME"], "0", 5000)
    assert config["neff_cache_dir"] == str((tmp_path / "neffs").resolve()) and config["correlate_device_time"] is True
    assert len(calls(record, "synchronize")) >= 1 + 2  # after each warm-up run and each profiled iteration
    assert run["backend"]["details"]["neuron_config"]["profile_output_dir"] == PROFILE_DIR  # run-relative, not .staging
    art = run["artifacts"]
    assert art["profile_output_dir"] == PROFILE_DIR and len(art["ntffs"]) == 2 and art["neff_ntff_pairs"] == []
    # the documented order: NeuronConfig and NeuronProfiler before the warm-up runs (their synchronize calls),
    # and the NEFF cache in the environment before torch_neuronx was imported
    order = [c["event"] for c in map(json.loads, record.read_text().splitlines())]
    assert order.index("NeuronConfig") < order.index("NeuronProfiler") < order.index("synchronize")
    (imported,) = calls(record, "import")
    assert imported["neff_cache_env"] == str((tmp_path / "neffs").resolve())
    for path in [art["trace_json"], art["device_profile_dir"], *art["system_trace_files"], art["worker_log"]]:
        assert (run_dir / path).exists(), path  # relative to the run directory, valid after the rename
    warnings = "\n".join(run["backend"]["warnings"])
    for needle in ["only 1 warm-up run", "NEURON_RT_NUM_CORES=4", "1 of 2 NTFFs are empty", "dropped 1,001 trace events"]:
        assert needle in warnings
    # OpLens's own attribution ran on the real profile: CPU time per line, no device time (and never negative)
    assert run["totals"]["self_device_us"] == 0 and run["totals"]["self_cpu_us"] > 0
    assert {s["line"] for s in run["lines"]} >= {5, 6, 7}
    assert json.loads((run_dir / "result.json").read_text())["artifacts"] == art
    # the CLI's listing shows the profile and the warnings
    listing = oplens(tmp_path, "profile", "t.py::fn", "--backend", "neuron", *FAST, **with_stand_in())
    assert listing.returncode == 5, listing.stderr  # no device time: exit 5 (issue 33)
    out = flat(listing.stdout)
    assert "Neuron profile neuron_profile/i-0standin0000000_pid_" in out and "(modes DEVICE, RUNTIME)" in out
    assert "system traces: ntrace.pb, trace_info.pb" in out and "NEFFs: neff_395760075800974_vnc_0.neff" in out
    assert "NTFFs: profile_nc_0_session_0.ntff" in out
    assert "open in Neuron Explorer: oplens explorer" in out and "warning: only 1 warm-up run(s)" in out


def test_the_runs_own_neff_cache_by_default_and_neffs_from_the_default_cache_with_stand_in_torch_neuronx(
    tmp_path: Path,
) -> None:
    """NEFFs appear in the profile only with a NEFF cache dir (TORCH_NEURONX_NEFF_CACHE_DIR before torch_neuronx
    is imported, how-to-profile-workload.rst), and TorchNeuron otherwise keeps them in /tmp/neff_cache
    (torch_neuronx/csrc/core/cache/PersistentCacheBackend.h of the early source): without --neff-cache-dir the
    run gets its own cache, and NEFFs written to the default cache during the run are copied into it."""
    (tmp_path / "t.py").write_text(TARGET)
    default = tmp_path / "default-neff-cache"  # the stand-in's /tmp/neff_cache (never the real one)
    (default / "00" / "11").mkdir(parents=True)
    stale = default / "00" / "11" / "0011aabb.neff"  # another process's, from before the run: not copied
    stale.write_bytes(b"old")
    os.utime(stale, (1_000_000_000, 1_000_000_000))
    caches = {"STANDIN_DEFAULT_NEFF_CACHE": str(default), "OPLENS_NEURON_DEFAULT_NEFF_CACHE": str(default),
              "TORCH_NEURONX_NEFF_CACHE_DIR": "", "STANDIN_NEFF_NEEDS_CACHE": "1"}  # fmt: skip
    record = tmp_path / "record.jsonl"
    proc = oplens(tmp_path, "profile", "t.py::fn", "--backend", "neuron", *FAST, "--json", "-",
                  **with_stand_in(STANDIN_RECORD=str(record), **caches))  # fmt: skip
    assert proc.returncode == 5, proc.stderr  # no device time: exit 5 (issue 33)
    run = json.loads(proc.stdout)
    (imported,) = calls(record, "import")
    assert imported["neff_cache_env"].endswith(f".staging/{run['run_id']}/{PROFILE_DIR}/neff_cache")
    neffs = {(n["form"], Path(n["path"]).name) for n in run["artifacts"]["neffs"]}
    assert neffs == {("session", "neff_395760075800974_vnc_0.neff"), ("cache", "000167f112bc018e.neff")}
    assert (Path(run["run_dir"]) / PROFILE_DIR / "neff_cache" / "00" / "01" / "000167f112bc018e.neff").is_file()
    assert not any("no NEFF" in w for w in run["backend"]["warnings"])
    # a TorchNeuron that leaves its NEFFs in the default cache: the profile has none, the run copies them
    proc = oplens(tmp_path, "profile", "t.py::fn", "--backend", "neuron", *FAST, "--json", "-",
                  **with_stand_in(STANDIN_IGNORE_NEFF_CACHE_ENV="1", **caches))  # fmt: skip
    assert proc.returncode == 5, proc.stderr  # no device time: exit 5 (issue 33)
    run = json.loads(proc.stdout)
    assert [(n["form"], n["path"]) for n in run["artifacts"]["neffs"]] == [
        ("cache", f"{PROFILE_DIR}/neff_cache/00/01/000167f112bc018e.neff")]  # fmt: skip
    assert (Path(run["run_dir"]) / run["artifacts"]["neffs"][0]["path"]).read_bytes() == b"NEFF" * 64
    assert (default / "00" / "01" / "000167f112bc018e.neff").is_file() and stale.is_file()  # copied, never moved
    assert not any("no NEFF" in w for w in run["backend"]["warnings"])


def test_device_oom_error_carries_the_hbm_hint_with_stand_in_torch_neuronx(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    proc = oplens(tmp_path, "profile", "t.py::oom", "--backend", "neuron", *FAST, **with_stand_in())
    assert proc.returncode == 3, proc.stderr
    err = flat(proc.stderr)
    assert "failed to allocate" in err and "ProfileMode.DEVICE reserves about 5 GB of HBM" in err


def test_neuron_backend_with_the_pypi_stub_exits_5_and_says_where_to_install(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    proc = oplens(tmp_path, "profile", "t.py::fn", "--backend", "neuron", *FAST, **with_stand_in(STANDIN_PYPI_STUB="1"))
    assert proc.returncode == 5, proc.stderr
    err = flat(proc.stderr)
    assert "the neuron backend is unavailable: torch_neuronx" in err and "does not import (ImportError" in err
    assert "Neuron pip repository" in err and "--extra-index-url https://pip.repos.neuron.amazonaws.com" in err
    assert "--backend cpu" in err and "Traceback" not in err


def test_auto_without_torch_neuronx_falls_back_and_says_so_in_the_result(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    proc = oplens(tmp_path, "profile", "t.py::fn", "--backend", "auto", *FAST, "--neuron-modes", "RUNTIME", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    backend = json.loads(proc.stdout)["backend"]
    assert (backend["name"], backend["requested"]) == ("cpu", "auto")
    assert backend["note"].startswith("auto fell back to the CPU (neuron: torch_neuronx is not installed")
    assert "cuda:" in backend["note"] and backend["warnings"] == []
    assert json.loads(proc.stdout)["artifacts"]["trace_json"] == "trace.json"


def test_the_backends_of_each_kind_of_host_for_the_editor(tmp_path: Path) -> None:
    """`oplens.backends`' answer, through the worker-side process: here (no torch_neuronx, no GPU), then with
    the stand-in torch_neuronx on the worker's path (a Trainium host)."""
    from oplens.engine.host_backends import backends_here

    here = backends_here("auto", tmp_path, root=tmp_path)
    assert here["chosen"]["name"] == "cpu" and here["chosen"]["device_label"] == "CPU" and here["problem"] == ""
    assert here["chosen"]["note"].startswith("auto fell back to the CPU (neuron: torch_neuronx is not installed")
    rows = {r["name"]: r for r in here["backends"]}
    assert list(rows) == ["auto", "cpu", "cuda", "neuron"]
    assert rows["auto"]["detail"] == "the first present of Neuron, CUDA, CPU: CPU here"
    assert rows["cpu"]["available"] and rows["cpu"]["detail"].startswith("present")
    assert not rows["neuron"]["available"] and rows["neuron"]["detail"] == "torch_neuronx is not installed"
    assert here["interpreters"] == []  # no DLAMI venv under tmp_path
    cuda = backends_here("cuda", tmp_path, root=tmp_path)
    assert cuda["chosen"] is None and "the cuda backend is unavailable" in cuda["problem"]
    with pytest.raises(OpLensError, match="unknown backend 'tpu'"):
        backends_here("tpu", tmp_path)


def test_the_backends_on_a_trainium_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oplens.engine.host_backends import backends_here

    monkeypatch.setenv("PYTHONPATH", str(STANDINS))  # the worker-side process imports the stand-in
    monkeypatch.setenv("STANDIN_RECORD", str(tmp_path / "standin-record.jsonl"))
    trn = backends_here("auto", tmp_path, root=tmp_path)
    assert (trn["chosen"]["name"], trn["chosen"]["note"]) == ("neuron", "auto: neuron is present")
    assert {r["name"]: r["available"] for r in trn["backends"]}["neuron"] is True
    assert trn["backends"][0]["detail"].endswith(": Neuron here")
