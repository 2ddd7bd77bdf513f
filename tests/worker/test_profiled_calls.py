"""The one profiled-call loop (`worker/calls.py`), which `profile` and the capture both run: on an
asynchronous device the last call's work completes only when the device is synchronised, and it
must be inside the trace.

In-process with real torch and a backend whose device work runs only on `synchronize`; then end to
end through `oplens profile` and `oplens run` with the stand-in torch_neuronx (its
STANDIN_DEVICE_WORK_ON_SYNC: the work of each call completes inside torch.neuron.synchronize()).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from oplens.backends.cpu import CpuBackend
from oplens.worker.calls import ProfiledCalls, shapes_call
from oplens.worker.linemarks import LineMarker
from support.cli import oplens_cli
from support.paths import STANDINS


class QueuedDevice(CpuBackend):
    """A CPU backend whose "device" runs what a call queued only when synchronised, as an
    asynchronous device does (CUDA, Neuron); each completion is a named range."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[Callable[[], None]] = []
        self.completed = 0

    def synchronize(self) -> None:
        while self.queue:
            work = self.queue.pop(0)
            with torch.profiler.record_function(f"device_work:{self.completed}"):
                work()
            self.completed += 1


def target(device: QueuedDevice) -> None:
    x = torch.ones(16)
    device.queue.append(lambda: (x * 2).sum() and None)


def names_in(prof: Any) -> list[str]:
    return [e.name() for e in prof.profiler.kineto_results.events()]


@pytest.mark.parametrize("warm", [0, 2])
def test_the_last_calls_device_work_is_inside_the_trace(warm: int, tmp_path: Path) -> None:
    device = QueuedDevice()
    marker = LineMarker(target.__code__, {target.__code__})
    with ProfiledCalls(device, tmp_path, marker, calls=3, warm=warm) as calls:
        while not calls.done:
            calls.call(lambda: target(device))
    assert device.completed == warm + 3 and len(calls.wall_us) == 3 and calls.started == warm + 3
    recorded = [n for n in names_in(calls.prof) if n.startswith("device_work:")]
    # the schedule's warm-up calls are dropped; every recorded call's work is there, the last one's too
    assert recorded == [f"device_work:{i}" for i in range(warm, warm + 3)]
    assert [n for n in names_in(calls.prof) if n.startswith("oplens.iter:")] == [f"oplens.iter:{i}" for i in range(3)]


def test_work_left_queued_at_stop_is_synchronised_into_the_trace(tmp_path: Path) -> None:
    """A window ended early (the program stopped): `stop` synchronises before the profiler stops."""
    device = QueuedDevice()
    calls = ProfiledCalls(device, tmp_path, LineMarker(target.__code__, {target.__code__}), calls=5, warm=0)
    calls.call(lambda: target(device))
    device.queue.append(lambda: None)  # queued after the call's own synchronise
    calls.stop()
    calls.stop()  # idempotent
    assert "device_work:1" in names_in(calls.prof)


def test_a_raising_call_counts_and_is_synchronised(tmp_path: Path) -> None:
    device = QueuedDevice()
    calls = ProfiledCalls(device, tmp_path, LineMarker(target.__code__, {target.__code__}), calls=2, warm=0)

    def raising() -> None:
        target(device)
        raise ValueError("the user's")

    with pytest.raises(ValueError, match="the user's"):
        calls.call(raising)
    assert len(calls.wall_us) == 1 and device.completed == 1
    calls.stop()


def test_the_shapes_call_synchronises_before_its_profiler_stops(tmp_path: Path) -> None:
    device = QueuedDevice()
    shapes, result = shapes_call(device, LineMarker(target.__code__, {target.__code__}), lambda: target(device),
                                 target.__code__.co_firstlineno)  # fmt: skip
    prof = shapes.prof
    assert result is None and "device_work:0" in names_in(prof)


# --------------------------------------------------------------------------- through the CLI

TARGET = """\
import torch


def fn():
    x = torch.ones(32, 32)
    return (x * x).sum()
"""

PROGRAM = """\
from t import fn

for _ in range(12):
    fn()
"""


def oplens(cwd: Path, command: str, *argv: str) -> dict[str, Any]:
    proc = oplens_cli(cwd, command, "--backend", "neuron", "--json", "-", *argv, timeout=240,
                      PYTHONPATH=str(STANDINS), STANDIN_DEVICE_WORK_ON_SYNC="1")  # fmt: skip
    # The stand-in's device work is a host-side range with no linked device event, and no neuron-explorer is
    # here to read a system trace: `--backend neuron` with device time from no source exits 5 after its output
    # (issue 33), which still holds the run and its trace.
    assert proc.returncode == 5 and "no Self NEURON time from any source" in proc.stderr, proc.stderr
    run: dict[str, Any] = json.loads(proc.stdout)
    return run


def last_call_work_in_trace(run: dict[str, Any]) -> None:
    events = json.loads((Path(run["run_dir"]) / run["artifacts"]["trace_json"]).read_text())["traceEvents"]
    iters = [e for e in events if str(e.get("name", "")).startswith("oplens.iter:") and e.get("ph") == "X"]
    work = [e for e in events if str(e.get("name", "")).startswith("standin.device_work:") and e.get("ph") == "X"]
    last_end = max(e["ts"] + e["dur"] for e in iters)
    assert len({e["name"] for e in iters}) == run["config"]["iters"]
    # after each recorded call its synchronize ran inside the trace: the last call's work is there
    assert sum(e["ts"] >= last_end for e in work) >= 1, (last_end, [(e["name"], e["ts"]) for e in work])
    assert len(work) >= run["config"]["iters"]


@pytest.mark.neuron
def test_profile_keeps_the_last_calls_device_work_with_stand_in_torch_neuronx(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    last_call_work_in_trace(oplens(tmp_path, "profile", "t.py::fn", "--warmup", "1", "--iters", "3"))


@pytest.mark.neuron
def test_run_keeps_the_last_calls_device_work_with_stand_in_torch_neuronx(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TARGET)
    (tmp_path / "prog.py").write_text(PROGRAM)
    run = oplens(tmp_path, "run", "--target", "t.py::fn", "--skip", "2", "--calls", "3", "--", "prog.py")
    assert run["capture"]["calls_profiled"] == 3
    last_call_work_in_trace(run)
