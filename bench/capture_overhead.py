"""Capture overhead of `oplens run`: what a program pays outside the capture window, and what a
captured call costs next to `oplens profile` (issue 12, "No cost outside the window").

The program: `bench/programs/train_loop.py`, a Python-heavy training-like loop (a small MLP of
residual blocks, forward + backward + SGD, a metrics dict and list work per step, ~3-5 ms a step
here) that calls the target `gated_mix` 4 times a step and times each step itself with
`time.perf_counter` (and `time.thread_time`), writing the per-step times to a file.

Each round starts three processes of it and runs them in lockstep, --chunk (20) steps a turn, the
order of the three rotating every turn (the program waits on a FIFO between turns, outside its
timed steps), so all three sample the same stretches of the machine's load:
  A   `python train_loop.py`                                        (plain)
  B   `oplens run --target train_loop.py::gated_mix --skip 3 --calls 10 -- train_loop.py`
      (no --stop: the program runs to its end; the window, 3 skipped + 2 profiler warm-up + 10
      profiled calls, ends in step 3, where the run is also processed, in the program's process)
  A2  `python train_loop.py` again (the A/A noise band)
and, right before the round (odd rounds) or right after it (even ones),
  C   `oplens profile train_loop.py::gated_mix --args "make_inputs()" --warmup 3 --iters 10`
      (the same function on inputs as the loop passes: same shapes, an activation that requires
      grad, nn.Parameters).

  1. outside the window: B's median step time over the steps after the first --drop (100; the
     window and the warm-up both end long before), over the geometric mean of A's and A2's medians
     over the same steps (the issue's ratio); also paired turn by turn (the median over turns of
     B's median step in the turn over A's and A2's in the same turn) and on the steps' CPU time.
     Target <= 1.02x. A2/A, computed the same ways, is what two identical programs differ by.
  2. in the window: B's per-call wall time of the captured calls (result.json totals.wall_us
     .median) over C's per-iteration one (same field). Expect ~1x.

Why ratios and rounds: the 2 cores are shared with other sessions' tests, so an absolute time says
little, and two processes of the same program differ by a few percent (memory layout, what ran
on the other core); the verdict is the median of the per-round ratios, with their interquartile
range and min..max as the spread.

3. The wrapper itself (what 1 should be): ns per call of a trivial function wrapped by the real
`Capturer.wrapper` (in its after-the-window state) against the bare function, interleaved blocks
of calls, with a breakdown by rebuilding the wrapper's steps one at a time, the cost per step that
predicts (4 calls a step), and the wrapper swapped in and out of the real loop in one process
(`wrapper_in_loop`: same heap, only the wrapper differs). Also the cost of a call during --skip,
which sends the parent a progress message.

--decompose adds two oplens runs to each round (D: the worker with a target never profiled; E: a
window completed before the loop on another function), to split B/A into running in the worker,
what a finished window leaves behind, and the wrapper in the loop.

    .venv/bin/python bench/capture_overhead.py [--pairs 7] [--steps 600] [--drop 100] [--chunk 20] [--decompose]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import itertools
import json
import math
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PROGRAM = "bench/programs/train_loop.py"
TARGET = f"{PROGRAM}::gated_mix"
SKIP, CALLS, PROFILER_WARMUP = 3, 10, 2  # oplens run's --skip/--calls and its default profiler warm-up
CALLS_PER_STEP = 4  # train_loop.BLOCKS


@dataclass
class Round:
    turns: int  # lockstep turns each program took
    plain_us: float  # A: median step time after --drop
    plain_again_us: float  # A'
    run_outside_us: float  # B: the same, under oplens run
    plain_cpu_us: float  # the same medians of the steps' own CPU time (time.thread_time)
    plain_again_cpu_us: float
    run_outside_cpu_us: float
    run_window_steps_us: list[float]  # B: the steps that held the window (up to its last call)
    plain_window_steps_us: list[float]  # A: the same steps, plainly
    run_call_us: float  # B: result.json totals.wall_us.median (the captured calls)
    profile_iter_us: float  # C: the same field of oplens profile, run right after (or before) the round
    outside_ratio: float = 0.0  # B / geomean(A, A')
    outside_turn_ratio: float = 0.0  # median over turns of B's turn median / geomean of A's and A''s
    aa_turn_ratio: float = 0.0
    outside_cpu_ratio: float = 0.0  # the same on CPU time
    aa_ratio: float = 0.0  # A' / A
    aa_cpu_ratio: float = 0.0
    window_ratio: float = 0.0  # B call / C iteration
    # --decompose: variant → {"wall", "turn", "cpu"} ratios over A and A2, computed as B's
    decomposed: dict[str, dict[str, float]] = field(default_factory=dict)
    load: float = 0.0  # 1-min load average at the round's end


@dataclass
class WrapperCost:
    calls_per_block: int
    blocks: int
    ns_per_call: dict[str, float] = field(default_factory=dict)  # variant → median ns/call
    extra_ns: dict[str, float] = field(default_factory=dict)  # variant → median (variant - bare) ns/call


class Lockstep:
    """A program started with OPLENS_BENCH_SYNC: it runs a chunk of steps per `turn()`."""

    def __init__(self, tmp: Path, name: str, argv: list[str], exit_codes: tuple[int, ...] = (0,)) -> None:
        self.name, self.exit_codes = name, exit_codes
        ready, go = tmp / f"{name}.ready", tmp / f"{name}.go"
        for fifo in (ready, go):
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo)
        # Both ends opened read-write here: neither open blocks, and the program's opens never do.
        self.ready = os.open(ready, os.O_RDWR)
        self.go = os.open(go, os.O_RDWR)
        self.log = tmp / f"{name}.log"
        with open(self.log, "wb") as log:
            env = {**os.environ, "OPLENS_BENCH_SYNC": f"{ready}:{go}"}
            self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.done = False

    def wait(self, timeout_s: float = 300.0) -> bytes:
        """The program's next byte: `r` (waiting for its turn) or `d` (done)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.ready], [], [], 0.5)
            if readable:
                byte = os.read(self.ready, 1)
                self.done = byte == b"d"
                return byte
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise SystemExit(f"{self.name} exited ({self.proc.returncode}) before its end:\n{tail}")
        raise SystemExit(f"{self.name}: no word for {timeout_s:g} s")

    def turn(self) -> None:
        os.write(self.go, b"g")
        self.wait()

    def close(self) -> None:
        if self.proc.wait(timeout=120) not in self.exit_codes:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise SystemExit(f"{self.name} failed (exit {self.proc.returncode}):\n{tail}")
        os.close(self.ready)
        os.close(self.go)


def lockstep(programs: list[Lockstep]) -> int:
    """Run the programs a chunk at a time, in turn (the order rotating every turn) until all are
    done; the turns each took."""
    for p in programs:
        p.wait()  # started: torch imported, the model built
    turns = 0
    orders = list(itertools.permutations(programs))
    while not all(p.done for p in programs):
        for p in orders[turns % len(orders)]:
            if not p.done:
                p.turn()
        turns += 1
    for p in programs:
        p.close()
    return turns


def turn_ratio(num: list[float], dens: list[list[float]], chunk: int, drop: int) -> float:
    """The median over lockstep turns (those after `drop`) of num's median step time in the turn
    over the geometric mean of the dens' medians in the same turn: a paired comparison, each turn
    against the same stretch of the machine's load."""
    first = -(-drop // chunk)
    ratios = []
    for k in range(first, len(num) // chunk):
        part = slice(k * chunk, (k + 1) * chunk)
        base = math.prod(statistics.median(d[part]) for d in dens) ** (1 / len(dens))
        ratios.append(statistics.median(num[part]) / base)
    return statistics.median(ratios)


def step_medians(times_file: Path, drop: int) -> tuple[float, float, list[float]]:
    data = json.loads(times_file.read_text())
    steps, cpu = data["step_us"], data["cpu_us"]
    if len(steps) <= drop + 50:
        raise SystemExit(f"{times_file}: {len(steps)} steps, too few after dropping {drop}")
    return statistics.median(steps[drop:]), statistics.median(cpu[drop:]), steps


def program_args(steps: int, chunk: int, out: Path, probe_calls: int = 0) -> list[str]:
    probe = ["--probe-calls", str(probe_calls)] if probe_calls else []
    return [PROGRAM, "--steps", str(steps), "--chunk", str(chunk), "--times", str(out), *probe]


def oplens_profile(tmp: Path, tag: str) -> dict[str, Any]:
    result = tmp / f"profile-{tag}.result.json"
    argv = [sys.executable, "-m", "oplens", "profile", TARGET, "--args", "make_inputs()", "--warmup", str(SKIP),
            "--iters", str(CALLS), "--out", str(tmp / "runs"), "--json", str(result)]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"oplens profile failed (exit {proc.returncode}):\n{proc.stdout.decode(errors='replace')[-3000:]}")
    return json.loads(result.read_text())


# --decompose: two more oplens runs, each with the program calling make_inputs() PROBE_CALLS times
# before its loop (all five programs do, so they stay identical):
#   D  --target make_inputs --skip 1000: the worker, the import hook, 15 skipped calls before the
#      loop, never a profiler (it ends "not called", exit status 2); no wrapper in the loop
#   E  --target make_inputs --skip 3 --calls 10: D plus a whole window (profiler, line markers, the
#      run processed and sent) before the loop; no wrapper in the loop
# so D/A is running inside the worker, E/D what a finished window leaves behind, B/E the wrapper.
PROBE_CALLS = 15
PROBE_TARGET = f"{PROGRAM}::make_inputs"
NOT_CALLED_EXIT = 2


def one_round(r: int, tmp: Path, steps: int, drop: int, chunk: int, decompose: bool) -> Round:
    names = ["A", "B", *(["D", "E"] if decompose else []), "A2"]
    files = {name: tmp / f"{name}-{r}.json" for name in names}
    probe = PROBE_CALLS if decompose else 0

    def oplens_run(name: str, target: str, skip: int, result: Path | None) -> list[str]:
        out = ["--json", str(result)] if result else []
        return [sys.executable, "-m", "oplens", "run", "--target", target, "--skip", str(skip), "--calls", str(CALLS),
                "--profiler-warmup", str(PROFILER_WARMUP), "--out", str(tmp / "runs"), *out,
                "--", *program_args(steps, chunk, files[name], probe)]  # fmt: skip

    result = tmp / f"run-{r}.result.json"
    argv = {
        "A": [sys.executable, *program_args(steps, chunk, files["A"], probe)],
        "B": oplens_run("B", TARGET, SKIP, result),
        "A2": [sys.executable, *program_args(steps, chunk, files["A2"], probe)],
    }
    if decompose:
        argv["D"] = oplens_run("D", PROBE_TARGET, 1000, None)
        argv["E"] = oplens_run("E", PROBE_TARGET, SKIP, None)
    c = oplens_profile(tmp, str(r)) if r % 2 else None  # C before the round in odd rounds, after in even ones
    turns = lockstep([Lockstep(tmp, f"{name}-{r}", argv[name], (0, NOT_CALLED_EXIT) if name == "D" else (0,))
                      for name in names])  # fmt: skip
    if c is None:
        c = oplens_profile(tmp, str(r))
    b = json.loads(result.read_text())
    capture = b["capture"]
    assert capture["calls_profiled"] == CALLS and not capture["partial"], capture
    assert capture["calls_seen"] == steps * CALLS_PER_STEP, capture
    med = {name: step_medians(f, drop) for name, f in files.items()}
    (a, a_cpu, a_steps), (a2, a2_cpu, a2_steps) = med["A"], med["A2"]
    bo, bo_cpu, b_steps = med["B"]
    last_window_step = (SKIP + PROFILER_WARMUP + CALLS - 1) // CALLS_PER_STEP
    assert last_window_step < drop
    res = Round(
        turns=turns,
        plain_us=a,
        plain_again_us=a2,
        run_outside_us=bo,
        plain_cpu_us=a_cpu,
        plain_again_cpu_us=a2_cpu,
        run_outside_cpu_us=bo_cpu,
        run_window_steps_us=b_steps[: last_window_step + 1],
        plain_window_steps_us=a_steps[: last_window_step + 1],
        run_call_us=b["totals"]["wall_us"]["median"],
        profile_iter_us=c["totals"]["wall_us"]["median"],
        load=os.getloadavg()[0],
    )
    res.outside_ratio = bo / math.sqrt(a * a2)
    res.outside_cpu_ratio = bo_cpu / math.sqrt(a_cpu * a2_cpu)
    res.aa_ratio = a2 / a
    res.outside_turn_ratio = turn_ratio(b_steps, [a_steps, a2_steps], chunk, drop)
    res.aa_turn_ratio = turn_ratio(a2_steps, [a_steps], chunk, drop)
    res.aa_cpu_ratio = a2_cpu / a_cpu
    res.window_ratio = res.run_call_us / res.profile_iter_us
    for name in ("B", "D", "E") if decompose else ():
        wall, cpu, steps_us = med[name]
        res.decomposed[name] = {
            "wall": wall / math.sqrt(a * a2),
            "turn": turn_ratio(steps_us, [a_steps, a2_steps], chunk, drop),
            "cpu": cpu / math.sqrt(a_cpu * a2_cpu),
        }
    return res


def summary(values: list[float]) -> dict[str, float]:
    q1, med, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": statistics.median(values), "q1": q1, "q3": q3, "min": min(values), "max": max(values)}


# -- the wrapper alone ---------------------------------------------------------------------------


def wrapper_variants() -> dict[str, Callable[[int], int]]:
    """A trivial function bare, wrapped by the real `Capturer.wrapper` after its window (the state
    of every call after the capture), and the wrapper's steps rebuilt one at a time, reading the
    same attributes, in its order (a breakdown: "real wrapper" is the one that counts). "one flag"
    is a hypothetical wrapper that reads one attribute and calls (the floor of any wrapper that
    decides anything; not OpLens's code). "skipped call": the real wrapper during --skip, which
    also sends a progress message per call."""
    import torch

    from oplens.records.job import WorkerMessage, encode
    from oplens.records.run import Target
    from oplens.worker.capture import Capturer, Window

    no_target = Target(file="", qualname="trivial", first_line=0, last_line=0, source_sha256="")  # what wrapper reads

    def trivial(a: int) -> int:
        return a

    # A Capturer in its after-the-window state, without a job: only what `wrapper` reads is set.
    cap = Capturer.__new__(Capturer)
    cap.windows = [Window(target=no_target, stage_dir="", done=True)]
    cap.current, cap.thread, cap.disabled = 1, None, False
    real = cap.wrapper(0, trivial)

    # One in its --skip phase (a skip so large it never ends): each call also sends the parent a
    # progress message, here as the worker sends it (a JSON line, flushed) into a pipe `cat` drains.
    drain = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert drain.stdin is not None
    pipe = os.fdopen(os.dup(drain.stdin.fileno()), "w", buffering=1, encoding="utf-8")
    drain.stdin.close()

    def send(message: WorkerMessage) -> None:  # worker/__main__.py's
        pipe.write(encode(message))
        pipe.flush()

    skipping = Capturer.__new__(Capturer)
    skipping.windows = [Window(target=no_target, stage_dir="")]
    skipping.current, skipping.thread, skipping.disabled = 0, None, False
    skipping.skip, skipping.send, skipping._waited_at = 10**12, send, 0.0
    skipped = skipping.wrapper(0, trivial)

    fn = trivial
    w = Window(target=no_target, stage_dir="", done=True)
    capture = types.SimpleNamespace(disabled=False, thread=threading.get_ident())
    get_ident = threading.get_ident
    is_compiling = getattr(torch.compiler, "is_compiling", lambda: False)

    @functools.wraps(fn)
    def forward(*args: Any, **kwargs: Any) -> Any:  # the closure and the *args/**kwargs forwarding
        return fn(*args, **kwargs)

    @functools.wraps(fn)
    def compiling_check(*args: Any, **kwargs: Any) -> Any:  # + torch.compiler.is_compiling(), first
        if is_compiling():
            return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    @functools.wraps(fn)
    def thread_check(*args: Any, **kwargs: Any) -> Any:  # + the busy/disabled flags, the thread check
        if is_compiling():
            return fn(*args, **kwargs)
        if w.busy or capture.disabled:
            return fn(*args, **kwargs)
        me = get_ident()
        if capture.thread != me:
            return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    @functools.wraps(fn)
    def one_flag(*args: Any, **kwargs: Any) -> Any:  # hypothetical: one flag read, then the call
        if capture.disabled:
            return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return {"bare": trivial, "forward": forward, "+is_compiling": compiling_check, "+flags, thread": thread_check,
            "real wrapper": real, "one flag (hyp.)": one_flag, "skipped call": skipped}  # fmt: skip


def time_block(fn: Callable[[int], int], n: int) -> float:
    rng = range(n)
    t0 = time.perf_counter_ns()
    for i in rng:
        fn(i)
    return (time.perf_counter_ns() - t0) / n


def wrapper_cost(calls: int = 200_000, blocks: int = 9) -> WrapperCost:
    variants = wrapper_variants()
    res = WrapperCost(calls, blocks)
    per: dict[str, list[float]] = {name: [] for name in variants}
    extra: dict[str, list[float]] = {name: [] for name in variants if name != "bare"}
    names = list(variants)
    for name in names:  # warm-up
        time_block(variants[name], calls // 10)
    for b in range(blocks):
        order = names if b % 2 == 0 else names[::-1]
        ns = {name: time_block(variants[name], calls) for name in order}
        for name, value in ns.items():
            per[name].append(value)
            if name != "bare":
                extra[name].append(value - ns["bare"])
    res.ns_per_call = {name: statistics.median(v) for name, v in per.items()}
    res.extra_ns = {name: statistics.median(v) for name, v in extra.items()}
    return res


def wrapper_in_loop(pairs: int = 100, steps: int = 20) -> dict[str, Any]:
    """The wrapper in the real loop, in one process: blocks of `train_step`s (CPU time per step)
    with the program module's `gated_mix` the bare function or the real wrapper (after its window),
    swapped between blocks (`Model.forward` looks the name up at every call), the order flipping
    every pair. Same heap, same process: only the wrapper differs."""
    import torch

    from oplens.records.run import Target
    from oplens.worker.capture import Capturer, Window

    no_target = Target(file="", qualname="trivial", first_line=0, last_line=0, source_sha256="")  # what wrapper reads

    spec = importlib.util.spec_from_file_location("bench_train_loop", ROOT / PROGRAM)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    cap = Capturer.__new__(Capturer)
    cap.windows = [Window(target=no_target, stage_dir="", done=True)]
    cap.current, cap.thread, cap.disabled = 1, None, False
    variants = {"bare": program.gated_mix, "wrapped": cap.wrapper(0, program.gated_mix)}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = program.Model()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = program.batches(16)

    def block() -> float:
        times = []
        for i in range(steps):
            x, y = data[i % len(data)]
            t0 = time.thread_time()
            program.train_step(model, opt, x, y).item()
            times.append(time.thread_time() - t0)
        return statistics.median(times) * 1e6

    for name in variants:  # warm-up
        program.gated_mix = variants[name]
        block()
    medians: dict[str, list[float]] = {name: [] for name in variants}
    for p in range(pairs):
        for name in list(variants) if p % 2 == 0 else list(variants)[::-1]:
            program.gated_mix = variants[name]
            medians[name].append(block())
    torch.set_num_threads(threads)
    ratios = [w / b for w, b in zip(medians["wrapped"], medians["bare"], strict=True)]
    return {"pairs": pairs, "steps_per_block": steps, "step_cpu_us": statistics.median(medians["bare"]),
            "ratio": summary(ratios), "ratios": ratios}  # fmt: skip


# -- output --------------------------------------------------------------------------------------


def window_cost_ms(r: Round) -> float:
    """What the steps holding the window (and the run's processing) took beyond the same steps plainly."""
    return (sum(r.run_window_steps_us) - sum(r.plain_window_steps_us)) / 1e3


def print_rounds(rounds: list[Round]) -> None:
    head = (f"{'round':>5} {'A ms':>7} {'B ms':>7} {'A2 ms':>7} {'B/A':>7} {'A2/A':>7} {'B/A turn':>8} {'B/A cpu':>8}"
            f" {'run µs':>8} {'prof µs':>8} {'run/prof':>8} {'win ms':>7} {'load':>5}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for i, r in enumerate(rounds):
        print(f"{i:>5} {r.plain_us / 1e3:>7.3f} {r.run_outside_us / 1e3:>7.3f} {r.plain_again_us / 1e3:>7.3f} "
              f"{r.outside_ratio:>7.3f} {r.aa_ratio:>7.3f} {r.outside_turn_ratio:>8.3f} {r.outside_cpu_ratio:>8.3f} "
              f"{r.run_call_us:>8.1f} {r.profile_iter_us:>8.1f} {r.window_ratio:>8.3f} {window_cost_ms(r):>7.0f} "
              f"{r.load:>5.2f}")  # fmt: skip


def fmt(s: dict[str, float]) -> str:
    return f"{s['median']:.3f}x (IQR {s['q1']:.3f}..{s['q3']:.3f}, min..max {s['min']:.3f}..{s['max']:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7, help="rounds of A, B, C, A' (default 7; at least 5)")
    parser.add_argument("--steps", type=int, default=600, help="steps of each program run (default 600)")
    parser.add_argument("--drop", type=int, default=100, help="first steps left out of the step medians (default 100)")
    parser.add_argument("--chunk", type=int, default=20, help="steps per lockstep turn (default 20)")
    parser.add_argument("--decompose", action="store_true",
                        help="2 more oplens runs a round: B/A split into worker, finished window, wrapper")  # fmt: skip
    opts = parser.parse_args()
    if opts.pairs < 2:
        parser.error("--pairs must be 2 or more")
    t0 = time.perf_counter()
    load_before = os.getloadavg()
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="oplens-capture-bench-") as tmp:
        warm = Path(tmp) / "warm.json"  # warm-up: the page cache, __pycache__ of oplens and torch
        lockstep([Lockstep(Path(tmp), "warm", [sys.executable, "-m", "oplens", "run", "--target", TARGET,
                                                "--out", str(Path(tmp) / "runs"), "--",
                                                *program_args(60, opts.chunk, warm)])])  # fmt: skip
        for r in range(opts.pairs):
            rounds.append(one_round(r, Path(tmp), opts.steps, opts.drop, opts.chunk, opts.decompose))
            print(f"round {r}: B/A {rounds[-1].outside_ratio:.3f}, run/profile {rounds[-1].window_ratio:.3f}",
                  flush=True)  # fmt: skip
    wrapper = wrapper_cost()
    in_loop = wrapper_in_loop()
    outside = summary([r.outside_ratio for r in rounds])
    outside_cpu = summary([r.outside_cpu_ratio for r in rounds])
    aa = summary([r.aa_ratio for r in rounds])
    outside_turn = summary([r.outside_turn_ratio for r in rounds])
    aa_turn = summary([r.aa_turn_ratio for r in rounds])
    aa_cpu = summary([r.aa_cpu_ratio for r in rounds])
    window = summary([r.window_ratio for r in rounds])
    step_us = statistics.median(r.plain_us for r in rounds)
    predicted = CALLS_PER_STEP * wrapper.extra_ns["real wrapper"] / 1e3 / step_us

    print()
    print_rounds(rounds)
    print(f"A, A2: python {PROGRAM}; B: under oplens run; the three in lockstep, {opts.chunk} steps a turn; "
          f"median step time after the first {opts.drop} steps (B/A: over the geometric mean of A and A2; "
          "turn: paired turn by turn; cpu: the steps' thread CPU time); win ms: the steps holding the window, "
          "processing included, beyond the same steps plainly; run/prof: per-call wall of the captured calls "
          "over oplens profile's")  # fmt: skip
    print()
    print(f"outside the window (B/A, target <= 1.02x):  {fmt(outside)}")
    print(f"A/A noise band (A2/A):                      {fmt(aa)}")
    print(f"outside, paired by turn (B/A turns):        {fmt(outside_turn)}")
    print(f"A/A paired by turn:                         {fmt(aa_turn)}")
    print(f"outside, steps' CPU time (B/A cpu):         {fmt(outside_cpu)}")
    print(f"A/A on CPU time:                            {fmt(aa_cpu)}")
    print(f"in the window vs profile (run/prof, ~1x):   {fmt(window)}")
    decomposed: dict[str, dict[str, dict[str, float]]] = {}
    if opts.decompose:
        print()
        print("decomposition (each over A and A2; D: worker, never a profiler; E: D + a window done before the loop; "
              "B: E + the wrapper in the loop):")  # fmt: skip
        for name in ("D", "E", "B"):
            decomposed[name] = {k: summary([r.decomposed[name][k] for r in rounds]) for k in ("wall", "turn", "cpu")}
            print(f"  {name}: " + "; ".join(f"{k} {fmt(v)}" for k, v in decomposed[name].items()))
    print()
    print(f"wrapper on a trivial function ({wrapper.blocks} interleaved blocks of {wrapper.calls_per_block} calls):")
    for name, ns in wrapper.ns_per_call.items():
        extra = "" if name == "bare" else f"  (+{wrapper.extra_ns[name]:.0f} ns over bare)"
        print(f"  {name:<16} {ns:>6.0f} ns/call{extra}")
    print(f"  predicted cost per step: {CALLS_PER_STEP} calls x {wrapper.extra_ns['real wrapper']:.0f} ns "
          f"over {step_us / 1e3:.2f} ms = {predicted * 100:.3f} %")  # fmt: skip
    print(f"  in the real loop, in one process ({in_loop['pairs']} pairs of {in_loop['steps_per_block']}-step blocks, "
          f"CPU time, wrapped/bare): {fmt(in_loop['ratio'])}")  # fmt: skip

    import torch

    meta = {
        "date": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpus": len(os.sched_getaffinity(0)),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "steps": opts.steps,
        "drop": opts.drop,
        "skip": SKIP,
        "calls": CALLS,
        "profiler_warmup": PROFILER_WARMUP,
        "calls_per_step": CALLS_PER_STEP,
        "chunk": opts.chunk,
        "decompose": opts.decompose,
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "capture_overhead.json"
    out.write_text(json.dumps({
        "meta": meta,
        "outside_ratio": outside,
        "aa_ratio": aa,
        "outside_turn_ratio": outside_turn,
        "aa_turn_ratio": aa_turn,
        "outside_cpu_ratio": outside_cpu,
        "aa_cpu_ratio": aa_cpu,
        "window_ratio": window,
        "decomposed": decomposed,
        "wrapper": asdict(wrapper),
        "wrapper_in_loop": in_loop,
        "predicted_outside_overhead": predicted,
        "rounds": [asdict(r) for r in rounds],
    }, indent=2))  # fmt: skip
    print(f"wrote {out.relative_to(ROOT)} ({meta['elapsed_s']} s)")


if __name__ == "__main__":
    main()
