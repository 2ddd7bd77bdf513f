"""`oplens serve --ws` as the WebSocket tests start it, and a client of its transport (the token, the frames,
the LSP messages over them)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

SOURCE = '''\
import torch


def double(x):
    return x * 2


def norm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
'''


@dataclass
class Served:
    url: str
    token: str
    token_file: Path
    workspace: Path


def listening_url(proc: subprocess.Popen[bytes], err: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in err.read_text().splitlines():
            if line.startswith("oplens: listening on ws://"):
                return line.split("listening on ", 1)[1].strip()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"no 'listening on' line from the server:\n{err.read_text()}")


def run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(coro(), timeout=30))


class Client:
    """A minimal LSP client: one JSON-RPC message per text frame."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.last_id = 0

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.last_id += 1
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params}))
        while True:
            frame = await self.ws.recv()
            assert isinstance(frame, str), "the server must send text frames"
            message = json.loads(frame)
            if message.get("id") == self.last_id and "method" not in message:
                return message  # type: ignore[no-any-return]

    async def notify(self, method: str, params: Any = None) -> None:
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def initialize(self, workspace: Path) -> dict[str, Any]:
        answer = await self.request(
            "initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
        )
        await self.notify("initialized", {})
        return answer


def bearer(served: Served, token: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token or served.token}"}


def refused_status(url: str, **kwargs: Any) -> int:
    async def attempt() -> int:
        with pytest.raises(InvalidStatus) as caught:
            async with connect(url, **kwargs):
                pass
        return caught.value.response.status_code

    return run(attempt)  # type: ignore[no-any-return]


class ProfilingClient(Client):
    """Answers the server's own requests (progress tokens) and keeps the notifications it hears."""

    def __init__(self, ws: ClientConnection) -> None:
        super().__init__(ws)
        self.notes: list[dict[str, Any]] = []

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.last_id += 1
        my_id = self.last_id
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.recv())
            if "method" in message and "id" in message:  # e.g. window/workDoneProgress/create
                await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}))
            elif "method" in message:
                self.notes.append(message)
            elif message.get("id") == my_id:
                return message  # type: ignore[no-any-return]
