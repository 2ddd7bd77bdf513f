"""STAND-IN for the `neuron-explorer` executable (aws-neuronx-tools), tests only.

The tests write this file out as an executable named `neuron-explorer` (with a shebang).
  neuron-explorer view [--data-path DIR] [--port UI] [--api-port API]
                                 serve the UI and API ports until killed, and keep a registry of the profiles
                                 uploaded to it (<data-path>/standin-profiles.json; without --data-path the data path
                                 is ./neuron-explorer-data, a stand-in choice: the real default is not documented)
  neuron-explorer view -d DIR | -n NEFF -s NTFF [--data-path DIR] --ingest-only --display-name NAME [--framework-source-root DIR]
                                 (with --data-path, the processed profile lands in <data-path>/profiles/global/<name>@latest/)
                                                         check the inputs, print the profile's link
  neuron-explorer upload --endpoint URL (--profile-directory DIR | --neff F --ntff F) --name N [--namespace NS]
                         [--uploader U] [--overwrite] [--wait] [--source-code PATH]
                                 register a profile with the viewer whose API is URL; the viewer processes it into
                                 <data-path>/profiles/<NS>/<N>@latest/ (the same tables as the ingest), --wait until done

`upload`, as trn2 users register profiles with a running viewer (public scripts, found by "neuron-explorer upload"):
`neuron-explorer upload --endpoint http://localhost:3002 --profile-directory "$SYSDIR" --name N --namespace "$NS"
--uploader "$NS" --overwrite --wait` with SYSDIR the dirname of the session's ntrace.pb, and `... --neff "$NEFF"
--ntff "$NTFF" ...` for a device profile; a capture-and-upload.sh: `--namespace` "default: global", `--endpoint`
"default: http://localhost:3002", --overwrite so "rerunning with the same --name overwrites the prior profile", and
without --wait "the Explorer server keeps processing in the background". aws-neuron-sdk, tools/neuron-explorer/
get-started.rst: the UI on 3001, the API on 3002; "Directory Upload requires a system profile (ntrace.pb +
trace_info.pb). It does not work with device-only profiles. For device-only profiles (just .neff + .ntff), use
Individual Files"; "once a profile is uploaded, it's visible in both interfaces". A user's notes read a profile at
`http://localhost:3002/api/v1/profiles/namespace/global/profile_name/${PROFILE}/artifacts`. The stand-in's API
(its own, the real one is not documented beyond that path): `POST /api/v1/profiles` (JSON: name, namespace, uploader,
overwrite, profile_directory | neff + ntff: paths on this host, where the real client sends the files) answers 202
and processes in the background; `GET /api/v1/profiles/namespace/<ns>/profile_name/<name>` 200 with the profile's
JSON {name, namespace, uploader, status: PROCESSING | PROCESSED | FAILED, ...}, else 404; `GET /api/v1/profiles`
the list (API answers carry `Access-Control-Allow-Origin: *`). The UI port: `GET /` the landing page, `GET
/profile/<name>` 200 for a processed profile (namespace global), else 404; as the real UI, the profile's page reads
it from the API at localhost:<api port> (a script: "API reachable: ..." or "API unreachable: ..." in #api-status).
Environment (set by the test):
  STANDIN_EXPLORER_RECORD=PATH   append each call's argv (JSON lines) to PATH
  STANDIN_EXPLORER_HOST=ADDRESS  `view` binds ADDRESS (default 127.0.0.1), e.g. 127.0.0.2 for a "host" that is not
                                 the test's own localhost (tests/system/test_tunnel.py)
  STANDIN_EXPLORER_FAIL_START=1  `view` exits at once with an error (a refused option)
  STANDIN_EXPLORER_FAIL_INGEST=1 the ingest fails (exit 1); in the viewer's environment, its processing of an upload
  STANDIN_EXPLORER_FAIL_UPLOAD=1 `upload` fails as troubleshooting.rst shows it: `Failed to upload NTFF (HTTP 400)`
  STANDIN_EXPLORER_UPLOAD_DELAY=S `upload` takes S seconds first
  STANDIN_EXPLORER_DROPPED=N     the ingest prints the runtime's dropped-events warning
  STANDIN_EXPLORER_PROCESSED=DIR the ingest's processed profile: DIR's Parquet tables (else an empty folder)
  STANDIN_SYSTRACE_FLOWS=framework|runtime|none
                                 which system-profile rows carry flow ids (default framework: the runtime's launch
                                 row links to the hardware execution and to the framework op's row)
  STANDIN_SYSTRACE_CLOCK_NS=N    the runtime's and hardware rows N ns off the framework's clock
  STANDIN_SYSTRACE_DROP=COLUMN   SystemProfileEvents written without COLUMN
  STANDIN_EXPLORER_REFUSE_FLAGS=--x,--y
                                 a release that knows neither flag: any command line naming one exits 1 with
                                 "Error: unknown flag: --x" (e.g. --source-code, --framework-source-root)
  STANDIN_EXPLORER_DOCUMENTED_ONLY=1
                                 only the documented verbs and flags (see DOCUMENTED_VIEW_FLAGS): no `upload`, no
                                 --ignore-instruction/dma/event-trace, no --api-port
  STANDIN_SCHEMA_VERSION=X.Y.Z   the processed tables' Metadata.profile_schema_version (see `metadata`)
  STANDIN_EXPLORER_VERSION=V     what --version prints (default 2.31.0)
  STANDIN_EXPLORER_WARNING="CATEGORY: MESSAGE"
                                 the processed system trace's Warning table holds that row (profile-schema-reference.rst:
                                 "Warnings produced during profile processing", columns message, category)

With -d SESSION whose ntrace.pb is the stand-in torch_neuronx's (JSON of known executions), the ingest
writes the system profile's tables as profile-schema-reference.rst documents them (see `system_tables`).
"""

from __future__ import annotations

import contextlib
import html
import http.server
import io
import json
import os
import shutil
import socketserver
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote


def record(**data: object) -> None:
    path = os.environ.get("STANDIN_EXPLORER_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), **data}) + "\n")


def option(argv: list[str], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else default


class Registry:
    """The profiles uploaded to this viewer, kept in its data path (as the real one keeps them across restarts)."""

    def __init__(self, data_path: Path, ui_port: int) -> None:
        self.data_path = data_path
        self.ui_port = ui_port
        self.file = data_path / "standin-profiles.json"
        self.lock = threading.Lock()
        self.process_lock = threading.Lock()  # one processing at a time (it redirects stdout)
        try:
            known = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        self.profiles: dict[str, dict[str, Any]] = {k: v for k, v in known.items() if v.get("status") == "PROCESSED"}

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            known = self.profiles.get(f"{namespace}/{name}")
        processed = self.data_path / "profiles" / namespace / f"{name}@latest"
        if known is None and processed.is_dir():
            # a profile another `view -d ... --ingest-only --data-path <this data path>` processed: listed too. The docs
            # say the server keeps the Parquet tables "stored under its data path" (profile-artifacts.rst); that a
            # running viewer lists one ingested there by another process is the stand-in's assumption
            # (docs/trainium-checklist.md)
            return {"name": name, "namespace": namespace, "uploader": "", "status": "PROCESSED", "path": str(processed),
                    "url": f"http://localhost:{self.ui_port}/profile/{quote(name, safe='')}", "log": ""}  # fmt: skip
        return known

    def put(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.profiles[f"{entry['namespace']}/{entry['name']}"] = entry
            self.data_path.mkdir(parents=True, exist_ok=True)
            self.file.write_text(json.dumps(self.profiles, indent=1), encoding="utf-8")

    def upload(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Check an upload, register it, process it in the background (`--wait` polls its status)."""
        name, namespace = str(body.get("name") or ""), str(body.get("namespace") or "global")
        if not name:
            return 400, {"error": "a profile name is required"}
        directory, neff, ntff = body.get("profile_directory"), body.get("neff"), body.get("ntff")
        if directory:
            missing = [n for n in ("ntrace.pb", "trace_info.pb") if not (Path(directory) / n).is_file()]
            if missing:
                why = f"No metadata found for system profile: {name} ({' and '.join(missing)} not in {directory})"
                return 400, {"error": why}
        elif not (neff and ntff and Path(neff).is_file() and Path(ntff).is_file()):
            return 400, {"error": "give a profile directory, or a NEFF and an NTFF"}
        known = self.get(namespace, name)
        if known is not None and known.get("status") != "FAILED" and not body.get("overwrite"):
            why = f"profile {name} already exists in namespace {namespace}; upload with --overwrite to replace it"
            return 409, {"error": why}
        entry = {"name": name, "namespace": namespace, "uploader": str(body.get("uploader") or ""), "status": "PROCESSING",
                 "profile_directory": directory or "", "neff": neff or "", "ntff": ntff or "",
                 "source_code": str(body.get("source_code") or ""),
                 "url": f"http://localhost:{self.ui_port}/profile/{quote(name, safe='')}", "log": ""}  # fmt: skip
        self.put(entry)
        threading.Thread(target=self.process, args=(dict(entry),), daemon=True).start()
        return 202, entry

    def process(self, entry: dict[str, Any]) -> None:
        """The stand-in ingest (`ingest`, its table writing as it is) into a staging data path, then moved to
        <data-path>/profiles/<namespace>/<name>@latest/."""
        name, namespace = entry["name"], entry["namespace"]
        self.data_path.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=self.data_path))
        inputs = ["-d", entry["profile_directory"]] if entry["profile_directory"] else ["-n", entry["neff"], "-s", entry["ntff"]]
        argv = ["view", *inputs, "--data-path", str(staging), "--ingest-only", "--display-name", name]
        out = io.StringIO()
        with self.process_lock, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                code = ingest(argv)
            except Exception as e:  # noqa: BLE001 (a stand-in: the failure is the profile's status)
                print(f"processing failed: {e!r}")
                code = 1
        if code == 0:
            target = self.data_path / "profiles" / namespace / f"{name}@latest"
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(staging / "profiles" / "global" / f"{name}@latest"), str(target))
            if entry.get("source_code"):
                source_archive(Path(entry["source_code"]), target)
            entry.update(status="PROCESSED", path=str(target))
        else:
            entry["status"] = "FAILED"
        shutil.rmtree(staging, ignore_errors=True)
        entry["log"] = out.getvalue()
        self.put(entry)
        record(processed=name, namespace=namespace, status=entry["status"])


def source_archive(source: Path, processed: Path) -> None:
    """`upload --source-code <path>`: the sources are kept beside the processed profile, as the vendor's notes describe
    it ("upload a source archive alongside the profile (CLI `neuron-explorer upload --source-code <path>`). The archive
    is stored as `source_folder.tar.gz` next to the parquet outputs and served by the `/fs/*` API"; "User upload |
    `source_folder.tar.gz` (gzipped tar of `.py` files)", aws-neuron/neuron-agentic-development,
    skills/neuron-explorer-profile-schema/SKILL.md). The stand-in archives a directory's `.py` files (a file: itself)."""
    import tarfile

    files = sorted(source.rglob("*.py")) if source.is_dir() else [source]
    with tarfile.open(processed / "source_folder.tar.gz", "w:gz") as tar:
        for f in files:
            if ".oplens" not in f.parts:
                tar.add(f, arcname=str(f.relative_to(source)) if source.is_dir() else f.name)


class Page(http.server.BaseHTTPRequestHandler):
    """One of the viewer's two ports: `role` "ui" (the pages) or "api" (what the pages and `upload` call)."""

    role = "ui"
    registry: Registry
    api_port = 3002  # where the UI's pages call the API

    def do_GET(self) -> None:  # noqa: N802
        path = unquote(self.path.split("?", 1)[0]).rstrip("/")
        if self.role == "ui":
            if path == "":
                return self.send(200, "<html><title>Neuron Explorer (stand-in)</title></html>", "text/html")
            if path.startswith("/profile/"):
                entry = self.registry.get("global", path.removeprefix("/profile/"))
                if entry is not None and entry["status"] == "PROCESSED":
                    return self.send(200, self.profile_page(entry["name"]), "text/html")
                return self.send(404, "<html>Profile not found</html>", "text/html")
            return self.send(404, "<html>Not found</html>", "text/html")
        parts = path.split("/")  # ['', 'api', 'v1', 'profiles', 'namespace', NS, 'profile_name', NAME, ...]
        if path == "/api/v1/profiles":
            with self.registry.lock:
                listed = list(self.registry.profiles.values())
            return self.send(200, json.dumps({"profiles": listed}))
        if parts[:5] == ["", "api", "v1", "profiles", "namespace"] and len(parts) >= 8 and parts[6] == "profile_name":
            entry = self.registry.get(parts[5], parts[7])
            if entry is not None:
                return self.send(200, json.dumps(entry))
            return self.send(404, json.dumps({"error": f"profile {parts[7]} not found in namespace {parts[5]}"}))
        return self.send(404, json.dumps({"error": "not found"}))

    def profile_page(self, name: str) -> str:
        """A profile's page: as the real UI, its script reads the profile from the API port at localhost (so in
        a browser on the user's machine both ports must be forwarded), and says in #api-status whether it could."""
        api = json.dumps(f"http://localhost:{self.api_port}/api/v1/profiles/namespace/global/profile_name/{quote(name, safe='')}")
        return f"""<html><head><title>{html.escape(name)} - Neuron Explorer (stand-in)</title></head>
<body><p id="api-status">calling the API</p>
<script>
const said = document.getElementById("api-status");
fetch({api})
  .then((r) => {{ if (!r.ok) throw new Error(`HTTP ${{r.status}}`); return r.json(); }})
  .then((p) => {{ said.textContent = `API reachable: ${{p.name}} ${{p.status}}`; }})
  .catch((e) => {{ said.textContent = `API unreachable: ${{e}}`; }});
</script></body></html>"""

    def do_POST(self) -> None:  # noqa: N802
        if self.role != "api" or self.path.rstrip("/") != "/api/v1/profiles":
            return self.send(404, json.dumps({"error": "not found"}))
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError:
            return self.send(400, json.dumps({"error": "the body is not JSON"}))
        code, answer = self.registry.upload(body if isinstance(body, dict) else {})
        return self.send(code, json.dumps(answer))

    def send(self, code: int, body: str, kind: str = "application/json") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        if self.role == "api":  # the UI's pages (another origin: the UI port) read it
            self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # a viewer started again on the ports of one just stopped (as Go's servers bind)
    daemon_threads = True


def serve(argv: list[str]) -> int:
    if os.environ.get("STANDIN_EXPLORER_FAIL_START") == "1":
        print("Error: unknown flag: --api-port", file=sys.stderr)
        return 1
    ui = int(option(argv, "--port", "3001") or 3001)
    api = int(option(argv, "--api-port", "3002") or 3002)
    data_path = Path(option(argv, "--data-path") or "neuron-explorer-data").resolve()
    registry = Registry(data_path, ui)
    servers = []
    for role, port in (("ui", ui), ("api", api)):
        handler = type(f"{role.title()}Page", (Page,), {"role": role, "registry": registry, "api_port": api})
        servers.append(Server((os.environ.get("STANDIN_EXPLORER_HOST", "127.0.0.1"), port), handler))
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    record(serving=[ui, api], data_path=str(data_path))
    print(f"View a list of profiles at http://localhost:{ui}/", flush=True)
    print("ctrl-c to exit", flush=True)
    threading.Event().wait()
    return 0


def upload(argv: list[str]) -> int:
    """`neuron-explorer upload`: check the inputs as the docs say, POST them to the viewer's API, --wait for it."""
    endpoint, name = option(argv, "--endpoint"), option(argv, "--name")
    directory, neff, ntff = option(argv, "--profile-directory"), option(argv, "--neff"), option(argv, "--ntff")
    namespace = option(argv, "--namespace", "global") or "global"
    if not endpoint or not name:
        print("Error: --endpoint and --name are required", file=sys.stderr)
        return 2
    delay = float(os.environ.get("STANDIN_EXPLORER_UPLOAD_DELAY", "0") or 0)
    if delay:
        time.sleep(delay)
    if directory is not None:
        missing = [n for n in ("ntrace.pb", "trace_info.pb") if not (Path(directory) / n).is_file()]
        if not Path(directory).is_dir() or missing:
            print(f"Error: {directory} is not a system profile: a directory upload needs ntrace.pb and trace_info.pb in "
                  f"it (missing: {', '.join(missing)}); for a device-only profile upload --neff and --ntff",
                  file=sys.stderr)  # fmt: skip
            return 1
        body: dict[str, Any] = {"profile_directory": str(Path(directory).resolve())}
    elif neff and ntff:
        for f in (neff, ntff):
            if not Path(f).is_file():
                print(f"Error: {f}: no such file", file=sys.stderr)
                return 1
        body = {"neff": str(Path(neff).resolve()), "ntff": str(Path(ntff).resolve())}
    else:
        print("Error: give --profile-directory DIR, or --neff NEFF and --ntff NTFF", file=sys.stderr)
        return 2
    if os.environ.get("STANDIN_EXPLORER_FAIL_UPLOAD") == "1":
        print("Error: Failed to upload NTFF (HTTP 400)", file=sys.stderr)
        return 1
    source = option(argv, "--source-code")
    if source is not None and not Path(source).exists():
        print(f"Error: --source-code {source}: no such file or directory", file=sys.stderr)
        return 1
    body.update(name=name, namespace=namespace, uploader=option(argv, "--uploader", os.environ.get("USER", "")),
                overwrite="--overwrite" in argv, source_code=str(Path(source).resolve()) if source else "")  # fmt: skip
    base = endpoint.rstrip("/")
    request = urllib.request.Request(f"{base}/api/v1/profiles", json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            entry = json.loads(answer.read())
    except urllib.error.HTTPError as e:
        try:
            why = json.loads(e.read()).get("error", "")
        except ValueError:
            why = ""
        print(f"Error: the upload of {name} was refused (HTTP {e.code}): {why}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        refused = isinstance(reason, ConnectionRefusedError)
        why = "connection refused" if refused else str(reason)
        print(f"Error: cannot reach the Neuron Explorer API at {endpoint} ({why}): is `neuron-explorer view` running?",
              file=sys.stderr)  # fmt: skip
        return 1
    print(f"Uploaded {name} to namespace {namespace} (status {entry['status']})")
    if "--wait" not in argv:
        return 0
    status_url = f"{base}/api/v1/profiles/namespace/{quote(namespace, safe='')}/profile_name/{quote(name, safe='')}"
    while entry["status"] == "PROCESSING":
        time.sleep(0.05)
        try:
            with urllib.request.urlopen(status_url, timeout=30) as answer:
                entry = json.loads(answer.read())
        except (OSError, ValueError) as e:
            print(f"Error: lost the Neuron Explorer API at {endpoint} while {name} was processing ({e})", file=sys.stderr)
            return 1
    print(entry.get("log", ""), end="")
    if entry["status"] != "PROCESSED":
        print(f"Error: processing {name} failed (status {entry['status']})", file=sys.stderr)
        return 1
    print(f"Profile {name} processed. View it at {entry['url']}")
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
        elif directory is not None:
            system_tables(Path(directory), processed, argv)
    dropped = int(os.environ.get("STANDIN_EXPLORER_DROPPED", "0"))
    if dropped:
        print(f"WARN[0000] Warning: {dropped} trace events were dropped during capture (stored 1 out of {dropped + 1}).")
    print(f"Profile processed. View it at http://localhost:3001/profile/{name}")
    return 0


def system_tables(session: Path, processed: Path, argv: list[str]) -> None:
    """SystemProfileEvents (+ Warning) from the stand-in's ntrace.pb and the session's trace.json, with the
    documented columns (aws-neuron-sdk, tools/neuron-explorer/profile-schema-reference.rst, schema 7.4.0):
    `id, name, start_ts, end_ts, duration_ns, trace_event_source (framework | neuron_rt | neuron_hw),
    instance_id, process_id, thread_id, nc_idx, pcore_idx, worker_gid, flow_id (array of string, "only
    present on events that participate in a flow (e.g. linking a framework dispatch event to the
    corresponding runtime execution event)"), framework_stream_id, extra_attributes_json`. The framework
    rows are the framework trace's events (overview-system-profiles.rst: the system profile holds "the ML
    framework's calls"), their `ts` made absolute with the trace's baseTimeNanoseconds. Hardware rows carry
    `{"model_id": ...}` in extra_attributes_json and flow ids that are small per-model counters
    (Tilebench, tilebench/neuron_diag/native_device.py).

    STANDIN_SYSTRACE_NRTA_SEQ=1: the runtime and hardware rows also carry the execution's async sequence id,
    `{"nrta_seq_id": ...}` in extra_attributes_json: the runtime's release notes say it "Added async sequence IDs
    (nrta_seq_t) to system trace events for correlation between async operations and hardware execution events",
    and the table has no column of its own for it (extra_attributes_json: "additional attributes that were
    present in the event but don't have dedicated column in this table yet")."""
    sessions = [session] if (session / "ntrace.pb").is_file() else sorted(p.parent for p in session.rglob("ntrace.pb"))
    rows: list[dict[str, object]] = []
    warnings: list[dict[str, str]] = []
    said = os.environ.get("STANDIN_EXPLORER_WARNING", "")  # "CATEGORY: MESSAGE", the Warning table's one row
    if said:
        category, _, message = said.partition(": ")
        warnings.append({"category": category, "message": message})
    flows = os.environ.get("STANDIN_SYSTRACE_FLOWS", "framework")
    offset = int(os.environ.get("STANDIN_SYSTRACE_CLOCK_NS", "0"))
    seq_ids = os.environ.get("STANDIN_SYSTRACE_NRTA_SEQ") == "1"
    for s in sessions:
        try:
            trace = json.loads((s / "ntrace.pb").read_text(encoding="utf-8"))
        except ValueError:
            continue  # the plain stand-in bytes: a system trace without known executions
        if not isinstance(trace, dict) or trace.get("standin") != "ntrace":
            continue
        framework = json.loads((s / "trace.json").read_text(encoding="utf-8")) if (s / "trace.json").is_file() else {}
        base = int(framework.get("baseTimeNanoseconds", 0) or 0)
        launch_rows: dict[tuple[int, int], dict[str, object]] = {}
        for e in framework.get("traceEvents", []):
            if e.get("ph") != "X" or e.get("cat") not in ("cpu_op", "user_annotation"):
                continue
            start = base + round(float(e["ts"]) * 1000)
            row = _row(len(rows), str(e["name"]), start, start + round(float(e.get("dur", 0)) * 1000), "framework",
                       thread=e.get("tid"))  # fmt: skip
            rows.append(row)
            launch_rows.setdefault((int(e.get("tid") or 0), start), row)
        for k, x in enumerate(trace["executions"]):
            model: dict[str, Any] = {"model_id": str(x["model_id"])}
            if seq_ids and x.get("nrta_seq_id") is not None:
                model["nrta_seq_id"] = int(x["nrta_seq_id"])
            fw_flow = f"framework-{k}"
            op_row = launch_rows.get((int(x["tid"] or 0), int(x["op_start_ns"])))
            if op_row is None and x.get("framework_row"):  # the warm-up's op, outside the framework trace kept
                op_row = _row(len(rows), x["op"], x["op_start_ns"], x["op_end_ns"], "framework", thread=x["tid"])
                rows.append(op_row)
            if flows == "framework" and op_row is not None:
                op_row["flow_id"] = [*(op_row["flow_id"] or []), fw_flow]  # type: ignore[misc]
            for tid, at in x.get("covers", [])[1:] if flows == "framework" else []:  # a fused execution's other ops
                row = launch_rows.get((int(tid or 0), int(at)))  # (stand-in torch_neuronx `_fuse`: ASSUMED flows)
                if row is not None:
                    row["flow_id"] = [*(row["flow_id"] or []), fw_flow]  # type: ignore[misc]
            rt_flows = {"framework": [x["flow"], fw_flow], "runtime": [x["flow"]], "none": None}[flows]
            launch = int(x["launch_ns"]) + offset
            rows.append(_row(len(rows), "nrt_model_submit", launch, launch + 500, "neuron_rt", thread=x["tid"],
                             flow=rt_flows, attrs=model))  # fmt: skip
            cores = [(0, 0, 0)] if int(trace.get("lnc", 1)) < 2 else [(0, 0, 0), (1, 40, -25)]
            for pcore, early, late in cores:
                rows.append(_row(len(rows), "nc_exec_running", int(x["start_ns"]) + offset + early,
                                 int(x["end_ns"]) + offset + late, "neuron_hw", pcore=pcore,
                                 flow=None if flows == "none" else [x["flow"]], attrs=model))  # fmt: skip
    import pyarrow as pa
    import pyarrow.parquet as pq

    if "--ignore-instruction-trace" not in argv and "--ignore-device-profile" not in argv:
        device_tables(sessions, processed, rows)
        ops = {str(x["model_id"]): str(x["op"]) for s in sessions for x in _known(s)}
        measured_tables(sessions, processed, rows, ops)
    metadata(processed)
    drop = os.environ.get("STANDIN_SYSTRACE_DROP", "")
    columns = [c for c in ROW_COLUMNS if c != drop]
    types = _types()
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in columns}, schema=pa.schema([(c, types[c]()) for c in columns])),
                   processed / "SystemProfileEvents.parquet")  # fmt: skip
    if warnings:
        pq.write_table(pa.table({"message": [w["message"] for w in warnings], "category": [w["category"] for w in warnings]}),
                       processed / "Warning.parquet")  # fmt: skip


def metadata(processed: Path) -> None:
    """The `Metadata` table's `profile_schema_version` (profile-schema-reference.rst: "Yes" required, "MAJOR.MINOR.PATCH";
    7.4.0 in the 2.31 page, 12.0.1 in the 2.33 page): STANDIN_SCHEMA_VERSION (default 7.4.0; "none": no Metadata table,
    as tables processed before the field existed). Schema 12.x: the 2.33 page's table listing was not readable where
    this stand-in was written, so its 12.x tables keep the 7.4.0 names of every column OpLens reads (an assumption,
    docs/trainium-checklist.md); STANDIN_SYSTRACE_DROP imitates a renamed or removed one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    version = os.environ.get("STANDIN_SCHEMA_VERSION", "7.4.0")
    if version != "none":
        pq.write_table(pa.table({"profile_schema_version": [version], "explorer_version": ["2.33.0-standin"]}),
                       processed / "Metadata.parquet")  # fmt: skip


def device_tables(sessions: list[Path], processed: Path, rows: list[dict[str, object]]) -> None:
    """The device profile's `Instruction` (with `stack_frame_ids`, "an instruction can map back to multiple
    stack frame ids due to compiler optimizations such as operator fusion"), `StackFrame`,
    `StackFrameFileLocation`, `StackFrameFileName`, `StackFrameFunctionName` and `ExecutionInfo {neff_name,
    execution_start_ts, execution_end_ts}` tables (profile-schema-reference.rst), from the debug info the
    stand-in TorchNeuron put in each NEFF: each execution of a model runs its NEFF's instructions back to
    back, each taking its weight's share of the execution."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    execs = [r for r in rows if r["name"] == "nc_exec_running" and r["pcore_idx"] in (None, 0)]
    info: dict[str, list[object]] = {"neff_name": [], "execution_start_ts": [], "execution_end_ts": []}
    inst: dict[str, list[object]] = {c: [] for c in ("id", "start_ts", "end_ts", "duration_ns", "engine", "opcode", "pc",
                                                     "stack_frame_ids")}  # fmt: skip
    frames: dict[tuple[str, str, int], int] = {}
    for s in sessions:
        for neff in sorted(s.glob("neff_*_vnc_*.neff")):
            raw = neff.read_bytes()
            debug = json.loads(raw[4:]).get("standin_debug", []) if raw[4:5] == b"{" else []
            model = neff.name.split("_")[1]
            for e in (r for r in execs if json.loads(str(r["extra_attributes_json"] or "{}")).get("model_id") == model):
                start, end = int(e["start_ts"]), int(e["end_ts"])  # type: ignore[call-overload]
                info["neff_name"].append(neff.name)
                info["execution_start_ts"].append(start)
                info["execution_end_ts"].append(end)
                t = start
                for k, ins in enumerate(debug):
                    ids = [frames.setdefault((f["file"], f["function"], int(f["line"])), len(frames) + 1) for f in ins["frames"]]
                    d = round((end - start) * ins["weight"])
                    row = {"id": len(inst["id"]), "start_ts": t, "end_ts": t + d, "duration_ns": d, "engine": "vector",
                           "opcode": "TENSOR_TENSOR", "pc": k, "stack_frame_ids": json.dumps(ids)}  # fmt: skip
                    for c, v in row.items():
                        inst[c].append(v)
                    t += d
    if not info["neff_name"]:
        return
    pq.write_table(pa.table(info), processed / "ExecutionInfo.parquet")
    pq.write_table(pa.table(inst), processed / "Instruction.parquet")
    files = sorted({f for f, _, _ in frames})
    functions = sorted({fn for _, fn, _ in frames})
    ordered = sorted(frames.items(), key=lambda kv: kv[1])
    pq.write_table(pa.table({"id": [str(i) for _, i in ordered], "file_location_id": [i for _, i in ordered],
                             "parent_frame_id": ["0"] * len(ordered)}), processed / "StackFrame.parquet")  # fmt: skip
    pq.write_table(pa.table({"id": [str(i) for _, i in ordered],
                             "file_name_id": [files.index(f) + 1 for (f, _, _), _ in ordered],
                             "function_name_id": [functions.index(fn) + 1 for (_, fn, _), _ in ordered],
                             "line_number": [ln for (_, _, ln), _ in ordered]}),
                   processed / "StackFrameFileLocation.parquet")  # fmt: skip
    pq.write_table(pa.table({"id": [str(i + 1) for i in range(len(files))], "name": files}),
                   processed / "StackFrameFileName.parquet")  # fmt: skip
    pq.write_table(pa.table({"id": [str(i + 1) for i in range(len(functions))], "name": functions}),
                   processed / "StackFrameFunctionName.parquet")  # fmt: skip


def _known(session: Path) -> list[dict[str, Any]]:
    try:
        trace = json.loads((session / "ntrace.pb").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return list(trace.get("executions", [])) if isinstance(trace, dict) and trace.get("standin") == "ntrace" else []


ACTIVE_SPLIT = (("tensor", 0.0, 0.5), ("vector", 0.6, 1.0))  # the stand-in's engines in each execution (fractions)


def measured_tables(sessions: list[Path], processed: Path, rows: list[dict[str, object]], ops: dict[str, str]) -> None:
    """Neuron Explorer's per framework op measurements (issue 33, part 8), as profile-schema-reference.rst (schema
    7.4.0, aws-neuron-sdk tools/neuron-explorer/) documents them, with known values:
    STANDIN_EXPLORER_MEASURED="OP=MFU:HFU:MBU:READ:WRITE[:INTENSITY:RIDGE:THROTTLE],...", per framework op of the
    known executions (its graph, `neff_<model_id>_vnc_0.neff`): `FrameworkNode` ("Each Node represents a / separated
    part of FrameworkInstruction") with a root node `module` (children_names `[<op>]`, figures of its own that a reader
    must not add to its leaf's) and the op's leaf (children_names `[]`), its `time_intervals` ("[[1000, 2000], [3000,
    4000]]", ns: one per execution), `mfu`/`hfu` (percent), `mbu_per_interval` (percent per interval: the table has no
    single MBU), `hbm_read_bytes`/`hbm_write_bytes` (READ/WRITE bytes per execution, summed over its executions);
    `FrameworkInstruction` (`framework_name`, `start_ts`, `hbm_read_bytes`, `hbm_write_bytes`); `Summary`
    (`total_time` in s, `mm_arithmetic_intensity`, `peak_flops_bandwidth_ratio`; where INTENSITY and RIDGE are given),
    `ThrottleSummary` (`nc_idx`, `throttle_type` "all" and "activity_0", `throttle_active_time_percent`; where THROTTLE
    is given), `ExecutionInfo` and `ActiveTime` ("when an engine processes at least one instruction") of that graph.
    Each graph's tables are in a folder of its own, `<processed>/device/<neff stem>/`: where a system profile keeps
    its device profiles is not documented (a stand-in choice). STANDIN_EXPLORER_MEASURED_DROP=COLUMN: FrameworkNode
    without that column (a schema that renamed or removed it)."""
    spec = os.environ.get("STANDIN_EXPLORER_MEASURED", "")
    if not spec:
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    known = {op: [float(v) for v in values.split(":")] for op, _, values in (i.rpartition("=") for i in spec.split(",") if i)}
    drop = os.environ.get("STANDIN_EXPLORER_MEASURED_DROP", "")
    execs = [r for r in rows if r["name"] == "nc_exec_running" and r["pcore_idx"] in (None, 0)]
    for s in sessions:
        for neff in sorted(s.glob("neff_*_vnc_*.neff")):
            model = neff.name.split("_")[1]
            op = ops.get(model, "")
            if op not in known:
                continue
            mfu, hfu, mbu, read, write, *extra = known[op]
            spans = sorted((int(e["start_ts"]), int(e["end_ts"])) for e in execs  # type: ignore[call-overload]
                           if json.loads(str(e["extra_attributes_json"] or "{}")).get("model_id") == model)  # fmt: skip
            if not spans:
                continue
            folder = processed / "device" / neff.stem
            folder.mkdir(parents=True, exist_ok=True)
            n, leaf = len(spans), op.replace("::", ".")
            intervals = json.dumps([list(p) for p in spans])
            node = {"node_name": ["module", leaf], "children_names": [f"[{leaf}]", "[]"], "parent_name": ["", "module"],
                    "children_ids": ["[1]", "[]"], "start_ts": [spans[0][0]] * 2, "end_ts": [spans[-1][1]] * 2,
                    "time_intervals": [intervals] * 2, "mfu": [99.0, mfu], "hfu": [99.0, hfu],
                    "mbu_per_interval": [json.dumps([99.0] * n), json.dumps([mbu] * n)],
                    "hbm_read_bytes": [10**9, int(read) * n], "hbm_write_bytes": [10**9, int(write) * n]}  # fmt: skip
            pq.write_table(pa.table({c: v for c, v in node.items() if c != drop}), folder / "FrameworkNode.parquet")
            pq.write_table(pa.table({"id": [1], "framework_name": [f"module/{leaf}"], "start_ts": [spans[0][0]],
                                     "end_ts": [spans[-1][1]], "hbm_read_bytes": [int(read) * n],
                                     "hbm_write_bytes": [int(write) * n]}), folder / "FrameworkInstruction.parquet")  # fmt: skip
            pq.write_table(pa.table({"neff_name": [neff.name] * n, "execution_start_ts": [a for a, _ in spans],
                                     "execution_end_ts": [b for _, b in spans]}), folder / "ExecutionInfo.parquet")  # fmt: skip
            # ActiveTime {engine, start_ts, end_ts} (ns): the Tensor engine busy the first half of each execution, the
            # Vector engine its last 40 % (the stand-in's split, ACTIVE_SPLIT)
            active = [(eng, a + round((b - a) * lo), a + round((b - a) * hi)) for a, b in spans for eng, lo, hi in ACTIVE_SPLIT]
            pq.write_table(pa.table({"engine": [e for e, _, _ in active], "start_ts": [x for _, x, _ in active],
                                     "end_ts": [y for _, _, y in active], "pcore_idx": [0] * len(active)}),
                           folder / "ActiveTime.parquet")  # fmt: skip
            if len(extra) >= 2:  # a Summary only where the spec gives its figures
                pq.write_table(pa.table({"total_time": [sum(b - a for a, b in spans) / 1e9],
                                         "mm_arithmetic_intensity": [extra[0]], "peak_flops_bandwidth_ratio": [extra[1]]}),
                               folder / "Summary.parquet")  # fmt: skip
            if len(extra) >= 3:
                pq.write_table(pa.table({"nc_idx": [0, 0], "throttle_type": ["all", "activity_0"],
                                         "throttle_active_time_percent": [extra[2], extra[2] / 2]}),
                               folder / "ThrottleSummary.parquet")  # fmt: skip
            metadata(folder)


ROW_COLUMNS = ("id", "name", "start_ts", "end_ts", "duration_ns", "trace_event_source", "instance_id", "process_id",
               "thread_id", "nc_idx", "pcore_idx", "worker_gid", "flow_id", "framework_stream_id",
               "extra_attributes_json")  # fmt: skip


def _types() -> dict[str, Any]:
    import pyarrow as pa

    ints = ("id", "start_ts", "end_ts", "duration_ns", "thread_id", "nc_idx", "pcore_idx", "worker_gid", "framework_stream_id")
    types = {c: pa.int64 for c in ints}
    types.update({c: pa.string for c in ("name", "trace_event_source", "instance_id", "process_id", "extra_attributes_json")})
    types["flow_id"] = lambda: pa.list_(pa.string())
    return types


def _row(i: int, name: str, start: int, end: int, source: str, *, thread: object = None, pcore: int | None = None,
         flow: list[str] | None = None, attrs: dict[str, str] | None = None) -> dict[str, object]:  # fmt: skip
    return {"id": i, "name": name, "start_ts": start, "end_ts": end, "duration_ns": end - start, "trace_event_source": source,
            "instance_id": "i-0standin0000000", "process_id": str(os.getpid()),
            "thread_id": int(thread) if thread is not None else None,
            "nc_idx": 0 if source == "neuron_hw" else None, "pcore_idx": pcore, "worker_gid": 0, "flow_id": flow,
            "framework_stream_id": None, "extra_attributes_json": json.dumps(attrs) if attrs else None}  # fmt: skip


# STANDIN_EXPLORER_DOCUMENTED_ONLY=1: a neuron-explorer that knows only the documented verbs and flags, and refuses
# the rest as a Go (cobra) CLI does ("Error: unknown flag: --x", "Error: unknown command "upload"", the wording is the
# stand-in's own). Each flag's page (aws-neuron-sdk, tools/neuron-explorer/): -d, -n, -s, --ingest-only,
# --display-name, --ignore-device-profile (get-started.rst "Step 5", "Useful flags"); --ignore-system-profile,
# --system-trace-filter-instance-id (how-to-profile-workload.rst "Skip system or device profiles", "Filter by
# instance ID"); --data-path (how-to-analyze-profile-output.rst); --output-format (get-started.rst "Option C",
# troubleshooting.rst summary-text); --system-trace-secondary-group (get-started.rst); --framework-source-root
# (how-to-link-view-source-code.rst); --port (the UI port, get-started.rst); --show-profile-schema (2.33
# profile-schema-reference.rst: `neuron-explorer view --show-profile-schema`). `upload` is in users' scripts only.
DOCUMENTED_VIEW_FLAGS = {"-d": 1, "-n": 1, "-s": 1, "--ingest-only": 0, "--display-name": 1, "--ignore-device-profile": 0,
                         "--ignore-system-profile": 0, "--system-trace-filter-instance-id": 1, "--data-path": 1,
                         "--output-format": 1, "--system-trace-secondary-group": 1, "--framework-source-root": 1,
                         "--port": 1, "--show-profile-schema": 0}  # fmt: skip


def undocumented(argv: list[str]) -> str:
    """The first flag of a `view` command line that DOCUMENTED_VIEW_FLAGS does not hold ("" where none)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-"):
            if arg not in DOCUMENTED_VIEW_FLAGS:
                return arg
            i += DOCUMENTED_VIEW_FLAGS[arg]
        i += 1
    return ""


# `view -d DIR --output-format perfetto` (aws-neuron-sdk tools/neuron-explorer/view-perfetto.rst): "This will generate
# a ``system_profile.pftrace`` file for the system profile and a ``device_profile_model_<model_id>.pftrace`` file for
# each unique compiled model that was executed on a Neuron Device". Where they are written the page does not say: the
# stand-in writes them in its working directory. Their content here is a minimal valid Perfetto trace (one TracePacket
# with a timestamp), not Explorer's: what a test can check is that they are found and passed on.
def perfetto_files(argv: list[str]) -> int:
    session = Path(option(argv, "-d") or ".")
    if not session.is_dir():
        print(f"Error: profile directory {session} does not exist", file=sys.stderr)
        return 1
    packet = bytes([0x40]) + _varint(1_000_000)  # TracePacket.timestamp (field 8, varint)
    trace = bytes([0x0A, len(packet)]) + packet  # Trace.packet (field 1, length-delimited)
    Path("system_profile.pftrace").write_bytes(trace)
    for neff in sorted(session.glob("neff_*.neff")):
        model = neff.stem.split("_")[1]
        Path(f"device_profile_model_{model}.pftrace").write_bytes(trace)
    record(perfetto=str(Path.cwd()))
    return 0


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def main(argv: list[str]) -> int:
    record(argv=argv)
    if argv[:1] == ["--version"]:  # documented (get-started.rst: `neuron-explorer --version`), its output is not
        print(f"neuron-explorer {os.environ.get('STANDIN_EXPLORER_VERSION', '2.31.0')} (stand-in)")
        return 0
    documented_only = os.environ.get("STANDIN_EXPLORER_DOCUMENTED_ONLY") == "1"
    refused = [f for f in os.environ.get("STANDIN_EXPLORER_REFUSE_FLAGS", "").split(",") if f and f in argv]
    if refused:  # a release without that flag: refused as a Go (cobra) CLI refuses one
        print(f"Error: unknown flag: {refused[0]}", file=sys.stderr)
        return 1
    if documented_only and argv[:1] == ["upload"]:
        print('Error: unknown command "upload" for "neuron-explorer"\nRun \'neuron-explorer --help\' for usage.',
              file=sys.stderr)  # fmt: skip
        return 1
    if documented_only and argv[:1] == ["view"] and undocumented(argv[1:]):
        print(f"Error: unknown flag: {undocumented(argv[1:])}", file=sys.stderr)
        return 1
    if argv[:1] == ["upload"]:
        return upload(argv[1:])
    if not argv or argv[0] != "view":
        print("usage: neuron-explorer view ... | neuron-explorer upload ...", file=sys.stderr)
        return 2
    if "--output-format" in argv and argv[argv.index("--output-format") + 1 :][:1] == ["perfetto"]:
        return perfetto_files(argv)
    return ingest(argv) if "--ingest-only" in argv else serve(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
