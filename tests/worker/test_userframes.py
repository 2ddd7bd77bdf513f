"""The overview's user frames (`worker/userframes.py`): while the window is open each function of the user's
files runs its body inside a profiler range named as torch names a frame, with its own line numbers and
closures; everything is put back after, functions made during the window included; what cannot be wrapped
is left alone. Real torch.profiler sessions over a module loaded from a file."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import traceback
import types
from pathlib import Path

import pytest
import torch

from oplens.records import names
from oplens.worker import userframes
from oplens.worker.userframes import UserFrames

SOURCE = '''\
import functools

import torch


def plain(x):
    """Its docstring stays its docstring."""
    return x * 2


def outer(x):
    def inner(y):
        return y + x

    return inner(x) + plain(x)


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*a):
        return fn(*a)

    return wrapper


@deco
def decorated(x):
    return torch.relu(x)


def gen(x):
    for _ in range(2):
        yield x - 1


class Model(torch.nn.Module):
    def forward(self, x):
        return plain(x) + sum(gen(x))


def make_adder(k):
    def add(v):
        return v + k

    return add


def boom():
    x = 1
    raise ValueError(f"line {x}")
'''


@pytest.fixture
def module(tmp_path: Path) -> types.ModuleType:
    path = tmp_path / "usermod.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("usermod", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["usermod"] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules["usermod"]


def frames_of(mod: types.ModuleType, fn: object) -> list[str]:
    """The user-frame ranges a profiled call of `fn` records, in order."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()  # type: ignore[operator]
    prefix = f"{names.FRAME_RANGE}{mod.__file__}"
    return [e.name[len(prefix) :] for e in sorted(prof.events(), key=lambda e: e.time_range.start) if e.name.startswith(prefix)]


def test_each_user_function_runs_in_a_range_named_as_torch_names_a_frame(module: types.ModuleType) -> None:
    is_user = {module.__file__: module.__file__}.get
    frames = UserFrames(is_user)
    before = {name: getattr(module, name).__code__ for name in ("plain", "outer", "gen", "make_adder")}
    x = torch.ones(3)
    try:
        assert frames.swap() >= 6
        assert frames_of(module, lambda: module.outer(x)) == ["(11): outer", "(12): inner", "(6): plain"]
        # a decorated function by its `def` line (its code starts at the decorator); the wrapper is the user's too
        assert frames_of(module, lambda: module.decorated(x)) == ["(20): wrapper", "(27): decorated"]
        # a method; a generator is not wrapped (a range would span its suspensions): its ops are its caller's
        assert frames_of(module, lambda: module.Model()(x)) == ["(37): forward", "(6): plain"]
        assert module.plain.__doc__ == "Its docstring stays its docstring."
        add = module.make_adder(5)  # a closure made during the window, from wrapped code
        assert add(1) == 6 and add.__code__ is not before["make_adder"].co_consts[1]
        with pytest.raises(ValueError) as raised:
            module.boom()
        lines = [f.lineno for f in traceback.extract_tb(raised.tb) if f.filename == module.__file__]
        assert lines == [50]  # the user's own line, no frame of OpLens's
    finally:
        frames.restore()
    for name, code in before.items():
        assert getattr(module, name).__code__ is code
    assert add.__code__ is module.make_adder(5).__code__  # made in the window, put back too
    assert frames_of(module, lambda: module.outer(x)) == []
    assert not hasattr(__import__("builtins"), userframes.HOOK)


def test_a_function_whose_file_changed_since_it_was_loaded_is_left_alone(module: types.ModuleType) -> None:
    Path(module.__file__).write_text(SOURCE.replace("return x * 2", "return x * 3"))
    userframes._VARIANTS.pop(module.__file__, None)
    frames = UserFrames({module.__file__: module.__file__}.get)
    try:
        frames.swap()
        assert frames_of(module, lambda: module.plain(torch.ones(1))) == []  # its code is no longer the file's
        assert frames_of(module, lambda: module.make_adder(1)) == ["(41): make_adder"]  # unchanged: wrapped
    finally:
        frames.restore()


def test_the_running_frames_are_noted_outermost_first(module: types.ModuleType) -> None:
    frames = UserFrames({module.__file__: module.__file__}.get)
    seen: list[str] = []
    def plain(x: int) -> int:
        frames.note_running(sys._getframe(1))
        seen.extend(frames.running)
        return x

    module.plain = plain  # type: ignore[attr-defined]
    module.outer(1)
    assert seen == [f"{module.__file__}(11): outer"]  # inner is not running: plain is called after it returned


def test_a_program_that_used_torch_compile_keeps_the_python_tracer() -> None:
    """dynamo guards on the code of every function it inlined: swapping code there would recompile."""

    code = ("import torch\nfrom oplens.worker import userframes\nprint(userframes.usable())\n"
            "f = torch.compile(lambda x: x + 1)\nf(torch.ones(2))\nprint(userframes.usable())\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["True", "False"], out.stderr[-2000:]
