"""The JSON-RPC protocol, with one change over pygls: a request whose params do not decode gets an
error *response* (pygls alone logs it and the client waits forever for an answer).

Done through pygls's public hooks only: `structure_message` (the protocol's deserialisation,
overridden) turns such a request into a request for `UNDECODABLE` with the same id, and the server
registers a handler for that method (`oplens.lsp.server`) that raises invalid params, so pygls
sends the error response itself, as for any failed request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import JsonRPCRequestMessage, LanguageServerProtocol

log = logging.getLogger(__name__)
UNDECODABLE = "oplens/undecodableRequest"  # not a method for clients: a request pygls could not decode


@dataclass(frozen=True)
class Undecodable:
    method: str  # the method the client asked for
    reason: str


class OpLensProtocol(LanguageServerProtocol):
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
