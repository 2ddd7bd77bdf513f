"""`oplens.merge`: `oplens merge DIR...` on the server's host, for a distributed capture whose hosts
each stored their own run directory (their ranks under `ranks/<R>/`), where those directories are
on the host the server runs on (a shared file system, or copied there).

The merged run is stored under the server's runs root and treated as a finished profile's run:
added to the shared results, `oplens/result` to the client that asked, every client redrawn.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.lsp import arguments, profiling, results
from oplens.lsp.client import ClientState
from oplens.records.errors import OpLensError, bad_input
from oplens.records.names import MERGE_COMMAND


async def merge(client: ClientState, arg: Any) -> dict[str, Any]:
    """`oplens.merge {dirs}`: the merged run, answered as `oplens.profile` answers its run."""
    a = arguments.parse(MERGE_COMMAND, arg, arguments.MergeArgs, arguments.MERGE_SHAPE)
    if not a.dirs:
        raise JsonRpcInvalidParams(f"{MERGE_COMMAND} takes one object {arguments.MERGE_SHAPE}: "
                                   "give the run directory of each host")  # fmt: skip
    dirs = [host_dir(client, d) for d in a.dirs]
    try:
        run = await client.shared.merge(dirs, functools.partial(results.announce, client))
    except OpLensError as e:  # not a run directory, different functions, a rank twice
        raise client.request_error(e) from None
    except OSError as e:  # a part that cannot be read or linked, a runs root that cannot be written
        raise client.request_error(bad_input(f"cannot merge the runs: {e}", "check the directories' permissions")) from None
    return profiling.reply(client, run)


def host_dir(client: ClientState, d: str) -> Path:
    """A directory as the host names it: an absolute one through the client's path mappings, a
    relative one in the workspace."""
    if not d.strip():
        raise JsonRpcInvalidParams(f"{MERGE_COMMAND} takes one object {arguments.MERGE_SHAPE}: a directory is empty")
    return Path(client.paths.to_host(d)) if d.startswith("/") else client.shared.workspace / d
