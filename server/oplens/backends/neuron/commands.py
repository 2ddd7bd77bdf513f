"""`oplens explorer RUN` and the `oplens.openExplorer` LSP command: open a run in Neuron Explorer.

Registered through the backend registry (NeuronSpec.commands), so the CLI and the language
server offer them without naming Neuron. Both end in `explorer.open_in_explorer`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oplens.backends.neuron import explorer
from oplens.backends.spec import BackendCommand, CommandContext, CommandOutput
from oplens.records.errors import bad_input


def add_arguments(e: argparse.ArgumentParser) -> None:
    e.add_argument("--ui-port", type=int, default=explorer.DEFAULT_UI_PORT, help="Explorer's UI port (default: 3001)")
    e.add_argument("--api-port", type=int, default=explorer.DEFAULT_API_PORT, help="Explorer's API port (default: 3002)")
    e.add_argument("--pair", metavar="HASH", help="open this NEFF/NTFF pair (by its hash) instead of the whole profile")
    e.add_argument("--reingest", action="store_true", help="process the profile again even if it was ingested before")
    e.add_argument("--data-path", metavar="DIR",
                   help="Explorer's data path, one for ingest and viewer (default: <runs>/.explorer/data)")  # fmt: skip
    e.add_argument("--dry-run", action="store_true", help="launch nothing; print the plan (with --json: the plan as JSON)")
    e.add_argument("--timeout", type=float, default=explorer.INGEST_TIMEOUT_S, help="seconds for the ingest (default: 1800)")


def source(target: str, ctx: CommandContext) -> explorer.ProfileSource:
    """An OpLens run (id, prefix, `latest`, run directory), or any Neuron profile output directory."""
    path = Path(target).expanduser()
    if path.is_dir() and not (path / "result.json").is_file():
        return explorer.directory_source(path)
    return explorer.run_source(ctx.find_run(target))


def run_cli(target: str, args: argparse.Namespace, ctx: CommandContext) -> CommandOutput:
    link = explorer.open_in_explorer(
        source(target, ctx), ctx.workspace, args.ui_port, args.api_port, pair=args.pair, reingest=args.reingest,
        ingest_timeout_s=args.timeout, data_path=Path(args.data_path) if args.data_path else None,
        state_dir=ctx.runs_root / ".explorer", dry_run=args.dry_run,
    )  # fmt: skip
    if args.dry_run:
        return CommandOutput(link.plan(), describe_plan(link))
    return CommandOutput(link.to_dict(), describe(link))


def run_lsp(target: str, arg: Mapping[str, Any], ctx: CommandContext) -> CommandOutput:
    """`{run_id, uiPort?, apiPort?}`; the ports default to the editor's `explorer` settings."""
    ports = []
    for key, default in (("uiPort", explorer.DEFAULT_UI_PORT), ("apiPort", explorer.DEFAULT_API_PORT)):
        value = arg.get(key, ctx.settings.get(key, default))
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad_input(f"{key} must be an integer (got {value!r})")
        ports.append(value)
    data_path = ctx.settings.get("dataPath")
    link = explorer.open_in_explorer(
        source(target, ctx), ctx.workspace, ports[0], ports[1],
        data_path=Path(data_path) if isinstance(data_path, str) and data_path else None, state_dir=ctx.runs_root / ".explorer",
    )  # fmt: skip
    return CommandOutput(link.to_dict(), describe(link))


def describe_plan(link: explorer.ExplorerLink) -> list[str]:
    lines = [f"Neuron Explorer plan (dry run): {link.url}", f"  data path {link.data_path}"]
    for p in link.profiles:
        rank = f", rank {p['rank']}" if p["rank"] is not None else ""
        lines.append(f"  {p['kind']} profile {p['dir']}{rank}: {len(p['neff'])} NEFF, {len(p['ntff'])} NTFF")
    lines += ["  would run: " + " ".join(cmd) for cmd in link.commands]
    if link.fallbacks:
        lines.append("  the registration, tried in order (each step where the one before fails):")
        for k, f in enumerate(link.fallbacks, 1):
            lines.append(f"    {k}. {f['step']} ({f['when']}): {' '.join(f['command'])}")
    if link.source_root:
        lines.append(f"  sources: {link.source_root} (for Explorer's Source Code Viewer)")
    lines += [f"  {m}" for m in link.messages]
    lines.append(f"tunnel: {link.tunnel}")
    return lines


def describe(link: explorer.ExplorerLink) -> list[str]:
    """The link for people: the URL, what happened, and the tunnel to run on their own machine."""
    if link.upload_command:
        done = f"uploaded to the viewer at {link.endpoint}"
    else:
        done = "ingested" if link.ingest_command else "was uploaded before"
    lines = [f"Neuron Explorer: {link.url}", f"  {link.profile} {done} as {link.display_name!r}"]
    if link.viewer == "started":
        lines.append(f"  viewer started (pid {link.viewer_pid}); it keeps running, log: {link.viewer_log}")
    else:
        lines.append(f"  viewer already serving on ports {link.ui_port} (UI) and {link.api_port} (API)")
    if link.sources:
        said = "; ".join(f"{flag} {what}" for flag, what in link.sources.items())
        lines.append(f"  sources {link.source_root}: {said}")
    lines += [f"  {m}" for m in link.messages if not m.startswith("started neuron-explorer")]
    lines += [
        "On your own machine, forward both ports (without the API port the page loads empty):",
        f"  {link.tunnel}",
        f"then open {link.url}",
    ]
    return lines


EXPLORER = BackendCommand(
    name="explorer",
    lsp_command="oplens.openExplorer",
    help="open a Neuron run in Neuron Explorer; prints the link and the SSH tunnel command",
    settings_key="explorer",
    add_arguments=add_arguments,
    run_cli=run_cli,
    run_lsp=run_lsp,
)
