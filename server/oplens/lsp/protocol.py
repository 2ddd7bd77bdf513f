"""The JSON-RPC protocol, with two changes over pygls: a request whose params do not decode gets
an error *response* (pygls only shows a message, and the client waits forever); and the response
to `initialize` replayed by oplens.lsp.early (already answered there) is not sent again."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)


class OpLensProtocol(LanguageServerProtocol):
    replayed_id: str | None = None  # set by oplens.lsp.early: the id of the initialize it replays

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "id" in data and "method" in data and isinstance(data["id"], (int, str)):
                error = JsonRpcInvalidParams(f"invalid params for {data['method']}: {e.message or 'cannot decode'}")
                self._send_response(data["id"], error=error.to_response_error())
            raise

    def _send_response(self, msg_id: str | int, result: Any | None = None, error: ResponseError | None = None) -> None:
        if self.replayed_id is None or msg_id != self.replayed_id:
            super()._send_response(msg_id, result, error)
            return
        self.replayed_id = None
        if error is not None:  # the client was told it is initialized: say what went wrong instead
            log.error("initialize failed after the early answer: %s", error.message)
            self.notify("window/showMessage", {"type": 1, "message": f"OpLens could not initialize: {error.message}"})
