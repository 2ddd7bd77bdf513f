"""Open a run's Neuron profile in Neuron Explorer, reached from the user's machine through SSH.

`neuron-explorer` (package aws-neuronx-tools, in /opt/aws/neuron/bin) serves a UI (port 3001)
and the API the UI calls (3002); both must be forwarded or the page loads empty. OpLens:

1. picks what to open: the session directory that holds a system profile (`ntrace.pb` + `trace_info.pb`),
   else a device-only profile by its NEFF/NTFF pair (Explorer cannot take that as a directory);
2. makes sure a viewer serves on the ports: one already there is reused, else OpLens starts
   `neuron-explorer view --data-path <OpLens's data path>` detached and leaves it running for later runs;
3. registers the profile with that viewer through its API, as trn2 users do:
   `neuron-explorer upload --endpoint http://localhost:<api> --profile-directory <session> | --neff F --ntff F
   --name <run id> --overwrite --wait` (get-started.rst: "All upload methods (CLI, web UI) work
   interchangeably — once a profile is uploaded, it's visible in both interfaces", the browser's and the VS
   Code extension's). An `--ingest-only` into a separate data path may not be listed by a viewer already running;
4. where the upload did not process the profile into OpLens's data path (a viewer started elsewhere, with its
   own), also ingests it there (`view -d ... --data-path DATA --ingest-only --display-name <run id>`), for the
   engine tables OpLens reads (`read_engines`);
5. returns the profile URL and the tunnel command (`ExplorerLink`).

The workspace's sources go with the profile, so Explorer's Source Code Viewer opens the user's lines: `upload
--source-code <workspace>` ("To obtain the actual source code in Explorer, upload a source archive alongside the
profile (CLI `neuron-explorer upload --source-code <path>`) ... Without it, the UI shows the `file:line` reference
text only": the vendor's own notes, aws-neuron/neuron-agentic-development, skills/neuron-explorer-profile-schema;
not in the docs) and `view ... --framework-source-root <workspace>` ("use the `--framework-source-root` flag to pass
the path to framework source files", how-to-link-view-source-code.rst, shown there with `-n/-s`). A tool that refuses
either flag (its output names it) is asked again without it, as the ingest's flags fall back (`runtime.py`), and the
link says so (`sources`).

Parent side, no torch: the CLI (`oplens explorer RUN`) and the language server call
`open_in_explorer`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from oplens.backends.neuron import engines
from oplens.backends.neuron.artifacts import SYSTEM_PROFILE, discover
from oplens.backends.neuron.checks import log_warnings
from oplens.backends.neuron.options import NeuronOptions
from oplens.records.atomic import write_json_atomic
from oplens.records.errors import OpLensError, bad_input
from oplens.records.run import NeffNtffPair, NeuronProfileDir, NtffFile, Run

TOOL = "neuron-explorer"
NEURON_BIN = Path("/opt/aws/neuron/bin")
DEFAULT_UI_PORT = 3001
DEFAULT_API_PORT = 3002
START_TIMEOUT_S = 60.0
INGEST_TIMEOUT_S = 1800.0  # large profiles take minutes to process (the upload's --wait too)
NAMESPACE = "global"  # the namespace `upload` files a profile in by default (and the API path's)
INSTALL_TOOLS = (
    "install the Neuron tools (package aws-neuronx-tools: sudo apt install aws-neuronx-tools, or dnf on Amazon "
    "Linux; the Neuron DLAMI has them) and put /opt/aws/neuron/bin on PATH"
)
_STARTED: list[subprocess.Popen[bytes]] = []  # viewers this process started (polled, so none stays a zombie)
_LOCK = threading.Lock()  # one viewer start and one state write at a time (the language server has threads)


@dataclass
class ProfileSource:
    """What to open: a run's Neuron profile, or any Neuron profile output directory (a user's own
    `NeuronProfiler` capture, an inspect output). Paths in `profiles`/`pairs` are relative to `base`."""

    name: str  # the Explorer display name: the run id, or the directory's name
    root: Path  # the profile output directory (what `-d` ingests)
    base: Path
    profiles: list[NeuronProfileDir]
    pairs: list[NeffNtffPair]
    ntffs: list[NtffFile]
    run_id: str = ""
    run: Run | None = None  # an OpLens run: the engine breakdown is attached to it after the ingest


def run_source(run: Run) -> ProfileSource:
    art = run.artifacts
    run_dir = Path(run.run_dir)
    run_id = run.run_id or run_dir.name
    if not art.profile_output_dir and not art.neff_ntff_pairs and not art.ntffs:
        raise bad_input(
            f"run {run_id} has no Neuron profile (it ran on the {run.backend.name} backend)",
            "Neuron Explorer shows Trainium profiles: profile with --backend neuron on a Trn2/Trn3 host",
        )
    if not run_dir.is_dir():
        raise bad_input(f"the run directory {run_dir} is gone", "profile again, or give the run's new directory")
    root = run_dir / art.profile_output_dir if art.profile_output_dir else run_dir
    # Runs stored before the documented layouts were read: find the profile again from its files.
    ntffs, profiles, pairs = art.ntffs, art.neuron_profiles, art.neff_ntff_pairs
    if not profiles and root.is_dir():
        _, ntffs, profiles, pairs = discover(root, run_dir)
    return ProfileSource(run_id, root, run_dir, profiles, pairs, ntffs, run_id, run)


def directory_source(path: Path) -> ProfileSource:
    """Any Neuron profile output directory, as the runtime laid it out (or one of its `_pid_` folders)."""
    root = path.resolve()
    _, ntffs, profiles, pairs = discover(root, root)
    if not profiles and not pairs:
        raise bad_input(
            f"{path} holds no Neuron profile (no trace_info.pb + ntrace.pb, no .ntff)",
            "give the profile_output_dir of a NeuronConfig capture (or an OpLens run id)",
        )
    return ProfileSource(root.name, root, root, profiles, pairs, ntffs)


@dataclass
class ExplorerLink:
    """Where a profile opens, and how to reach it from the user's machine; with `--dry-run` the plan only."""

    run_id: str
    display_name: str
    url: str  # http://localhost:<ui>/profile/<display name>, through the tunnel
    tunnel: str  # ssh -L <ui>:localhost:<ui> -L <api>:localhost:<api> <host>
    host: str
    ui_port: int
    api_port: int
    profile: str  # what is opened: "profile directory <path>" or "NEFF/NTFF pair <hash>"
    data_path: str = ""  # the one --data-path of ingest and viewer (profiles land in <data-path>/profiles/)
    profiles: list[dict[str, Any]] = field(default_factory=list)  # {dir, kind, neff, ntff, rank}
    commands: list[list[str]] = field(default_factory=list)  # the argv run: viewer (if started), upload, ingest (if needed)
    # what processed the profile into the data path OpLens reads this time: the upload, or the `--ingest-only`
    # where the upload processed it elsewhere; empty when it was uploaded before
    ingest_command: list[str] = field(default_factory=list)
    upload_command: list[str] = field(default_factory=list)  # `neuron-explorer upload ...`; empty when uploaded before
    endpoint: str = ""  # the viewer's API the profile is uploaded to: http://localhost:<api>
    profile_directory: str = ""  # the system profile's session directory uploaded ("" for a NEFF/NTFF pair)
    upload_files: list[str] = field(default_factory=list)  # the NEFF and NTFF uploaded (a device-only profile)
    viewer: str = ""  # "started" | "already serving" | "" (dry run)
    viewer_pid: int = 0  # the viewer OpLens started (0: it was already serving)
    viewer_log: str = ""
    messages: list[str] = field(default_factory=list)
    # the output's other system profiles (one per process: each rank), registered beside the first:
    # {name, url, directory, rank}
    registered: list[dict[str, Any]] = field(default_factory=list)
    source_root: str = ""  # the workspace whose sources are registered with the profile
    # each source flag OpLens passed, and what became of it: "accepted", or "refused (<what the tool said>): ran again
    # without it"
    sources: dict[str, str] = field(default_factory=dict)
    # `--dry-run`: the registration tried in order, each step with when it runs ({step, when, command})
    fallbacks: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def plan(self) -> dict[str, Any]:
        """What `--dry-run --json` prints."""
        return {"profiles": self.profiles, "commands": self.commands, "data_path": self.data_path,
                "endpoint": self.endpoint, "profile_directory": self.profile_directory, "upload_files": self.upload_files,
                "url": self.url, "tunnel": self.tunnel, "display_name": self.display_name, "messages": self.messages,
                "fallbacks": self.fallbacks, "source_root": self.source_root}  # fmt: skip


def default_data_path(runs_root: Path) -> Path:
    return (runs_root / ".explorer" / "data").resolve()


def open_in_explorer(
    source: ProfileSource,
    workspace: Path,
    ui_port: int = DEFAULT_UI_PORT,
    api_port: int = DEFAULT_API_PORT,
    pair: str | None = None,
    reingest: bool = False,
    ingest_timeout_s: float = INGEST_TIMEOUT_S,
    start_timeout_s: float = START_TIMEOUT_S,
    data_path: Path | None = None,
    state_dir: Path | None = None,
    dry_run: bool = False,
) -> ExplorerLink:
    """Upload a Neuron profile to Neuron Explorer's viewer (starting one if none serves) and return its
    URL and tunnel command; `dry_run`: launch nothing, return the plan. `pair` picks one NEFF/NTFF pair
    by hash (prefix). The viewer OpLens starts and the fallback ingest share one absolute `--data-path`
    (default: the runs root's). `reingest`: upload (and process) again though it was uploaded before.

    Raises `OpLensError`: bad_input (nothing Explorer can open, ports taken by another program),
    backend_unavailable (no neuron-explorer), tool_failed or timeout (the tool itself failed)."""
    _check_ports(ui_port, api_port)
    what = ingest_target(source, pair, workspace)
    display_name = f"{source.name}-{what.pair}" if pair else source.name  # one Explorer profile per chosen pair
    tool = find_tool() if not dry_run else _tool_or_name()
    state = (state_dir or source.base.parent / ".explorer") / "ingested.json"
    data = (data_path or default_data_path(state.parent.parent)).resolve()
    link = ExplorerLink(
        run_id=source.run_id,
        display_name=display_name,
        url=f"http://localhost:{ui_port}/profile/{quote(display_name, safe='')}",
        tunnel=tunnel_command(ui_port, api_port),
        host=socket.gethostname(),
        ui_port=ui_port,
        api_port=api_port,
        profile=what.profile,
        data_path=str(data),
        profiles=[_profile_entry(p, source.base) for p in source.profiles],
        messages=list(what.messages),
        endpoint=f"http://localhost:{api_port}",
        profile_directory=what.directory,
        upload_files=list(what.files),
        source_root=what.source_root,
    )
    upload = upload_command(tool, link.endpoint, what, display_name)
    ingest = [str(tool), "view", *what.args, "--data-path", str(data), "--ingest-only", "--display-name", display_name]
    viewer = viewer_command(tool, ui_port, api_port, data)
    if dry_run:
        link.commands = [viewer, upload] + ([ingest] if source.run is not None else [])
        link.fallbacks = fallback_chain(link, tool, what, viewer, upload, data)
        link.messages.append("dry run: nothing was started; the viewer command runs only where none serves on the ports")
        if source.run is not None:
            link.messages.append(f"the --ingest-only runs only where the upload leaves no processed profile in {data} "
                                 "(a viewer started elsewhere, with its own data path)")  # fmt: skip
        return link
    data.mkdir(parents=True, exist_ok=True)
    with _LOCK:
        link.messages += ensure_viewer(link, tool, state.parent, start_timeout_s, data)
    if link.viewer == "started":
        link.commands.append(viewer)
    key = f"{ui_port}:{display_name}"
    ingested = _load_json(state)
    if key in ingested and not reingest:
        # A viewer OpLens just started (the one that had it is gone) gets it again; one that serves still is asked.
        listed = None if link.viewer == "started" else profile_listed(api_port, display_name)
        if link.viewer == "started" or listed is False:
            why = "the viewer was started afresh" if link.viewer == "started" else "the viewer serving does not list it"
            link.messages.append(f"uploaded before (on {ingested[key]}), but {why}: uploaded again")
        else:
            link.messages.append(f"already uploaded on {ingested[key]}; --reingest to process it again")
            link.messages += read_engines(source, data, display_name)
            return link
    processed = engines.processed_dir(data, display_name)
    before = _stamp(processed)
    link.commands.append(upload)
    try:
        output, upload = _with_sources(link, upload, lambda cmd: run_upload(cmd, source.base, what.profile, ingest_timeout_s,
                                                                            link.endpoint))  # fmt: skip
        link.upload_command = link.ingest_command = upload
    except OpLensError as e:
        if e.kind == "timeout":
            raise
        # `upload` is in trn2 users' scripts, not in the docs: the documented registration is the ingest into the
        # data path the viewer serves from (get-started.rst "Option A: CLI upload", how-to-analyze-profile-output.rst)
        output = _documented_ingest(link, tool, what, source.base, ingest_timeout_s, data, e)
    after = _stamp(processed)
    if source.run is not None and (after is None or (reingest and after == before)):
        # The upload processed it where that viewer keeps its profiles, not in OpLens's data path.
        link.messages.append(f"the viewer on port {api_port} processed the upload outside {data}: ingested it there too, "
                             "for the engine breakdown")  # fmt: skip
        link.commands.append(ingest)
        more, link.ingest_command = _with_sources(link, ingest, lambda cmd: run_ingest(cmd, source.base, what.profile,
                                                                                       ingest_timeout_s))  # fmt: skip
        output += "\n" + more
    link.messages += log_warnings(output, NeuronOptions())
    printed = re.search(r"https?://\S+/profile/\S+", output)
    if printed and printed.group(0).rstrip(".") != link.url:
        link.messages.append(f"neuron-explorer printed {printed.group(0)}")
    with _LOCK:
        ingested = _load_json(state)
        ingested[key] = time.strftime("%Y-%m-%d %H:%M:%S")
        state.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(state, ingested)
    link.messages += read_engines(source, data, display_name)
    link.messages += _other_ranks(source, link, tool, what, ingest_timeout_s, data)
    return link


def tool_said(error: OpLensError) -> str:
    """The line of a failed neuron-explorer command's output that says why (its first error line, else its last)."""
    lines = [ln.strip() for ln in error.detail.split("output (tail):", 1)[-1].strip().splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else "")


def serving_data_path(link: ExplorerLink, fallback: Path) -> tuple[Path, str]:
    """The data path of the viewer serving on the link's ports (its `--data-path`, read from its command line where
    this user can see it; the one OpLens started has OpLens's), and how it was found."""
    if link.viewer == "started":
        return fallback, "the viewer OpLens started"
    for port in (link.api_port, link.ui_port):
        use = probe(port)
        argv = use.command.split()
        if use.explorer and "--data-path" in argv[:-1]:
            return Path(argv[argv.index("--data-path") + 1]).resolve(), f"the serving viewer's command line (pid {use.pid})"
    return fallback, "OpLens's own (the serving viewer's --data-path could not be read: it may not list the profile)"


def _documented_ingest(link: ExplorerLink, tool: Path, what: IngestTarget, cwd: Path, timeout_s: float, data: Path,
                       refused: OpLensError) -> str:  # fmt: skip
    """The documented registration where `upload` failed: `view -d DIR --ingest-only --data-path <the viewer's data
    path> --display-name N`; where the viewer does not list it then and OpLens started it, the viewer is started
    again on that data path (it reads its profiles from there, an assumption: docs/trainium-checklist.md)."""
    viewer_data, how = serving_data_path(link, data)
    cmd = [str(tool), "view", *what.args, "--data-path", str(viewer_data), "--ingest-only", "--display-name", link.display_name]
    said = tool_said(refused)
    link.messages.append(f"neuron-explorer upload failed ({refused.message}" + (f": {said}" if said else "")
                         + f"): registered through the documented ingest into the viewer's data path {viewer_data} "
                         f"({how})")  # fmt: skip
    link.commands.append(cmd)
    link.upload_command, link.ingest_command = [], cmd
    try:
        output, link.ingest_command = _with_sources(link, cmd, lambda c: run_ingest(c, cwd, what.profile, timeout_s))
    except OpLensError as e:  # both ways failed: each named
        raise OpLensError(e.kind, f"{refused.message}; the documented ingest failed too: {e.message}",
                          f"{refused.detail}\n{e.detail}") from None  # fmt: skip
    if profile_listed(link.api_port, link.display_name) is False and link.viewer == "started" and link.viewer_pid:
        for proc in [p for p in _STARTED if p.pid == link.viewer_pid]:
            _kill_group(proc)
        log_dir = Path(link.viewer_log).parent if link.viewer_log else data.parent
        link.viewer_pid, link.viewer_log = start_viewer(tool, link, log_dir, START_TIMEOUT_S, viewer_data)
        link.messages.append(f"the viewer did not list the ingested profile: started it again on {viewer_data} "
                             f"(pid {link.viewer_pid})")  # fmt: skip
    return output


def _other_ranks(source: ProfileSource, link: ExplorerLink, tool: Path, opened: IngestTarget, timeout_s: float,
                 data: Path) -> list[str]:  # fmt: skip
    """Every other system profile of the output (one per process: one per rank), registered too, each named
    `<name>-rank<N>` (else by its folder), the same way as the first (upload, else the documented ingest)."""
    systems = [p for p in source.profiles if p.kind == "system" and str(source.base / p.dir) != opened.directory]
    said: list[str] = []
    for p in systems:
        session = source.base / p.dir
        if not all((session / name).is_file() for name in SYSTEM_PROFILE):
            continue
        suffix = f"rank{p.rank}" if p.rank is not None else Path(p.dir).parent.name or Path(p.dir).name
        name = f"{link.display_name}-{suffix}"
        target = IngestTarget(["-d", str(session), *_source_args(opened.source_root)], f"profile directory {session}",
                              upload=["--profile-directory", str(session)], directory=str(session),
                              source_root=opened.source_root)  # fmt: skip
        other = dataclasses.replace(link, display_name=name, messages=[], commands=[])
        try:
            upload = upload_command(tool, link.endpoint, target, name)
            other.commands.append(upload)
            try:
                _with_sources(other, upload, functools.partial(_upload, cwd=source.base, profile=target.profile,
                                                               timeout_s=timeout_s, endpoint=link.endpoint))  # fmt: skip
            except OpLensError as e:
                if e.kind == "timeout":
                    raise
                _documented_ingest(other, tool, target, source.base, timeout_s, data, e)
                link.viewer_pid, link.viewer_log = other.viewer_pid, other.viewer_log  # where it was started again
        except OpLensError as e:
            said.append(f"{name}: not registered ({e.message})")
            continue
        link.commands += other.commands
        url = f"http://localhost:{link.ui_port}/profile/{quote(name, safe='')}"
        link.registered.append({"name": name, "url": url, "directory": str(session), "rank": p.rank})
        said.append(f"also registered {session} as {name}: {url}")
    return said


def read_engines(source: ProfileSource, data_path: Path, display_name: str) -> list[str]:
    """The engine breakdown from the profile the ingest processed (how-to-analyze-profile-output.rst:
    `<data-path>/profiles/global/<display-name>@latest/`), attached to the run and stored with it."""
    run = source.run
    if run is None:
        return []
    processed = engines.processed_dir(data_path, display_name)
    if processed.is_dir():
        messages = engines.from_processed(run, processed)
    else:
        engines.attach(run, [], [f"no engine breakdown: neuron-explorer left no processed profile at {processed}, where the "
                                 "docs put it; open the profile in Neuron Explorer"])  # fmt: skip
        messages = [run.engine_note]
    engines.save(run)
    return messages


def _profile_entry(p: NeuronProfileDir, base: Path) -> dict[str, Any]:
    return {"dir": str(base / p.dir), "kind": p.kind, "neff": [str(base / n) for n in p.neffs],
            "ntff": [str(base / n) for n in p.ntffs], "rank": p.rank}  # fmt: skip


def tunnel_command(ui_port: int, api_port: int, host: str | None = None) -> str:
    return f"ssh -L {ui_port}:localhost:{ui_port} -L {api_port}:localhost:{api_port} {host or socket.gethostname()}"


def find_tool() -> Path:
    found = shutil.which(TOOL)
    if found:
        return Path(found)
    candidate = NEURON_BIN / TOOL
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    raise OpLensError(
        "backend_unavailable",
        f"{TOOL} is not installed here (not on PATH, not in {NEURON_BIN})",
        f"{INSTALL_TOOLS}; the run's profile stays in its run directory and can be opened later",
    )


def tool_installed() -> bool:
    try:
        find_tool()
    except OpLensError:
        return False
    return True


def _tool_or_name() -> Path:
    try:
        return find_tool()
    except OpLensError:
        return Path(TOOL)  # a plan may be made where the tool is not installed


# ---------------------------------------------------------------------------- what to ingest


@dataclass
class IngestTarget:
    args: list[str]  # `-d DIR`, or `-n NEFF -s NTFF --framework-source-root DIR` (the `view --ingest-only`)
    profile: str  # in words, for messages
    pair: str = ""  # the pair's hash, for a device-only profile
    messages: list[str] = field(default_factory=list)
    upload: list[str] = field(default_factory=list)  # `--profile-directory SESSION`, or `--neff NEFF --ntff NTFF`
    directory: str = ""  # the system profile's session directory (what `--profile-directory` names)
    files: list[str] = field(default_factory=list)  # the pair's NEFF and NTFF
    source_root: str = ""  # the workspace: its sources go with the profile (`--source-code`, `--framework-source-root`)


SOURCE_CODE = "--source-code"  # upload's (the vendor's notes, not the docs)
SOURCE_ROOT = "--framework-source-root"  # view's (how-to-link-view-source-code.rst)


def _source_args(root: str) -> list[str]:
    return [SOURCE_ROOT, root] if root else []


def _with_sources(link: ExplorerLink, cmd: list[str], run: Callable[[list[str]], str]) -> tuple[str, list[str]]:
    """Run a registration (`upload`, `view --ingest-only`) with the workspace's sources; where the tool refuses the
    source flag (its output names it, as a CLI names an unknown flag), run it again without, and say so. The output
    and the command that ran."""
    try:
        output = run(cmd)
    except OpLensError as e:
        said = e.detail.split("output (tail):", 1)[1] if "output (tail):" in e.detail else ""
        flag = next((f for f in (SOURCE_CODE, SOURCE_ROOT) if f in cmd and f in said), None)
        if e.kind == "timeout" or flag is None:
            raise
        i = cmd.index(flag)
        retry = cmd[:i] + cmd[i + 2 :]
        link.sources[flag] = f"refused ({tool_said(e)}): ran again without it"
        link.messages.append(f"this neuron-explorer refused {flag} ({tool_said(e)}): ran `{' '.join(cmd[1:3])}` again "
                             "without it; Explorer shows the file(line) references without the source text")  # fmt: skip
        link.commands.append(retry)
        return run(retry), retry
    for flag in (SOURCE_CODE, SOURCE_ROOT):
        if flag in cmd:
            link.sources.setdefault(flag, "accepted")
    return output, cmd


def fallback_chain(link: ExplorerLink, tool: Path, what: IngestTarget, viewer: list[str], upload: list[str],
                   data: Path) -> list[dict[str, Any]]:  # fmt: skip
    """The registration as `open_in_explorer` tries it, in order (what `--dry-run` shows)."""
    ingest = [str(tool), "view", *what.args, "--data-path", "<the serving viewer's --data-path, else " f"{data}>",
              "--ingest-only", "--display-name", link.display_name]  # fmt: skip
    chain: list[dict[str, Any]] = [
        {"step": "start a viewer", "when": f"nothing serves on ports {link.ui_port}/{link.api_port}", "command": viewer},
        {"step": "upload", "when": "first (in trn2 users' scripts, not in the docs)", "command": upload},
    ]
    if SOURCE_CODE in upload:
        i = upload.index(SOURCE_CODE)
        chain.append({"step": "upload without the source", "when": f"the tool refuses {SOURCE_CODE}",
                      "command": upload[:i] + upload[i + 2 :]})  # fmt: skip
    chain.append({"step": "view --ingest-only (documented)", "when": "the upload fails (no `upload` in this tool)",
                  "command": ingest})  # fmt: skip
    if SOURCE_ROOT in ingest:
        i = ingest.index(SOURCE_ROOT)
        chain.append({"step": "view --ingest-only without the source", "when": f"the tool refuses {SOURCE_ROOT}",
                      "command": ingest[:i] + ingest[i + 2 :]})  # fmt: skip
    chain.append({"step": "start the viewer again on that data path", "when": "the viewer OpLens started does not list "
                  "the ingested profile (a viewer you started is left alone)", "command": viewer})  # fmt: skip
    return chain


def upload_command(tool: Path, endpoint: str, what: IngestTarget, name: str) -> list[str]:
    """`neuron-explorer upload`, as trn2 users register a profile with the viewer serving (its API, `--endpoint`):
    `--profile-directory <dirname of ntrace.pb>` for a system profile, `--neff --ntff` for a device-only one;
    `--overwrite`: a profile uploaded again replaces the one of that name; `--wait`: returns once processed."""
    source = [SOURCE_CODE, what.source_root] if what.source_root else []
    return [str(tool), "upload", "--endpoint", endpoint, *what.upload, "--name", name, "--overwrite", "--wait", *source]


def ingest_target(source: ProfileSource, pair: str | None, workspace: Path) -> IngestTarget:
    """What to ingest, as the docs document it: the profile output directory (`-d`) where it holds a
    complete system profile (trace_info.pb + ntrace.pb); else a device-only profile of the model form
    by one NEFF/NTFF pair (`-n -s`). A device-only *session* capture has no documented single ingest."""
    pairs = source.pairs
    if pair is not None:
        chosen = [p for p in pairs if p.hash.startswith(pair)]
        hashes = sorted({p.hash for p in chosen})
        if len(hashes) != 1:
            known = ", ".join(sorted({p.hash for p in pairs})) or "none"
            raise bad_input(f"--pair {pair!r} matches {len(hashes)} NEFFs of this profile", f"its NEFF/NTFF pairs: {known}")
        best = max(chosen, key=lambda p: p.ntff_bytes)  # one NTFF per NeuronCore: the busiest core
        target = _pair_target(best, source.base, workspace)
        if len(chosen) > 1:
            target.messages.append(f"{len(chosen)} NTFFs of NEFF {best.hash} (one per NeuronCore); opened {Path(best.ntff).name}")
        return target
    systems = [p for p in source.profiles if p.kind == "system"]
    if systems:
        if not source.root.is_dir():
            raise bad_input(f"the profile directory {source.root} is gone", "profile again")
        session = _session(source, systems)
        root = str(workspace.resolve())
        target = IngestTarget(["-d", str(source.root), *_source_args(root)], f"profile directory {source.root}",
                              upload=["--profile-directory", str(session)], directory=str(session),
                              source_root=root)  # fmt: skip
        device_only = [p.dir for p in source.profiles if p.kind != "system"]
        if device_only:
            target.messages.append(f"not a system profile, left out of the directory upload: {', '.join(device_only)}")
        if len(systems) > 1:
            target.messages.append(f"{len(systems)} system profiles (one per process): {session} opens at the link, "
                                   "each other one is registered too, named by its rank")  # fmt: skip
        return target
    if not pairs:
        if any(t.form == "session" for t in source.ntffs):
            raise bad_input(
                f"{source.name} is a device-only session capture (profile_nc_<n>_session_<m>.ntff without "
                f"{' + '.join(SYSTEM_PROFILE)}): Neuron Explorer documents no ingest for it",
                "capture again with the system profile too: ProfileMode.RUNTIME beside DEVICE "
                "(--neuron-modes DEVICE,RUNTIME, the default), so the directory is a system profile Explorer ingests",
            )
        raise bad_input(
            f"{source.name} holds neither a system profile ({' + '.join(SYSTEM_PROFILE)}) nor a NEFF/NTFF pair",
            "profile with --neuron-modes DEVICE,RUNTIME (the default) and see the run's warnings",
        )
    # Device-only, model form: Explorer opens one pair at a time; the largest trace is most of the device time.
    best = max(pairs, key=lambda p: p.ntff_bytes)
    target = _pair_target(best, source.base, workspace)
    target.messages.append("device-only profile (no system trace): opened by its NEFF/NTFF pair")
    if len(pairs) > 1:
        others = ", ".join(p.hash for p in pairs if p is not best)
        target.messages.append(f"{len(pairs)} pairs; opened {best.hash} (the largest trace); others with --pair HASH: {others}")
    return target


def _session(source: ProfileSource, systems: list[NeuronProfileDir]) -> Path:
    """The system profile's session directory to upload (the folder of its ntrace.pb): the run's own session
    where it is one of them, else the first."""
    own = source.run.artifacts.device_profile_dir if source.run is not None else ""
    chosen = next((p for p in systems if own and Path(p.dir) == Path(own)), systems[0])
    session = source.base / chosen.dir
    if not all((session / name).is_file() for name in SYSTEM_PROFILE):
        raise bad_input(f"the system profile {session} is gone (no {' + '.join(SYSTEM_PROFILE)})", "profile again")
    return session


def _pair_target(pair: NeffNtffPair, base: Path, workspace: Path) -> IngestTarget:
    neff, ntff = base / pair.neff, base / pair.ntff
    for path in (neff, ntff):
        if not path.is_file():
            raise bad_input(f"{path} is gone", "profile again")
    root = str(workspace.resolve())
    args = ["-n", str(neff), "-s", str(ntff), *_source_args(root)]  # as how-to-link-view-source-code.rst shows it
    return IngestTarget(args, f"NEFF/NTFF pair {pair.hash}", pair.hash, upload=["--neff", str(neff), "--ntff", str(ntff)],
                        files=[str(neff), str(ntff)], source_root=root)  # fmt: skip


# ---------------------------------------------------------------------------- the viewer


@dataclass
class PortUse:
    port: int
    listening: bool
    pid: int = 0  # 0: no listener, or one this user cannot see (another user's, a container's)
    command: str = ""
    explorer: bool = False  # the listener is neuron-explorer (or its child)

    def describe(self) -> str:
        if self.pid:
            return f"pid {self.pid} ({self.command[:80]})"
        return "a program OpLens cannot see (another user's or a container's)"


def ensure_viewer(link: ExplorerLink, tool: Path, log_dir: Path, timeout_s: float, data_path: Path | None = None) -> list[str]:
    """Reuse the viewer serving on the link's ports, or start one; fills link.viewer*."""
    _reap()
    ui, api = probe(link.ui_port), probe(link.api_port)
    foreign = [p for p in (ui, api) if p.listening and p.pid and not p.explorer]
    if foreign:
        raise _ports_taken(foreign, link)
    if ui.listening and api.listening:
        link.viewer = "already serving"  # the upload registers the profile with it, whatever its data path
        if not (ui.explorer or api.explorer):
            return [f"ports {link.ui_port}/{link.api_port} are served by {ui.describe()}: taken to be Neuron Explorer"]
        return []
    if ui.listening or api.listening:
        busy = ui if ui.listening else api
        if not busy.explorer:
            raise _ports_taken([busy], link)
        # A viewer that is still starting (or half up): give it the start-up time, then judge.
        if _wait_serving(link, None, timeout_s):
            link.viewer = "already serving"
            return []
        raise OpLensError(
            "tool_failed",
            f"neuron-explorer (pid {busy.pid}) listens on {busy.port} but nothing serves on "
            f"{link.api_port if busy is ui else link.ui_port}",
            f"stop it (kill {busy.pid}) and run again, so that OpLens starts a fresh viewer on both ports",
        )
    link.viewer_pid, link.viewer_log = start_viewer(tool, link, log_dir, timeout_s, data_path)
    link.viewer = "started"
    return [f"started neuron-explorer view (pid {link.viewer_pid}); it keeps running for later runs, log: {link.viewer_log}"]


def viewer_command(tool: Path, ui_port: int, api_port: int, data_path: Path | None = None) -> list[str]:
    """`neuron-explorer view [--data-path DIR]` serves on 3001/3002 by default, the only ports the docs
    name. Other ports: `--port` (the UI port, as AWS's own scripts pass it) and `--api-port`
    (documented nowhere: if the tool refuses it, start the viewer yourself on these ports)."""
    cmd = [str(tool), "view"] + (["--data-path", str(data_path)] if data_path is not None else [])
    if ui_port != DEFAULT_UI_PORT:
        cmd += ["--port", str(ui_port)]
    if api_port != DEFAULT_API_PORT:
        cmd += ["--api-port", str(api_port)]
    return cmd


def start_viewer(
    tool: Path, link: ExplorerLink, log_dir: Path, timeout_s: float, data_path: Path | None = None
) -> tuple[int, str]:
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"neuron-explorer-{link.ui_port}.log"
    cmd = viewer_command(tool, link.ui_port, link.api_port, data_path)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log_dir,
            start_new_session=True,  # detached: it outlives this command, for later runs
        )
    _STARTED.append(proc)
    if _wait_serving(link, proc, timeout_s):
        return proc.pid, str(log)
    code = proc.poll()
    if code is None:  # never came up: do not leave a half-started server behind
        _kill_group(proc)
    flags = [a for a in cmd[2:] if a in ("--port", "--api-port")]
    ports = "" if not flags else f"; it was given {' '.join(flags)}, which this neuron-explorer may not take"
    why = (
        f"exited with status {code}"
        if code is not None
        else f"did not serve on {link.ui_port} and {link.api_port} within {timeout_s:g} s"
    )
    raise OpLensError(
        "tool_failed",
        f"neuron-explorer view {why}{ports}",
        f"start it yourself (neuron-explorer view) and run again; its log ({log}), tail:\n{_tail(log)}",
    )


def _wait_serving(link: ExplorerLink, proc: subprocess.Popen[bytes] | None, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        if listening(link.ui_port) and listening(link.api_port):
            return True
        time.sleep(0.1)
    return False


def _ports_taken(taken: list[PortUse], link: ExplorerLink) -> OpLensError:
    what = "; ".join(f"port {p.port} is taken by {p.describe()}" for p in taken)
    return bad_input(
        f"{what}: Neuron Explorer needs it (UI on {link.ui_port}, API on {link.api_port})",
        "stop that program, or use two free ports: oplens explorer RUN --ui-port N --api-port M "
        "(and forward those in the tunnel)",
    )


def listening(port: int) -> bool:
    """Whether something accepts connections on localhost:`port` (IPv4 or IPv6)."""
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                if s.connect_ex((address, port)) == 0:
                    return True
        except OSError:
            continue
    return False


def probe(port: int) -> PortUse:
    """Whether something listens on localhost:`port`, and which process (from /proc, where visible)."""
    if not listening(port):
        return PortUse(port, False)
    pid = _listener_pid(port)
    if not pid:
        return PortUse(port, True)
    return PortUse(port, True, pid, _cmdline(pid), _is_explorer(pid))


def _listener_pid(port: int) -> int:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(cols[9])
    if not inodes:
        return 0
    wanted = {f"socket:[{i}]" for i in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    return int(proc.name)
        except OSError:  # another user's process, or gone
            continue
    return 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _is_explorer(pid: int) -> bool:
    """neuron-explorer itself or a process it started (its UI or API server)."""
    for _ in range(4):
        cmd = _cmdline(pid)
        if TOOL in cmd or str(NEURON_BIN) in cmd:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4: the parent pid
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _reap() -> None:
    _STARTED[:] = [p for p in _STARTED if p.poll() is None]


# ---------------------------------------------------------------------------- ingest


def _run_tool(cmd: list[str], cwd: Path, timeout_s: float, late: str, fix: str) -> tuple[int, str]:
    """Run one neuron-explorer command: its exit status and output; a timeout is an OpLensError (`late`
    says what did not finish, `fix` what to do)."""
    try:
        done = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", timeout=timeout_s, cwd=cwd
        )
    except subprocess.TimeoutExpired:
        raise OpLensError("timeout", f"{late} within {timeout_s:g} s", f"{fix}\n" + " ".join(cmd)) from None
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def perfetto_traces(session: Path, out: Path) -> tuple[list[Path], str]:
    """Neuron Explorer's own Perfetto traces of `session`, written into `out` (`view -d SESSION --output-format
    perfetto`, aws-neuron-sdk tools/neuron-explorer/view-perfetto.rst: "a system_profile.pftrace file for the system
    profile and a device_profile_model_<model_id>.pftrace file for each unique compiled model"; where it writes them
    the page does not say, so the working directory and the session are both looked in); ([], why) where none."""
    try:
        tool = find_tool()
    except OpLensError as e:
        return [], f"{e.message}; {e.detail}"
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    cmd = [str(tool), "view", "-d", str(session), "--output-format", "perfetto"]
    try:
        code, output = _run_tool(cmd, out, INGEST_TIMEOUT_S, "neuron-explorer did not write its Perfetto traces",
                                 "run the command yourself")  # fmt: skip
    except OpLensError as e:
        return [], f"{e.message}: {' '.join(cmd)}"
    if code != 0:
        return [], f"`{' '.join(cmd)}` exited with {code}: {_last_lines(output, 5)}"
    found = sorted(out.glob("*.pftrace"))
    for p in sorted(session.glob("*.pftrace")):
        if p.stat().st_mtime >= started - 1:
            found.append(p)
    return found, "" if found else f"`{' '.join(cmd)}` wrote no .pftrace in {out} or {session}"


def _last_lines(output: str, lines: int = 20) -> str:
    return "\n".join(output.splitlines()[-lines:])


def run_ingest(cmd: list[str], run_dir: Path, profile: str, timeout_s: float) -> str:
    code, output = _run_tool(cmd, run_dir, timeout_s, f"neuron-explorer did not finish ingesting the {profile}",
                             "large profiles take long: run the command yourself, or profile fewer cores "
                             "(--neuron-cores 0)")  # fmt: skip
    if code != 0:
        raise OpLensError(
            "tool_failed",
            f"neuron-explorer could not ingest the {profile} (exit {code})",
            "command: " + " ".join(cmd) + "\noutput (tail):\n" + _last_lines(output),
        )
    return output


def _upload(cmd: list[str], *, cwd: Path, profile: str, timeout_s: float, endpoint: str) -> str:
    return run_upload(cmd, cwd, profile, timeout_s, endpoint)


def run_upload(cmd: list[str], cwd: Path, profile: str, timeout_s: float, endpoint: str) -> str:
    """Run `neuron-explorer upload`; its output, or an OpLensError naming what failed and what to do."""
    code, output = _run_tool(cmd, cwd, timeout_s, f"neuron-explorer upload did not finish processing the {profile}",
                             "large profiles take long: raise --timeout, run the command yourself, or profile fewer "
                             "cores (--neuron-cores 0)")  # fmt: skip
    if code != 0:
        low = output.lower()
        if "connection refused" in low or "cannot reach" in low:
            fix = (f"the viewer's API does not answer at {endpoint}: start `neuron-explorer view` (or stop whatever "
                   "holds the ports) and run again")  # fmt: skip
        elif "unknown command" in low or ("usage" in low and "upload" not in low):
            fix = "this neuron-explorer has no `upload` command: update aws-neuronx-tools (Neuron SDK 2.30+)"
        else:
            fix = "see the tool's output below and the viewer's log; `--reingest` uploads again"
        raise OpLensError(
            "tool_failed",
            f"neuron-explorer could not upload the {profile} to the viewer at {endpoint} (exit {code})",
            f"{fix}\ncommand: " + " ".join(cmd) + "\noutput (tail):\n" + _last_lines(output),
        )
    return output


def profile_listed(api_port: int, name: str, namespace: str = NAMESPACE) -> bool | None:
    """Whether the viewer's API knows the profile (`GET /api/v1/profiles/namespace/<ns>/profile_name/<name>`,
    the path users read its artifacts under); None where it does not say (no answer, another status)."""
    url = f"http://localhost:{api_port}/api/v1/profiles/namespace/{quote(namespace, safe='')}/profile_name/{quote(name, safe='')}"
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:  # localhost, a fixed scheme
            return True if answer.status == 200 else None
    except urllib.error.HTTPError as e:
        return False if e.code == 404 else None
    except (OSError, ValueError):
        return None


def _stamp(folder: Path) -> int | None:
    """The newest mtime (ns) of a processed profile's files; None where there is none."""
    try:
        return max((p.stat().st_mtime_ns for p in folder.iterdir()), default=folder.stat().st_mtime_ns)
    except OSError:
        return None


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _load_json(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _check_ports(ui_port: int, api_port: int) -> None:
    for name, port in (("--ui-port", ui_port), ("--api-port", api_port)):
        if not 1 <= port <= 65535:
            raise bad_input(f"{name} {port} is not a TCP port", "give a number from 1 to 65535")
    if ui_port == api_port:
        raise bad_input(f"the UI and the API need two ports (both are {ui_port})", "give --ui-port and --api-port apart")
