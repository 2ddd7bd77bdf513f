"""Each line's efficiency as the NeuronCore measured it (issue 33, part 8), against STAND-INS of torch_neuronx and
neuron-explorer (tests/standins/): the stand-in TorchNeuron runs known executions (`STANDIN_EXEC_US`), one graph per
op (`STANDIN_NEFFS`), and the stand-in neuron-explorer writes Neuron Explorer's per framework op tables with known
figures (`STANDIN_EXPLORER_MEASURED`, its `measured_tables` citing profile-schema-reference.rst: FrameworkNode `mfu`,
`hfu` in percent, `mbu_per_interval` per interval of `time_intervals`, `hbm_read_bytes`/`hbm_write_bytes`; Summary's
`mm_arithmetic_intensity`, `peak_flops_bandwidth_ratio`; ThrottleSummary's `throttle_active_time_percent`).

Each line's MFU, HFU and MBU must come back as its ops' known figures weighted by their executions' device time,
within 1 %, its HBM bytes per call as their sum, its bound measured; a profile without those tables stays
estimated and shows no 0 for a figure it never measured. What no page says (where a system profile keeps its device
profiles, the bound's 50 % threshold) is the stand-in's or OpLens's choice, listed in docs/trainium-checklist.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oplens.analysis.roofline import measured_bound
from oplens.lsp import views
from oplens.records.run import Run
from oplens.views.run import run_page
from support.cli import oplens_cli
from support.neuron import NAIVE_KNOWN, profile_on_stand_ins
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "3"]
TARGET = """\
import torch

X, W, EPS = torch.randn(1, 8, 16), torch.ones(16), 1e-6


def rmsnorm_mixed():
    x, w = X, W
    inv = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + EPS)
    return x * inv * w
"""
EXEC_US = {"aten::mul": 7.0, "aten::mean": 5.0, "aten::add": 2.0, "aten::rsqrt": 3.0}  # NAIVE_KNOWN
assert NAIVE_KNOWN == ",".join(f"{k}={v:g}" for k, v in EXEC_US.items())
# per op: MFU, HFU, MBU (percent), HBM bytes read and written per execution, [intensity, ridge, throttled %]
KNOWN = {"aten::mul": (80, 85, 30, 4096, 2048), "aten::mean": (10, 12, 95, 1024, 512, 4, 200, 10),
         "aten::add": (5, 5, 30, 256, 256), "aten::rsqrt": (2, 3, 40, 128, 128, 1, 200, 30)}  # fmt: skip
SPEC = ",".join(f"{op}={':'.join(str(v) for v in values)}" for op, values in KNOWN.items())
LINE_OPS = {8: ["aten::mul", "aten::mean", "aten::add", "aten::rsqrt"], 9: ["aten::mul", "aten::mul"]}  # per call


def profile(tmp_path: Path, *argv: str, measured: bool = True, exported: bool = False, **env: str) -> dict[str, Any]:
    """`oplens profile` on the stand-ins; `measured`: with --neuron-measured (`exported`: OPLENS_NEURON_MEASURED=1
    exported instead, as a user may set it for every run)."""
    base = {"STANDIN_EXEC_US": NAIVE_KNOWN, "STANDIN_NO_CORRELATE": "1", "STANDIN_NEFFS": "4", "STANDIN_EXPLORER_MEASURED": SPEC}
    if measured and exported:
        base["OPLENS_NEURON_MEASURED"] = "1"
    flag = ["--neuron-measured"] if measured and not exported else []
    return profile_on_stand_ins(tmp_path, TARGET, "mixed.py::rmsnorm_mixed", *FAST, *flag, *argv, **{**base, **env})[0]


def expected(line: int) -> dict[str, float]:
    """The line's figures from the known ones: each op's weighted by its execution's device time."""
    ops = LINE_OPS[line]
    t = sum(EXEC_US[o] for o in ops)

    def weighted(k: int, among: list[str] | None = None) -> float:
        chosen = [o for o in ops if among is None or o in among]
        return sum(KNOWN[o][k] * EXEC_US[o] for o in chosen) / sum(EXEC_US[o] for o in chosen)

    out = {"mfu_pct": weighted(0), "hfu_pct": weighted(1), "mbu_pct": weighted(2),
           "hbm_bytes": sum(KNOWN[o][3] + KNOWN[o][4] for o in ops), "device_us": t}  # fmt: skip
    extra = [o for o in ops if len(KNOWN[o]) > 5]
    if extra:
        out |= {"intensity": weighted(5, extra), "ridge": weighted(6, extra), "throttled_pct": weighted(7, extra)}
    return out


def lines(run: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {s["line"]: s for s in run["lines"] if s["self_device_us"]}


@pytest.mark.parametrize("version", ["7.4.0", "12.0.1"])
def test_stand_in_each_line_gets_its_ops_measured_mfu_mbu_and_bytes_time_weighted(tmp_path: Path, version: str) -> None:
    run = profile(tmp_path, STANDIN_SCHEMA_VERSION=version)
    got = lines(run)
    assert {n: s["self_device_us"] for n, s in got.items()} == pytest.approx({8: 17.0, 9: 14.0}, rel=0.01)
    for n in (8, 9):
        m, want = got[n]["measured"], expected(n)
        for key in ("mfu_pct", "hfu_pct", "mbu_pct", "hbm_bytes", "intensity", "ridge", "throttled_pct"):
            if key in want:
                assert m[key] == pytest.approx(want[key], rel=0.01), (n, key)
            else:  # no Summary / ThrottleSummary for its graphs: left out, never 0
                assert m[key] is None, (n, key)
        assert m["covered_pct"] == pytest.approx(100.0)
    # line 8: MFU 36.8 %, MBU 50.9 % -> memory; line 9: MFU 80 %, MBU 30 % -> compute; from measurement
    assert (got[8]["bound"], got[8]["bound_from"], got[8]["measured"]["bound"]) == ("memory", "measured", "memory")
    assert (got[9]["bound"], got[9]["bound_from"], got[9]["measured"]["bound"]) == ("compute", "measured", "compute")
    assert sorted(got[8]["measured"]["ops"]) == ["aten.add", "aten.mean", "aten.mul", "aten.rsqrt"]  # leaves only
    total = run["totals"]["measured"]
    t8, t9 = expected(8)["device_us"], expected(9)["device_us"]
    assert total["mfu_pct"] == pytest.approx((expected(8)["mfu_pct"] * t8 + expected(9)["mfu_pct"] * t9) / (t8 + t9), rel=0.01)
    assert total["hbm_bytes"] == pytest.approx(expected(8)["hbm_bytes"] + expected(9)["hbm_bytes"], rel=0.01)
    assert "measured MFU/MBU on 2 line(s)" in run["device_time"]["found"]["system_trace"]
    assert not [w for w in run["backend"]["warnings"] if "Framework" in w or "Summary" in w]
    # the engine breakdown per line, from each graph's ActiveTime (the stand-in's: Tensor the first half of each
    # execution, Vector its last 40 %), summed over the line's executions per call
    for n in (8, 9):
        t = expected(n)["device_us"]
        engines = {e["engine"]: (e["active_us"], e["pct"]) for e in got[n]["engines"]}
        assert engines == {"Tensor": pytest.approx((0.5 * t, 50.0), rel=0.01), "Vector": pytest.approx((0.4 * t, 40.0), rel=0.01)}
    assert got[8]["engine_graph"].count("neff_") == 4 and got[9]["engine_graph"].count("neff_") == 1


def test_stand_in_the_cli_and_the_hover_say_which_bound_is_measured(tmp_path: Path) -> None:
    run = profile(tmp_path)
    proc = oplens_cli(tmp_path, "analyze", run["run_id"], PYTHONPATH=str(STANDINS))  # re-read from the kept tables
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert ("line 8: measured MFU 36.8 %, HFU 39.6 %, MBU 50.9 %, 8.2 KiB HBM per call, 2.88 FLOP/B (ridge 200), "
            "throttled 17.5 %: memory-bound (measured)") in text
    assert "line 9: measured MFU 80.0 %, HFU 85.0 %, MBU 30.0 %, 12.0 KiB HBM per call: compute-bound (measured)" in text
    assert "function: measured MFU 56.3 %, HFU 60.1 %, MBU 41.5 %, 20.2 KiB HBM per call" in text
    assert "compute-bound (measured); other figures and bounds are estimates" in text
    assert ("line 9: graph neff_395760075800974_vnc_0.neff, 14.0 µs on the device per call: Tensor 7.0 µs (50%), "
            "Vector 5.6 µs (40%)") in text
    bound = oplens_cli(tmp_path, "analyze", run["run_id"], "--view", "bound", PYTHONPATH=str(STANDINS))
    assert bound.returncode == 0, bound.stderr
    words = " ".join(bound.stdout.split())
    assert "measured memory" in words and "measured compute" in words  # the bound column
    assert "36.8 · 50.9" in words and "80.0 · 30.0" in words  # the MFU · MBU % column
    assert "measured: the bound from the device's own MFU and MBU" in words
    assert "line 8: measured MFU 36.8 %" in words and "memory-bound (measured)" in words
    stored = Run.from_dict(run)
    (stat,) = [s for s in stored.lines if s.line == 8]
    hover = views.line_markdown(stored, stat)
    assert "**memory-bound (measured)**" in hover, hover
    assert "Measured on the device: MFU 36.8 %, HFU 39.6 %, MBU 50.9 %, 8.2 KiB HBM per call" in hover, hover
    # the results page's cells (views/run.py; the webview draws them as given)
    page = run_page(stored)
    row = next(r for r in page.lines if r.line == 8)
    assert row.bound == "measured memory"
    assert row.bound_title.startswith("memory-bound (measured) · measured on the device: MFU 36.8 %, HFU 39.6 %"), row
    assert "measured on the device: MFU 36.8 %" in row.tooltip
    (stat_row,) = [x for x in page.stats if x.label == "Measured on the device"]
    assert stat_row.value == "MFU 56.3 % · MBU 41.5 %" and stat_row.note.startswith("compute-bound (measured); MFU 56.3 %")


def test_stand_in_a_profile_without_the_framework_op_tables_stays_estimated_and_shows_no_zero(tmp_path: Path) -> None:
    """The default ingest leaves out the instruction trace (runtime.py's first step): no FrameworkNode, so no line
    is measured, the run says why and how to get it, and no MFU/MBU figure is printed at all."""
    run = profile(tmp_path, measured=False)
    assert all(s["measured"] is None and s["bound_from"] != "measured" for s in run["lines"])
    assert run["totals"]["measured"] is None
    found = run["device_time"]["found"]["system_trace"]
    assert "measured MFU/MBU: none" in found and "--neuron-measured" in found and "OPLENS_NEURON_MEASURED=1" in found
    proc = oplens_cli(tmp_path, "analyze", run["run_id"], PYTHONPATH=str(STANDINS))
    assert proc.returncode == 0, proc.stderr
    assert "MFU" not in proc.stdout.replace("measured MFU/MBU: none", "") and "(measured)" not in proc.stdout
    stored = Run.from_dict(run)
    assert all("Measured on the device" not in views.line_markdown(stored, s) for s in stored.lines)


def test_stand_in_a_missing_column_is_named_and_its_figure_left_out(tmp_path: Path) -> None:
    """A FrameworkNode without mbu_per_interval (a schema that renamed it): the warning names the version, table and
    column; MBU is None on every line, never 0; a bound needs the figures it compares (line 9's MFU 80 % still says
    compute; line 8's 36.8 % with no MBU gives no measured bound)."""
    run = profile(tmp_path, STANDIN_EXPLORER_MEASURED_DROP="mbu_per_interval", STANDIN_SCHEMA_VERSION="12.0.1")
    warned = [w for w in run["backend"]["warnings"] if "FrameworkNode" in w]
    assert warned and all("profile schema 12.0.1" in w and "mbu_per_interval" in w for w in warned), warned
    got = lines(run)
    assert got[8]["measured"]["mbu_pct"] is None and got[9]["measured"]["mbu_pct"] is None
    assert got[8]["measured"]["mfu_pct"] == pytest.approx(expected(8)["mfu_pct"], rel=0.01)
    assert got[9]["bound_from"] == "measured" and got[9]["bound"] == "compute"
    assert got[8]["measured"]["bound"] == "" and got[8]["bound_from"] != "measured"
    assert any("MBU" in why for why in got[8]["measured"]["missing"])


def test_the_measured_bound_rule() -> None:
    assert measured_bound(80.0, 30.0) == "compute"
    assert measured_bound(20.0, 70.0) == "memory"
    assert measured_bound(20.0, 30.0) == "neither"
    assert measured_bound(60.0, None) == "compute" and measured_bound(None, 60.0) == "memory"
    assert measured_bound(20.0, None) == "" and measured_bound(None, None) == ""


def test_stand_in_a_device_profile_without_framework_op_tables_is_named_and_stays_estimated(tmp_path: Path) -> None:
    """The device profile kept (OPLENS_NEURON_MEASURED=1 exported) but without FrameworkNode/FrameworkInstruction (a
    release that writes none): a warning names the tables, every line stays estimated, no figure is 0."""
    run = profile(tmp_path, exported=True, STANDIN_EXPLORER_MEASURED="")
    assert all(s["measured"] is None and s["bound_from"] != "measured" for s in run["lines"])
    found = run["device_time"]["found"]["system_trace"]
    assert "measured MFU/MBU: none" in found and "see the warnings" in found, found
    assert any("FrameworkNode" in w and "FrameworkInstruction" in w for w in run["backend"]["warnings"])
