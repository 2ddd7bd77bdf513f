"""Without numpy and orjson (compiled: the editor extension cannot bundle them), the analysis runs on
analysis/purearrays.py and JSON is read by json: the same figures. The stand-in is compared with numpy
call by call on random arrays, and the analysis tests run again on it (`OPLENS_PURE_PYTHON=1`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oplens.analysis import purearrays as pa
from oplens.records import jsonfile
from support.paths import ROOT

ints = st.lists(st.integers(min_value=-50, max_value=50), max_size=40)
small = st.lists(st.integers(min_value=0, max_value=12), max_size=40)


def same(ours: Any, theirs: Any) -> None:
    """`ours` (purearrays) holds what `theirs` (numpy) does, element types included."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            same(a, b)
        return
    if isinstance(theirs, numpy.ndarray):
        assert isinstance(ours, pa.ndarray), ours
        assert ours.tolist() == theirs.tolist()
        assert ours.dtype.kind == theirs.dtype.kind, (ours.dtype, theirs.dtype)
        return
    assert ours == theirs and type(ours) is type(theirs.item() if hasattr(theirs, "item") else theirs)


@settings(max_examples=60, deadline=None)
@given(a=ints, b=ints)
def test_element_wise_operations_are_numpys(a: list[int], b: list[int]) -> None:
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    x, y = pa.asarray(a, dtype=pa.int64), pa.asarray(b, dtype=pa.int64)
    nx, ny = numpy.asarray(a, dtype=numpy.int64), numpy.asarray(b, dtype=numpy.int64)
    for op in (lambda p, q: p + q, lambda p, q: p - q, lambda p, q: p * q, lambda p, q: p == q, lambda p, q: p != q,
               lambda p, q: p < q, lambda p, q: p >= q, lambda p, q: (p > 0) & (q <= 0), lambda p, q: (p > 0) | ~(q < 0),
               lambda p, q: p * (q > 0), lambda p, q: p + 3, lambda p, q: 2 - p, lambda p, q: -p,
               lambda p, q: p / 4.0):  # fmt: skip
        same(op(x, y), op(nx, ny))
    same(pa.where(x > y, x, 0), numpy.where(nx > ny, nx, 0))
    same(pa.minimum(x, 5), numpy.minimum(nx, 5))
    same(pa.maximum(x, 0), numpy.maximum(nx, 0))
    same(pa.diff(x), numpy.diff(nx))
    same(pa.flatnonzero(x), numpy.flatnonzero(nx))
    same(x.astype(pa.float64), nx.astype(numpy.float64))
    same(pa.trunc(x / 3.0), numpy.trunc(nx / 3.0))
    if n:
        assert x.sum() == int(nx.sum()) and x.max() == int(nx.max()) and x.any() == bool(nx.any())


@settings(max_examples=60, deadline=None)
@given(a=ints, b=ints, c=small)
def test_sorting_searching_and_counting_are_numpys(a: list[int], b: list[int], c: list[int]) -> None:
    n = min(len(a), len(b))
    x, nx = pa.asarray(a, dtype=pa.int64), numpy.asarray(a, dtype=numpy.int64)
    same(pa.unique(x), numpy.unique(nx))
    same(pa.unique(x, return_index=True, return_inverse=True), numpy.unique(nx, return_index=True, return_inverse=True))
    same(pa.unique(x, return_inverse=True), numpy.unique(nx, return_inverse=True))
    same(pa.argsort(x, kind="stable"), numpy.argsort(nx, kind="stable"))
    keys = [pa.asarray(a[:n], dtype=pa.int64), pa.asarray(b[:n], dtype=pa.int64)]
    same(pa.lexsort((-keys[0], keys[1])), numpy.lexsort((-numpy.asarray(a[:n], numpy.int64), numpy.asarray(b[:n], numpy.int64))))
    sorted_x = pa.asarray(sorted(a), dtype=pa.int64)
    for side in ("left", "right"):
        same(pa.searchsorted(sorted_x, pa.asarray(b, dtype=pa.int64), side=side),
             numpy.searchsorted(numpy.asarray(sorted(a), numpy.int64), numpy.asarray(b, numpy.int64), side=side))  # fmt: skip
    g, ng = pa.asarray(c, dtype=pa.int64), numpy.asarray(c, dtype=numpy.int64)
    same(pa.bincount(g, minlength=5), numpy.bincount(ng, minlength=5))
    w = [float(v) for v in range(len(c))]
    same(pa.bincount(g, weights=pa.asarray(w, dtype=pa.float64), minlength=3),
         numpy.bincount(ng, weights=numpy.asarray(w), minlength=3))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(a=ints, picks=small)
def test_indexing_and_assignment_are_numpys(a: list[int], picks: list[int]) -> None:
    x, nx = pa.asarray(a, dtype=pa.int64), numpy.asarray(a, dtype=numpy.int64)
    at = [p for p in picks if p < len(a)]
    same(x[pa.asarray(at, dtype=pa.intp)], nx[numpy.asarray(at, dtype=numpy.intp)])
    same(x[x > 0], nx[nx > 0])
    same(x[1:], nx[1:])
    same(x[::-1], nx[::-1])
    if a:
        assert x[0] == nx[0] and x[-1] == nx[-1]
    y, ny = x.copy(), nx.copy()
    y[x > 0] = 7
    ny[nx > 0] = 7
    same(y, ny)
    y[at] = -1
    ny[at] = -1
    same(y, ny)
    mask, nmask = pa.zeros(len(a), pa.bool_), numpy.zeros(len(a), numpy.bool_)
    mask[x < 0] = (x > -10)[x < 0]
    nmask[nx < 0] = (nx > -10)[nx < 0]
    same(mask, nmask)
    same(pa.full(3, -1, pa.int64), numpy.full(3, -1, numpy.int64))
    same(pa.fromiter((v > 0 for v in a), pa.bool_, len(a)), numpy.fromiter((v > 0 for v in a), numpy.bool_, len(a)))


def test_the_analysis_gives_the_same_figures_without_numpy() -> None:
    """The attribution, the views and a stored trace's re-analysis, on the stand-in (their own tests)."""
    tests = ["unit/test_attribution_synthetic.py", "unit/test_analysis_chrome_trace.py", "unit/test_analysis_derive.py",
             "unit/test_analysis_memory.py", "unit/test_analysis_work.py", "unit/test_analysis_insights.py",
             "worker/test_analyze.py"]  # fmt: skip
    env = {**os.environ, "OPLENS_PURE_PYTHON": "1"}
    check = subprocess.run([sys.executable, "-c", "from oplens.analysis import arrays; assert not arrays.NUMPY"], env=env)
    assert check.returncode == 0, "OPLENS_PURE_PYTHON=1 did not pick the stand-in"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=ROOT / "tests",
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.parametrize(
    "text", ['{"a": [1, 2.5, "x", null, true]}', '{"nan": NaN, "inf": Infinity}', "[18446744073709551615, -9223372036854775808]"]
)
def test_json_files_read_the_same_with_or_without_orjson(tmp_path: Path, text: str) -> None:
    f = tmp_path / "x.json"
    f.write_text(text)
    got, want = jsonfile.read(f), json.loads(text)
    assert json.dumps(got) == json.dumps(want)  # NaN == NaN is false; their text is the same
