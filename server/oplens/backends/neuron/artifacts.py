"""Where a Neuron profile's files are, read from the run directory (parent side, no torch).

`NeuronConfig(profile_output_dir=<run>/neuron_profile)` writes `<instance>_pid_<pid>/<timestamp>/`
with the framework trace, the system traces and each compiled graph's NEFF with its NTFF.
"""

from __future__ import annotations

import re
from pathlib import Path

from oplens.records.run import Artifacts, NeffNtffPair

PROFILE_DIR = "neuron_profile"  # NeuronConfig.profile_output_dir, inside the run directory
SYSTEM_TRACES = ("trace_info.pb", "ntrace.pb", "cpu_util.pb", "host_mem.pb")
_NTFF = re.compile(r"^(\d+)_")  # <hash>_instid_0_vnc_0.ntff
_NEFF = re.compile(r"(\d+)")  # neff_<hash>.neff


def find_artifacts(run_dir: Path, out_name: str = PROFILE_DIR) -> Artifacts:
    """The profile under `run_dir/out_name`: its `<instance>_pid_<pid>/<timestamp>/` directory,
    the system traces, the framework trace and the NEFF/NTFF pairs; paths relative to `run_dir`."""
    out_dir = run_dir / out_name
    if not out_dir.is_dir():
        return Artifacts()
    files = sorted(p for p in out_dir.rglob("*") if p.is_file())
    # The newest <instance>_pid_<pid>/<timestamp>/ (or <instance>_pid_<pid>/ where no timestamp level exists).
    stamped = [p for p in out_dir.glob("*_pid_*/*") if p.is_dir()] or [p for p in out_dir.glob("*_pid_*") if p.is_dir()]
    profile_dir = max(stamped, key=lambda p: p.stat().st_mtime) if stamped else out_dir
    trace = next((p for p in files if p.name == "trace.json" and profile_dir in p.parents), None)
    trace = trace or next((p for p in files if p.name == "trace.json"), None)

    def rel(p: Path) -> str:
        return str(p.relative_to(run_dir))

    return Artifacts(
        trace_json=rel(trace) if trace else "",
        device_profile_dir=rel(profile_dir),
        neff_ntff_pairs=pair_neff_ntff(files, run_dir),
        files=[rel(p) for p in files],
        profile_output_dir=out_name,
        system_trace_files=[rel(p) for p in files if p.name in SYSTEM_TRACES],
    )


def pair_neff_ntff(files: list[Path], run_dir: Path) -> list[NeffNtffPair]:
    """Pair `neff_<hash>.neff` with `<hash>_instid_0_vnc_0.ntff` (one NTFF per NeuronCore) by their hash."""
    neffs: dict[str, Path] = {}
    for p in files:
        m = _NEFF.search(p.stem) if p.suffix == ".neff" else None
        if m:
            neffs.setdefault(m.group(1), p)
    pairs = []
    for p in files:
        m = _NTFF.match(p.name) if p.suffix == ".ntff" else None
        if m and m.group(1) in neffs:
            neff = neffs[m.group(1)]
            pairs.append(
                NeffNtffPair(
                    hash=m.group(1),
                    neff=str(neff.relative_to(run_dir)),
                    ntff=str(p.relative_to(run_dir)),
                    ntff_bytes=p.stat().st_size,
                )
            )
    return pairs
