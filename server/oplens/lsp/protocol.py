"""The JSON-RPC protocol, with two changes over pygls:

- A request whose params do not decode gets an error *response* (pygls alone logs it and the client
  waits forever for an answer). `structure_message` (the protocol's deserialisation, overridden)
  turns such a request into a request for `UNDECODABLE` with the same id, and the server registers
  a handler for that method (`oplens.lsp.server`) that raises invalid params, so pygls sends the
  error response itself, as for any failed request.
- A command reads the `workDoneToken` of its `workspace/executeCommand` request (client-initiated
  progress: the editor shows it where it chooses, with its own Cancel) through `work_done_token()`:
  pygls hands a command its arguments only. pygls's own executeCommand runs as before; an async
  command runs in a task of its own with the token set in that task's context.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Generator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol, lsp_method

log = logging.getLogger(__name__)
UNDECODABLE = "oplens/undecodableRequest"  # not a method for clients: a request pygls could not decode


@dataclass(frozen=True)
class Undecodable:
    method: str  # the method the client asked for
    reason: str


_WORK_DONE_TOKEN: ContextVar[str | None] = ContextVar("oplens_work_done_token", default=None)


def work_done_token() -> str | None:
    """The `workDoneToken` the running command's request gave (None: it gave none, so the server
    asks the client for a token of its own where it reports progress)."""
    return _WORK_DONE_TOKEN.get()


class OpLensProtocol(LanguageServerProtocol):
    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: lsp.ExecuteCommandParams) -> Generator[Any, Any, Any]:
        """pygls's executeCommand, its command given the request's `workDoneToken` (see the module)."""
        steps = super().lsp_workspace__execute_command(params)
        handler, args, kwargs = next(steps)  # an unknown command raises here, as in pygls
        token = params.work_done_token
        if token is not None and inspect.iscoroutinefunction(handler):
            command = handler

            async def with_token(*a: Any, **k: Any) -> Any:
                _WORK_DONE_TOKEN.set(str(token))  # this task's own context: no other request sees it
                return await command(*a, **k)

            handler = with_token
        result = yield handler, args, kwargs
        try:
            steps.send(result)
        except StopIteration as done:
            return done.value
        raise RuntimeError("pygls's executeCommand asked for a second handler")

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            msg_id = data.get("id") if isinstance(data, dict) else None
            if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) and isinstance(data.get("method"), str):
                log.warning("the params of %s request %r do not decode: %s", data["method"], msg_id, e.message)
                reason = Undecodable(data["method"], e.message or "cannot decode")
                return JsonRPCRequestMessage(id=msg_id, method=UNDECODABLE, jsonrpc=str(data.get("jsonrpc")), params=reason)
            raise


def undecodable(params: Any) -> None:
    """The handler of UNDECODABLE: invalid params, answered by pygls (also to a client that sent it)."""
    method, reason = getattr(params, "method", UNDECODABLE), getattr(params, "reason", "not a method for clients")
    raise JsonRpcInvalidParams(f"invalid params for {method}: {reason}")
