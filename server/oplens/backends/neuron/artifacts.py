"""Where a Neuron profile's files are, by the documented layouts (parent side, no torch).

Source: the AWS Neuron docs, `tools/neuron-explorer/how-to-profile-workload.rst` ("Expected
output", "neuron-explorer inspect output example", "CLI profiling with neuron-explorer capture"),
`troubleshooting.rst` and `tools/tutorials/performance-profiling-vllm.rst`. The forms:

- **session** (PyTorch's `NeuronConfig` capture, the default; "Expected output"):
      <out>/<instance-id>_pid_<pid>/<timestamp>/  trace.json, trace_info.pb, ntrace.pb, cpu_util.pb,
          host_mem.pb, neff_<hash>_vnc_<n>.neff (one per graph), profile_nc_<n>_session_<m>.ntff
          (one per NeuronCore); one `_pid_` directory per rank.
  A 1:1 NEFF-to-NTFF pairing is *not* required here (troubleshooting: "Unequal number of NEFF and
  NTFF files"): NEFFs and NTFFs are listed, never paired.
- **model** (`neuron-explorer inspect`, the `NEURON_RT_INSPECT_*` variables):
      <out>/<instance-id>_pid_<pid>/  <hash>_instid_<i>_vnc_<n>.ntff beside neff_<hash>.neff
  paired by the hash in both names.
- **graph** NEFFs auto-copied to `<out>/neffs/graph_<hash>.neff` (the vLLM tutorial).
- **capture** (`neuron-explorer capture -n file.neff -s profile.ntff`): multi-worker sessions get
  `_rank_<id>` (`profile_rank_1.ntff`); each pairs with the one NEFF it was captured from.
- a framework trace named `neuron_framework_trace_rank_<N>.json` belongs in its `_pid_` directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from oplens.records.run import Artifacts, NeffFile, NeffNtffPair, NeuronProfileDir, NtffFile

PROFILE_DIR = "neuron_profile"  # NeuronConfig.profile_output_dir, inside the run directory
SYSTEM_TRACES = ("trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb")
SYSTEM_PROFILE = ("trace_info.pb", "ntrace.pb")  # what makes a directory a system profile Explorer ingests with -d

_RANK = r"(?:_rank_(?P<rank>\d+))?"
_SESSION_NTFF = re.compile(rf"^profile_nc_(?P<core>\d+)_session_(?P<session>\d+){_RANK}\.ntff$")
_MODEL_NTFF = re.compile(rf"^(?P<hash>[0-9A-Za-z]+)_instid_(?P<inst>\d+)_vnc_(?P<core>\d+){_RANK}\.ntff$")
_CAPTURE_NTFF = re.compile(rf"^(?P<stem>.+?){_RANK}\.ntff$")
_SESSION_NEFF = re.compile(r"^neff_(?P<hash>[0-9A-Za-z]+)_vnc_(?P<core>\d+)\.neff$")
_MODEL_NEFF = re.compile(r"^neff_(?P<hash>[0-9A-Za-z]+)\.neff$")
_GRAPH_NEFF = re.compile(r"^graph_(?P<hash>[0-9A-Za-z]+)\.neff$")
_FRAMEWORK_TRACE = re.compile(r"^(?:trace|neuron_framework_trace_rank_(?P<rank>\d+))\.json$")


def classify_ntff(path: Path, rel: str) -> NtffFile:
    size = path.stat().st_size if path.exists() else 0
    if m := _SESSION_NTFF.match(path.name):
        return NtffFile(rel, "session", int(m["core"]), int(m["session"]), _int(m["rank"]), bytes=size)
    if m := _MODEL_NTFF.match(path.name):
        return NtffFile(rel, "model", int(m["core"]), None, _int(m["rank"]), m["hash"], size)
    m = _CAPTURE_NTFF.match(path.name)
    return NtffFile(rel, "capture", rank=_int(m["rank"]) if m else None, bytes=size)


def classify_neff(path: Path, rel: str) -> NeffFile:
    if m := _SESSION_NEFF.match(path.name):
        return NeffFile(rel, "session", m["hash"], int(m["core"]))
    if m := _GRAPH_NEFF.match(path.name):
        return NeffFile(rel, "graph", m["hash"])
    if m := _MODEL_NEFF.match(path.name):
        return NeffFile(rel, "model", m["hash"])
    return NeffFile(rel, "other")


def discover(root: Path, relative_to: Path) -> tuple[list[NeffFile], list[NtffFile], list[NeuronProfileDir], list[NeffNtffPair]]:
    """Every NEFF, NTFF and per-process profile directory under `root` (paths relative to
    `relative_to`), and the NEFF/NTFF pairs of the model form (the only form that implies them)."""
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []

    def rel(p: Path) -> str:
        return str(p.relative_to(relative_to))

    neffs = [classify_neff(p, rel(p)) for p in files if p.suffix == ".neff"]
    ntffs = [classify_ntff(p, rel(p)) for p in files if p.suffix == ".ntff"]
    by_dir: dict[Path, list[Path]] = {}
    for p in files:
        by_dir.setdefault(p.parent, []).append(p)
    profiles: list[NeuronProfileDir] = []
    shared_neffs = [n.path for n in neffs if n.form == "graph"]  # neffs/graph_<hash>.neff serve every process
    for folder, inside in sorted(by_dir.items()):
        names = {p.name for p in inside}
        dir_ntffs = [n for n in ntffs if Path(relative_to / n.path).parent == folder]
        system = all(s in names for s in SYSTEM_PROFILE)
        if not system and not dir_ntffs:
            continue  # the neffs/ folder, a NEFF cache, …: not a profile of its own
        traces = [p for p in inside if _FRAMEWORK_TRACE.match(p.name)]
        ranks = {n.rank for n in dir_ntffs if n.rank is not None}
        ranks |= {int(m["rank"]) for p in traces if (m := _FRAMEWORK_TRACE.match(p.name)) and m["rank"]}
        dir_neffs = [n.path for n in neffs if Path(relative_to / n.path).parent == folder]
        profiles.append(
            NeuronProfileDir(
                dir=rel(folder),
                kind="system" if system else "device",
                neffs=dir_neffs or shared_neffs,
                ntffs=[n.path for n in dir_ntffs],
                rank=min(ranks) if len(ranks) == 1 else None,
                framework_trace=rel(traces[0]) if traces else "",
            )
        )
    by_hash: dict[str, NeffFile] = {}
    for n in neffs:
        if n.form in ("model", "graph"):
            by_hash.setdefault(n.hash, n)
    pairs = [
        NeffNtffPair(hash=t.hash, neff=by_hash[t.hash].path, ntff=t.path, ntff_bytes=t.bytes)
        for t in ntffs
        if t.form == "model" and t.hash in by_hash
    ]
    # `neuron-explorer capture -n file.neff -s profile.ntff`: each session file belongs to the one NEFF beside it.
    for t in ntffs:
        if t.form == "capture":
            beside = [n for n in neffs if Path(n.path).parent == Path(t.path).parent]
            if len(beside) == 1:
                name = Path(t.path).stem
                pairs.append(NeffNtffPair(hash=name, neff=beside[0].path, ntff=t.path, ntff_bytes=t.bytes))
    return neffs, ntffs, profiles, pairs


def find_artifacts(run_dir: Path, out_name: str = PROFILE_DIR) -> Artifacts:
    """The Neuron profile under `run_dir/out_name`, paths relative to `run_dir`."""
    out_dir = run_dir / out_name
    if not out_dir.is_dir():
        return Artifacts()
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    neffs, ntffs, profiles, pairs = discover(out_dir, run_dir)
    # The newest <instance>_pid_<pid>/<timestamp>/ (or <instance>_pid_<pid>/ where no timestamp level exists).
    stamped = [p for p in out_dir.glob("*_pid_*/*") if p.is_dir()] or [p for p in out_dir.glob("*_pid_*") if p.is_dir()]
    profile_dir = max(stamped, key=lambda p: p.stat().st_mtime) if stamped else out_dir
    traces = [p for p in files if _FRAMEWORK_TRACE.match(p.name)]
    trace = next((p for p in traces if profile_dir in p.parents), traces[0] if traces else None)

    def rel(p: Path) -> str:
        return str(p.relative_to(run_dir))

    return Artifacts(
        trace_json=rel(trace) if trace else "",
        device_profile_dir=rel(profile_dir),
        neff_ntff_pairs=pairs,
        files=[rel(p) for p in files],
        profile_output_dir=out_name,
        system_trace_files=[rel(p) for p in files if p.name in SYSTEM_TRACES],
        neffs=neffs,
        ntffs=ntffs,
        neuron_profiles=profiles,
    )


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None
