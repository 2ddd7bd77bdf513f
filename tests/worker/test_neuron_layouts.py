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

from support.neuron import EPOCH, tree

# TorchNeuron runs on Python 3.12+ only: `make test` runs these on 3.12 and 3.13
pytestmark = pytest.mark.neuron


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
