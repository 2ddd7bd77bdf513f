"""`oplens merge DIR...`: the parts of one distributed capture, written on several hosts (each host's
`oplens run` stores the ranks it ran), combined into one run with every rank.

Each directory is a run (merged or single-process) of the same function. Its rank parts are copied
(hard links where the file system allows) under the new run's `ranks/<R>/`, and the new run is
merged from them as `oplens run` merges one host's (analysis/ranks.py). Nothing is moved or changed
in the given directories. The new run is staged and committed whole (`runs.Staging`): a failure or a
cancel (checked before each part and before the commit) leaves nothing under the runs root.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from oplens.analysis.ranks import merge_any as merge_parts
from oplens.engine import runs
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError, bad_input
from oplens.records.overview import AnyRun
from oplens.records.run import RankInfo


def rank_part(run: AnyRun, rank: int) -> AnyRun:
    """Rank `rank`'s own run within the distributed run `run` (stored)."""
    for info in run.ranks:
        if info.rank == rank:
            part_dir = Path(run.run_dir) / info.part
            try:
                part = runs.load(part_dir)
            except (OSError, ValueError) as e:
                raise bad_input(f"cannot read rank {rank}'s part {part_dir / runs.record_name(run)}: {e}") from None
            part.run_dir = str(part_dir)
            return part
    have = ", ".join(str(i.rank) for i in run.ranks) or "none: it is not a distributed run"
    raise bad_input(f"run {run.run_id} has no rank {rank}", f"its ranks: {have}")


def merge_dirs(
    dirs: list[Path],
    root: Path,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> AnyRun:
    """One run (or program overview) from the runs in `dirs` (each a host's part of one job), stored under `root`.
    `cancel`: set, the merge stops before the next part (or the commit) and stores nothing;
    `progress(rank, done, total)`: before each rank's part is copied."""
    if len(dirs) < 1:
        raise bad_input("oplens merge needs the run directories to combine", "give each host's run directory")
    found: list[tuple[RankInfo, AnyRun, Path]] = []
    for d in dirs:
        try:
            run = runs.load(d)
        except (OSError, ValueError) as e:
            raise bad_input(f"{d} is not a run directory: {e}", "give the directories `oplens run` stored") from None
        if run.ranks:
            for info in run.ranks:
                part_dir = d / info.part
                if runs.record_file(part_dir) is not None:
                    found.append((info, runs.load(part_dir), part_dir))
                elif len(run.ranks) == 1:  # a rank's own run, stored by itself
                    found.append((info, run, d))
                else:
                    raise bad_input(f"{d} names rank {info.rank}'s part {info.part}, which is missing",
                                    "give the run directories as `oplens run` stored them")  # fmt: skip
        else:
            found.append((RankInfo(rank=0, part="ranks/0"), run, d))
    first = found[0][1].target
    for _, part, d in found:
        if part.target.qualname != first.qualname or part.target.source_sha256 != first.source_sha256:
            raise bad_input(
                f"{d} holds {part.target.qualname} ({part.target.source_sha256[:8]}), not {first.qualname} "
                f"({first.source_sha256[:8]})",
                "merge the parts of one capture: the same function, from the same source",
            )
    ranks = [info.rank for info, _, _ in found]
    duplicates = sorted({r for r in ranks if ranks.count(r) > 1})
    if duplicates:
        raise bad_input(
            f"rank {', '.join(map(str, duplicates))} appears in more than one directory",
            "give each host's run once (each host runs its own --node-rank)",
        )
    with runs.Staging(root) as staging:
        staged = staging.add(first.qualname)
        parts = []
        for i, (info, part, source) in enumerate(found):
            _check(cancel)
            if progress is not None:
                progress(info.rank, i, len(found))
            info.part = f"ranks/{info.rank}"
            _copy_tree(source, staged / info.part)  # its result.json too, as stored (a link: no rewrite)
            if [r.rank for r in part.ranks] != [info.rank]:  # a single-process run: say which rank it is
                part.ranks = [info]
                write_json_atomic(staged / info.part / runs.record_name(part), part.to_dict())
            parts.append((info, part))
        merged = merge_parts(parts)
        merged.created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        combine_artifacts(staged, sorted(parts, key=lambda p: p[0].rank), merged)
        merged.artifacts.worker_log = ""
        _check(cancel)
        staging.commit(staged, merged)
    return merged


def _check(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise OpLensError("cancelled", "the merge was cancelled; nothing was stored")


def combine_artifacts(run_dir: Path, parts: list[tuple[RankInfo, AnyRun]], merged: AnyRun) -> None:
    """The merged run's artifacts from its parts (stored under `run_dir/<part>/`): rank 0's trace,
    and the ranks' device profiles as the vendor lays out a multi-rank job, one profile output
    directory holding one `<instance>_pid_<pid>` folder per rank (Neuron: what Explorer ingests as
    one system profile), hard-linked from the parts."""
    art = merged.artifacts
    first = parts[0][0].part
    art.trace_json = f"{first}/{parts[0][1].artifacts.trace_json}" if parts[0][1].artifacts.trace_json else ""
    output = parts[0][1].artifacts.profile_output_dir
    if not output:
        return
    art.neuron_profiles, art.neffs, art.ntffs, art.system_trace_files, art.files = [], [], [], [], []
    art.neff_ntff_pairs = []
    for info, part in parts:
        source = run_dir / info.part / part.artifacts.profile_output_dir
        if not part.artifacts.profile_output_dir or not source.is_dir():
            continue
        for folder in source.iterdir():  # each rank's own <instance>_pid_<pid>
            dest = run_dir / output / folder.name
            if folder.is_dir() and not dest.exists():
                shutil.copytree(folder, dest, copy_function=_link_or_copy)
        pa = part.artifacts
        for p in pa.neuron_profiles:
            p.rank = info.rank if p.rank is None else p.rank
        art.neuron_profiles += pa.neuron_profiles
        art.neffs += pa.neffs
        art.ntffs += pa.ntffs
        art.neff_ntff_pairs += pa.neff_ntff_pairs
        art.system_trace_files += pa.system_trace_files
    art.profile_output_dir = output


def _copy_tree(source: Path, dest: Path) -> None:
    """A rank's files (not the parts of a merged run under it), hard-linked where possible."""
    dest.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name == "ranks" and item.is_dir():
            continue
        target = dest / item.name
        if item.is_dir():
            shutil.copytree(item, target, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(item), str(target))


def _link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst
