"""A real IPython kernel (ipykernel), driven through jupyter_client as Jupyter and VS Code drive one: the
notebook tests' and the end-to-end test's way to run cells."""

from __future__ import annotations

import os
import queue
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager


class Kernel:
    """One real kernel: `run(code)` executes a cell and returns what it output."""

    def __init__(self, cwd: Path) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=str(cwd), env={**os.environ, "OMP_NUM_THREADS": "1"})
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str, timeout: float = 300) -> dict[str, Any]:
        return self.outputs(self.kc.execute(code), code, timeout)

    def outputs(self, msg_id: str, code: str = "", timeout: float = 300) -> dict[str, Any]:
        """What the execution `msg_id` (`kc.execute`'s) output, once the kernel is idle again."""
        out: dict[str, Any] = {"stdout": "", "stderr": "", "html": [], "text": [], "error": None}
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no answer in {timeout} s to {code[:80]!r}; so far {out}") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
            elif kind in ("display_data", "execute_result"):
                out["html"].append(content["data"].get("text/html", ""))
                out["text"].append(content["data"].get("text/plain", ""))
            elif kind == "error":
                out["error"] = content
            elif kind == "status" and content["execution_state"] == "idle":
                return out

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
