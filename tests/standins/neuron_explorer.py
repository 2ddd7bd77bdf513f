"""STAND-IN for the `neuron-explorer` executable (aws-neuronx-tools), tests only.

The tests write this file out as an executable named `neuron-explorer` (with a shebang).
  neuron-explorer view [--port UI] [--api-port API]     serve the UI and API ports until killed
  neuron-explorer view -d DIR | -n NEFF -s NTFF [--data-path DIR] --ingest-only --display-name NAME [--framework-source-root DIR]
                                 (with --data-path, the processed profile lands in <data-path>/profiles/global/<name>@latest/)
                                                         check the inputs, print the profile's link
Environment (set by the test):
  STANDIN_EXPLORER_RECORD=PATH   append each call's argv (JSON lines) to PATH
  STANDIN_EXPLORER_FAIL_START=1  `view` exits at once with an error (a refused option)
  STANDIN_EXPLORER_FAIL_INGEST=1 the ingest fails (exit 1)
  STANDIN_EXPLORER_DROPPED=N     the ingest prints the runtime's dropped-events warning
  STANDIN_EXPLORER_PROCESSED=DIR the ingest's processed profile: DIR's Parquet tables (else an empty folder)
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socketserver
import sys
import threading
from pathlib import Path


def record(**data: object) -> None:
    path = os.environ.get("STANDIN_EXPLORER_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), **data}) + "\n")


def option(argv: list[str], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else default


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = b"<html><title>Neuron Explorer (stand-in)</title></html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serve(argv: list[str]) -> int:
    if os.environ.get("STANDIN_EXPLORER_FAIL_START") == "1":
        print("Error: unknown flag: --api-port", file=sys.stderr)
        return 1
    ui = int(option(argv, "--port", "3001") or 3001)
    api = int(option(argv, "--api-port", "3002") or 3002)
    servers = [socketserver.ThreadingTCPServer(("127.0.0.1", port), Page) for port in (ui, api)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    record(serving=[ui, api])
    print(f"View a list of profiles at http://localhost:{ui}/", flush=True)
    print("ctrl-c to exit", flush=True)
    threading.Event().wait()
    return 0


def ingest(argv: list[str]) -> int:
    name = option(argv, "--display-name")
    if not name:
        print("Error: --display-name is required with --ingest-only", file=sys.stderr)
        return 2
    if os.environ.get("STANDIN_EXPLORER_FAIL_INGEST") == "1":
        print("ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch", file=sys.stderr)
        return 1
    directory = option(argv, "-d")
    if directory is not None:
        if not any(Path(directory).rglob("trace_info.pb")):
            print(f"No metadata found for system profile: {name}", file=sys.stderr)
            return 1
    else:
        neff, ntff = option(argv, "-n"), option(argv, "-s")
        if not (neff and ntff and Path(neff).is_file() and Path(ntff).is_file()):
            print("Error: give -d DIR, or -n NEFF and -s NTFF", file=sys.stderr)
            return 2
    data_path = option(argv, "--data-path")
    if data_path is not None:  # how-to-analyze-profile-output.rst: <data-path>/profiles/global/<display-name>@latest/
        processed = Path(data_path) / "profiles" / "global" / f"{name}@latest"
        processed.mkdir(parents=True, exist_ok=True)
        tables = os.environ.get("STANDIN_EXPLORER_PROCESSED")
        if tables:  # a stand-in processed profile the test wrote with the documented tables
            shutil.copytree(tables, processed, dirs_exist_ok=True)
    dropped = int(os.environ.get("STANDIN_EXPLORER_DROPPED", "0"))
    if dropped:
        print(f"WARN[0000] Warning: {dropped} trace events were dropped during capture (stored 1 out of {dropped + 1}).")
    print(f"Profile processed. View it at http://localhost:3001/profile/{name}")
    return 0


def main(argv: list[str]) -> int:
    record(argv=argv)
    if argv[:1] == ["--version"]:  # documented (get-started.rst: `neuron-explorer --version`), its output is not
        print("neuron-explorer 2.31.0 (stand-in)")
        return 0
    if not argv or argv[0] != "view":
        print("usage: neuron-explorer view ...", file=sys.stderr)
        return 2
    return ingest(argv) if "--ingest-only" in argv else serve(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
