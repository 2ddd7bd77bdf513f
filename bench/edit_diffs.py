"""The verdicts of `oplens diff` after an edit, under noise (issue 37, part 2's Done means), quiet or with a busy
loop on one core.

A package with a relative import (`pkg/model.py` importing `pkg/util.py`), edited and profiled again and again with
the real CLI as a user does (`oplens profile`: after an edit, the earlier version is measured beside the new one in
the same worker, interleaved), then `oplens diff EARLIER NEW` of the pair the profile names:

1. A/A: a variable renamed, the same work: the diff flags no line, in at least 19 of 20;
2. power: the matmul line's work doubled (`b = a @ X` → `b = (a @ X) @ X`): that line `slower`, in at least 19 of 20;
3. the method: every diff measured side by side (`interleaved_plain`), none fallen back to two processes.

    .venv/bin/python bench/edit_diffs.py [--runs 20] [--busy]

Counts only; the machine is shared. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from cli_runs import busy_core, oplens

UTIL = "import torch\n\n\ndef scale(t):\n    return t * 2.0\n"
MODEL = """\
import torch

from .util import scale

X = torch.randn(256, 256)


def step():
    a = scale(X)
    b = a @ X
    c = torch.relu(b)
    return c.sum()
"""
RENAMED = MODEL.replace("    c = torch.relu(b)\n    return c.sum()", "    out = torch.relu(b)\n    return out.sum()")
DOUBLED = RENAMED.replace("    b = a @ X\n", "    b = (a @ X) @ X\n")




def edited(work: Path, text: str) -> dict[str, Any]:
    """`text` saved as pkg/model.py and profiled; the diff of the pair measured side by side (or of the two runs
    where the profile fell back), None for the first profile."""
    (work / "pkg" / "model.py").write_text(text)
    run = oplens(work, "profile", "pkg/model.py::step")
    earlier = run["config"]["earlier"]
    if earlier is None:
        return {}
    before = earlier["measured_run"] or earlier["run_id"]
    found: dict[str, Any] = oplens(work, "diff", before, run["run_id"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="A/A diffs and doubled-line diffs, each")
    parser.add_argument("--busy", action="store_true", help="a busy loop on one core meanwhile")
    opts = parser.parse_args()
    with busy_core(opts.busy), tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "pkg").mkdir()
        (work / "pkg" / "__init__.py").write_text("")
        (work / "pkg" / "util.py").write_text(UTIL)
        report(work, opts.runs, opts.busy)


def report(work: Path, runs: int, busy: bool) -> None:
    print(f"# oplens diff after an edit ({'busy loop on one core' if busy else 'quiet'}), {time.strftime('%Y-%m-%d %H:%M')}")
    clean = caught = side_by_side = 0
    aa_flags: list[str] = []
    doubled_ratios: list[str] = []
    edited(work, MODEL)
    for _ in range(runs):
        aa = edited(work, RENAMED)  # MODEL → RENAMED: the same work
        flags = [f"{c['text']} {c['verdict']} x{c['ratio']:.2f}" for c in aa["lines"] if c["verdict"] in ("slower", "faster")]
        clean += not flags
        aa_flags += flags
        d = edited(work, DOUBLED)  # RENAMED → DOUBLED: one line's work twice over
        (line,) = [c for c in d["lines"] if "(a @ X) @ X" in c["text"]]
        caught += line["verdict"] == "slower"
        doubled_ratios.append(f"x{line['ratio']:.2f} {line['verdict']}")
        side_by_side += (aa["method"]["measured"] != "separate") + (d["method"]["measured"] != "separate")
        edited(work, MODEL)  # back, for the next A/A (a diff not counted)
    flagged = f" (flagged: {'; '.join(aa_flags)})" if aa_flags else ""
    print(f"A/A (a variable renamed): no line flagged in {clean} of {runs}{flagged}")
    print(f"doubled line flagged slower: {caught} of {runs} ({', '.join(doubled_ratios)})")
    print(f"measured side by side: {side_by_side} of {2 * runs} diffs")


if __name__ == "__main__":
    main()
