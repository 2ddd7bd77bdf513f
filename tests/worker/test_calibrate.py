"""The device's ceilings (issue 14, part 2): the vendors' figures by device name, the record, and the
real calibration on this CPU with its cache (written, reused, measured again on request or when
damaged), through the worker function and through `oplens calibrate`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oplens.backends.registry import resolve
from oplens.records import ceilings as records
from oplens.records.ceilings import BFLOAT16, COPY, FLOAT32, TRIAD
from oplens.worker import calibrate
from support.cli import oplens_cli
from support.paths import ROOT

# ---------------------------------------------------------------------------- the real calibration


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {"OPLENS_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}


@pytest.fixture(scope="module")
def first(cache_env: dict[str, str]) -> tuple[calibrate.Calibrated, float]:
    """One real calibration of this CPU into an empty cache, and its wall time."""
    t0 = time.perf_counter()
    done = calibrate.ceilings(resolve("cpu"), env=cache_env)
    return done, time.perf_counter() - t0


def test_calibration_on_the_cpu(first: tuple[calibrate.Calibrated, float]) -> None:
    done, wall = first
    c = done.ceilings
    assert not done.reused and not done.cache_error
    assert c.source == "measured" and c.backend == "cpu" and c.measured_at and c.host
    assert {FLOAT32, BFLOAT16} <= set(c.dtype_peaks)
    assert all(v > 0 for v in c.dtype_peaks.values())
    assert c.bytes_per_s > 0 and set(c.memory) == {COPY, TRIAD} and c.bytes_per_s == max(c.memory.values())
    for key in [*c.dtype_peaks, COPY, TRIAD]:
        s = c.spread[key]
        assert s.repeats == calibrate.REPEATS and s.best >= s.median >= s.worst > 0 and s.size
    m = c.spread[FLOAT32].size
    assert c.dtype_peaks[FLOAT32] == pytest.approx(2 * m[0] * m[1] * m[2] / (c.spread[FLOAT32].seconds / c.spread[FLOAT32].inner))
    assert c.spec is None  # the CPU: calibration only
    assert c.seconds < wall < 30  # the target (≤ 3 s here) is the benchmark's: bench/calibrate.py
    assert done.cache.is_file() and records.load(done.cache) == c


def test_cache_reused(first: tuple[calibrate.Calibrated, float], cache_env: dict[str, str]) -> None:
    done, wall = first
    t0 = time.perf_counter()
    again = calibrate.ceilings(resolve("cpu"), env=cache_env)
    reuse = time.perf_counter() - t0
    assert again.reused and again.cache == done.cache
    assert again.ceilings.measured_at == done.ceilings.measured_at and again.ceilings == done.ceilings
    assert reuse < wall / 10
    spec = calibrate.ceilings(resolve("cpu"), env=cache_env, spec_name="h200")  # vendor figures looked up anew
    assert spec.reused and spec.ceilings.spec is not None and spec.ceilings.spec.name == "NVIDIA H200 SXM"


def test_again_and_damaged_cache_measure_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibrate, "TARGET_S", 0.01)  # a quick calibration: the cache is what is tested
    env = {"OPLENS_CACHE_DIR": str(tmp_path)}
    one = calibrate.ceilings(resolve("cpu"), env=env)
    time.sleep(0.002)
    two = calibrate.ceilings(resolve("cpu"), env=env, again=True)
    assert not two.reused and two.ceilings.measured_at != one.ceilings.measured_at
    assert records.load(two.cache) == two.ceilings  # the new figures replace the old ones
    two.cache.write_text('{"schema": "oplens.ceilings/1", "dtype_peaks": {"float32": ')
    three = calibrate.ceilings(resolve("cpu"), env=env)
    assert not three.reused and three.ceilings.measured_at != two.ceilings.measured_at
    assert records.load(three.cache) == three.ceilings


def test_unwritable_cache_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibrate, "TARGET_S", 0.01)
    blocker = tmp_path / "file"
    blocker.write_text("")  # the cache directory's place is taken by a file
    done = calibrate.ceilings(resolve("cpu"), env={"OPLENS_CACHE_DIR": str(blocker)})
    assert not done.reused and done.cache_error and done.ceilings.bytes_per_s > 0


# ---------------------------------------------------------------------------- `oplens calibrate`


def oplens(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return oplens_cli(ROOT, *args, timeout=timeout, **env)


def test_cli_reuses_the_workers_cache_and_measures_again(
    first: tuple[calibrate.Calibrated, float], cache_env: dict[str, str]
) -> None:
    done, _ = first
    proc = oplens(["calibrate", "--json", "-"], cache_env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["reused"] and data["cache"] == str(done.cache)
    assert data["ceilings"]["measured_at"] == done.ceilings.measured_at
    text = oplens(["calibrate", "--spec", "trn2"], cache_env)
    assert text.returncode == 0, text.stderr
    for expected in ("float32 matmul", "bfloat16 matmul", "memory, triad", "read from the cache", str(done.cache),
                     "NeuronCore-v3, per logical NeuronCore (LNC=", "neuron-core-v3.rst"):  # fmt: skip
        assert expected in text.stdout, text.stdout
    fresh = oplens(["calibrate", "--again", "--json", "-"], cache_env)
    assert fresh.returncode == 0, fresh.stderr
    again = json.loads(fresh.stdout)
    assert not again["reused"] and again["ceilings"]["measured_at"] != done.ceilings.measured_at
    assert again["ceilings"]["dtype_peaks"]["float32"] > 0 and again["ratios"] == {}


def test_cli_unknown_backend_and_unavailable_backend(cache_env: dict[str, str]) -> None:
    proc = oplens(["calibrate", "--backend", "nope"], cache_env)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    cuda = oplens(["calibrate", "--backend", "cuda"], cache_env)
    if cuda.returncode == 0:
        pytest.skip("this host has CUDA")
    assert cuda.returncode == 5, cuda.stderr
    assert "cuda" in cuda.stderr.lower()


# ---------------------------------------------------------------------------- the layering


def test_parent_side_never_imports_torch() -> None:
    code = ("import sys, oplens.cli.calibrate, oplens.engine.calibrate, oplens.analysis.peaks, oplens.records.ceilings; "
            "assert 'torch' not in sys.modules, 'torch imported'")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_import_contracts_kept() -> None:
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if tool is None:
        pytest.skip("import-linter is not installed")
    proc = subprocess.run([tool], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "broken" in proc.stdout and " 0 broken" in proc.stdout
