"""Language-server targets: warm profile latency, start-up time, idle RSS, RSS growth.

Talks to a real `python -m oplens serve --stdio` over framed JSON-RPC (stdin/stdout), the way an
editor does, with VS Code-like capabilities (work-done progress, lens and hint refresh; the
server's requests for those are answered at once by the reader thread).

  1. Warm latency: `workspace/executeCommand oplens.profile {uri, qualname: "rmsnorm_naive",
     args: "make_inputs()"}` (warm-up 3, iters 20) on examples/rmsnorm.py copied into a temp
     workspace, from sending the request to receiving the `oplens/result` notification, with the
     warm worker ready (each profile uses up the warm worker and the server starts a replacement;
     before every measurement of either kind we wait until a worker child of the server is
     blocked reading its job from stdin, i.e. torch is imported). Baseline, interleaved in the
     same run: the wall time of `python script.py`, a generated hand-written script doing the
     same (import torch and the example, make_inputs(), 3 warm-ups, 20 calls under
     torch.profiler.profile(activities=[CPU], record_shapes=True), print key_averages().table()).
     Target: median ratio <= 0.5.
  2. Start-up: spawn of `python -m oplens serve --stdio --no-warm` to the `initialize` response
     (target <= 0.3 s, absolute), next to a bare interpreter start `python -c "import json"`
     (spawn to exit) and, as a diagnostic floor, `python -c "import pygls.lsp.server"` (what any
     pygls 2 server imports), rotated in order each round.
     Beside it, two diagnostics: *ready*, spawn to the answer of a first request after
     `initialized` (a method the server does not know, answered -32601 by pygls), and *first lens*,
     spawn to the answer of `textDocument/codeLens` on examples/rmsnorm.py opened right after
     `initialized` (the first real answer: the `▶ Profile` lenses an editor draws).
     `--compare-with DIR` adds a second server to the rotation, `python -m oplens` with DIR's
     `server/` first on PYTHONPATH (e.g. an older commit from `git archive`), timed the same way.
  3. Idle RSS (VmRSS of /proc/<pid>/status) of the server 0.5 s after it is ready with --no-warm
     (target <= 60 MB, absolute); with the warm worker ready, the server's own RSS and the worker's.
  4. RSS growth of the server over consecutive profiles of a tiny function (warm-up 1, iters 2):
     RSS after profile 5 (warmed) against RSS after the last (target <= 10 % after 100). Each
     profile needs a fresh worker, so before each we wait for the warm one, as in 1 (each profile
     then starts the same way; the waiting is not timed); when 100 do not fit the time budget we
     stop early, say so, and extrapolate the per-profile growth to 100.

Diagnostics beside the targets: the worker's own phase times (the `timings_ms` of the result)
next to the baseline script's, and with --with-cold a --no-warm server's profile in each
latency round. After each server exits we check that no worker it started is still alive.

Noisy shared machine: every time comes with its baseline from the same run, and the verdict on
a relative target is the ratio. Absolute targets (start-up, RSS) are reported as measured.

    .venv/bin/python bench/server.py [--rounds 3] [--starts 7] [--profiles 100] [--with-cold]
    .venv/bin/python bench/server.py --only startup [--starts 7]     # start-up and idle RSS alone, ~15 s
    .venv/bin/python bench/server.py --only startup --compare-with /tmp/before   # the same, A/B against another tree

Writes bench/results/server.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "rmsnorm.py"
RESULTS = ROOT / "bench" / "results" / "server.json"
PY = sys.executable

CAPABILITIES: dict[str, Any] = {
    "window": {"workDoneProgress": True},
    "workspace": {"codeLens": {"refreshSupport": True}, "inlayHint": {"refreshSupport": True}},
    "textDocument": {"publishDiagnostics": {}},
}
MIN_GROWTH_STEPS = 10  # profiles after the 5th below which the per-profile slope is flagged as rough
TARGETS = {"latency_ratio": 0.5, "startup_s": 0.3, "idle_rss_mb": 60.0, "growth_pct": 10.0}

BASELINE_SCRIPT = """\
import json
import time

t0 = time.perf_counter()
import torch
import rmsnorm

t1 = time.perf_counter()
args = rmsnorm.make_inputs()
for _ in range(3):
    rmsnorm.rmsnorm_naive(*args)
t2 = time.perf_counter()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
    for _ in range(20):
        rmsnorm.rmsnorm_naive(*args)
t3 = time.perf_counter()
print(prof.key_averages().table())
t4 = time.perf_counter()
laps = {"import_ms": t1 - t0, "warmup_ms": t2 - t1, "profile_ms": t3 - t2, "table_ms": t4 - t3}
print("BENCH " + json.dumps({k: v * 1000 for k, v in laps.items()}))
"""
TINY = "import torch\n\n\ndef tiny():\n    return torch.ones(8) * 2\n"

Message = tuple[float, dict[str, Any]]  # (perf_counter at receipt, message)


# ---- the wire ------------------------------------------------------------------------------


class Wire:
    """A raw LSP connection to a server subprocess; every incoming message is timestamped."""

    def __init__(self, workspace: Path, warm: bool, log: Path, server_path: Path | None = None) -> None:
        cmd = [PY, "-m", "oplens", "serve", "--stdio"] + ([] if warm else ["--no-warm"])
        self.workspace = workspace
        env = None
        if server_path is not None:  # another tree's oplens ahead of the installed one
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(server_path), os.environ.get("PYTHONPATH", "")])}
        with open(log, "ab") as err:
            self.started = time.perf_counter()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=workspace,
                                         env=env)
        self.inbox: queue.Queue[Message] = queue.Queue()
        self._lock = threading.Lock()
        self.next_id = 0
        self.workers: set[int] = set()  # warm workers seen (for the leak check at close)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if line == b"":
                return
            msg = json.loads(out.read(length))
            now = time.perf_counter()
            if "method" in msg and "id" in msg:  # a request from the server: progress/create, refreshes
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            self.inbox.put((now, msg))

    def send(self, message: dict[str, Any]) -> float:
        body = json.dumps(message).encode()
        with self._lock:
            assert self.proc.stdin is not None
            sent = time.perf_counter()
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()
        return sent

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> tuple[float, int]:
        self.next_id += 1
        return self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}), self.next_id

    def wait_for(self, match: Callable[[dict[str, Any]], bool], timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no matching message within {timeout:g} s")
            try:
                item = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if match(item[1]):
                return item

    def response(self, request_id: int, timeout: float) -> Message:
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def initialize(self, workspace: Path, timeout: float = 60) -> float:
        """initialize + initialized; returns the perf_counter time the response arrived."""
        params = {"processId": os.getpid(), "rootUri": workspace.as_uri(), "capabilities": CAPABILITIES,
                  "workspaceFolders": [{"uri": workspace.as_uri(), "name": "ws"}]}
        _, rid = self.request("initialize", params)
        at, msg = self.response(rid, timeout)
        if "result" not in msg:
            raise RuntimeError(f"initialize failed: {msg}")
        self.notify("initialized", {})
        return at

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": path.read_text()}})
        return uri

    def profile(self, arg: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
        """Run oplens.profile; times from send to the oplens/result notification and to the response."""
        sent, rid = self.request("workspace/executeCommand", {"command": "oplens.profile", "arguments": [arg]})
        note_at: float | None = None
        payload: dict[str, Any] = {}
        while True:
            at, msg = self.wait_for(lambda m: m.get("method") == "oplens/result" or m.get("id") == rid, timeout)
            if msg.get("method") == "oplens/result":
                note_at, payload = at, msg["params"]
                continue
            if "error" in msg:
                raise RuntimeError(f"profile failed: {msg['error'].get('message')}")
            break
        if note_at is None:
            raise RuntimeError("the response came without an oplens/result notification before it")
        return {"to_result_s": note_at - sent, "to_response_s": at - sent,
                "timings_ms": payload.get("run", {}).get("timings_ms", {})}

    def close(self) -> list[int]:
        """shutdown + exit (kill after 10 s); returns the warm workers seen that outlived the server."""
        try:
            _, rid = self.request("shutdown", None)
            self.response(rid, 10)
            self.notify("exit", None)
            self.proc.wait(10)
        except (TimeoutError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        if self.workers:
            time.sleep(0.5)
        return sorted(p for p in self.workers if is_worker(p))


# ---- /proc ---------------------------------------------------------------------------------


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def worker_children(pid: int) -> list[int]:
    """The server's worker processes (`python -m oplens.worker FD`)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
                continue
            if b"oplens.worker" in Path(f"/proc/{entry.name}/cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def blocked_on_stdin(pid: int) -> bool:
    """True when the process's main thread sits in read(0, ...): the worker said "ready" and waits for a job."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and fields[1] == "0x0"  # x86_64: syscall 0 is read


def wait_warm(wire: Wire, timeout: float = 120) -> tuple[int, float]:
    """Wait until the server has a ready warm worker; returns (worker pid, seconds waited)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        ready = [p for p in worker_children(wire.proc.pid) if blocked_on_stdin(p)]
        if ready:
            wire.workers.update(ready)
            return ready[0], time.perf_counter() - t0
        time.sleep(0.05)
    raise TimeoutError(f"no warm worker became ready within {timeout:g} s")


def is_worker(pid: int) -> bool:
    try:
        return b"oplens.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


# ---- helpers -------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def timed_run(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds from spawn to exit, and the stdout."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} exited {done.returncode}")
    return elapsed, done.stdout


def script_laps(stdout: str) -> dict[str, float]:
    """The baseline script's own phase times (its last line: BENCH {...})."""
    last = stdout.rstrip().rsplit("\n", 1)[-1]
    if not last.startswith("BENCH ") or "Self CPU" not in stdout:
        raise RuntimeError("the baseline script did not print its table and timings")
    return dict(json.loads(last[6:]))


def laps_median(laps: list[dict[str, float]]) -> dict[str, float]:
    return {k: median([lap.get(k, 0.0) for lap in laps]) for k in laps[0]} if laps else {}


def make_workspace(base: Path, name: str) -> Path:
    ws = base / name
    ws.mkdir()
    shutil.copy(EXAMPLE, ws / "rmsnorm.py")
    (ws / "script.py").write_text(BASELINE_SCRIPT)
    (ws / "tiny.py").write_text(TINY)
    return ws


# ---- 1. warm latency (and 3b. RSS with the warm worker) ----------------------------------


def bench_latency(base: Path, rounds: int, log: Path, cold: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Warm-server profiles and baseline-script runs, interleaved (and --no-warm profiles with `cold`)."""
    ws = make_workspace(base, "latency")
    wire = Wire(ws, warm=True, log=log)
    cold_wire = Wire(make_workspace(base, "cold"), warm=False, log=log) if cold else None
    samples: dict[str, list[Any]] = {"server": [], "script": [], "cold": []}
    waits: list[float] = []
    try:
        wire.initialize(ws)
        if cold_wire is not None:
            cold_wire.initialize(cold_wire.workspace)
        uri = wire.open(ws / "rmsnorm.py")
        worker, first_ready_s = wait_warm(wire)
        time.sleep(1.0)  # let the server and the worker settle before reading RSS
        warm_rss: dict[str, Any] = {"server_kb": rss_kb(wire.proc.pid), "worker_kb": rss_kb(worker),
                                    "worker_ready_after_init_s": first_ready_s}
        arg = {"uri": uri, "qualname": "rmsnorm_naive", "args": "make_inputs()", "warmup": 3, "iters": 20}
        cold_arg = {**arg, "uri": cold_wire.open(cold_wire.workspace / "rmsnorm.py")} if cold_wire else {}
        first = wire.profile(arg)  # unmeasured: the server's first profile, and the page cache for both
        wait_warm(wire)
        run_script(ws)
        kinds = ["server", "script"] + (["cold"] if cold_wire else [])
        for i in range(rounds):
            for kind in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:  # rotate the order each round
                waits.append(wait_warm(wire)[1])  # no torch import running while we measure
                if kind == "server":
                    samples[kind].append(wire.profile(arg))
                elif kind == "script":
                    samples[kind].append(run_script(ws))
                elif cold_wire is not None:
                    samples[kind].append(cold_wire.profile(cold_arg))
        wait_warm(wire)
        warm_rss["server_after_latency_kb"] = rss_kb(wire.proc.pid)
    finally:
        leftover = wire.close()
        if cold_wire is not None:
            cold_wire.close()
    warm_rss["workers_left_after_exit"] = leftover
    result = latency_summary(samples["server"], samples["script"], first, waits)
    if samples["cold"]:
        result["cold"] = cold_summary(samples["cold"], result)
    return result, warm_rss


def cold_summary(cold: list[dict[str, Any]], warm: dict[str, Any]) -> dict[str, Any]:
    """A --no-warm server: the profile pays the torch import, but nothing imports beside the job."""
    to_result = [c["to_result_s"] for c in cold]
    laps = laps_median([c["timings_ms"] for c in cold])
    return {
        "to_result_s": to_result,
        "median_s": median(to_result),
        "ratio_to_script": median(to_result) / warm["median_script_s"],
        "ratio_warm_to_cold": warm["median_server_s"] / median(to_result),
        "worker_laps_ms_median": laps,
        "profile_phase_ratio_to_script": laps.get("profile_ms", 0.0) / warm["script_laps_ms_median"]["profile_ms"],
    }


def run_script(ws: Path) -> tuple[float, dict[str, float]]:
    elapsed, out = timed_run([PY, "script.py"], ws)
    return elapsed, script_laps(out)


def latency_summary(
    server: list[dict[str, Any]], script: list[tuple[float, dict[str, float]]], first: dict[str, Any], waits: list[float]
) -> dict[str, Any]:
    to_result = [s["to_result_s"] for s in server]
    wall = [s[0] for s in script]
    worker_laps = laps_median([s["timings_ms"] for s in server])
    script_phase = laps_median([s[1] for s in script])
    result = {
        "rounds": len(server),
        "server_to_result_s": to_result,
        "server_to_response_s": [s["to_response_s"] for s in server],
        "script_s": wall,
        "median_server_s": median(to_result),
        "median_script_s": median(wall),
        "ratio": median(to_result) / median(wall),
        "per_round_ratios": [a / b for a, b in zip(to_result, wall, strict=True)],
        "first_profile_s": first["to_result_s"],
        "worker_laps_ms_median": worker_laps,
        "script_laps_ms_median": script_phase,
        "profile_phase_ratio": worker_laps.get("profile_ms", 0.0) / script_phase["profile_ms"] if script_phase else 0.0,
        "waits_for_warm_worker_s": waits,
        "target_ratio": TARGETS["latency_ratio"],
    }
    result["meets_target"] = result["ratio"] <= TARGETS["latency_ratio"]
    return result


# ---- 2. start-up (and 3a. idle RSS without the warm worker) -------------------------------

BARE = ["-c", "import json"]
FLOOR = ["-c", "import pygls.lsp.server"]  # what any pygls 2 server imports (lsprotocol.types, cattrs)


def one_start(ws: Path, log: Path, server_path: Path | None = None) -> tuple[float, float, float, int]:
    """Seconds from spawn to the initialize response, to the answer of a first request after it
    (the whole server is up) and to the first code lenses of a file opened then; and the idle RSS
    (kB) 0.5 s after that."""
    wire = Wire(ws, warm=False, log=log, server_path=server_path)
    try:
        at = wire.initialize(ws)
        _, rid = wire.request("oplens/bench.ready", {})  # unknown: answered -32601 once pygls handles requests
        uri = wire.open(ws / "rmsnorm.py")
        _, lens_id = wire.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        ready, _ = wire.response(rid, 60)
        lens_at, lenses = wire.response(lens_id, 60)
        if not lenses.get("result"):
            raise RuntimeError(f"no code lenses: {lenses}")
        time.sleep(0.5)
        return at - wire.started, ready - wire.started, lens_at - wire.started, rss_kb(wire.proc.pid)
    finally:
        wire.close()


def bench_startup(base: Path, starts: int, log: Path, compare_with: Path | None = None) -> dict[str, Any]:
    ws = make_workspace(base, "startup")
    one_start(ws, log)  # unmeasured: page cache, .oplens/runs created
    if compare_with is not None:
        one_start(ws, log, compare_with)
    timed_run([PY, *FLOOR], ws)
    servers = {"server": None} | ({"other": compare_with} if compare_with is not None else {})
    times: dict[str, list[float]] = {kind: [] for kind in [*servers, "bare", "floor"]}
    ready: dict[str, list[float]] = {kind: [] for kind in servers}
    lens: dict[str, list[float]] = {kind: [] for kind in servers}
    rss: dict[str, list[int]] = {kind: [] for kind in servers}
    order = list(times)
    for i in range(starts):
        for kind in order[i % len(order):] + order[:i % len(order)]:  # rotate the order each round
            if kind in servers:
                elapsed, up, first_lens, kb = one_start(ws, log, servers[kind])
                ready[kind].append(up)
                lens[kind].append(first_lens)
                rss[kind].append(kb)
            else:
                elapsed = timed_run([PY, *(BARE if kind == "bare" else FLOOR)], ws)[0]
            times[kind].append(elapsed)
    med = {k: median(v) for k, v in times.items()}
    result: dict[str, Any] = {
        "starts": starts,
        "server_to_initialize_s": times["server"],
        "server_to_ready_s": ready["server"],
        "server_to_first_lens_s": lens["server"],
        "bare_interpreter_s": times["bare"],
        "pygls_import_floor_s": times["floor"],
        "median_server_s": med["server"],
        "median_ready_s": median(ready["server"]),
        "median_first_lens_s": median(lens["server"]),
        "median_bare_s": med["bare"],
        "median_floor_s": med["floor"],
        "ratio_to_bare": med["server"] / med["bare"],
        "ratio_to_floor": med["server"] / med["floor"],
        "target_s": TARGETS["startup_s"],
        "idle_rss_no_warm_kb": rss["server"],
        "median_idle_rss_no_warm_mb": median(rss["server"]) / 1024,
        "target_idle_rss_mb": TARGETS["idle_rss_mb"],
    }
    if compare_with is not None:
        result["other"] = {
            "server_path": str(compare_with),
            "server_to_initialize_s": times["other"],
            "server_to_ready_s": ready["other"],
            "server_to_first_lens_s": lens["other"],
            "idle_rss_no_warm_kb": rss["other"],
            "median_server_s": med["other"],
            "median_ready_s": median(ready["other"]),
            "median_first_lens_s": median(lens["other"]),
            "median_idle_rss_no_warm_mb": median(rss["other"]) / 1024,
        }
    result["meets_target"] = result["median_server_s"] <= TARGETS["startup_s"]
    result["rss_meets_target"] = result["median_idle_rss_no_warm_mb"] <= TARGETS["idle_rss_mb"]
    return result


# ---- 4. RSS growth -------------------------------------------------------------------------


def bench_growth(base: Path, profiles: int, budget_s: float, log: Path) -> dict[str, Any]:
    """Consecutive profiles of tiny(), each started with a ready warm worker; server RSS after each."""
    ws = make_workspace(base, "growth")
    wire = Wire(ws, warm=True, log=log)
    series: list[int] = []
    durations: list[float] = []
    try:
        wire.initialize(ws)
        uri = wire.open(ws / "tiny.py")
        arg = {"uri": uri, "qualname": "tiny", "args": "", "warmup": 1, "iters": 2}
        t0 = time.perf_counter()
        while len(series) < profiles:
            wait_warm(wire)
            durations.append(wire.profile(arg)["to_response_s"])
            series.append(rss_kb(wire.proc.pid))
            if len(series) > 5 and time.perf_counter() - t0 > budget_s:
                break
        elapsed = time.perf_counter() - t0
    finally:
        leftover = wire.close()
    result = growth_summary(series, durations, profiles, elapsed)
    result["workers_left_after_exit"] = leftover
    return result


def growth_slope(rss: list[int]) -> float:
    """kB per profile: the least-squares slope of RSS over the profile number (less noisy than two ends)."""
    return statistics.linear_regression(range(len(rss)), rss).slope


def growth_summary(series: list[int], durations: list[float], wanted: int, elapsed: float) -> dict[str, Any]:
    done = len(series)
    base_kb, last_kb = series[min(4, done - 1)], series[-1]
    per_profile = growth_slope(series[4:]) if done >= 7 else (last_kb - base_kb) / max(done - 5, 1)
    result: dict[str, Any] = {
        "profiles_wanted": wanted,
        "profiles_done": done,
        "stopped_early": done < wanted,
        "elapsed_s": elapsed,
        "median_profile_s": median(durations),
        "rss_after_5_kb": base_kb,
        "rss_after_last_kb": last_kb,
        "growth_pct": 100.0 * (last_kb - base_kb) / base_kb,
        "growth_per_profile_kb": per_profile,  # least-squares slope over profiles 5..last
        "few_points": done - 5 < MIN_GROWTH_STEPS,
        "extrapolated_growth_pct_at_100": 100.0 * per_profile * 95 / base_kb,
        "rss_series_kb": series,
        "target_pct": TARGETS["growth_pct"],
    }
    result["meets_target"] = max(result["growth_pct"], result["extrapolated_growth_pct_at_100"]) <= TARGETS["growth_pct"]
    return result


# ---- report --------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def startup_rows(start: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        ("start-up (spawn -> initialize response)", f"{start['median_server_s']:.3f} s",
         f"bare {start['median_bare_s']:.3f} s", f"{start['ratio_to_bare']:.1f}", "<= 0.3 s (abs.)",
         verdict(start["meets_target"])),
        ("  ready (spawn -> answer to a first request)", f"{start['median_ready_s']:.3f} s", "", "", "(diagnostic)", ""),
        ("  first lens (spawn -> codeLens answer)", f"{start['median_first_lens_s']:.3f} s", "", "", "(diagnostic)", ""),
        ("  vs. importing pygls.lsp.server alone", "", f"floor {start['median_floor_s']:.3f} s",
         f"{start['ratio_to_floor']:.2f}", "(diagnostic)", ""),
        ("idle RSS, --no-warm", f"{start['median_idle_rss_no_warm_mb']:.1f} MB", "", "", "<= 60 MB (abs.)",
         verdict(start["rss_meets_target"])),
        *other_rows(start),
    ]


def other_rows(start: dict[str, Any]) -> list[tuple[str, ...]]:
    """The --compare-with server's figures from the same rounds."""
    other = start.get("other")
    if not other:
        return []
    return [
        (f"--compare-with {other['server_path']}:", "", "", "", "", ""),
        ("  start-up (spawn -> initialize response)", f"{other['median_server_s']:.3f} s", "", "", "", ""),
        ("  ready (spawn -> answer to a first request)", f"{other['median_ready_s']:.3f} s", "", "", "", ""),
        ("  first lens (spawn -> codeLens answer)", f"{other['median_first_lens_s']:.3f} s", "", "", "", ""),
        ("  idle RSS, --no-warm", f"{other['median_idle_rss_no_warm_mb']:.1f} MB", "", "", "", ""),
    ]


def render_rows(rows: list[tuple[str, ...]]) -> str:
    head = ("measure", "OpLens", "baseline", "ratio", "target", "")
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    return "\n".join(lines)


def table(res: dict[str, Any]) -> str:
    lat, start, rss, gro = res["latency"], res["startup"], res["warm_rss"], res["growth"]
    script_profile, worker_profile = lat["script_laps_ms_median"]["profile_ms"], lat["worker_laps_ms_median"]["profile_ms"]
    rows = [
        ("warm profile latency (send -> oplens/result)", f"{lat['median_server_s']:.2f} s",
         f"script {lat['median_script_s']:.2f} s", f"{lat['ratio']:.3f}", "ratio <= 0.5", verdict(lat["meets_target"])),
        ("  of which the 20 profiled iterations", f"{worker_profile / 1000:.2f} s",
         f"script {script_profile / 1000:.2f} s", f"{lat['profile_phase_ratio']:.2f}", "(diagnostic)", ""),
        *startup_rows(start),
        ("idle RSS, warm: server process", f"{rss['server_kb'] / 1024:.1f} MB", "", "", "", ""),
        ("idle RSS, warm: worker process", f"{rss['worker_kb'] / 1024:.1f} MB", "", "", "", ""),
        (f"server RSS growth, profile 5 -> {gro['profiles_done']}", f"{gro['growth_pct']:+.2f} %",
         f"{gro['growth_per_profile_kb']:+.1f} kB/profile", f"@100: {gro['extrapolated_growth_pct_at_100']:+.2f} %",
         "<= 10 %", verdict(gro["meets_target"]) + (" (rough)" if gro["few_points"] else "")),
    ]
    if "cold" in lat:
        cold = lat["cold"]
        rows[2:2] = [  # after the latency rows
            ("  --no-warm server, same profile (cold)", f"{cold['median_s']:.2f} s", f"script {lat['median_script_s']:.2f} s",
             f"{cold['ratio_to_script']:.2f}", "(diagnostic)", ""),
            ("    its 20 profiled iterations", f"{cold['worker_laps_ms_median']['profile_ms'] / 1000:.2f} s",
             f"script {script_profile / 1000:.2f} s", f"{cold['profile_phase_ratio_to_script']:.2f}", "(diagnostic)", ""),
        ]
    return render_rows(rows)


def notes(res: dict[str, Any], budget_s: float) -> list[str]:
    found = []
    g = res["growth"]
    if g["stopped_early"]:
        found.append(f"growth stopped after {g['profiles_done']} of {g['profiles_wanted']} profiles (budget {budget_s:g} s, "
                     f"{g['median_profile_s']:.2f} s each plus the wait for the next warm worker); @100 is extrapolated")
    if g["few_points"]:
        found.append(f"only {g['profiles_done'] - 5} profiles after the 5th (< {MIN_GROWTH_STEPS}): the per-profile growth "
                     "and its extrapolation are rough; raise --growth-budget-s / --total-budget-s")
    left = res["warm_rss"]["workers_left_after_exit"] + g["workers_left_after_exit"]
    if left:
        found.append(f"worker processes still alive after the server exited: {left}")
    before, after = res["machine_before"]["loadavg"], res["machine_after"]["loadavg"]
    found.append(f"load average {before[0]:.2f} before, {after[0]:.2f} after; total {res['total_s']:.0f} s")
    return found


def machine() -> dict[str, Any]:
    versions = {name: metadata.version(name) for name in ("torch", "pygls", "lsprotocol")}
    return {"python": platform.python_version(), **versions, "nproc": os.cpu_count(), "loadavg": os.getloadavg(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--rounds", type=int, default=3, help="interleaved latency rounds (server profile + script each)")
    p.add_argument("--starts", type=int, default=7, help="interleaved start-ups (server + bare interpreter each)")
    p.add_argument("--profiles", type=int, default=100, help="profiles for the RSS growth measure")
    p.add_argument("--growth-budget-s", type=float, default=170.0, help="stop the growth measure after this long")
    p.add_argument("--total-budget-s", type=float, default=285.0,
                   help="the growth measure also stops when the whole run reaches this (it gets at least 60 s)")
    p.add_argument("--with-cold", action="store_true",
                   help="also time a --no-warm server's profile in each latency round (diagnostic, ~+10 s a round)")
    p.add_argument("--only", choices=["startup"],
                   help="run one part alone: start-up and idle RSS (--out defaults to bench/results/server-startup.json)")
    p.add_argument("--compare-with", type=Path, metavar="DIR",
                   help="also time, in the same start-up rounds, the server of another tree (DIR/server on PYTHONPATH)")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.only == "startup" and args.out == RESULTS:
        args.out = RESULTS.with_name("server-startup.json")

    t0 = time.perf_counter()
    res: dict[str, Any] = {"machine_before": machine()}
    with tempfile.TemporaryDirectory(prefix="oplens-bench-server-") as tmp:
        base = Path(tmp)
        log = base / "server-stderr.log"
        other = (args.compare_with / "server").resolve() if args.compare_with else None
        res["startup"] = bench_startup(base, args.starts, log, other)
        print(f"start-up done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        if args.only == "startup":
            return startup_only(res, log, args.out, t0)
        res["latency"], res["warm_rss"] = bench_latency(base, args.rounds, log, args.with_cold)
        print(f"latency done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        budget = min(args.growth_budget_s, max(60.0, args.total_budget_s - (time.perf_counter() - t0)))
        res["growth"] = bench_growth(base, args.profiles, budget, log)
        res["growth"]["budget_s"] = budget
        res["server_stderr"] = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    res["machine_after"] = machine()
    res["total_s"] = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1))
    print(table(res))
    for line in notes(res, res["growth"]["budget_s"]):
        print("note: " + line)
    print(f"wrote {args.out}")
    return 0


def startup_only(res: dict[str, Any], log: Path, out: Path, t0: float) -> int:
    res["server_stderr"] = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    res["machine_after"] = machine()
    res["total_s"] = time.perf_counter() - t0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(render_rows(startup_rows(res["startup"])))
    before, after = res["machine_before"]["loadavg"], res["machine_after"]["loadavg"]
    print(f"note: load average {before[0]:.2f} before, {after[0]:.2f} after; total {res['total_s']:.0f} s")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
