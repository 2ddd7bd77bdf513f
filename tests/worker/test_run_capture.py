"""`oplens run`: functions captured inside a real program (tests/data/programs/train.py), run as a
user runs it, through the CLI. Each case checks the capture's lines, ops and call counts, or the
outcome a user meets (exit status, message, partial run kept, earlier runs untouched)."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oplens.engine import runs
from oplens.worker.instrument import ImportHook, Instrumented, instrument
from support.paths import DATA
from support.processes import killed_parent_leaves_nothing

PROGRAMS = DATA / "programs"
MODEL = "capturepkg/model.py"
SKIP, WARM, CALLS = 2, 1, 4  # small windows: each case runs in a few seconds


def oplens_run_argv(tmp_path: Path, *argv: str) -> list[str]:
    """`oplens run ARGV` with the small window, its runs in tmp_path, its result in tmp_path/result.json."""
    return [sys.executable, "-m", "oplens", "run", "--out", str(tmp_path / "runs"), "--json", str(tmp_path / "result.json"),
            "--skip", str(SKIP), "--profiler-warmup", str(WARM), "--calls", str(CALLS), *argv]  # fmt: skip


def oplens_run(tmp_path: Path, *argv: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`oplens run ARGV` in the programs folder (`oplens_run_argv`), to its end."""
    return subprocess.run(oplens_run_argv(tmp_path, *argv), cwd=PROGRAMS, capture_output=True, text=True, timeout=timeout)


def result(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "result.json").read_text())
    return data


def lines(run: dict[str, Any]) -> dict[int, set[str]]:
    return {s["line"]: {o["name"] for o in s["ops"]} for s in run["lines"]}


def plain(*argv: str) -> str:
    return subprocess.run([sys.executable, *argv], cwd=PROGRAMS, capture_output=True, text=True, check=True).stdout


def test_script_method_through_module_call_keeps_the_programs_output(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--steps", "12")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(plain("train.py", "--steps", "12"))  # the program's own output, unchanged
    run = result(tmp_path)
    c = run["capture"]
    assert (c["calls_seen"], c["calls_skipped"], c["calls_profiler_warmup"], c["calls_profiled"]) == (12, 2, 1, 4)
    assert c["program"].endswith("train.py") and c["argv"] == ["--steps", "12"] and c["exit_code"] == 0
    assert not c["partial"] and not c["stopped"]
    ops = lines(run)
    assert "aten::addmm" in ops[14] and "aten::relu" in ops[15] and "aten::mul" in ops[16] and "aten::add" in ops[17]
    assert len(run["totals"]["device_samples_us"]) == CALLS  # per-call figures, as profile's per-iteration ones
    assert run["config"]["iters"] == CALLS and run["config"]["warmup"] == SKIP
    assert (Path(run["run_dir"]) / "trace.json").is_file()
    assert "finished" in (Path(run["run_dir"]) / "worker.log").read_text()


def test_module_form_subclass_and_stop(tmp_path: Path) -> None:
    """`-m`, the function inherited by a subclass, and --stop ending the program once captured."""
    out = oplens_run(tmp_path, "--stop", "--target", f"{MODEL}::Block.forward", "-m", "train", "--sub", "--steps", "50")
    assert out.returncode == 0, out.stderr
    printed = out.stdout.splitlines()
    # ended inside the 7th call (step 6), before that step's print: the result is kept
    assert "finished" not in printed and "step 5 8.4478" in printed and not any(p.startswith("step 6") for p in printed)
    c = result(tmp_path)["capture"]
    assert c["program"] == "-m train" and c["stopped"] and c["exit_code"] is None
    assert (c["calls_seen"], c["calls_profiled"]) == (SKIP + WARM + CALLS, CALLS)


def test_reference_bound_at_import_and_recursion_belongs_to_the_outer_call(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::scale", "--target", f"{MODEL}::recurse",
                     "--", "train.py", "--steps", "16")  # fmt: skip
    assert out.returncode == 0, out.stderr
    scale, recurse = result(tmp_path)
    assert scale["target"]["qualname"] == "scale" and scale["capture"]["calls_seen"] == 16
    assert "aten::abs" in lines(scale)[34] and "aten::div" in lines(scale)[35]
    # recurse(z, 3) recurses three times a step: one call each step, the nested ones part of it
    assert recurse["capture"]["calls_seen"] == 16 and recurse["capture"]["calls_profiled"] == CALLS
    assert recurse["lines"] and sum(s["op_calls"] for s in recurse["lines"]) == pytest.approx(3.0)  # x * 0.5, thrice


def test_other_threads_run_untouched(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--thread", "--steps", "9")
    assert out.returncode == 0, out.stderr
    assert result(tmp_path)["capture"]["calls_seen"] == 9  # not the other thread's 9


@pytest.mark.parametrize("start", ["fork", "forkserver"])  # forkserver: multiprocessing's default on 3.14 (Linux)
def test_dataloader_worker_processes_run_untouched(tmp_path: Path, start: str) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::scale", "--", "train.py", "--loader", "--steps", "24",
                     "--start-method", start)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert result(tmp_path)["capture"]["calls_seen"] == 24  # the main process's; not the workers' 24
    assert len(runs.list_runs(tmp_path / "runs")) == 1  # 12 calls a worker would fill a window: none opened


def test_never_called_says_so_and_exits_2(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::unused", "--", "train.py", "--steps", "3")
    assert out.returncode == 2
    assert "unused (model.py:44) was never called" in out.stderr
    assert "never called the function" in out.stderr
    assert "finished" in out.stdout  # the program ran to its end
    assert runs.list_runs(tmp_path / "runs") == []


def test_too_few_calls_count_what_the_capture_needs(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--steps", "5")
    assert out.returncode == 2
    assert f"called 5 times; the capture needs {SKIP + WARM + CALLS}" in out.stderr
    assert "partial run" in out.stderr  # 2 profiled calls kept, marked
    (kept,) = runs.list_runs(tmp_path / "runs")
    assert runs.load(kept).capture.partial  # type: ignore[union-attr]


def test_compiled_function_is_explained(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--compile", "--steps", "6")
    assert out.returncode == 2, out.stderr
    assert "was never called" in out.stderr and "torch.compile" in out.stderr and "TORCH_COMPILE_DISABLE=1" in out.stderr
    assert "recompil" not in out.stderr  # the wrapper gave Dynamo nothing to guard on


def test_crash_before_the_window_keeps_a_partial_run_and_earlier_runs(tmp_path: Path) -> None:
    first = oplens_run(tmp_path, "--target", f"{MODEL}::scale", "--", "train.py", "--steps", "8")
    assert first.returncode == 0, first.stderr
    (earlier,) = runs.list_runs(tmp_path / "runs")
    before = (earlier / "result.json").read_bytes()

    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--crash-at", "5")
    assert out.returncode == 3
    assert 'raise RuntimeError(f"crash at step {step}")' in out.stderr  # the program's traceback, as Python prints it
    assert "RuntimeError: crash at step 5" in out.stderr and "before the capture of Block.forward" in out.stderr
    assert "oplens/worker" not in out.stderr.split("oplens: error:")[0]  # none of OpLens's frames
    partial = [p for p in runs.list_runs(tmp_path / "runs") if p != earlier]
    assert len(partial) == 1
    c = runs.load(partial[0]).capture
    assert c is not None and c.partial and c.calls_profiled == 5 - SKIP - WARM and c.exit_code == 1
    assert (earlier / "result.json").read_bytes() == before


def test_exit_status_before_the_window(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--exit-at", "1")
    assert out.returncode == 3
    assert "the program exited with status 7 before the capture" in out.stderr


def test_a_hang_times_out_with_exit_4_keeping_what_was_captured(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--timeout", "15", "--target", f"{MODEL}::Block.forward",
                     "--", "train.py", "--hang-at", "6")  # fmt: skip
    assert out.returncode == 4
    assert "did not finish the capture within 15 s" in out.stderr
    (kept,) = runs.list_runs(tmp_path / "runs")  # the program was asked to stop: 3 profiled calls kept
    c = runs.load(kept).capture
    assert c is not None and c.partial and c.stopped and c.calls_profiled == 6 - SKIP - WARM and c.exit_code is None
    assert "OpLens stopped the program" in c.reason


def test_bad_program_is_a_clear_error(tmp_path: Path) -> None:
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "nope.py")
    assert out.returncode == 2 and "nope.py does not exist" in out.stderr and "Traceback" not in out.stderr
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward")
    assert out.returncode == 2 and "needs a program" in out.stderr


def test_instrumenting_keeps_lines_and_code_and_wraps_innermost() -> None:
    source = "import functools\n\nclass A:\n    @staticmethod\n    def f(x):\n        y = x + 1\n        return y\n"
    target = _target("a.py", "A.f", def_line=5)
    code = instrument(source, "a.py", [Instrumented(0, target)])
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    f = namespace["A"].__dict__["f"]
    assert isinstance(f, staticmethod)  # our decorator is innermost: staticmethod wraps it
    plain_code = compile(source, "a.py", "exec")
    fn_code = next(c for c in plain_code.co_consts[2].co_consts if getattr(c, "co_name", "") == "f")
    assert f.__func__.__code__.co_firstlineno == fn_code.co_firstlineno == 4
    assert f.__func__.__code__.co_code == fn_code.co_code  # the function itself is untouched
    assert namespace["A"].f(1) == 2


def test_import_hook_looks_only_at_names_that_could_be_the_file(tmp_path: Path) -> None:
    (tmp_path / "mod_x.py").write_text("def g():\n    return 1\n")
    hook = ImportHook([Instrumented(0, _target(str(tmp_path / "mod_x.py"), "g", def_line=1))])
    assert hook.find_spec("json", None) is None  # another name: not even searched
    sys.path.insert(0, str(tmp_path))
    try:
        spec = hook.find_spec("mod_x", None)
        assert spec is not None and type(spec.loader).__name__ == "_Loader"
    finally:
        sys.path.remove(str(tmp_path))


def _target(file: str, qualname: str, def_line: int) -> Any:
    from oplens.records.run import Target

    return Target(file=file, qualname=qualname, first_line=def_line, last_line=def_line + 2, source_sha256="",
                  def_line=def_line)  # fmt: skip


def test_after_the_window_the_collector_walks_no_more_than_the_plain_programs(tmp_path: Path) -> None:
    """The window's profiler imports torch._dynamo and torch._inductor (~116,000 objects the cyclic
    collector tracks) into a program that never imported them; every later full collection would
    walk them. What was loaded before the program (torch, OpLens) is frozen out of the collector's
    sight, so the program walks no more than it does plainly (docs/benchmarks.md)."""
    out = oplens_run(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--steps", "12", "--heap")
    assert out.returncode == 0, out.stderr
    captured = int(re.findall(r"^tracked (\d+)$", out.stdout, re.M)[-1])
    alone = int(re.findall(r"^tracked (\d+)$", plain("train.py", "--steps", "12", "--heap"), re.M)[-1])
    assert result(tmp_path)["capture"]["calls_profiled"] == CALLS
    assert captured <= alone, (captured, alone)


def test_killing_oplens_ends_the_program_and_its_dataloader_workers(tmp_path: Path) -> None:
    """OpLens killed with SIGKILL (the OOM killer, an editor server killed) stops nothing itself: the
    worker, in a session of its own, sees its parent gone and ends its process group, the program's
    DataLoader worker processes with it, instead of running on (here, hanging) for ever."""
    argv = oplens_run_argv(tmp_path, "--target", f"{MODEL}::Block.forward", "--", "train.py", "--steps", "50",
                           "--hang-at", "9", "--loader")  # fmt: skip
    assert killed_parent_leaves_nothing(argv, PROGRAMS, marker=str(tmp_path), ready="step 8") == []


@pytest.mark.timing
def test_a_stalled_captured_call_is_left_out_and_a_longer_sequence_counts_in_full(tmp_path: Path) -> None:
    """tests/data/stalls.py as a program: 12 calls of the MLP block; the 6th stalls inside an op (the same
    work), the 9th runs a 16× longer sequence (the same ops, other shapes: other work). With 2 skipped and
    1 under the profiler's warm-up, the profiled calls are the 4th to the 11th."""
    argv = oplens_run_argv(tmp_path, "--calls", "8", "--target", "stalls.py::mlp", "--", "stalls.py", "--calls", "12",
                           "--stall-at", "6", "--long-at", "9")  # fmt: skip
    out = subprocess.run(argv, cwd=DATA, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    t = result(tmp_path)["totals"]
    o = t["outliers"]
    assert [c["call"] for c in o["calls"]] == [2] and o["works"] == 2  # the long call is a kind of its own
    samples = t["cpu_samples_us"]
    assert samples[5] > 3 * statistics.median(samples)  # far slower, yet real cost: in the figures
    assert t["self_cpu_us"] == pytest.approx(statistics.mean(samples[:2] + samples[3:]))
    assert "1 of 8 calls left out of the figures as an outlier" in " ".join(out.stdout.split())
