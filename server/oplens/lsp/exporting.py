"""`oplens.export {run_id, format}`: a stored run written for Perfetto, speedscope or TensorBoard/HTA on the server's
host (`oplens export`, exports/), into the run's `exports/` folder: the path in the client's terms and how to open
it, in the server's words. Off the event loop: a large run takes seconds."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from oplens.exports.formats import FORMATS
from oplens.exports.formats import export as export_run
from oplens.lsp import arguments
from oplens.lsp.client import ClientState
from oplens.lsp.convert import wire
from oplens.records.errors import OpLensError
from oplens.records.names import EXPORT_COMMAND
from oplens.records.run import Run


@dataclass
class ExportArgs:
    run_id: str = wire("run_id")
    format: str = "perfetto"


EXPORT_SHAPE = f"{{run_id, format: {' | '.join(FORMATS)}}}"


async def export(client: ClientState, arg: Any) -> dict[str, Any]:
    a = arguments.parse(EXPORT_COMMAND, arg, ExportArgs, EXPORT_SHAPE)
    run = client.shared.results.by_id(a.run_id)
    if run is None or not isinstance(run, Run):
        what = "is a program overview" if run is not None else "is no stored run"
        raise JsonRpcInvalidParams(f"{EXPORT_COMMAND}: {a.run_id!r} {what}; export a function's run")
    if a.format not in FORMATS:
        raise JsonRpcInvalidParams(f"{EXPORT_COMMAND}: no format {a.format!r}; one of {', '.join(FORMATS)}")
    try:
        path: Path = await asyncio.to_thread(export_run, run, a.format)
    except OpLensError as e:
        raise client.request_error(e) from None
    return {"path": client.paths.to_local(str(path)), "uri": client.uri(str(path)), "format": a.format,
            "opens_in": FORMATS[a.format].opens_in, "folder": path.is_dir()}  # fmt: skip
