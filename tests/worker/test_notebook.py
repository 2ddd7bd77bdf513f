"""The notebook magics in a real IPython kernel (ipykernel, driven by jupyter_client as Jupyter and VS Code
drive it): `%load_ext oplens`, then `%oplens` on a function defined in a cell, a method of a live module
object and a torch.compile'd function, and `%%oplens` on a cell's own lines; each run written where the
CLI and the editor read runs, attributed to the right lines of the cell, the same ops per line as `oplens
profile` gives the same function; a raising statement shows the user's traceback and the kernel goes on."""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.cli import oplens_cli
from support.kernel import Kernel
from support.paths import EXAMPLE

RMSNORM_CELL = '''\
import torch

EPS = 1e-6


def rmsnorm_naive(x, w):
    x_sq = x * x
    mean_sq = x_sq.mean(dim=-1, keepdim=True)
    mean_eps = mean_sq + EPS
    inv_rms = torch.rsqrt(mean_eps)
    x_norm = x * inv_rms
    return x_norm * w


torch.manual_seed(0)
x, w = torch.randn(8, 16, 128), torch.ones(128)
'''
# the lines of rmsnorm_naive in the cell above, and in examples/rmsnorm.py (its docstring is one line more there)
CELL_BODY = range(7, 13)
FILE_BODY = range(25, 31)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kernel, Path]]:
    folder = tmp_path_factory.mktemp("notebook")
    k = Kernel(folder)
    try:
        loaded = k.run("%load_ext oplens")
        assert loaded["error"] is None, loaded
        yield k, folder
    finally:
        k.close()


def the_run(out: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The run a magic displayed: its id from the output, its result.json from the runs directory."""
    assert out["error"] is None, out["error"] and "\n".join(out["error"]["traceback"])
    (html,) = [h for h in out["html"] if "oplens-run" in h]
    run_id = html.split('data-run-id="', 1)[1].split('"', 1)[0]
    return json.loads((folder / ".oplens" / "runs" / run_id / "result.json").read_text())  # type: ignore[no-any-return]


def ops_by_line(run: dict[str, Any], body: range) -> list[set[str]]:
    by_line = {s["line"]: {o["name"] for o in s["ops"]} for s in run["lines"]}
    return [by_line.get(n, set()) for n in body]


def shares(run: dict[str, Any], body: range) -> list[float]:
    """Each line's share of the call by its per-call median: one stalled call (a loaded machine) moves a mean's share
    by tens of points and a median's not at all."""
    by_line = {s["line"]: statistics.median(s["device_samples_us"]) for s in run["lines"] if s["device_samples_us"]}
    medians = [by_line.get(n, 0.0) for n in body]
    return [100 * m / sum(medians) for m in medians]


@pytest.mark.timing
def test_a_function_defined_in_a_cell_is_profiled_as_oplens_profile_profiles_it(kernel: tuple[Kernel, Path]) -> None:
    k, folder = kernel
    assert k.run(RMSNORM_CELL)["error"] is None
    run = the_run(k.run("%oplens --iters 20 --warmup 2 rmsnorm_naive(x, w)"), folder)
    assert run["target"]["qualname"] == "rmsnorm_naive" and run["backend"]["device_label"] == "CPU"
    assert run["target"]["def_line"] == 6 and run["config"]["iters"] == 20 and run["config"]["args"] == "rmsnorm_naive(x, w)"
    # the same op table per line as the CLI's profile of the same function from its file; each line's share (of
    # per-call medians) within twice what two of the CLI's own runs differ by, or 10 points (inputs under malloc's mmap threshold:
    # larger ones are fresh pages per op, whose cost varies with the process's heap more than anything else)
    theirs = []
    for _ in range(2):
        cli = oplens_cli(EXAMPLE.parent, "profile", f"{EXAMPLE}::rmsnorm_naive", "--args", "make_inputs(8, 16, 128)",
                         "--iters", "20", "--warmup", "2", "--json", "-", "--out", str(folder / "cli-runs"))  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        theirs.append(json.loads(cli.stdout))
    assert ops_by_line(run, CELL_BODY) == ops_by_line(theirs[0], FILE_BODY)
    ours, a, b = (shares(r, body) for r, body in ((run, CELL_BODY), (theirs[0], FILE_BODY), (theirs[1], FILE_BODY)))
    for mine, one, two in zip(ours, a, b, strict=True):
        assert abs(mine - (one + two) / 2) <= max(2 * abs(one - two), 10.0), (ours, a, b)
    assert ops_by_line(run, CELL_BODY)[0] == {"aten::mul"} and "aten::rsqrt" in ops_by_line(run, CELL_BODY)[3]
    # the sums agree with the totals, as in every run; the html shows the source with its figures
    assert abs(sum(s["self_device_us"] for s in run["lines"]) - run["totals"]["self_device_us"]) < 0.5
    assert "mean_sq = x_sq.mean(dim=-1, keepdim=True)" in k.run("%oplens --iters 3 rmsnorm_naive(x, w)")["html"][0]


def test_a_method_of_a_live_module_object_and_a_compiled_function(kernel: tuple[Kernel, Path]) -> None:
    k, folder = kernel
    cell = ("import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.lin = nn.Linear(32, 32)\n\n    def forward(self, x):\n"
            "        h = self.lin(x)\n        return torch.relu(h) * 2\n\n\nnet = Net()\nxs = torch.randn(8, 32)\n")  # fmt: skip
    assert k.run(cell)["error"] is None
    run = the_run(k.run("%oplens --iters 3 --warmup 1 net(xs)"), folder)
    assert run["target"]["qualname"] == "Net.forward" and run["target"]["def_line"] == 10
    lines = {s["line"]: {o["name"] for o in s["ops"]} for s in run["lines"]}
    assert "aten::linear" in lines[11] or "aten::addmm" in lines[11], lines
    assert "aten::relu" in lines[12], lines
    assert k.run("def g(x):\n    y = x * 2\n    return y + 1\n\n\ncg = torch.compile(g)\n")["error"] is None
    compiled = the_run(k.run("%oplens --iters 3 --warmup 2 cg(xs)", timeout=600), folder)
    assert compiled["target"]["qualname"] == "g"
    names = {o["name"] for s in compiled["lines"] for o in s["ops"]}
    assert any(n.startswith("Torch-Compiled Region") for n in names), names


def test_a_raising_statement_shows_the_users_traceback_and_the_kernel_goes_on(kernel: tuple[Kernel, Path]) -> None:
    k, folder = kernel
    before = sorted((folder / ".oplens" / "runs").glob("[!.]*"))
    assert k.run("def boom(v):\n    z = v + 1\n    raise ValueError(f'bad {z}')\n")["error"] is None
    out = k.run("%oplens boom(1)")
    err = out["error"]
    assert err is not None and err["ename"] == "ValueError" and err["evalue"] == "bad 2"
    tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(err["traceback"]))  # without the terminal's colours
    assert "raise ValueError" in tb and "oplens/worker" not in tb and "oplens/notebook" not in tb
    assert sorted((folder / ".oplens" / "runs").glob("[!.]*")) == before  # no run kept of a statement that raised
    assert k.run("print(1 + 1)")["stdout"] == "2\n"


def test_ctrl_c_interrupts_cleanly_and_the_next_profile_runs(kernel: tuple[Kernel, Path]) -> None:
    k, folder = kernel
    runs = folder / ".oplens" / "runs"
    before = sorted(runs.glob("[!.]*"))
    defined = k.run("import os, time, torch\nenv = dict(os.environ)\ndef slow(v):\n    time.sleep(0.05)\n    return v * 2\n")
    assert defined["error"] is None
    started = k.kc.execute("%oplens --iters 100000 --warmup 1 slow(torch.ones(4))")
    time.sleep(4)  # well inside the profiled iterations (each call sleeps 50 ms)
    k.km.interrupt_kernel()  # what Jupyter's and VS Code's interrupt button sends: SIGINT
    out = k.outputs(started, timeout=120)
    assert out["error"] is not None and out["error"]["ename"] == "KeyboardInterrupt", out
    assert sorted(runs.glob("[!.]*")) == before and not list((runs / ".staging").glob("*"))  # nothing half-stored
    assert k.run("print(dict(os.environ) == env)")["stdout"] == "True\n"  # the backend's variables undone
    # the profiler was stopped: the next profile starts its own and completes
    run = the_run(k.run("%oplens --iters 3 --warmup 1 slow(torch.ones(4))"), folder)
    assert run["target"]["qualname"] == "slow" and run["config"]["iters"] == 3
    assert "profiler_start" in (runs / run["run_id"] / "worker.log").read_text()  # Kineto's lines: the run's log


def test_the_cell_magic_profiles_the_cells_own_lines(kernel: tuple[Kernel, Path]) -> None:
    k, folder = kernel
    assert k.run("import torch\nt = torch.randn(64, 64)\n")["error"] is None
    run = the_run(k.run("%%oplens --iters 3 --warmup 1\nu = t @ t\nv = torch.tanh(u)\ns = float(v.sum())\n"), folder)
    assert run["target"]["qualname"] == "<cell>"
    lines = {s["line"]: {o["name"] for o in s["ops"]} for s in run["lines"]}
    assert "aten::mm" in lines[2] and "aten::tanh" in lines[3], lines  # the cell's lines, after the magic's
    assert k.run("print(type(s).__name__, u.shape)")["stdout"] == "float torch.Size([64, 64])\n"  # its names stay


def test_with_f_the_statements_own_work_is_not_the_functions(kernel: tuple[Kernel, Path]) -> None:
    """`%oplens -f inner outer(t)`: outer's heavy matmuls around the call of inner are not inner's (before,
    they landed on inner's def line); they are counted apart and said so."""
    k, folder = kernel
    cell = ("import torch\n\ndef inner(v):\n    return torch.relu(v) + 1\n\ndef outer(v):\n"
            "    for _ in range(4):\n        v = v @ v / 64\n    return inner(v)\n\nt = torch.randn(64, 64)\n")  # fmt: skip
    assert k.run(cell)["error"] is None
    out = k.run("%oplens --iters 5 --warmup 1 -f inner outer(t)")
    run = the_run(out, folder)
    assert run["target"]["qualname"] == "inner"
    by_line = {s["line"]: {o["name"] for o in s["ops"]} for s in run["lines"]}
    assert not by_line.get(3) and {"aten::relu", "aten::add"} <= by_line[4], by_line  # nothing on the def line
    assert not any("aten::mm" in o["name"] for o in run["ops"]), run["ops"]  # outer's matmuls: not inner's
    totals = run["totals"]
    assert abs(sum(s["self_device_us"] for s in run["lines"]) - totals["self_device_us"]) < 0.5
    assert totals["outside_device_us"] > totals["self_device_us"], totals  # four 64x64 matmuls vs a relu and an add
    assert "own work around inner" in out["html"][0]  # said in the output cell
    # `oplens analyze` derives the run again from its trace as the magic did: the statement's work apart
    analyzed = oplens_cli(folder, "analyze", str(folder / ".oplens" / "runs" / run["run_id"]))
    assert analyzed.returncode == 0, analyzed.stderr
    assert "own work around inner" in analyzed.stdout and "aten::mm" not in analyzed.stdout, analyzed.stdout


def test_bad_input_is_one_line_with_its_fix(kernel: tuple[Kernel, Path]) -> None:
    k, _ = kernel
    for line, words in (("%oplens --iters x f()", "--iters takes a whole number"),
                        ("%oplens", "give the statement to run"),
                        ("%oplens 1 + 1", "calls no function"),
                        ("%oplens -f nothing_here len([])", "-f nothing_here: NameError")):  # fmt: skip
        out = k.run(line)
        shown = (out["error"] and out["error"]["evalue"]) or out["stderr"]
        assert words in shown, (line, out)
        assert "Traceback" not in out["stderr"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_the_example_notebook_runs_as_a_user_runs_it(tmp_path: Path) -> None:
    """examples/notebook.ipynb, each code cell in order in a fresh kernel: four runs shown and kept."""
    notebook = json.loads((EXAMPLE.parent / "notebook.ipynb").read_text())
    k = Kernel(tmp_path)
    try:
        shown = 0
        for cell in notebook["cells"]:
            if cell["cell_type"] != "code":
                continue
            out = k.run("".join(cell["source"]), timeout=600)
            assert out["error"] is None, "\n".join(out["error"]["traceback"])
            shown += sum("oplens-run" in h for h in out["html"])
    finally:
        k.close()
    assert shown == 4
    kept = [p for p in (tmp_path / ".oplens" / "runs").iterdir() if not p.name.startswith(".")]
    assert len(kept) == 4
    qualnames = sorted(json.loads((p / "result.json").read_text())["target"]["qualname"] for p in kept)
    assert qualnames == ["<cell>", "rmsnorm_fused", "rmsnorm_naive", "rmsnorm_naive"]  # compiled: its function's lines
