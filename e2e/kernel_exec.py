"""Execute code (stdin) in a running ipykernel (its connection file, argv[1]) through jupyter_client and print its
outputs as JSON lines, `{"kind": "stdout" | "stderr" | "error" | "data", "mime": ..., "text": ...}`, until the
kernel is idle again: the e2e's Jupyter stand-in (e2e/standins/jupyter) runs `Kernel.executeCode` with it.
SIGINT interrupts the kernel's execution (the API's cancellation) and waits for it to end."""

from __future__ import annotations

import json
import signal
import sys

from jupyter_client import BlockingKernelClient


def main() -> int:
    client = BlockingKernelClient(connection_file=sys.argv[1])
    client.load_connection_file()
    client.start_channels()
    msg_id = client.execute(sys.stdin.read())

    def interrupt(*_: object) -> None:  # ipykernel interrupts itself on a control channel's interrupt_request
        client.control_channel.send(client.session.msg("interrupt_request", {}))

    signal.signal(signal.SIGINT, interrupt)
    while True:
        msg = client.get_iopub_msg(timeout=600)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out = {"kind": content["name"], "text": content["text"]}
        elif kind in ("display_data", "execute_result"):
            for mime, data in content["data"].items():
                print(json.dumps({"kind": "data", "mime": mime, "text": data if isinstance(data, str) else json.dumps(data)}), flush=True)
            continue
        elif kind == "error":
            error = {"name": content["ename"], "message": content["evalue"], "stack": "\n".join(content["traceback"])}
            out = {"kind": "error", "text": json.dumps(error)}
        elif kind == "status" and content["execution_state"] == "idle":
            return 0
        else:
            continue
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())
