"""`oplens run`: a target's file captured however the program loads it (issue "The capture reaches a
file however it is loaded"): by path under another module name (`spec_from_file_location` +
`exec_module`, as `trust_remote_code` and plugin loaders do), `runpy.run_path`, a hand-made
`SourceFileLoader`, twice under two names, and past a cached .pyc, which must never end up holding
OpLens's decorator. The program (tests/data/programs/loaders/load.py) runs as a user runs it,
through the CLI, from a copy in tmp_path (its __pycache__ is the test's own)."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import py_compile
import runpy
import shutil
import subprocess
import sys
import time
import types
from importlib import _bootstrap_external
from pathlib import Path
from typing import Any

import pytest

from oplens.records.run import Target
from oplens.worker.instrument import ImportHook, Instrumented
from support.paths import DATA

LOADERS = DATA / "programs" / "loaders"
GATE = "modeling_gate.py"
TARGET = f"{GATE}::gated"
SKIP, WARM, CALLS = 2, 1, 4
NO_HOOKS = "hooks None None []"  # printed by the program before its first step and after its last


def program(tmp_path: Path) -> Path:
    folder = tmp_path / "program"
    shutil.copytree(LOADERS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def oplens_run(tmp_path: Path, folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`oplens run --target modeling_gate.py::gated -- load.py ARGV` in `folder`, writing bytecode
    as Python does by default (the test environment turns it off)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-m", "oplens", "run", "--out", str(tmp_path / "runs"), "--json", str(tmp_path / "result.json"),
           "--skip", str(SKIP), "--profiler-warmup", str(WARM), "--calls", str(CALLS),
           "--target", TARGET, "--", "load.py", *argv]  # fmt: skip
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=240)


def captured(tmp_path: Path, out: subprocess.CompletedProcess[str], seen: int) -> dict[str, Any]:
    """The run, checked: every call seen, the window profiled, each line of `gated` with its op
    in every profiled call, and no trace or profile hook around the program's steps."""
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(NO_HOOKS) == 2 and "finished" in out.stdout
    run: dict[str, Any] = json.loads((tmp_path / "result.json").read_text())
    c = run["capture"]
    assert (c["calls_seen"], c["calls_profiled"]) == (seen, CALLS) and not c["partial"]
    by_line = {s["line"]: s for s in run["lines"]}
    for line, op in ((8, "aten::sigmoid"), (9, "aten::mul"), (10, "aten::sum")):
        ops = {o["name"]: o for o in by_line[line]["ops"]}
        assert op in ops, (line, by_line[line]["ops"])
    assert sum(s["op_calls"] for s in run["lines"]) == pytest.approx(3.0)  # the three ops, in each call
    return run


def test_loaded_by_path_under_another_module_name(tmp_path: Path) -> None:
    """`spec_from_file_location("transformers_modules.abc123.modeling_gate_remote", path)` +
    `exec_module`: no finder sees it, and the name is not the file's."""
    folder = program(tmp_path)
    captured(tmp_path, oplens_run(tmp_path, folder, "--how", "spec", "--steps", "9"), seen=9)


def test_run_path(tmp_path: Path) -> None:
    """`runpy.run_path(path)` compiles the file with the builtin `compile`, no loader at all."""
    folder = program(tmp_path)
    captured(tmp_path, oplens_run(tmp_path, folder, "--how", "runpy", "--steps", "8"), seen=8)


@pytest.mark.parametrize("how", ["exec_module", "load_module", "get_code"])
def test_hand_made_source_file_loader(tmp_path: Path, how: str) -> None:
    folder = program(tmp_path)
    captured(tmp_path, oplens_run(tmp_path, folder, "--how", how, "--steps", "8"), seen=8)


def test_two_copies_under_two_names_both_count(tmp_path: Path) -> None:
    """The file loaded as `plugins.gate_a` by its path and as `plugins.gate_b` through a symlink of
    another name: one file, so the calls through both count, and the profiled calls of both (two
    each) have their ops on the function's lines."""
    folder = program(tmp_path)
    alias = tmp_path / "elsewhere" / "gate_link.py"
    alias.parent.mkdir()
    alias.symlink_to(folder / GATE)
    captured(tmp_path, oplens_run(tmp_path, folder, "--how", "twice", "--alias", str(alias), "--steps", "5"), seen=10)


@pytest.mark.parametrize("cache", ["valid", "unchecked_hash", "stale"])
def test_a_cached_pyc_neither_bypasses_the_capture_nor_gets_its_decorator(tmp_path: Path, cache: str) -> None:
    """A valid .pyc is what `SourceLoader.get_code` reads instead of the source (an unchecked-hash
    one without even looking at the source): the target is captured all the same. A stale one is
    what it would rewrite: afterwards the .pyc holds no OpLens decorator, so a later plain run of
    the program runs the plain code."""
    folder = program(tmp_path)
    source = folder / GATE
    pyc = Path(importlib.util.cache_from_source(str(source)))
    mode = py_compile.PycInvalidationMode.UNCHECKED_HASH if cache == "unchecked_hash" else None
    py_compile.compile(str(source), cfile=str(pyc), doraise=True, invalidation_mode=mode)
    if cache == "stale":
        later = time.time() + 10
        os.utime(source, (later, later))
    before = pyc.read_bytes()
    captured(tmp_path, oplens_run(tmp_path, folder, "--how", "spec", "--steps", "8"), seen=8)
    after = pyc.read_bytes()
    assert not instrumented(after)
    assert after == before  # never written by the capture


def instrumented(pyc: bytes) -> bool:
    """Whether a .pyc's code carries the capture's decorator."""
    code = marshal.loads(pyc[16:])
    return any("oplens.worker.capture" in c.co_consts for c in _codes(code))


def _codes(code: types.CodeType) -> list[types.CodeType]:
    return [code] + [d for c in code.co_consts if isinstance(c, types.CodeType) for d in _codes(c)]


def test_other_files_pass_through_and_every_patch_is_undone(tmp_path: Path) -> None:
    """In the hook's lifetime another file loaded by path is loaded by Python's own code (its .pyc
    written as usual, nothing of OpLens in it) while the target's is instrumented; on exit
    importlib's `get_code` and runpy's `compile` are what they were."""
    target, other = tmp_path / "tgt.py", tmp_path / "other.py"
    target.write_text("def f(x):\n    return x + 1\n")
    other.write_text("def f(x):\n    return x + 2\n")
    get_code = vars(_bootstrap_external.SourceLoader)["get_code"]
    hook = ImportHook([Instrumented(0, Target(file=str(target), qualname="f", first_line=1, last_line=2,
                                              source_sha256="", def_line=1))])  # fmt: skip
    dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        with hook:
            plain = _load("loaders_other", other)
            instrumented_module = _load("loaders_target", target)
            ran = runpy.run_path(str(target))
    finally:
        sys.dont_write_bytecode = dont_write
    assert vars(_bootstrap_external.SourceLoader)["get_code"] is get_code and "compile" not in vars(runpy)
    assert not instrumented(Path(importlib.util.cache_from_source(str(other))).read_bytes())
    assert not Path(importlib.util.cache_from_source(str(target))).exists()  # never cached
    codes = hook.codes[os.path.realpath(target)]
    assert any("oplens.worker.capture" in c.co_consts for c in codes)
    assert instrumented_module.f.__code__ is ran["f"].__code__ and ran["f"].__code__ in codes  # one text, one code
    assert plain.f.__code__ not in codes
    assert instrumented_module.f(1) == ran["f"](1) == 2  # no capture active: the function as written


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
