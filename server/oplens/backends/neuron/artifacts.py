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
- **early** (TorchNeuron's early `NeuronProfiler` context manager, `parmoham-aws/test-repo-parmoham`,
  `torch_neuronx/profiling.py`): the runtime's profile in `neuron_output_dir` (its tests expect
  `{output_dir}/{instance_id}_pid_{process_id}/` with `*_instid_*_vnc_*.ntff`, `neff_*.neff`, `ntrace.pb`,
  `trace_info.pb`, ...), the PyTorch trace beside it as `f"{neuron_output_dir}/pytorch_trace.json"`, and
  `framework_mapping_<YYYYmmdd_HHMMSS_mmm>.json` there too (mapping.py).
- **inspect** (the runtime's inspect session, `NEURON_RT_INSPECT_DEVICE_PROFILE=1`, as users on trn2 read it;
  `Deep-Learning-Profiling-Tools/Tilebench`, `tilebench/core/nki_timer.py`: "per executed NEFF, the exact
  binary it loaded (`neff_<model_id>_vnc_0.neff`), a device trace of its first execution
  (`<model_id>_vnc_0.ntff` ...) and a system trace (`ntrace.pb`)", found as `<dir>/i-*_pid_*/<ts>/ntrace.pb`):
      <out>/<instance-id>_pid_<pid>/<ts>/  neff_<model_id>_vnc_<n>.neff beside <model_id>_vnc_<n>.ntff
  (no `_instid_`), paired by model id + vnc.
- **cache** NEFFs: TorchNeuron's persistent NEFF cache, `TORCH_NEURONX_NEFF_CACHE_DIR` "falling back to
  /tmp/neff_cache if not set", laid out `cache_dir/ab/cd/abcd1234...neff` (TorchNeuron's early source,
  `parmoham-aws/test-repo-parmoham`, `torch_neuronx/csrc/core/cache/PersistentCacheBackend.h`). OpLens points
  it at the run's own `<out>/neff_cache/` (`NEFF_CACHE_DIR`) and copies there, after the run, the NEFFs the
  runtime wrote to `/tmp/neff_cache` during it (`collect_neffs`).

The timestamp level is a nanosecond epoch as the runtime writes it (`<instance>_pid_<pid>/1778711290599971590/`,
`Pidem/equiformer-trainium`'s `output/i-0d2719a23697e0eff_pid_99188/1778711290599971590/`). One run's
profile output can hold several session folders (the shapes/memory call, another profiler session): the
run's is chosen by its content (`choose_session`), never by mtime alone.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from oplens.records.names import ITER_RANGE
from oplens.records.run import Artifacts, NeffFile, NeffNtffPair, NeuronProfileDir, NtffFile

PROFILE_DIR = "neuron_profile"  # NeuronConfig.profile_output_dir, inside the run directory
NEFF_CACHE_DIR = "neff_cache"  # <run>/neuron_profile/neff_cache: the run's own NEFF cache (TorchNeuron's layout inside)
SYSTEM_TRACES = ("trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb")
SYSTEM_PROFILE = ("trace_info.pb", "ntrace.pb")  # what makes a directory a system profile Explorer ingests with -d
DEFAULT_NEFF_CACHE = "/tmp/neff_cache"  # TorchNeuron's cache where TORCH_NEURONX_NEFF_CACHE_DIR is not set
# The worker's record of a run's NEFF collection, set by NeuronBackend.environment() before the run (same process):
COLLECT_FROM_ENV = "OPLENS_NEFF_COLLECT_FROM"  # os.pathsep-separated caches to copy this run's NEFFs from
COLLECT_SINCE_ENV = "OPLENS_NEFF_COLLECT_SINCE_NS"  # the run's start (time.time_ns())
MTIME_SLACK_NS = 2_000_000_000  # file systems with coarse timestamps

_RANK = r"(?:_rank_(?P<rank>\d+))?"
_SESSION_NTFF = re.compile(rf"^profile_nc_(?P<core>\d+)_session_(?P<session>\d+){_RANK}\.ntff$")
_MODEL_NTFF = re.compile(rf"^(?P<hash>[0-9A-Za-z]+)_instid_(?P<inst>\d+)_vnc_(?P<core>\d+){_RANK}\.ntff$")
_INSPECT_NTFF = re.compile(rf"^(?P<hash>[0-9A-Za-z]+)_vnc_(?P<core>\d+){_RANK}\.ntff$")
_CAPTURE_NTFF = re.compile(rf"^(?P<stem>.+?){_RANK}\.ntff$")
_SESSION_NEFF = re.compile(r"^neff_(?P<hash>[0-9A-Za-z]+)_vnc_(?P<core>\d+)\.neff$")
_MODEL_NEFF = re.compile(r"^neff_(?P<hash>[0-9A-Za-z]+)\.neff$")
_GRAPH_NEFF = re.compile(r"^graph_(?P<hash>[0-9A-Za-z]+)\.neff$")
# trace.json (NeuronConfig's export_trace), pytorch_trace.json (the early NeuronProfiler's, in its neuron_output_dir)
_FRAMEWORK_TRACE = re.compile(r"^(?:trace|pytorch_trace|neuron_framework_trace_rank_(?P<rank>\d+))\.json$")
_EPOCH_NS = re.compile(r"^\d{16,20}$")  # the runtime's timestamp folder: 1778711290599971590


def classify_ntff(path: Path, rel: str) -> NtffFile:
    size = path.stat().st_size if path.exists() else 0
    if m := _SESSION_NTFF.match(path.name):
        return NtffFile(rel, "session", int(m["core"]), int(m["session"]), _int(m["rank"]), bytes=size)
    if m := _MODEL_NTFF.match(path.name):
        return NtffFile(rel, "model", int(m["core"]), None, _int(m["rank"]), m["hash"], size)
    if m := _INSPECT_NTFF.match(path.name):
        return NtffFile(rel, "inspect", int(m["core"]), None, _int(m["rank"]), m["hash"], size)
    m = _CAPTURE_NTFF.match(path.name)
    return NtffFile(rel, "capture", rank=_int(m["rank"]) if m else None, bytes=size)


def classify_neff(path: Path, rel: str) -> NeffFile:
    """By name; `neff_<id>_vnc_<n>.neff` is "session" here and becomes "inspect" in `discover` where its
    `<id>_vnc_<n>.ntff` lies beside it. A NEFF inside a `neff_cache/` folder is "cache" (hash: its stem)."""
    if m := _SESSION_NEFF.match(path.name):
        return NeffFile(rel, "session", m["hash"], int(m["core"]))
    if m := _GRAPH_NEFF.match(path.name):
        return NeffFile(rel, "graph", m["hash"])
    if m := _MODEL_NEFF.match(path.name):
        return NeffFile(rel, "model", m["hash"])
    if NEFF_CACHE_DIR in Path(rel).parts[:-1]:
        return NeffFile(rel, "cache", path.stem)
    return NeffFile(rel, "other")


def discover(root: Path, relative_to: Path) -> tuple[list[NeffFile], list[NtffFile], list[NeuronProfileDir], list[NeffNtffPair]]:
    """Every NEFF, NTFF and per-process profile directory under `root` (paths relative to
    `relative_to`), and the NEFF/NTFF pairs of the model and inspect forms (the forms that imply them)."""
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []

    def rel(p: Path) -> str:
        return str(p.relative_to(relative_to))

    neffs = [classify_neff(p, rel(p)) for p in files if p.suffix == ".neff"]
    ntffs = [classify_ntff(p, rel(p)) for p in files if p.suffix == ".ntff"]
    # The inspect form: neff_<id>_vnc_<n>.neff pairs with <id>_vnc_<n>.ntff in the same folder.
    inspect = {(str(Path(t.path).parent), t.hash, t.core): t for t in ntffs if t.form == "inspect"}
    for i, n in enumerate(neffs):
        if n.form == "session" and (str(Path(n.path).parent), n.hash, n.core) in inspect:
            neffs[i] = NeffFile(n.path, "inspect", n.hash, n.core)
    by_dir: dict[Path, list[Path]] = {}
    for p in files:
        by_dir.setdefault(p.parent, []).append(p)
    profiles: list[NeuronProfileDir] = []
    # neffs/graph_<hash>.neff and the run's NEFF cache serve every process
    shared_neffs = [n.path for n in neffs if n.form in ("graph", "cache")]
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
    by_model_core = {(str(Path(n.path).parent), n.hash, n.core): n for n in neffs if n.form == "inspect"}
    for key, t in inspect.items():
        if key in by_model_core:
            pairs.append(NeffNtffPair(hash=t.hash, neff=by_model_core[key].path, ntff=t.path, ntff_bytes=t.bytes))
    # `neuron-explorer capture -n file.neff -s profile.ntff`: each session file belongs to the one NEFF beside it.
    for t in ntffs:
        if t.form == "capture":
            beside = [n for n in neffs if Path(n.path).parent == Path(t.path).parent]
            if len(beside) == 1:
                name = Path(t.path).stem
                pairs.append(NeffNtffPair(hash=name, neff=beside[0].path, ntff=t.path, ntff_bytes=t.bytes))
    return neffs, ntffs, profiles, pairs


@dataclass
class Session:
    """One candidate session folder and what it holds."""

    dir: Path
    markers: bool  # a framework trace with OpLens's iteration ranges: the run's own capture
    system: bool  # trace_info.pb + ntrace.pb
    ntffs: int
    stamp_ns: int  # the folder's nanosecond-epoch name, else its mtime (ns)
    named: bool  # stamp_ns read from the name

    @property
    def content(self) -> tuple[bool, bool, bool]:
        return (self.markers, self.system, self.ntffs > 0)

    def describe(self) -> str:
        held = [w for w, on in (("OpLens's iteration ranges", self.markers), ("a system profile", self.system),
                                (f"{self.ntffs} NTFF(s)", self.ntffs > 0)) if on]  # fmt: skip
        return " and ".join(held) or "no profile"


def sessions(out_dir: Path) -> list[Session]:
    """Each `<instance>_pid_<pid>/<timestamp>/` folder (and each `<instance>_pid_<pid>/` that holds a profile
    itself, the layout without a timestamp level) under `out_dir`."""
    found: list[Path] = [p for p in out_dir.glob("*_pid_*/*") if p.is_dir()]
    for pid_dir in (p for p in out_dir.glob("*_pid_*") if p.is_dir()):
        if any(f.is_file() and (f.suffix in (".ntff", ".pb") or _FRAMEWORK_TRACE.match(f.name)) for f in pid_dir.iterdir()):
            found.append(pid_dir)
        elif not any(p.is_dir() for p in pid_dir.iterdir()):
            found.append(pid_dir)  # an empty process folder: still the only candidate there may be
    result = []
    for d in sorted(found):
        names = {f.name for f in d.iterdir() if f.is_file()}
        traces = [d / n for n in sorted(names) if _FRAMEWORK_TRACE.match(n)]
        named = bool(_EPOCH_NS.match(d.name))
        result.append(Session(
            dir=d,
            markers=any(_holds(t, ITER_RANGE) for t in traces),
            system=all(s in names for s in SYSTEM_PROFILE),
            ntffs=sum(1 for n in names if n.endswith(".ntff")),
            stamp_ns=int(d.name) if named else d.stat().st_mtime_ns,
            named=named,
        ))  # fmt: skip
    return result


def choose_session(out_dir: Path) -> tuple[Path | None, str]:
    """The run's session folder and, where the choice was not plain, why it was taken (a warning).

    By content first: the folder whose framework trace holds OpLens's `oplens.iter:` ranges, then one with a
    system profile, then one with NTFFs; among equals the latest by the nanosecond epoch in its name (the
    mtime only for a name that is not a number)."""
    found = sessions(out_dir)
    if not found:
        return None, ""
    best = max(s.content for s in found)
    equals = [s for s in found if s.content == best]
    chosen = max(equals, key=lambda s: s.stamp_ns)

    def rel(s: Session) -> str:
        return str(s.dir.relative_to(out_dir))

    by = "the latest by the nanosecond epoch in its name" if chosen.named else "the latest by modification time"
    if len(equals) > 1 and any(best):
        others = ", ".join(rel(s) for s in equals if s is not chosen)
        return chosen.dir, (
            f"{len(equals)} Neuron session folders looked like this run's ({chosen.describe()}): took {rel(chosen)}, "
            f"{by}, over {others}"
        )
    newer = [s for s in found if s.stamp_ns > chosen.stamp_ns]
    if newer:
        return chosen.dir, (
            f"took the Neuron session folder {rel(chosen)} (it holds {chosen.describe()}) over the newer "
            + ", ".join(f"{rel(s)} ({s.describe()})" for s in newer)
        )
    return chosen.dir, ""


def collect_neffs(run_dir: Path, sources: list[Path], since_ns: int, out_name: str = PROFILE_DIR) -> tuple[list[str], str]:
    """Copy (never move: other processes share the cache) every NEFF written to one of `sources` (TorchNeuron's
    default `/tmp/neff_cache`, a cache the user exported) since `since_ns` into the run's
    `<out_name>/neff_cache/`, keeping the cache's layout; the copied paths (relative to `run_dir`) and a note."""
    dest_root = run_dir / out_name / NEFF_CACHE_DIR
    copied: list[str] = []
    used: list[str] = []
    now = time.time_ns() + MTIME_SLACK_NS
    for source in sources:
        source = source.expanduser()
        if not source.is_dir() or _inside(source, dest_root) or _inside(dest_root, source):
            continue
        n = 0
        for neff in sorted(source.rglob("*.neff")):
            try:
                if not neff.is_file() or not since_ns - MTIME_SLACK_NS <= neff.stat().st_mtime_ns <= now:
                    continue
                dest = dest_root / neff.relative_to(source)
                if not (dest.is_file() and dest.stat().st_size == neff.stat().st_size):
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(neff, dest)
                copied.append(str(dest.relative_to(run_dir)))
                n += 1
            except OSError:
                continue  # a cache entry renamed or removed under us (TorchNeuron writes temp file + rename)
        if n:
            used.append(f"{n} from {source}")
    note = ""
    if copied:
        note = (f"copied the NEFF(s) the runtime wrote during the run into {out_name}/{NEFF_CACHE_DIR}/ "
                f"({'; '.join(used)}; copies: the cache keeps its files), so that Neuron Explorer can open "
                "the device trace")  # fmt: skip
    return copied, note


def collect_from_environment() -> tuple[list[Path], int | None]:
    """The caches and the run's start that `NeuronBackend.environment()` recorded for this worker's run."""
    since = os.environ.get(COLLECT_SINCE_ENV, "")
    sources = [Path(p) for p in os.environ.get(COLLECT_FROM_ENV, "").split(os.pathsep) if p]
    return sources, int(since) if since.isdigit() else None


def find_artifacts(
    run_dir: Path,
    out_name: str = PROFILE_DIR,
    *,
    notes: list[str] | None = None,
    collect_from: list[Path] | None = None,
    since_ns: int | None = None,
) -> Artifacts:
    """The Neuron profile under `run_dir/out_name`, paths relative to `run_dir`. NEFFs the runtime wrote to
    the caches in `collect_from` since `since_ns` (by default what the worker recorded before the run,
    `collect_from_environment`) are copied into the run first; `notes` receives what was copied and how the
    session folder was chosen where that was not plain."""
    out_dir = run_dir / out_name
    if collect_from is None and since_ns is None:
        collect_from, since_ns = collect_from_environment()
    if collect_from and since_ns is not None and out_dir.is_dir():
        _, note = collect_neffs(run_dir, collect_from, since_ns, out_name)
        if note and notes is not None:
            notes.append(note)
    if not out_dir.is_dir():
        return Artifacts()
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    neffs, ntffs, profiles, pairs = discover(out_dir, run_dir)
    chosen, why = choose_session(out_dir)
    if why and notes is not None:
        notes.append(why)
    profile_dir = chosen or out_dir
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


def _holds(path: Path, needle: str, chunk: int = 1 << 20) -> bool:
    """Whether the file's text holds `needle` (read in chunks: a framework trace can be large)."""
    data = needle.encode()
    tail = b""
    try:
        with path.open("rb") as f:
            while block := f.read(chunk):
                if data in tail + block:
                    return True
                tail = block[-len(data) :]
    except OSError:
        return False
    return False


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None
