"""`oplens.runPage {run_id, rank?}`: a stored run's results page as the server writes it
(`oplens.views.run`), for a client that draws it (the VS Code results panel); with `rank`, the page of
that rank's own run within the distributed run `run_id` (its part, read as `oplens.rankPart` reads it).
Answers `{page}` and announces nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.lsp import arguments, merging
from oplens.lsp.client import ClientState
from oplens.lsp.convert import wire
from oplens.records.names import HOT_FUNCTIONS_COMMAND, RUN_PAGE_COMMAND
from oplens.records.run import Run
from oplens.views.ranks import is_merged
from oplens.views.run import run_page


@dataclass
class RunPageArgs:
    run_id: str = wire("run_id")
    rank: int | None = None  # None: the run itself (a distributed run: all ranks, merged)


RUN_PAGE_SHAPE = "{run_id, rank?}"


def page(client: ClientState, arg: Any) -> dict[str, Any]:
    """`{page}`: the results page of run `run_id`, or of rank `rank`'s own run in it."""
    a = arguments.parse(RUN_PAGE_COMMAND, arg, RunPageArgs, RUN_PAGE_SHAPE)
    run = merging.stored(client, a.run_id)
    part = merging.part_of(client, run, a.rank) if a.rank is not None else run
    if not isinstance(run, Run) or not isinstance(part, Run):
        raise JsonRpcInvalidParams(f"{RUN_PAGE_COMMAND}: run {a.run_id} is a program overview: its page is "
                                   f"{HOT_FUNCTIONS_COMMAND}'s")  # fmt: skip
    if a.rank is None:
        return {"page": run_page(run).to_dict()}
    return {"page": run_page(part, distributed=run if is_merged(run) else None, rank=a.rank).to_dict()}
