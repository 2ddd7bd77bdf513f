"""`oplens.backends`, the editor's status bar and backend pick: from the real server over stdio, what `auto`
picks on the server's host before any run (here the CPU), each backend's presence in words, and a request
for another backend (the argument, else the client's setting)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from oplens.records.names import BACKENDS_COMMAND
from support.lsp import plain, run_command, served_client


async def test_the_backends_of_the_servers_host(tmp_path: Path) -> None:
    async with served_client(tmp_path) as client:  # the setting not given: auto
        answer = plain(await run_command(client, BACKENDS_COMMAND, {}))
        assert answer["requested"] == "auto" and answer["torch_error"] == ""
        chosen = answer["chosen"]
        assert (chosen["name"], chosen["title"], chosen["device_label"]) == ("cpu", "CPU", "CPU")
        assert chosen["note"].startswith("auto fell back to the CPU (neuron: torch_neuronx is not installed; cuda: ")
        assert [(b["name"], b["available"]) for b in answer["backends"]] == [
            ("auto", True), ("cpu", True), ("cuda", False), ("neuron", False)]  # fmt: skip
        assert answer["backends"][0]["detail"] == "the first present of Neuron, CUDA, CPU: CPU here"
        assert answer["interpreters"] == []  # this host has no Neuron DLAMI venv

        cuda = plain(await run_command(client, BACKENDS_COMMAND, {"backend": "cuda"}))
        assert cuda["chosen"] is None and cuda["problem"].startswith("the cuda backend is unavailable")
        with pytest.raises(JsonRpcException, match="unknown backend 'tpu'"):
            await run_command(client, BACKENDS_COMMAND, {"backend": "tpu"})


async def test_the_clients_setting_is_the_backend_asked_about(tmp_path: Path) -> None:
    async with served_client(tmp_path, backend="cpu") as client:
        answer = plain(await run_command(client, BACKENDS_COMMAND, {}))
        assert answer["requested"] == "cpu" and answer["chosen"]["name"] == "cpu" and answer["chosen"]["note"] == ""
