"""A function profiled after an edit has its earlier version measured beside it, in the same worker, interleaved
(issue 37, part 2): the earlier run's module loaded under the same package, its calls alternating with the edit's,
each line's verdict from the paired rounds; where the earlier version cannot be loaded, the diff says why and is
across two processes. Real worker, real torch, a package with a relative import edited as a user edits it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oplens.engine import runs
from oplens.engine.diff import FunctionDiff, diff_runs
from oplens.engine.profile import ProfileRequest, profile
from oplens.records.job import TargetSpec
from oplens.records.run import Run
from oplens.views.diff import diff_page

UTIL = "import torch\n\n\ndef scale(t):\n    return t * 2.0\n"
MODEL = """\
import torch

from .util import scale

X = torch.randn(192, 192)


def step():
    a = scale(X)
    b = a @ X
    c = torch.relu(b)
    return c.sum()
"""
DOUBLED = MODEL.replace("    b = a @ X\n", "    b = (a @ X) @ X\n")  # the line's work twice over
RENAMED = MODEL.replace("    c = torch.relu(b)\n    return c.sum()", "    out = torch.relu(b)\n    return out.sum()")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def package(tmp_path: Path, model: str, util: str = UTIL) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text(util)
    (pkg / "model.py").write_text(model)
    return pkg / "model.py"


def profiled(tmp_path: Path, file: Path, qualname: str = "step", args: str = "") -> Run:
    return profile(ProfileRequest(TargetSpec(str(file), qualname=qualname), args=args, workspace=tmp_path,
                                  out=str(tmp_path / "runs")))  # fmt: skip


def beside(tmp_path: Path, after: Run) -> Run:
    """The earlier version's run measured beside `after`."""
    assert after.config.earlier is not None and after.config.earlier.measured_run, after.config.earlier
    return runs.find_run(tmp_path / "runs", after.config.earlier.measured_run)


def flagged(d: FunctionDiff) -> dict[str, str]:
    return {c.text: c.verdict for c in d.lines if c.verdict in ("slower", "faster")}


@pytest.mark.timing
def test_an_edit_that_doubles_a_line_is_measured_beside_its_earlier_version_and_flagged(tmp_path: Path) -> None:
    first = profiled(tmp_path, package(tmp_path, MODEL))
    assert first.config.earlier is None  # nothing to measure it beside
    stored = json.loads((Path(first.run_dir) / "module.json").read_text())
    assert stored["text"] == MODEL and any(p.endswith("util.py") for p in stored["imports"])

    after = profiled(tmp_path, package(tmp_path, DOUBLED))
    earlier = beside(tmp_path, after)
    assert after.config.earlier is not None and after.config.earlier.run_id == first.run_id
    a, b = earlier.config.side_by_side, after.config.side_by_side
    assert a is not None and b is not None and a.group == b.group and a.earlier_of == first.run_id
    assert earlier.target.source == first.target.source and earlier.target.module == "pkg.model__oplens_earlier"
    # interleaved: each round called both, the order rotated, so neither's calls are all before the other's
    assert len(a.trace_calls) == len(b.trace_calls) == after.config.iters
    assert sorted(a.trace_calls + b.trace_calls) == list(range(min(a.trace_calls + b.trace_calls),
                                                               max(a.trace_calls + b.trace_calls) + 1))  # fmt: skip
    assert len({k % 2 for k in a.trace_calls}) == 2  # first in some rounds, second in others
    # the earlier version ran its own text: its line 10 (b = a @ X) has one matmul, the edit's two
    assert [s.op_calls for s in earlier.lines if s.line == 10] == [1]
    assert [s.op_calls for s in after.lines if s.line == 10] == [2]

    d = diff_runs(earlier, after)
    assert d.method["measured"] == "interleaved_plain" and "Holm" in d.method["correction"]
    # the edited line; the line before it cannot be moved by the edit (a line after it can: its input is a fresh
    # allocation of another history; `c = torch.relu(b)` read 9x slower once on a loaded machine, paired, p 0.008)
    found = flagged(d)
    assert found.get("b = (a @ X) @ X") == "slower" and "a = scale(X)" not in found, [
        (c.text, c.verdict, c.ratio, c.p_value) for c in d.lines]  # fmt: skip
    assert "faster" not in found.values()
    assert d.totals.verdict == "slower" and d.totals.ratio_interval[0] > 1.0
    view = diff_page(after, d, []).view
    assert view is not None and "side by side in one worker" in view.measured and "Wilcoxon" in view.method


@pytest.mark.timing
def test_an_edit_that_changes_no_work_flags_no_line_in_a_script(tmp_path: Path) -> None:
    """An A/A: a variable renamed, the same work; a standalone script this time (its earlier text by path)."""
    script = tmp_path / "model.py"
    script.write_text(MODEL.replace("from .util import scale\n", "").replace("scale(X)", "X * 2.0"))
    profiled(tmp_path, script)
    script.write_text(RENAMED.replace("from .util import scale\n", "").replace("scale(X)", "X * 2.0"))
    after = profiled(tmp_path, script)
    earlier = beside(tmp_path, after)
    d = diff_runs(earlier, after)
    assert d.method["measured"] == "interleaved_plain"
    assert flagged(d) == {}, [(c.text, c.verdict, c.ratio, c.p_value) for c in d.lines]


def test_an_earlier_version_whose_sibling_changed_falls_back_to_two_processes_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = profiled(tmp_path, package(tmp_path, MODEL))
    after = profiled(tmp_path, package(tmp_path, DOUBLED, util=UTIL.replace("t * 2.0", "t * 3.0")))
    e = after.config.earlier
    assert e is not None and e.run_id == first.run_id and not e.measured_run
    assert "util.py changed since run" in e.why_not
    assert [r.run_id for r in runs.history(tmp_path / "runs", after.target.file, "step")] == [first.run_id, after.run_id]
    d = diff_runs(first, after)
    assert d.method["measured"] == "separate"
    view = diff_page(after, d, []).view
    assert view is not None and "across two processes" in view.measured and "util.py changed" in view.measured


def test_an_earlier_version_that_no_longer_fits_the_arguments_is_named_and_the_edit_still_profiled(tmp_path: Path) -> None:
    file = package(tmp_path, MODEL)
    profiled(tmp_path, file)
    file.write_text(MODEL.replace("def step():", "def step(k):").replace("b = a @ X", "b = a @ X * k"))
    after = profiled(tmp_path, file, args="2.0")
    e = after.config.earlier
    assert e is not None and not e.measured_run and "could not be measured beside it" in e.why_not
    assert "arguments do not fit" in e.why_not or "takes 0 positional" in e.why_not
    assert [s.line for s in after.lines if s.line == 10]  # the edit itself was profiled
    assert len(runs.history(tmp_path / "runs", after.target.file, "step")) == 2  # no half-made run of the earlier
