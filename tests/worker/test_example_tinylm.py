"""The tiny LM example (examples/tinylm) run as a user runs it: the script, the module, and whether it learns."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from support.paths import ROOT

EXAMPLES = ROOT / "examples"
LOSS_LINE = re.compile(r"^step (\d+) loss (\d+\.\d+)$", re.MULTILINE)


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def losses(stdout: str) -> list[float]:
    return [float(m.group(2)) for m in LOSS_LINE.finditer(stdout)]


def test_script_trains_and_logs_every_step() -> None:
    proc = run(["examples/tinylm_train.py", "--steps", "3", "--log-every", "1"], cwd=ROOT)
    assert [int(m.group(1)) for m in LOSS_LINE.finditer(proc.stdout)] == [1, 2, 3]
    assert "trained 3 steps" in proc.stdout


def test_module_generates_without_training() -> None:
    proc = run(["-m", "tinylm.train", "--mode", "generate", "--steps", "0", "--new-tokens", "8", "--prompt", "ab"], cwd=EXAMPLES)
    assert losses(proc.stdout) == []
    ids_line = next(line for line in proc.stdout.splitlines() if line.startswith("ids:"))
    ids = [int(tok) for tok in ids_line.split()[1:]]
    assert ids[:2] == [ord("a"), ord("b")] and len(ids) == 2 + 8
    assert all(0 <= i < 256 for i in ids)


def test_loss_decreases() -> None:
    proc = run(["examples/tinylm_train.py", "--steps", "40", "--log-every", "1", "--seed", "1"], cwd=ROOT)
    seen = losses(proc.stdout)
    assert len(seen) == 40
    first, last = sum(seen[:5]) / 5, sum(seen[-5:]) / 5
    assert last < 0.7 * first, f"mean loss {first:.3f} over the first 5 steps, {last:.3f} over the last 5"
