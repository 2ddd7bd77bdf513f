"""The JSON-RPC protocol, with one fix over pygls: a request whose params do not decode gets
an error *response* (pygls only shows a message, and the client waits forever)."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol


class OpLensProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "id" in data and "method" in data and isinstance(data["id"], (int, str)):
                error = JsonRpcInvalidParams(f"invalid params for {data['method']}: {e.message or 'cannot decode'}")
                self._send_response(data["id"], error=error.to_response_error())
            raise
