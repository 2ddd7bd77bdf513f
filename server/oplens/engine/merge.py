"""`oplens merge DIR...`: the parts of one distributed capture, written on several hosts (each host's
`oplens run` stores the ranks it ran), combined into one run with every rank.

Each directory is a run (merged or single-process) of the same function. Its rank parts are copied
(hard links where the file system allows) under the new run's `ranks/<R>/`, and the new run is
merged from them as `oplens run` merges one host's (analysis/ranks.py). Nothing is moved or changed
in the given directories.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from oplens.analysis.ranks import merge as merge_parts
from oplens.engine import runs
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import bad_input
from oplens.records.run import RankInfo, Run


def rank_part(run: Run, rank: int) -> Run:
    """Rank `rank`'s own run within the distributed run `run` (stored)."""
    for info in run.ranks:
        if info.rank == rank:
            part_dir = Path(run.run_dir) / info.part
            try:
                part = runs.load(part_dir)
            except (OSError, ValueError) as e:
                raise bad_input(f"cannot read rank {rank}'s part {part_dir / runs.RESULT}: {e}") from None
            part.run_dir = str(part_dir)
            return part
    have = ", ".join(str(i.rank) for i in run.ranks) or "none: it is not a distributed run"
    raise bad_input(f"run {run.run_id} has no rank {rank}", f"its ranks: {have}")


def merge_dirs(dirs: list[Path], root: Path) -> Run:
    """One run from the runs in `dirs` (each a host's part of one job), stored under `root`."""
    if len(dirs) < 1:
        raise bad_input("oplens merge needs the run directories to combine", "give each host's run directory")
    found: list[tuple[RankInfo, Run, Path]] = []
    for d in dirs:
        try:
            run = runs.load(d)
        except (OSError, ValueError) as e:
            raise bad_input(f"{d} is not a run directory: {e}", "give the directories `oplens run` stored") from None
        if run.ranks:
            for info in run.ranks:
                part = runs.load(d / info.part)
                found.append((info, part, d / info.part))
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
    root = runs.prepare(root)
    run_id = runs.new_run_id(first.qualname)
    staged = runs.stage(root, run_id)
    try:
        parts = []
        for info, part, source in found:
            info.part = f"ranks/{info.rank}"
            _copy_tree(source, staged / info.part)
            part.run_id, part.run_dir = f"{run_id}/{info.part}", ""
            part.ranks = [info]
            write_json_atomic(staged / info.part / runs.RESULT, part.to_dict())
            parts.append((info, part))
        merged = merge_parts(parts)
        merged.run_id = run_id
        merged.created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        trace = f"{merged.ranks[0].part}/trace.json"
        merged.artifacts.trace_json = trace if (staged / trace).is_file() else ""
        merged.artifacts.worker_log = ""
        runs.commit(root, staged, merged)
    except BaseException:
        runs.discard(staged)
        raise
    return merged


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
