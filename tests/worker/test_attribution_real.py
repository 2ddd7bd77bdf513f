"""Per-line attribution on real torch.profiler runs: the invariant and the placement rules.

The profiling here runs in-process, through the worker's own shipped steps (the loop `profile` and
the capture run, `worker.calls.ProfiledCalls`, with its schedule's profiler warm-up, then
`worker.profiling.process`), so that the same profile can be checked against `key_averages()`.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from oplens.analysis.attribution import Attribution
from oplens.backends.cpu import CpuBackend
from oplens.engine.request import DEFAULT_PROFILER_WARMUP
from oplens.engine.targets import resolve
from oplens.worker import profiling
from oplens.worker.calls import ProfiledCalls
from oplens.worker.linemarks import LineMarker, code_objects
from support.paths import DATA, EXAMPLE


def load(path: Path) -> types.ModuleType:
    name = f"_t_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def profile_lines(module: types.ModuleType, fn: Callable[..., Any], code: types.CodeType, args: tuple[Any, ...],
                  iters: int = 4) -> tuple[Attribution, Any]:
    fn(*args)  # warm-up
    marker = LineMarker(code, code_objects(module))
    with ProfiledCalls(CpuBackend(), Path(tempfile.gettempdir()), marker, iters, DEFAULT_PROFILER_WARMUP) as calls:
        while not calls.done:
            calls.call(lambda: fn(*args))
    target, _ = resolve(Path(code.co_filename), code.co_qualname, None)
    return profiling.process(calls.prof, None, iters, target).attribution, calls.prof


def key_averages_self_cpu_us(prof: Any) -> float:
    """key_averages()'s self CPU time, less the ranges that are no op: OpLens's markers and the
    schedule's own `ProfilerStep*` (the step's time outside every op, which no line owns)."""
    return sum(e.self_cpu_time_total for e in prof.key_averages() if not e.key.startswith(("oplens.", "ProfilerStep")))


@pytest.fixture(scope="module")
def rmsnorm() -> types.ModuleType:
    return load(EXAMPLE)


@pytest.fixture(scope="module")
def models() -> types.ModuleType:
    return load(DATA / "models.py")


def assert_invariant(result: Attribution, prof: Any, iters: int) -> None:
    lines_cpu = sum(s.self_cpu_us for s in result.lines)
    lines_dev = sum(s.self_device_us for s in result.lines)
    assert lines_cpu == pytest.approx(result.totals.self_cpu_us, rel=1e-3)
    assert lines_dev == pytest.approx(result.totals.self_device_us, rel=1e-3)
    ops_cpu = sum(o.self_cpu_us for o in result.ops)
    assert ops_cpu == pytest.approx(result.totals.self_cpu_us, rel=1e-3)
    # The totals are what key_averages() reports for the same run (OpLens's markers aside).
    assert result.totals.self_cpu_us * iters == pytest.approx(key_averages_self_cpu_us(prof), rel=1e-3)
    per_op = {e.key: e for e in prof.key_averages()}
    for op in result.ops:
        assert op.self_cpu_us * iters == pytest.approx(per_op[op.name].self_cpu_time_total, rel=1e-3)
        assert op.calls * iters == per_op[op.name].count


def test_rmsnorm_naive_lines_sum_to_key_averages(rmsnorm: types.ModuleType) -> None:
    x, w = rmsnorm.make_inputs(2, 128, 256)
    fn = rmsnorm.rmsnorm_naive
    result, prof = profile_lines(rmsnorm, fn, fn.__code__, (x, w))
    assert_invariant(result, prof, 4)
    body = [s for s in result.lines if s.op_calls]
    assert [s.op_calls for s in body] == [1, 1, 1, 1, 1, 1]  # one operation per line
    assert result.totals.op_calls == 6
    first = [s.ops[0].name for s in body if s.ops]
    assert "aten::mul" in first and "aten::rsqrt" in first


def test_torch_python_goes_to_the_users_line_and_backward_is_attributed(models: types.ModuleType) -> None:
    block = models.Block(32)
    x = torch.randn(8, 32)
    fn = models.train_step
    result, prof = profile_lines(models, fn, fn.__code__, (block, x))
    assert_invariant(result, prof, 4)
    by_line = {s.line: s for s in result.lines}
    loss_line = fn.__code__.co_firstlineno + 1
    backward_line = loss_line + 1
    forward_ops = {o.name for o in by_line[loss_line].ops}
    assert {"aten::linear", "aten::gelu"} <= forward_ops  # nn.Linear's Python is not a line of ours
    assert any("Backward" in o.name or "backward" in o.name for o in by_line[backward_line].ops)
    # Forward's ops ran inside Block.forward, a same-file helper: kept as the inner breakdown.
    inner = {(i.function, i.line) for i in by_line[loss_line].inner}
    assert any(f == "forward" for f, _ in inner)


def test_same_file_helper_goes_to_the_calling_line(models: types.ModuleType) -> None:
    fn = models.with_helper
    result, prof = profile_lines(models, fn, fn.__code__, (torch.randn(64),))
    assert_invariant(result, prof, 4)
    call_line = fn.__code__.co_firstlineno + 2  # b = scale(a, 2.0)
    line = {s.line: s for s in result.lines}[call_line]
    assert {o.name for o in line.ops} >= {"aten::mul", "aten::add"}
    helper_first = models.scale.__code__.co_firstlineno
    assert {(i.function, i.line) for i in line.inner} == {("scale", helper_first + 1), ("scale", helper_first + 2)}
    assert sum(i.self_cpu_us for i in line.inner) == pytest.approx(line.self_cpu_us, rel=1e-6)


def test_loop_lines_accumulate(models: types.ModuleType) -> None:
    fn = models.loop
    result, prof = profile_lines(models, fn, fn.__code__, (torch.randn(16),))
    assert_invariant(result, prof, 4)
    add_line = {s.line: s for s in result.lines}[fn.__code__.co_firstlineno + 2]
    assert add_line.op_calls == 3


def test_recursion_opens_its_own_ranges(models: types.ModuleType) -> None:
    # The marker reuses one range object per line; a recursive call must not reuse an open one.
    fn = models.recursive
    result, prof = profile_lines(models, fn, fn.__code__, (torch.randn(8), 3))
    assert_invariant(result, prof, 4)
    first = fn.__code__.co_firstlineno
    calls = {s.line: s.op_calls for s in result.lines}
    assert calls[first + 1] == 4 and calls[first + 3] == 3  # x * 2 in each of 4 frames; + in 3


def test_fallback_range_for_torch_without_the_fast_one(rmsnorm: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    from oplens.worker import linemarks

    monkeypatch.setattr(linemarks, "Range", linemarks._SlowRange)
    x, w = rmsnorm.make_inputs(2, 32, 64)
    fn = rmsnorm.rmsnorm_naive
    result, prof = profile_lines(rmsnorm, fn, fn.__code__, (x, w))
    assert_invariant(result, prof, 4)
    assert result.totals.op_calls == 6
