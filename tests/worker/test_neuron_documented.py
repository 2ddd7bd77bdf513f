"""Neuron 2.33 as documented (issue 33, parts 1-3), against STAND-INS (tests/standins/) that know only the
documented surface: TorchNeuron's `NeuronConfig(modes, capture_enabled_for_nc, profile_output_dir, max_events_per_nc,
neff_cache_dir, precache_node_info)` of how-to-profile-pytorch.rst (STANDIN_API=documented: no correlate_device_time),
and a `neuron-explorer` that knows only the documented verbs and flags (STANDIN_EXPLORER_DOCUMENTED_ONLY=1: no
`upload`, no --ignore-instruction/dma/event-trace; each flag's page is cited in the stand-in). Every test here runs
on faked vendor tools, and says so in its name ("stand_in")."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from support.cli import oplens_cli
from support.neuron import NAIVE_KNOWN, NAIVE_PER_LINE, NAIVE_TARGET, profile_on_stand_ins, write_stand_in_explorer
from support.paths import STANDINS

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron

FAST = ["--warmup", "1", "--iters", "3"]
DOCUMENTED = {"STANDIN_API": "documented", "STANDIN_EXPLORER_DOCUMENTED_ONLY": "1"}


def profile(tmp_path: Path, *extra: str, expect: int = 0, **env: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    return profile_on_stand_ins(tmp_path, NAIVE_TARGET, "rmsnorm.py::rmsnorm_naive", *FAST, *extra, expect=expect,
                                **{"STANDIN_EXEC_US": NAIVE_KNOWN, **DOCUMENTED, **env})  # fmt: skip


def per_line(run: dict[str, Any]) -> dict[int, float]:
    return {s["line"]: s["self_device_us"] for s in run["lines"] if s["self_device_us"]}


def test_the_documented_api_on_stand_ins_gives_the_known_lines_with_no_device_time_warning(tmp_path: Path) -> None:
    """Part 1 and 2: the documented NeuronConfig (no correlate_device_time) and a documented-only neuron-explorer
    that refuses Tilebench's ignore flags: the ingest falls back to the documented flags, says so, and every line's
    Self NEURON is the known executions'; no warning about correlate_device_time."""
    run, _ = profile(tmp_path)
    backend = run["backend"]
    assert backend["details"]["api"] == "neuron-config"
    assert set(backend["details"]["neuron_config"]) >= {"modes", "profile_output_dir"}
    assert not any("correlate_device_time" in w or "only from the device trace" in w for w in backend["warnings"])
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)
    dt = run["device_time"]
    assert dt["source"] == "system_trace"
    found = dt["found"]["system_trace"]
    assert "with the documented flags only (--ignore-device-profile)" in found, found
    assert "Tilebench's flags (undocumented)" in found and "unknown flag: --ignore-instruction-trace" in found, found
    record = json.loads((Path(run["run_dir"]) / "neuron_system_trace" / "ingest.json").read_text())
    assert record["documented"] is True and record["flags"] == ["--ignore-device-profile"]


def test_a_stand_in_explorer_that_takes_tilebench_s_flags_is_used_with_them_first(tmp_path: Path) -> None:
    run, _ = profile(tmp_path, STANDIN_EXPLORER_DOCUMENTED_ONLY="0")
    found = run["device_time"]["found"]["system_trace"]
    assert "with Tilebench's flags (undocumented) (--ignore-instruction-trace" in found and " after " not in found, found
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)


# --------------------------------------------------------------------------- part 2: never a silent zero


def test_with_device_time_nowhere_the_stand_in_run_exits_5_naming_each_source_and_the_fix(tmp_path: Path) -> None:
    """The system trace's table lacks end_ts (a renamed column): no execution is timed, no other source holds device
    time; `--backend neuron` prints the run and exits 5 with the sources tried and the fix, never 0 µs with exit 0."""
    run, proc = profile(tmp_path, expect=5, STANDIN_SYSTRACE_DROP="end_ts")
    assert run["device_time"]["source"] == "none"
    assert "system_trace" not in run["device_time"]["totals_us"]  # no 0 µs figure from a column that is not there
    assert "no Self NEURON time from any source" in proc.stderr
    assert "has no column end_ts" in proc.stderr and "profile schema 7.4.0" in proc.stderr, proc.stderr
    assert "kineto_linked" in proc.stderr and "Fix:" in proc.stderr


# --------------------------------------------------------------------------- part 3: schema versions


def test_stand_in_tables_of_schema_12_are_read_and_the_version_recorded(tmp_path: Path) -> None:
    run, _ = profile(tmp_path, STANDIN_SCHEMA_VERSION="12.0.1")
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)
    assert "(profile schema 12.0.1)" in run["device_time"]["found"]["system_trace"]
    assert not any("profile schema" in w for w in run["backend"]["warnings"])


def test_a_stand_in_schema_major_oplens_does_not_know_is_named_in_the_run(tmp_path: Path) -> None:
    run, _ = profile(tmp_path, STANDIN_SCHEMA_VERSION="99.1.0")
    warned = [w for w in run["backend"]["warnings"] if "profile schema 99.1.0" in w]
    assert warned and "major 99 is not one OpLens knows (7.x, 12.x)" in warned[0], run["backend"]["warnings"]
    assert per_line(run) == pytest.approx(NAIVE_PER_LINE, rel=0.01)  # the columns it reads are there: read


def test_a_missing_column_is_a_named_warning_and_no_zero(tmp_path: Path) -> None:
    """Tables written by hand (a stand-in of a processed profile of schema 12.0.1 whose Summary lacks the percent
    columns and whose DmaPacket lacks end_ts): the schema names each, and the engine breakdown holds no DMA and no
    engine figure computed from them."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from oplens.backends.neuron import engines, schema

    folder = tmp_path / "p"
    folder.mkdir()
    pq.write_table(pa.table({"profile_schema_version": ["12.0.1"]}), folder / "Metadata.parquet")
    pq.write_table(pa.table({"total_time": [0.002], "tensor_engine_active_time": [0.001]}), folder / "Summary.parquet")
    pq.write_table(pa.table({"start_ts": [1, 5]}), folder / "DmaPacket.parquet")
    said = schema.warnings(folder)
    assert any("profile schema 12.0.1: table DmaPacket has no column end_ts" in w for w in said), said
    graphs, why = engines.read_graphs(folder)
    assert not why and len(graphs) == 1 and graphs[0].device_us == pytest.approx(2000.0)
    assert graphs[0].engines == []  # the Tensor engine's percent is absent: no 0 % figure made up for it
    cols = engines.read_table(folder, "DmaPacket", ["start_ts", "end_ts"])
    assert cols is not None and cols.missing == ["end_ts"]


# --------------------------------------------------------------------------- part 2: oplens explorer, documented only


def two_rank_output(root: Path) -> Path:
    """A profile output of two processes (ranks 0 and 1), each a system profile, as the runtime lays it out
    (how-to-profile-pytorch.rst's multi-rank capture: one `<instance>_pid_<pid>/<ts>/` per process)."""
    for rank, pid in ((0, 4242), (1, 4243)):
        session = root / f"i-0abc_pid_{pid}" / "1778711290599971590"
        session.mkdir(parents=True)
        (session / "trace_info.pb").write_bytes(b"t")
        (session / "ntrace.pb").write_bytes(b"n")
        (session / f"neuron_framework_trace_rank_{rank}.json").write_text('{"traceEvents": []}')
    return root


def test_stand_in_explorer_without_upload_registers_every_rank_by_the_documented_ingest_into_the_viewer_s_data_path(
    tmp_path: Path, ports: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A viewer already serves on its own data path (started by the user: here by the test, with the stand-in that
    takes --api-port); OpLens's neuron-explorer knows only the documented verbs: `upload` fails, so each rank's
    profile is ingested with `view -d SESSION --ingest-only --data-path <that viewer's data path> --display-name N`,
    named by rank, and the viewer lists both."""
    from oplens.backends.neuron import explorer
    from support.processes import stop_group

    ui, api = ports
    exe = write_stand_in_explorer(tmp_path / "bin")
    record = tmp_path / "calls.jsonl"
    viewer_data = (tmp_path / "users-viewer-data").resolve()
    env = {**os.environ, "STANDIN_EXPLORER_RECORD": str(record)}
    env.pop("STANDIN_EXPLORER_DOCUMENTED_ONLY", None)
    viewer = subprocess.Popen([str(exe), "view", "--data-path", str(viewer_data), "--port", str(ui), "--api-port", str(api)],
                              env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not (explorer.listening(ui) and explorer.listening(api)) and time.monotonic() < deadline:
            time.sleep(0.1)
        monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("STANDIN_EXPLORER_RECORD", str(record))
        monkeypatch.setenv("STANDIN_EXPLORER_DOCUMENTED_ONLY", "1")
        monkeypatch.setattr(explorer, "NEURON_BIN", tmp_path / "no-neuron-bin")
        source = explorer.directory_source(two_rank_output(tmp_path / "profile_output"))
        link = explorer.open_in_explorer(source, tmp_path, ui, api, start_timeout_s=20, state_dir=tmp_path / "state")
        assert link.viewer == "already serving"
        said = "\n".join(link.messages)
        assert "upload failed" in said and "unknown command" in said and str(viewer_data) in said, said
        ingests = [c for c in link.commands if "--ingest-only" in c]
        assert len(ingests) == 2 and all(c[c.index("--data-path") + 1] == str(viewer_data) for c in ingests)
        names = [link.display_name] + [r["name"] for r in link.registered]
        assert names == ["profile_output", "profile_output-rank1"], names
        for name in names:
            assert (viewer_data / "profiles" / "global" / f"{name}@latest").is_dir()
            with urllib.request.urlopen(f"http://localhost:{ui}/profile/{name}", timeout=10) as page:
                assert page.status == 200
    finally:
        stop_group(viewer.pid)


# --------------------------------------------------------------------------- the doctor on the documented surface


def test_doctor_is_ok_with_no_false_warning_on_the_documented_only_stand_ins(tmp_path: Path) -> None:
    """`oplens doctor --backend neuron` on a host whose TorchNeuron offers only the documented NeuronConfig (no
    correlate_device_time) and whose neuron-explorer knows only the documented verbs and flags: every check is ok
    (nothing the stand-ins' surface lacks is a warning), the tiny profile's Self NEURON comes from the system trace,
    and the doctor exits 0."""
    from support.neuron import PROBE_EXEC, calibrated

    known = ",".join(f"{k}={v:g}" for k, v in PROBE_EXEC.items())
    path = f"{write_stand_in_explorer(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}"
    env = {"PYTHONPATH": str(STANDINS), "PATH": path, "STANDIN_TENSORS": "device", "OPLENS_CACHE_DIR": calibrated(tmp_path),
           "STANDIN_EXEC_US": known, **DOCUMENTED}  # fmt: skip
    proc = oplens_cli(tmp_path, "doctor", "--backend", "neuron", "--json", "-", timeout=300, **env)
    report = json.loads(proc.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert proc.returncode == 0, (proc.stderr, checks)
    # the viewer ports are this machine's (another test's viewer may hold them): every other check is ok
    flagged = {n: (c["status"], c["detail"]) for n, c in checks.items()
               if c["status"] != "ok" and not n.startswith("viewer ports")}  # fmt: skip
    assert flagged == {}, flagged
    assert {"NeuronConfig", "tiny profile", "device time sources", "neuron-explorer"} <= set(checks)
    total = sum(PROBE_EXEC.values())
    assert f"system_trace (used): {total:.1f} µs per iteration" in checks["device time sources"]["detail"]
