"""`oplens.merge`: `oplens merge DIR...` on the server's host, for a distributed capture whose hosts
each stored their own run directory (their ranks under `ranks/<R>/`), where those directories are
on the host the server runs on (a shared file system, or copied there).

The merged run is stored under the server's runs root and treated as a finished profile's run:
added to the shared results, `oplens/result` to the client that asked, every client redrawn. Its
progress and cancel are a profile's (`profiling.track`: the request's `workDoneToken` or the
server's own; `oplens.cancel` too): a cancelled merge stores nothing.

`oplens.rankPart`: one rank's own run within a distributed run (its part, `<run_dir>/ranks/<R>/`),
read on the server's host as `--rank R` reads it (`engine.merge.rank_part`), for a client that shows
one rank. It answers the part and announces nothing: the function's run is still the merged one.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.engine import runs
from oplens.engine.merge import rank_part as read_rank_part
from oplens.lsp import arguments, profiling, results
from oplens.lsp.client import ClientState
from oplens.lsp.convert import wire
from oplens.records.errors import OpLensError, bad_input
from oplens.records.names import MERGE_COMMAND, RANK_PART_COMMAND
from oplens.records.overview import AnyRun


async def merge(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.merge {dirs}`: the merged run, answered as `oplens.profile` answers its run."""
    a = arguments.parse(MERGE_COMMAND, arg, arguments.MergeArgs, arguments.MERGE_SHAPE)
    if not a.dirs:
        raise JsonRpcInvalidParams(f"{MERGE_COMMAND} takes one object {arguments.MERGE_SHAPE}: "
                                   "give the run directory of each host")  # fmt: skip
    dirs = [host_dir(client, d) for d in a.dirs]
    tracker = await profiling.track(client, f"merging {len(dirs)} run{'s' if len(dirs) > 1 else ''}")

    def copying(rank: int, done: int, total: int) -> None:
        tracker.say(f"copying rank {rank}'s part ({done + 1} of {total})", 5 + 90 * done // max(total, 1))

    try:
        try:
            run = await client.shared.merge(dirs, functools.partial(results.announce, client), tracker.cancel, copying)
        except OpLensError as e:  # not a run directory, different functions, a rank twice; cancelled
            raise client.request_error(e) from None
        except OSError as e:  # a part that cannot be read or linked, a runs root that cannot be written
            raise client.request_error(bad_input(f"cannot merge the runs: {e}", "check the directories' permissions")) from None
        except asyncio.CancelledError:
            tracker.cancel.set()  # the client went: the merge stops before its commit
            raise
    except BaseException as e:
        tracker.end(profiling.ending(e))
        raise
    tracker.end(f"{run.target.qualname}: {len(run.ranks)} ranks merged")
    return profiling.reply(client, run)


def host_dir(client: ClientState, d: str) -> Path:
    """A directory as the host names it: an absolute one through the client's path mappings, a
    relative one in the workspace."""
    if not d.strip():
        raise JsonRpcInvalidParams(f"{MERGE_COMMAND} takes one object {arguments.MERGE_SHAPE}: a directory is empty")
    return Path(client.paths.to_host(d)) if d.startswith("/") else client.shared.workspace / d


@dataclass
class RankPartArgs:
    rank: int  # (first: mypy takes `wire(...)` below for a default)
    run_id: str = wire("run_id")  # the distributed (merged) run


RANK_PART_SHAPE = "{run_id, rank}"


def rank_part(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.rankPart {run_id, rank}`: `{uri, run}`, `run` rank `rank`'s own run (a run of its own:
    its `run_dir` its directory on the host, its id `<run_id>/ranks/<R>`). Sent as no notification."""
    a = arguments.parse(RANK_PART_COMMAND, arg, RankPartArgs, RANK_PART_SHAPE)
    part = part_of(client, stored(client, a.run_id), a.rank)
    return {"uri": client.uri(part.target.file), "run": part.to_dict()}


def stored(client: ClientState, run_id: str) -> AnyRun:
    """The stored run `run_id`, or invalid params."""
    run = client.shared.results.by_id(run_id)
    if run is None:
        raise JsonRpcInvalidParams(f"no run {run_id!r}; give {{run_id}} of a run in the runs directory")
    return run


def part_of(client: ClientState, merged: AnyRun, rank: int) -> AnyRun:
    """Rank `rank`'s own run within the distributed run `merged`, read on the host (its id `<run_id>/ranks/<R>`),
    or the request's error."""
    here = client.shared.results.root / merged.run_id
    if "/" not in merged.run_id and runs.record_file(here) is not None:  # where it is now (the runs root may have moved)
        merged = copy.copy(merged)
        merged.run_dir = str(here)
    info = next((i for i in merged.ranks if i.rank == rank), None)
    try:
        if info is not None and info.failed:
            raise bad_input(f"rank {rank} has no part: {info.failed}", "its own run was not stored")
        if info is not None and not info.part:
            raise bad_input(f"rank {rank} has no part in run {merged.run_id}")
        part = read_rank_part(merged, rank)  # no such rank: its message lists the ranks
    except OpLensError as e:
        raise client.request_error(e) from None
    if not part.run_id or part.run_id == merged.run_id:
        part.run_id = f"{merged.run_id}/{info.part if info is not None else f'ranks/{rank}'}"
    return part
