"""Every documented Neuron profile layout is found, listed and planned by `oplens explorer DIR
--dry-run --json` (which launches nothing). The trees are built as the AWS Neuron docs print them
(aws-neuron-sdk, tools/neuron-explorer/how-to-profile-workload.rst, troubleshooting.rst,
tools/tutorials/performance-profiling-vllm.rst); no vendor tool runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import STANDINS


def tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def plan(cwd: Path, target: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PATH"] = "/usr/bin:/bin"  # no neuron-explorer: a plan needs none
    proc = subprocess.run([sys.executable, "-m", "oplens", "explorer", str(target), "--dry-run", "--json", "-", *extra],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    return proc.returncode, (json.loads(proc.stdout) if proc.returncode == 0 else {}), proc.stderr


def test_the_expected_output_of_a_pytorch_capture(tmp_path: Path) -> None:
    """how-to-profile-workload.rst, "Expected output":

    ./profile_output/
    ├── <instance-id>_pid_<pid_0>/
    │   └── <timestamp>/
    │       ├── cpu_util.pb, host_mem.pb, neff_<hash_0>_vnc_0.neff, neff_<hash_1>_vnc_0.neff, ntrace.pb,
    │       ├── profile_nc_0_session_0.ntff, trace.json, trace_info.pb
    └── <instance-id>_pid_<pid_1>/
        └── ...                             # Same structure per rank
    """
    out = tmp_path / "profile_output"
    for pid in (101, 202):
        base = f"i-0abc_pid_{pid}/20260101T000000/"
        names = ("cpu_util.pb", "host_mem.pb", "neff_111_vnc_0.neff", "neff_222_vnc_0.neff",
                 "ntrace.pb", "profile_nc_0_session_0.ntff", "trace.json", "trace_info.pb")  # fmt: skip
        tree(out, {base + n: b"x" for n in names})
    code, p, err = plan(tmp_path, out)
    assert code == 0, err
    assert [(Path(x["dir"]).parent.name, x["kind"], len(x["neff"]), len(x["ntff"])) for x in p["profiles"]] == [
        ("i-0abc_pid_101", "system", 2, 1), ("i-0abc_pid_202", "system", 2, 1)]  # fmt: skip
    viewer, upload = p["commands"]  # registered with the viewer as trn2 users do (`neuron-explorer upload`)
    data = p["data_path"]
    assert Path(data).is_absolute() and viewer[1:] == ["view", "--data-path", data]
    assert upload[1:] == ["upload", "--endpoint", "http://localhost:3002", "--profile-directory",
                          str(out.resolve() / "i-0abc_pid_101/20260101T000000"), "--name", "profile_output",
                          "--overwrite", "--wait", "--source-code", str(tmp_path.resolve())]  # fmt: skip
    assert p["url"] == "http://localhost:3001/profile/profile_output"
    assert p["tunnel"].startswith("ssh -L 3001:localhost:3001 -L 3002:localhost:3002 ")
    assert not Path(data).exists()  # a dry run creates nothing


def test_the_inspect_output_pairs_by_hash(tmp_path: Path) -> None:
    """how-to-profile-workload.rst, "neuron-explorer inspect output example":

    inspect-output-nccom-test
    ├── i-012590440bb9fd263_pid_98399
    │   ├── 14382885777943380728_instid_0_vnc_0.ntff ... _vnc_11.ntff
    │   ├── cpu_util.pb, host_mem.pb, neff_14382885777943380728.neff, ntrace.pb, trace_info.pb
    """
    h = "14382885777943380728"
    files = {f"i-012590440bb9fd263_pid_98399/{h}_instid_0_vnc_{n}.ntff": b"t" * 10 for n in range(12)}
    others = ("cpu_util.pb", "host_mem.pb", f"neff_{h}.neff", "ntrace.pb", "trace_info.pb")
    files |= {f"i-012590440bb9fd263_pid_98399/{n}": b"x" for n in others}
    out = tree(tmp_path / "inspect-output-nccom-test", files)
    code, p, err = plan(tmp_path, out)
    assert code == 0, err
    (profile,) = p["profiles"]
    assert profile["kind"] == "system" and len(profile["ntff"]) == 12 and Path(profile["neff"][0]).name == f"neff_{h}.neff"
    assert p["commands"][1][4:6] == ["--profile-directory", str(out.resolve() / "i-012590440bb9fd263_pid_98399")]
    # without the system profile, the same device traces open by their pair (and --pair picks one)
    for pb in ("ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb"):
        (out / "i-012590440bb9fd263_pid_98399" / pb).unlink()
    code, p, err = plan(tmp_path, out, "--pair", h[:6])
    assert code == 0, err
    args = p["commands"][1]
    assert args[4] == "--neff" and Path(args[5]).name == f"neff_{h}.neff" and args[6] == "--ntff"


def test_vllm_profiles_with_a_neffs_folder_and_a_rank_named_framework_trace(tmp_path: Path) -> None:
    """performance-profiling-vllm.rst: neuron_profiles/i-<instance_id>_pid_<pid>/<timestamp>/
    profile_nc_0_session_0.ntff, ntrace.pb, trace_info.pb; neffs/graph_<hash>.neff. troubleshooting.rst:
    a framework trace may be named neuron_framework_trace_rank_<N>.json."""
    base = "i-0abc_pid_7/20260101T000000/"
    out = tree(tmp_path / "neuron_profiles", {
        base + "profile_nc_0_session_0.ntff": b"t", base + "ntrace.pb": b"n", base + "trace_info.pb": b"i",
        base + "neuron_framework_trace_rank_3.json": b"{}", "neffs/graph_555.neff": b"g", "neffs/graph_666.neff": b"g",
    })  # fmt: skip
    code, p, err = plan(tmp_path, out)
    assert code == 0, err
    (profile,) = p["profiles"]
    assert profile["rank"] == 3 and [Path(n).name for n in profile["neff"]] == ["graph_555.neff", "graph_666.neff"]


def test_a_multi_worker_capture_pairs_each_rank_with_its_neff(tmp_path: Path) -> None:
    """how-to-profile-workload.rst, capture: `-s output/profile.ntff` with 4 workers writes
    output/profile_rank_0.ntff ... profile_rank_3.ntff."""
    out = tree(tmp_path / "output", {"file.neff": b"n", **{f"profile_rank_{r}.ntff": b"t" * (r + 1) for r in range(4)}})
    code, p, err = plan(tmp_path, out)
    assert code == 0, err
    assert [x["kind"] for x in p["profiles"]] == ["device"]
    args = p["commands"][1]
    assert args[4] == "--neff" and Path(args[5]).name == "file.neff" and Path(args[7]).name == "profile_rank_3.ntff"  # largest
    assert any("others with --pair" in m for m in p["messages"])


def test_a_device_only_session_capture_says_what_to_capture_again(tmp_path: Path) -> None:
    out = tree(tmp_path / "profile_output", {"i-0abc_pid_1/20260101T000000/profile_nc_0_session_0.ntff": b"t",
                                             "i-0abc_pid_1/20260101T000000/neff_1_vnc_0.neff": b"n"})  # fmt: skip
    code, _, err = plan(tmp_path, out)
    assert code == 2
    assert "device-only session capture" in err and "ProfileMode.RUNTIME" in err and "Traceback" not in err


@pytest.mark.parametrize("target", ["nothing-here", "empty"])
def test_a_directory_without_a_profile_is_bad_input(tmp_path: Path, target: str) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = plan(tmp_path, tmp_path / target)
    assert code == 2 and "Traceback" not in err


# --------------------------------------------------------------------------- artifacts as the runtime writes them
# (issue 20, item 4): the run's session folder chosen by content, the inspect form, the run's own NEFF cache.

EPOCH = "1778711290599971590"  # Pidem/equiformer-trainium: output/i-0d2719a23697e0eff_pid_99188/1778711290599971590/


def _marked_trace() -> bytes:
    return json.dumps({"traceEvents": [{"name": "oplens.iter:0", "ph": "X", "ts": 1, "dur": 2}]}).encode()


def test_the_timestamp_folder_is_a_nanosecond_epoch_and_the_inspect_form_pairs_by_model_id_and_vnc(tmp_path: Path) -> None:
    """Pidem/equiformer-trainium's `output/i-0d2719a23697e0eff_pid_99188/1778711290599971590/neff_<id>_vnc_0.neff`
    (a runtime-inspect session, NEURON_RT_INSPECT_DEVICE_PROFILE=1), and Tilebench's reading of the same form
    (tilebench/core/nki_timer.py): the runtime writes "per executed NEFF, the exact binary it loaded
    (`neff_<model_id>_vnc_0.neff`), a device trace of its first execution (`<model_id>_vnc_0.ntff`) ... and a
    system trace (`ntrace.pb`)", found as `<dir>/i-*_pid_*/<ts>/ntrace.pb`."""
    from oplens.backends.neuron.artifacts import PROFILE_DIR, find_artifacts

    base = f"{PROFILE_DIR}/i-0d2719a23697e0eff_pid_99188/{EPOCH}/"
    tree(tmp_path, {
        base + "neff_1001031018598281_vnc_0.neff": b"n", base + "1001031018598281_vnc_0.ntff": b"t" * 7,
        base + "neff_102089020259727_vnc_0.neff": b"n", base + "102089020259727_vnc_0.ntff": b"t" * 3,
        base + "neff_1743859063632_vnc_0.neff": b"n",  # executed, but its device trace is not there: no pair
        base + "ntrace.pb": b"n", base + "trace_info.pb": b"i",
    })  # fmt: skip
    notes: list[str] = []
    art = find_artifacts(tmp_path, notes=notes, collect_from=[], since_ns=0)
    assert art.device_profile_dir == base.rstrip("/") and notes == []
    assert sorted((Path(t.path).name, t.form, t.hash, t.core) for t in art.ntffs) == [
        ("1001031018598281_vnc_0.ntff", "inspect", "1001031018598281", 0),
        ("102089020259727_vnc_0.ntff", "inspect", "102089020259727", 0),
    ]
    assert sorted((Path(n.path).name, n.form) for n in art.neffs) == [
        ("neff_1001031018598281_vnc_0.neff", "inspect"), ("neff_102089020259727_vnc_0.neff", "inspect"),
        ("neff_1743859063632_vnc_0.neff", "session")]  # fmt: skip
    assert sorted((p.hash, Path(p.neff).name, Path(p.ntff).name, p.ntff_bytes) for p in art.neff_ntff_pairs) == [
        ("1001031018598281", "neff_1001031018598281_vnc_0.neff", "1001031018598281_vnc_0.ntff", 7),
        ("102089020259727", "neff_102089020259727_vnc_0.neff", "102089020259727_vnc_0.ntff", 3),
    ]
    (profile,) = art.neuron_profiles
    assert profile.kind == "system" and len(profile.ntffs) == 2
    # without the system profile, Explorer opens the inspect form's largest pair (upload --neff NEFF --ntff NTFF)
    for pb in ("ntrace.pb", "trace_info.pb"):
        (tmp_path / base / pb).unlink()
    code, p, err = plan(tmp_path, tmp_path / PROFILE_DIR)
    assert code == 0, err
    args = p["commands"][1]
    assert args[4] == "--neff" and Path(args[5]).name == "neff_1001031018598281_vnc_0.neff"
    assert Path(args[7]).name == "1001031018598281_vnc_0.ntff"


def test_the_session_folder_with_the_runs_content_is_chosen_over_a_newer_one(tmp_path: Path) -> None:
    """A second session folder (the shapes/memory call, another profiler session) must not be taken for the
    run's: the folder whose framework trace holds OpLens's `oplens.iter:` ranges wins, even where the other
    is newer by its nanosecond-epoch name and by mtime."""
    from oplens.backends.neuron.artifacts import PROFILE_DIR, find_artifacts

    pid = f"{PROFILE_DIR}/i-0abc_pid_7/"
    run, other = pid + EPOCH, pid + str(int(EPOCH) + 5_000_000_000)
    tree(tmp_path, {
        f"{run}/trace.json": _marked_trace(), f"{run}/ntrace.pb": b"n", f"{run}/trace_info.pb": b"i",
        f"{run}/profile_nc_0_session_0.ntff": b"t",
        f"{other}/trace.json": b'{"traceEvents": []}', f"{other}/ntrace.pb": b"n", f"{other}/trace_info.pb": b"i",
    })  # fmt: skip
    old = (tmp_path / run).stat().st_mtime - 60
    for f in [tmp_path / run, *(tmp_path / run).iterdir()]:
        os.utime(f, (old, old))  # the run's folder is older by mtime too
    notes: list[str] = []
    art = find_artifacts(tmp_path, notes=notes, collect_from=[], since_ns=0)
    assert art.device_profile_dir == run and art.trace_json == f"{run}/trace.json"
    (note,) = notes
    assert f"took the Neuron session folder i-0abc_pid_7/{EPOCH}" in note and "OpLens's iteration ranges" in note
    assert f"over the newer i-0abc_pid_7/{int(EPOCH) + 5_000_000_000} (a system profile)" in note


def test_among_equal_session_folders_the_latest_nanosecond_epoch_wins_not_the_mtime(tmp_path: Path) -> None:
    """Two folders that both look like the run's: the epoch in the name decides (parsed as a number: a
    shorter name is an earlier time only by its value), and the run says which rule chose it."""
    from oplens.backends.neuron.artifacts import PROFILE_DIR, choose_session, find_artifacts

    pid = f"{PROFILE_DIR}/i-0abc_pid_7/"
    early, late = pid + EPOCH, pid + str(int(EPOCH) + 1)
    tree(tmp_path, {f"{d}/{n}": b"x" for d in (early, late) for n in ("ntrace.pb", "trace_info.pb")})
    newer = (tmp_path / late).stat().st_mtime + 60
    os.utime(tmp_path / early, (newer, newer))  # the earlier epoch has the newer mtime
    notes: list[str] = []
    art = find_artifacts(tmp_path, notes=notes, collect_from=[], since_ns=0)
    assert art.device_profile_dir == late
    (note,) = notes
    assert "2 Neuron session folders looked like this run's" in note and "nanosecond epoch in its name" in note
    # names that are not numbers fall back to the mtime
    out = tmp_path / "other"
    tree(out, {f"i-0abc_pid_1/{d}/ntrace.pb": b"n" for d in ("20260101T000000", "20260101T000001")})
    tree(out, {f"i-0abc_pid_1/{d}/trace_info.pb": b"n" for d in ("20260101T000000", "20260101T000001")})
    os.utime(out / "i-0abc_pid_1/20260101T000000", (newer, newer))
    chosen, why = choose_session(out)
    assert chosen == out / "i-0abc_pid_1/20260101T000000" and "modification time" in why


def test_neffs_the_runtime_wrote_to_the_default_cache_during_the_run_are_copied_into_the_run(tmp_path: Path) -> None:
    """TorchNeuron's persistent cache (parmoham-aws/test-repo-parmoham,
    torch_neuronx/csrc/core/cache/PersistentCacheBackend.h): TORCH_NEURONX_NEFF_CACHE_DIR, "falling back to
    /tmp/neff_cache if not set", laid out `cache_dir/ab/cd/abcd1234...neff`. A stand-in for /tmp/neff_cache
    here: the NEFFs written since the run began are copied (the cache keeps them), older ones are not."""
    import time

    from oplens.backends.neuron.artifacts import NEFF_CACHE_DIR, PROFILE_DIR, find_artifacts

    default = tree(tmp_path / "neff_cache", {"ab/cd/abcd1234.neff": b"old", "ef/01/ef012345.neff": b"new!"})
    long_ago = time.time() - 3600
    os.utime(default / "ab/cd/abcd1234.neff", (long_ago, long_ago))
    run = tmp_path / "run"
    tree(run, {f"{PROFILE_DIR}/i-0abc_pid_7/{EPOCH}/profile_nc_0_session_0.ntff": b"t"})
    notes: list[str] = []
    art = find_artifacts(run, notes=notes, collect_from=[default, tmp_path / "missing"], since_ns=time.time_ns() - 10**9 * 600)
    copied = f"{PROFILE_DIR}/{NEFF_CACHE_DIR}/ef/01/ef012345.neff"
    assert [(n.path, n.form, n.hash) for n in art.neffs] == [(copied, "cache", "ef012345")]
    assert (run / copied).read_bytes() == b"new!" and (default / "ef/01/ef012345.neff").is_file()  # copied, not moved
    assert not (run / PROFILE_DIR / NEFF_CACHE_DIR / "ab").exists()
    (note,) = notes
    assert f"1 from {default}" in note and "the cache keeps its files" in note and "Neuron Explorer" in note
    (profile,) = art.neuron_profiles
    assert profile.neffs == [copied]  # the session folder has none of its own: the run's cache serves it
    # again (analyze, a second look): nothing copied twice, the same list
    assert find_artifacts(run, collect_from=[default], since_ns=time.time_ns() - 10**9 * 600).neffs == art.neffs


def test_the_runs_own_neff_cache_is_set_unless_one_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NEFFs appear in the profile only where a NEFF cache dir is given (TORCH_NEURONX_NEFF_CACHE_DIR before
    torch_neuronx is imported, how-to-profile-workload.rst): OpLens gives the run's own by default."""
    from oplens.backends.neuron.artifacts import COLLECT_FROM_ENV, COLLECT_SINCE_ENV, NEFF_CACHE_DIR, PROFILE_DIR
    from oplens.backends.neuron.device import NeuronBackend
    from oplens.backends.neuron.options import DEFAULT_NEFF_CACHE_ENV, NEFF_CACHE_ENV, NeuronOptions
    from oplens.records.job import RUN_DIR_ENV

    for name in (NEFF_CACHE_ENV, DEFAULT_NEFF_CACHE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(RUN_DIR_ENV, str(tmp_path / "stage"))
    # where torch_neuronx is not installed (auto on a CPU or GPU host), the run gets no neuron_profile folder
    assert NEFF_CACHE_ENV not in NeuronBackend.environment(NeuronOptions()) and not (tmp_path / "stage").exists()
    monkeypatch.syspath_prepend(str(STANDINS))  # the stand-in torch_neuronx: a Neuron host
    env = NeuronBackend.environment(NeuronOptions())
    own = tmp_path / "stage" / PROFILE_DIR / NEFF_CACHE_DIR
    assert env[NEFF_CACHE_ENV] == str(own) and own.is_dir()
    assert env[COLLECT_FROM_ENV] == "/tmp/neff_cache" and env[COLLECT_SINCE_ENV].isdigit()  # TorchNeuron's default
    # --neff-cache-dir wins (the CLI's explicit choice)
    assert NeuronBackend.environment(NeuronOptions(neff_cache_dir="/data/neffs"))[NEFF_CACHE_ENV] == "/data/neffs"
    # a cache the user exported is theirs: left alone, and this run's NEFFs are copied from it too
    monkeypatch.setenv(NEFF_CACHE_ENV, "/shared/neffs")
    monkeypatch.setenv(DEFAULT_NEFF_CACHE_ENV, str(tmp_path / "default"))
    env = NeuronBackend.environment(NeuronOptions())
    assert NEFF_CACHE_ENV not in env and env[COLLECT_FROM_ENV].split(os.pathsep) == [str(tmp_path / "default"), "/shared/neffs"]
