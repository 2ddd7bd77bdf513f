"""A target that a decorator turns into another object (issue 38, part 4): its code found by file and line among
what the name holds (an nn.Module's forward, a wrapper's closure, functools.partial), what the program calls
called, the original's lines marked; torch.jit.script named as what cannot be marked; a function hidden where
nothing reaches it said so, not "the file changed". A real package with relative imports (tests/data/decorated),
real torch, the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.cli import oplens_cli
from support.paths import DATA

MODEL = "deco/model.py"


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    shutil.copytree(DATA / "decorated", tmp_path, dirs_exist_ok=True)
    return tmp_path


def profiled(work: Path, name: str) -> dict[int, list[str]]:
    proc = oplens_cli(work, "profile", f"{MODEL}::{name}", "--args", "make()", "--warmup", "1", "--iters", "3",
                      "--json", "-")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return {s["line"]: [o["name"] for o in s["ops"]] for s in json.loads(proc.stdout)["lines"]}


@pytest.mark.parametrize(("name", "first", "op", "second", "op2"), [
    ("rotate", 10, "aten::mul", 11, "aten::tanh"),  # an nn.Module instance whose forward calls it (kernels' hub)
    ("wrapped", 16, "aten::add", 17, "aten::sum"),  # a closure, no functools.wraps
    ("scaled", 21, "aten::mul", 22, "aten::exp"),  # the name reassigned to a functools.partial of it
])  # fmt: skip
def test_a_decorated_function_has_its_own_lines(work: Path, name: str, first: int, op: str, second: int, op2: str) -> None:
    lines = profiled(work, name)
    assert op in lines[first] and op2 in lines[second], lines


def test_torch_jit_script_is_named_as_what_cannot_be_marked(work: Path) -> None:
    proc = oplens_cli(work, "profile", f"{MODEL}::scripted", "--args", "make()", "--warmup", "1", "--iters", "2")
    assert proc.returncode == 2, proc.stderr
    assert "compiled by torch.jit.script" in proc.stderr and "Traceback" not in proc.stderr


def test_a_function_nothing_reaches_is_said_so_not_that_the_file_changed(work: Path) -> None:
    proc = oplens_cli(work, "profile", f"{MODEL}::hidden", "--args", "make()", "--warmup", "1", "--iters", "2")
    assert proc.returncode == 2, proc.stderr
    assert "functools.partial" in proc.stderr and "changed" not in proc.stderr, proc.stderr
