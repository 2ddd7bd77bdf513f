"""A clean first run: the terminal holds OpLens's output and the program's, not torch's profiler chatter.

Every profiler start and stop makes Kineto write `USDT:... SyncActivityProfilerHandler.cpp:52]
profiler_start` / `...:59] profiler_stop` to fd 2 from C++ (torch 2.13 on this machine does, at its
default KINETO_LOG_LEVEL; `chatty` asks the installed torch). OpLens sends those to the run's
worker.log (`worker/calls.py`: `to_log`): the tests run the real CLI and read both. With NumPy installed
(a dependency), torch's "Failed to initialize NumPy" warning is gone too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oplens.records.job import LOG_ENV
from support.cli import oplens_cli
from support.paths import EXAMPLE, ROOT

CHATTER = ("profiler_start", "profiler_stop", "SyncActivityProfilerHandler", "USDT:")
NUMPY_WARNING = "Failed to initialize NumPy"

PROBE = """\
import torch
p = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
p.start(); torch.ones(4).sum(); p.stop()
"""


@pytest.fixture(scope="module")
def chatty() -> bool:
    """Whether the installed torch writes the chatter at all (a plain profiler start and stop, stderr read)."""
    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return "profiler_start" in proc.stderr


def assert_clean(terminal: str) -> None:
    for noise in (*CHATTER, NUMPY_WARNING):
        assert noise not in terminal, f"{noise!r} on the terminal:\n{terminal}"


def the_log(out: Path) -> str:
    (log,) = out.glob("*/worker.log")
    return log.read_text(encoding="utf-8", errors="replace")


def test_run_keeps_the_programs_output_and_logs_the_chatter(tmp_path: Path, chatty: bool) -> None:
    proc = oplens_cli(ROOT, "run", "--out", str(tmp_path), "--target", "examples/tinylm/model.py::Block.forward",
                      "--skip", "1", "--calls", "3", "--stop", "--", "examples/tinylm_train.py", "--steps", "3",
                      "--log-every", "1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stdout + proc.stderr)
    assert "TinyLM:" in proc.stdout and "step 1 loss" in proc.stdout  # the program's own prints
    assert "Block.forward" in proc.stdout and "Self CPU" in proc.stdout  # OpLens's listing
    log = the_log(tmp_path)
    assert "TinyLM:" in log  # the program's output is still the log's too
    if chatty:  # the timed calls' start and stop at least
        assert "profiler_start" in log and "profiler_stop" in log, log


def test_run_keeps_what_the_program_writes_to_fd_2_around_the_target(tmp_path: Path, chatty: bool) -> None:
    program = tmp_path / "prog.py"
    program.write_text(
        "import os, sys, torch\n"
        "def step(x):\n"
        "    os.write(2, b'native stderr in the target\\n')\n"
        "    return x * 2\n"
        "print('to stdout', flush=True)\n"
        "print('to stderr', file=sys.stderr, flush=True)\n"
        "for _ in range(8):\n"
        "    step(torch.ones(8))\n"
        "os.write(2, b'native stderr at the end\\n')\n"
    )
    out = tmp_path / "runs"
    proc = oplens_cli(tmp_path, "run", "--out", str(out), "--target", f"{program}::step", "--skip", "1", "--calls", "3",
                      "--", str(program))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stdout + proc.stderr)
    assert "to stdout" in proc.stdout
    assert "to stderr" in proc.stderr and "native stderr at the end" in proc.stderr
    assert proc.stderr.count("native stderr in the target") == 8  # the user's code is never redirected
    if chatty:
        assert "profiler_start" in the_log(out)


def test_profile_prints_no_chatter_and_logs_it(tmp_path: Path, chatty: bool) -> None:
    proc = oplens_cli(ROOT, "profile", f"{EXAMPLE}::rmsnorm_naive", "--warmup", "1", "--iters", "3",
                      "--args", "make_inputs(2, 64, 256)", "--out", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc.stdout + proc.stderr)
    assert "x_sq = x * x" in proc.stdout
    if chatty:  # `profile`'s worker writes its stderr to the log itself
        assert "profiler_start" in the_log(tmp_path)


def test_what_is_written_during_a_redirected_call_reaches_the_log_and_its_error_the_caller(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_bytes(b"")
    script = (
        "import os, sys\n"
        "from oplens.worker.calls import to_log\n"
        "os.write(2, b'before\\n')\n"
        "try:\n"
        "    with to_log():\n"
        "        os.write(2, b'kineto error\\n')\n"
        "        print('python warning', file=sys.stderr)\n"
        "        raise RuntimeError('profiler failed')\n"
        "except RuntimeError as e:\n"
        "    os.write(2, f'caught {e}\\n'.encode())\n"
    )
    env = {**os.environ, LOG_ENV: str(log), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "before\ncaught profiler failed\n"  # fd 2 restored before the error went on
    assert log.read_text() == "kineto error\npython warning\n"
