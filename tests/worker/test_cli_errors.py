"""The bad-input matrix of the real `oplens` CLI, run as a subprocess.

Each case checks the exit code of docs/architecture.md ("Names a user meets": 0 ok, 2 bad input,
3 the user's code raised, 4 timeout or crash, 5 backend unavailable), that stderr names the
problem and the fix, and that no traceback from OpLens's own files reaches the user.

stderr is rendered by rich at 80 columns when piped, so messages wrap (and long paths are
folded mid-word): text is compared with all whitespace removed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.cli import oplens_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "cli_errors"
TARGETS = DATA / "targets.py"
FAST = ["--warmup", "1", "--iters", "2"]


# --------------------------------------------------------------------------- helpers


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def oplens(cwd: Path, *argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return oplens_cli(cwd, *argv, timeout=timeout)  # no GPU: --backend cuda must fail the same way on a GPU host


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def check(proc: subprocess.CompletedProcess[str], code: int, *needles: str, user_traceback: bool = False) -> str:
    """Exit `code`, an `oplens: error:` line, every needle in stderr, no OpLens frames."""
    err = proc.stderr
    assert proc.returncode == code, describe(proc)
    flat = squash(err)
    assert "oplens:error:" in flat, describe(proc)
    for needle in needles:
        assert squash(needle) in flat, f"stderr lacks {needle!r}\n" + describe(proc)
    assert_no_oplens_traceback(err, allow_user_traceback=user_traceback)
    return flat


def assert_no_oplens_traceback(err: str, allow_user_traceback: bool = False) -> None:
    flat = squash(err)
    for inside in ("server/oplens", "oplens/engine", "oplens/cli", "oplens/backends", "site-packages/oplens"):
        assert inside not in flat, f"stderr shows OpLens's own frames ({inside}):\n{err}"
    if not allow_user_traceback:
        assert "Traceback(mostrecentcalllast)" not in flat, f"stderr shows a traceback:\n{err}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with the shared targets file in it."""
    shutil.copy(TARGETS, tmp_path / "targets.py")
    return tmp_path


def assert_nothing_staged(root: Path) -> None:
    """A failed run leaves neither a run directory nor a staged one (nor its worker log) behind."""
    staging = root / ".staging"
    leftovers = sorted(p.name for p in staging.iterdir()) if staging.is_dir() else []
    assert not [n for n in leftovers if (staging / n).is_dir()], f"staged run directories left: {leftovers}"
    assert not [n for n in leftovers if n.startswith("worker-")], f"worker logs left in .staging: {leftovers}"
    kept = [p.name for p in root.iterdir() if p.name not in (".staging", ".failed")] if root.is_dir() else []
    assert not kept, f"a failed run left {kept} in {root}"
    # ... but its worker log is kept for reading, in .failed/
    if (root / ".failed").is_dir():
        assert all(p.suffix == ".log" for p in (root / ".failed").iterdir())


def line_of(file: Path, marker: str) -> int:
    for i, text in enumerate(file.read_text().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(f"{marker!r} not in {file}")


# --------------------------------------------------------------------------- the file


def test_missing_file(tmp_path: Path) -> None:
    proc = oplens(tmp_path, "profile", "nope.py::f", *FAST)
    check(proc, 2, "nope.py does not exist", "give the path of a Python file")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    proc = oplens(tmp_path, "profile", "pkg::f", *FAST)
    check(proc, 2, "pkg is a directory", "give the path of a Python file")


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torch\n\ndef f(x):\n    return x +\n")
    proc = oplens(tmp_path, "profile", "broken.py::f", "--args", "1", *FAST)
    check(proc, 2, "broken.py:4", "syntax error", "fix the file")


# --------------------------------------------------------------------------- the function


def test_no_such_function_lists_the_functions(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::missing", *FAST)
    check(proc, 2, "targets.py has no function 'missing'", "add, no_args, raises, hang, segfault, exit7")


def test_target_without_function(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::", *FAST)
    check(proc, 2, "names no function", "FILE::FUNCTION")


def test_file_line_outside_any_function(ws: Path) -> None:
    line = line_of(ws / "targets.py", "SCALE = 2.0")
    add = line_of(ws / "targets.py", "def add(")
    proc = oplens(ws, "profile", f"targets.py:{line}", *FAST)
    check(proc, 2, f"targets.py:{line} is not inside a function", "functions in", f"add ({add}-{add + 2})")


def test_file_line_inside_a_function_profiles_it(ws: Path) -> None:
    line = line_of(ws / "targets.py", "LINE: inside add")
    proc = oplens(ws, "profile", f"targets.py:{line}", "--args", "torch.ones(8), torch.ones(8)", "--json", "-", *FAST)
    assert proc.returncode == 0, describe(proc)
    result = json.loads(proc.stdout)
    assert result["target"]["qualname"] == "add"
    assert result["config"]["iters"] == 2
    assert any(entry["line"] == line for entry in result["lines"]), result["lines"]
    assert_no_oplens_traceback(proc.stderr)
    assert (ws / ".oplens" / "runs" / result["run_id"] / "result.json").is_file()


# --------------------------------------------------------------------------- the arguments


def test_argument_expression_raises_name_error(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::add", "--args", "torch.ones(8), undefined_weights", *FAST)
    # The problem: which expression failed, and why.
    flat = check(proc, 2, "the argument expression", "NameError: name 'undefined_weights' is not defined", user_traceback=True)
    # The fix: say that --args is evaluated in targets.py's namespace (with torch), so the name must be
    # defined or imported there (or the expression fixed). The `File "<--args>"` frame does not count.
    hint = flat.replace('File"<--args>"', "")
    assert "--args" in hint and "targets.py" in hint, "no fix is given for a failing --args expression\n" + describe(proc)


def test_argument_expression_not_python(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::add", "--args", "torch.ones(8),,", *FAST)
    check(proc, 2, "not valid Python", "add(x, w)", "--args")


@pytest.mark.parametrize("expr", ["torch.ones(8)", "torch.ones(8), torch.ones(8), 3"], ids=["too-few", "too-many"])
def test_wrong_arity_shows_the_signature(ws: Path, expr: str) -> None:
    proc = oplens(ws, "profile", "targets.py::add", "--args", expr, *FAST)
    check(proc, 2, "the arguments do not fit add(x, w)", "--args")


def test_function_needing_arguments_given_none(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::add", *FAST)
    check(proc, 2, "add(x, w) needs arguments", "--args")


# --------------------------------------------------------------------------- the user's code


def test_user_code_raises_shows_the_users_traceback(ws: Path) -> None:
    line = line_of(ws / "targets.py", "LINE: raise")
    proc = oplens(ws, "profile", "targets.py::raises", "--args", "torch.ones(4)", *FAST)
    check(
        proc,
        3,
        f"raises raised at targets.py:{line}",
        "ValueError: user code failed on purpose",
        f'targets.py", line {line}, in raises',
        user_traceback=True,
    )


def test_allocation_failure_says_out_of_memory(ws: Path) -> None:
    line = line_of(ws / "targets.py", "LINE: alloc")
    proc = oplens(ws, "profile", "targets.py::too_big", *FAST)
    check(
        proc,
        3,
        f"too_big raised at targets.py:{line}",
        "out of memory: try smaller inputs (--args)",
        f'targets.py", line {line}, in too_big',
        user_traceback=True,
    )


def test_importing_the_module_raises(tmp_path: Path) -> None:
    (tmp_path / "bad_import.py").write_text(
        "import torch\n\nraise RuntimeError('broken at import')\n\n\ndef f():\n    return torch.ones(2)\n"
    )
    proc = oplens(tmp_path, "profile", "bad_import.py::f", *FAST)
    check(
        proc,
        3,
        "importing bad_import.py raised at bad_import.py:3",
        "RuntimeError: broken at import",
        'bad_import.py", line 3, in <module>',
        user_traceback=True,
    )


# --------------------------------------------------------------------------- hangs and crashes


def test_hang_past_timeout(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::hang", "--timeout", "5", *FAST, timeout=60)
    check(proc, 4, "did not finish within 5 s", "--timeout SECONDS")
    assert not processes_in(ws), "the hung worker was left running"
    assert_nothing_staged(ws / ".oplens" / "runs")


def processes_in(cwd: Path) -> list[int]:
    """Pids of live processes whose working directory is `cwd` (the worker runs in the workspace)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")) == cwd.resolve():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(
    ("qualname", "why"),
    [
        ("segfault", "segmentation fault (SIGSEGV)"),
        ("exit7", "exited with status 7"),
        ("oom_killed", "killed (SIGKILL), most often by the kernel's out-of-memory killer"),
    ],
    ids=["sigsegv", "os-exit-7", "sigkill-as-the-oom-killer-sends"],
)
def test_worker_dies(ws: Path, qualname: str, why: str) -> None:
    proc = oplens(ws, "profile", f"targets.py::{qualname}", *FAST)
    check(proc, 4, "the worker running your function", why, "fullworkerlog:")
    assert_nothing_staged(ws / ".oplens" / "runs")
    assert len(list((ws / ".oplens" / "runs" / ".failed").glob("*.log"))) == 1


# --------------------------------------------------------------------------- backends


def test_backend_cuda_unavailable(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::no_args", "--backend", "cuda", *FAST)
    flat = check(proc, 5, "the cuda backend is unavailable", "--backend cpu")
    assert "withoutCUDA" in flat or "noCUDAdevice" in flat, describe(proc)  # what is missing


def test_backend_neuron_unavailable(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::no_args", "--backend", "neuron", *FAST)
    check(proc, 5, "the neuron backend is unavailable", "torch_neuronx", "Neuron pip repository", "--backend cpu")


# --------------------------------------------------------------------------- options and the runs directory


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--warmup", "-1"], "--warmup must be 0 or more (got -1)"),
        (["--iters", "0"], "--iters must be 1 or more (got 0)"),
        (["--timeout", "0"], "--timeout must be positive"),
    ],
    ids=["warmup", "iters", "timeout"],
)
def test_bad_numeric_options(ws: Path, option: list[str], message: str) -> None:
    proc = oplens(ws, "profile", "targets.py::no_args", *option)
    check(proc, 2, message)


def test_unwritable_out(ws: Path) -> None:
    (ws / "afile").write_text("a regular file, not a directory\n")
    proc = oplens(ws, "profile", "targets.py::no_args", "--out", str(ws / "afile" / "runs"), *FAST)
    check(proc, 2, "cannot write runs to", "--out DIR")
    assert (ws / "afile").read_text() == "a regular file, not a directory\n"


def test_earlier_runs_survive_failing_runs(ws: Path) -> None:
    out = ws / "myruns"
    ok = oplens(ws, "profile", "targets.py::no_args", "--out", str(out), "--json", "-", *FAST)
    assert ok.returncode == 0, describe(ok)
    first = json.loads(ok.stdout)
    result = out / first["run_id"] / "result.json"
    before = result.read_bytes()
    assert json.loads(before)["run_id"] == first["run_id"]

    failing = [
        (["targets.py::raises", "--args", "torch.ones(4)"], 3),  # the user's code raised
        (["targets.py::exit7"], 4),  # the worker died
    ]
    for argv, code in failing:
        proc = oplens(ws, "profile", *argv, "--out", str(out), *FAST)
        assert proc.returncode == code, describe(proc)

    assert result.read_bytes() == before, "a failing run changed an earlier run's result.json"
    assert json.loads(result.read_text())["target"]["qualname"] == "no_args"
    kept = sorted(p.name for p in out.iterdir() if p.name not in (".staging", ".failed"))
    assert len(list((out / ".failed").glob("*.log"))) == len(failing), "each failed run keeps its worker log"
    assert kept == [first["run_id"]], f"only the successful run should be kept: {kept}"
    staging = out / ".staging"
    leftovers = sorted(p.name for p in staging.iterdir()) if staging.is_dir() else []
    assert not [n for n in leftovers if (staging / n).is_dir()], f"staged run directories left: {leftovers}"
    assert not [n for n in leftovers if n.startswith("worker-")], f"worker logs left in .staging: {leftovers}"


def test_unknown_backend_is_a_usage_error(ws: Path) -> None:
    proc = oplens(ws, "profile", "targets.py::no_args", "--backend", "tpu")
    assert proc.returncode == 2, describe(proc)
    assert "invalid choice: 'tpu'" in proc.stderr and "cpu" in proc.stderr, describe(proc)
    assert_no_oplens_traceback(proc.stderr)


def test_compare_with_mismatched_args(ws: Path) -> None:
    proc = oplens(
        ws, "compare", "targets.py::add", "targets.py::no_args", "targets.py::raises", "--args", "1, 2", "--args", "3", *FAST
    )
    check(proc, 2, "2 --args for 3 targets", "once per target")


def test_unwritable_json(ws: Path) -> None:
    (ws / "afile").write_text("x\n")
    proc = oplens(ws, "profile", "targets.py::no_args", "--json", str(ws / "afile" / "out.json"), *FAST)
    check(proc, 2, "cannot write --json", "out.json")
