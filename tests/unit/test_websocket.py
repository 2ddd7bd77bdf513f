"""`oplens serve --ws`'s address: what parses and what is refused (the transport itself is
tests/lsp/test_websocket.py's)."""

from __future__ import annotations

import pytest

from oplens.lsp.websocket import parse_address
from oplens.records.errors import OpLensError

# ---- addresses ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("localhost:0", ("localhost", 0)),
        ("[::1]:8765", ("::1", 8765)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("8765", ("127.0.0.1", 8765)),
        (":8765", ("127.0.0.1", 8765)),
    ],
)
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["", "127.0.0.1", "127.0.0.1:", "host:http", "host:65536", "host:-1", "::1:8765", "h:٣"])
def test_parse_address_refuses(text: str) -> None:
    with pytest.raises(OpLensError) as caught:
        parse_address(text)
    assert caught.value.exit_code == 2
    assert "HOST:PORT" in caught.value.message + caught.value.detail
