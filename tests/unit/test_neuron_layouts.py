"""Where the Neuron runtime's files are found (`backends/neuron/artifacts.py`): the session folder holding the
run's content over a newer one, the latest nanosecond epoch over the mtime, NEFFs written to the default cache
copied into the run, and the run's own NEFF cache set unless one is given."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.neuron import EPOCH, tree
from support.paths import STANDINS

# --------------------------------------------------------------------------- artifacts as the runtime writes them
# (issue 20, item 4): the run's session folder chosen by content, the inspect form, the run's own NEFF cache.


def _marked_trace() -> bytes:
    return json.dumps({"traceEvents": [{"name": "oplens.iter:0", "ph": "X", "ts": 1, "dur": 2}]}).encode()


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
