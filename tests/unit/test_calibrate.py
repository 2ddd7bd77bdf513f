"""The ceilings' parent side (`records/ceilings.py`, `analysis/peaks.py`): devices known by name, their
datasheet figures and sources, ceilings from a spec, the record's round trip, the cache and a damaged one refused.
The measuring itself is tests/worker/test_calibrate.py's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oplens.analysis import peaks
from oplens.records import ceilings as records
from oplens.records.ceilings import DeviceCeilings, FigureSpread, SpecCeilings

# ---------------------------------------------------------------------------- the vendors' figures


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("h100", "h100-sxm"),
        ("Trainium2", "trn2"),
        ("Trainium 2", "trn2"),
        ("trn2.48xlarge", "trn2"),
        ("NeuronCore-v3", "trn2"),
        ("Trainium", "trn1"),
        ("trn1.32xlarge", "trn1"),
        ("Trainium3", "trn3"),
        ("trn3", "trn3"),
    ],
)
def test_known_device_by_name(name: str, key: str) -> None:
    found = peaks.find(name)
    assert found is not None and found.key == key


@pytest.mark.parametrize(
    "name",
    ["NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA GH200 480GB", "NVIDIA A100 80GB PCIe",
     "NVIDIA A100-SXM4-40GB", "x86_64", "AMD EPYC", "NeuronCore (2 visible)", ""],
)  # fmt: skip
def test_unknown_devices_have_no_spec(name: str) -> None:
    assert peaks.find(name) is None
    assert peaks.spec(name) is None
    assert peaks.ceilings_from_spec(name) is None


def test_gpu_figures_are_dense_and_sourced() -> None:
    h200 = peaks.spec("NVIDIA H200")
    assert h200 is not None and h200.unit == "GPU"
    assert h200.dtype_peaks == {"float32": 67e12, "tf32": 494.5e12, "bfloat16": 989.5e12, "float16": 989.5e12}
    assert h200.bytes_per_s == 4.8e12
    assert "H200" in h200.source_url_or_doc and "datasheet" in h200.source_url_or_doc
    h100 = peaks.spec("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.bytes_per_s == 3.35e12 and h100.dtype_peaks["bfloat16"] == 989.5e12
    a100 = peaks.spec("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.bytes_per_s == 2039e9
    assert a100.dtype_peaks == {"float32": 19.5e12, "tf32": 156e12, "bfloat16": 312e12, "float16": 312e12}


def test_trainium_figures_per_neuroncore_and_chip() -> None:
    # a calibration runs on a (logical) NeuronCore: its figures first, per logical core (LNC=1 here: the physical one's)
    core = peaks.spec("Trainium2", env={"NEURON_LOGICAL_NC_CONFIG": "1"})
    assert core is not None and core.unit == "logical NeuronCore (LNC=1)" and core.logical_cores == 1
    assert core.dtype_peaks["bfloat16"] == 79e12
    assert "float32" not in core.dtype_peaks  # the docs give no FP32 figure per NeuronCore-v3
    assert core.bytes_per_s is None  # nor a bandwidth per NeuronCore
    assert core.source_url_or_doc.endswith("about-neuron/arch/neuron-hardware/neuron-core-v3.rst")
    chip = peaks.spec("trn2", unit="chip")
    assert chip is not None and chip.bytes_per_s == 2.9e12
    assert chip.dtype_peaks["float32"] == 181e12 and chip.dtype_peaks["bfloat16"] == 667e12
    assert chip.source_url_or_doc.endswith("about-neuron/arch/neuron-hardware/trainium2.rst")
    trn1 = peaks.spec("trn1", unit="chip")
    assert trn1 is not None and trn1.bytes_per_s == 820 * 2**30 and trn1.dtype_peaks["float32"] == 47.5e12
    v4 = peaks.spec("NeuronCore-v4", env={})  # unset: LNC=2, the documented default
    assert v4 is not None and v4.dtype_peaks["float32"] == 2 * 20e12
    trn3 = peaks.spec("Trainium3", unit="chip")
    assert trn3 is not None and trn3.bytes_per_s == 4.9e12 and trn3.dtype_peaks["bfloat16"] == 671e12
    # a copy each time: a caller's change does not reach the table
    core.dtype_peaks["bfloat16"] = 1.0
    assert peaks.spec("Trainium2", env={"NEURON_LOGICAL_NC_CONFIG": "1"}).dtype_peaks["bfloat16"] == 79e12  # type: ignore[union-attr]


def test_ceilings_from_spec() -> None:
    spec = peaks.ceilings_from_spec("NVIDIA H200")
    assert spec is not None and spec.source == "spec" and spec.bytes_per_s == 4.8e12 and not spec.measured_at
    assert peaks.ceilings_from_spec("trn2") is None  # no bandwidth per NeuronCore
    chip = peaks.ceilings_from_spec("trn2", unit="chip")
    assert chip is not None and chip.dtype_peaks["bfloat16"] == 667e12


# ---------------------------------------------------------------------------- the record


def made(**kw: Any) -> DeviceCeilings:
    base: dict[str, Any] = dict(
        name="NVIDIA H200", dtype_peaks={"float32": 50e12, "bfloat16": 700e12}, bytes_per_s=4e12,
        measured_at="2026-01-01T00:00:00.000+00:00", backend="cuda", host="h",
        spread={"float32": FigureSpread(best=50e12, median=49e12, worst=48e12, repeats=3, size=[8192] * 3),
                "bfloat16": FigureSpread(best=700e12, median=690e12, worst=650e12, repeats=3, size=[16384] * 3)},
        memory={"copy": 3.9e12, "triad": 4e12}, spec=peaks.spec("NVIDIA H200"),
    )  # fmt: skip
    base.update(kw)
    return DeviceCeilings(**base)


def test_record_round_trip_and_ratios() -> None:
    c = made()
    back = DeviceCeilings.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back == c
    assert isinstance(back.spread["float32"], FigureSpread) and isinstance(back.spec, SpecCeilings)
    ratios = c.ratios()
    assert ratios["float32"] == pytest.approx(50 / 67)
    assert ratios["bfloat16"] == pytest.approx(700 / 989.5)
    assert ratios["bytes_per_s"] == pytest.approx(4 / 4.8)
    assert made(spec=None).ratios() == {}


def test_cache_path(tmp_path: Path) -> None:
    assert records.cache_file("vm", "cuda", "NVIDIA H100 80GB HBM3", {"OPLENS_CACHE_DIR": str(tmp_path)}) == (
        tmp_path / "ceilings" / "vm-cuda-nvidia-h100-80gb-hbm3.json"
    )
    xdg = records.cache_dir({"XDG_CACHE_HOME": str(tmp_path)})
    assert xdg == tmp_path / "oplens" / "ceilings"
    assert records.cache_dir({}) == Path.home() / ".cache" / "oplens" / "ceilings"
    assert records.cache_dir({"XDG_CACHE_HOME": "relative"}) == Path.home() / ".cache" / "oplens" / "ceilings"


@pytest.mark.parametrize(
    "text",
    ["", "{", "[1, 2]", "null", '{"schema": "oplens.ceilings/0"}', json.dumps(made(bytes_per_s=-1.0).to_dict()),
     json.dumps(made(dtype_peaks={}).to_dict()), json.dumps({**made().to_dict(), "dtype_peaks": "x"}),
     json.dumps({**made().to_dict(), "spread": [1]}), json.dumps(made(measured_at="").to_dict()),
     json.dumps(made(spread={}).to_dict()), json.dumps({**made().to_dict(), "bytes_per_s": True})],
)  # fmt: skip
def test_damaged_cache_is_not_used(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(text)
    assert records.load(path) is None


def test_cache_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "c.json"
    records.save(path, made())
    assert records.load(path) == made()
    assert records.load(tmp_path / "missing.json") is None
