"""Write the extension's generated TypeScript from the Python side: one definition of each fact.

    .venv/bin/python -m oplens.codegen           # write them (`make generate`)
    .venv/bin/python -m oplens.codegen --check   # fail, naming the stale file (`make lint`)

- extension/shared/generated/run.ts: every record of a `result.json` (`oplens.records.run.Run` and
  what it holds) and of an `overview.json` (`oplens.records.overview.OverviewRun`) as an interface and
  as a reader that checks its JSON, with each field required or defaulted exactly as `Run.from_dict`
  takes it (`oplens.codegen.typescript`);
- extension/shared/generated/views.ts: the pages the server builds (`oplens.views`: every word the results
  page shows, written once in Python) as interfaces and readers, as run.ts;
- extension/shared/generated/settings.ts: the settings the server reads too (`oplens.lsp.settings`:
  each one's wire key, type, default and bounds, which package.json states again and a test checks),
  the Neuron profile modes and Neuron Explorer's default ports;
- extension/shared/generated/errors.ts: the kinds of error the engine reports (`oplens.records.errors`);
- extension/shared/generated/backends.ts: what each backend is (`oplens.backends.facts` by way of the
  registry: label, on a device or not), the default backend and `auto`'s order.

`tests/unit/test_generated_ts.py` regenerates them in memory and fails while a committed file differs.
Imports no torch (only the parent side's modules). It writes into the repository it sits in (a checkout, with
OpLens installed editable, as `make setup` does): `ROOT` is the checkout's root.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from pathlib import Path
from typing import Any

from oplens.backends import registry
from oplens.backends.neuron import explorer
from oplens.backends.neuron.options import DEFAULT_MODES, MODES
from oplens.codegen.typescript import constant, constants_module, default_of, records_module
from oplens.lsp import settings
from oplens.lsp.convert import camel, wire_key
from oplens.records import errors, run
from oplens.records.overview import OverviewRun
from oplens.views import compare, diff, overview
from oplens.views import run as run_page

ROOT = Path(__file__).resolve().parents[3]  # server/oplens/codegen/generate.py: the checkout's root
GENERATED = "extension/shared/generated"
GENERATOR = "server/oplens/codegen/generate.py"
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def run_ts() -> str:
    head = constant("RUN_SCHEMA", run.SCHEMA, ["The schema this extension reads (`Run.schema`)."], as_const=False)
    return records_module([run.Run, OverviewRun], generator=GENERATOR, reader_import="../reader", head=head)


def views_ts() -> str:
    pages = [diff.DiffPage, compare.ComparePage, overview.OverviewView, run_page.RunPage]
    return records_module(pages, generator=GENERATOR, reader_import="../reader")


def setting(f: dataclasses.Field[Any], tp: Any) -> dict[str, Any]:
    """One server setting as JSON Schema states it (package.json's words): type, default, values, bounds."""
    required, default = default_of(f)
    assert not required, f"Settings.{f.name} has no default"
    out: dict[str, Any] = {"type": JSON_TYPES[typing.get_origin(tp) or tp], "default": default}
    if f.name in settings.CHOICES:
        out["enum"] = list(settings.CHOICES[f.name])
    bounds = settings.BOUNDS.get(f.name)
    if bounds is not None:
        for name, value in dataclasses.asdict(bounds).items():
            if value is not None:
                out[camel(name)] = value  # exclusive_minimum: exclusiveMinimum
    return out


def settings_ts() -> str:
    hints = typing.get_type_hints(settings.Settings)
    server = {key: setting(f, hints[f.name]) for f in dataclasses.fields(settings.Settings) if (key := wire_key(f))}
    parts = [
        constant("SERVER_SETTINGS", server, [
            "The settings the server reads too (its `initializationOptions`, `oplens.lsp.settings.Settings`), by",
            "their key under `oplens.`: JSON Schema's type, the default, the values or bounds. package.json states them",
            "again (a test compares); `src/settings/settings.ts` reads them with these.",
        ]),
        constant("NEURON_MODES", list(MODES), ["The Neuron profile modes (`oplens.backends.neuron.options.MODES`)."]),
        constant("NEURON_DEFAULT_MODES", list(DEFAULT_MODES), ["The modes profiled where the settings name none."]),
        constant("EXPLORER_PORTS", {"uiPort": explorer.DEFAULT_UI_PORT, "apiPort": explorer.DEFAULT_API_PORT},
                 ["Neuron Explorer's ports where the settings give none (`oplens.backends.neuron.explorer`)."]),
    ]
    sources = ["oplens.lsp.settings", "oplens.backends.neuron.options", "oplens.backends.neuron.explorer"]
    return constants_module(parts, generator=GENERATOR, sources=sources)


def backends_ts() -> str:
    facts = {
        name: {"title": spec.title, "deviceLabel": spec.device_label, "onDevice": spec.facts.on_device}
        for name, spec in registry.SPECS.items()
    }
    parts = [
        constant("BACKEND_FACTS", facts, [
            "What each backend is (`oplens.backends.facts`, through `oplens.backends.registry`): its title, its",
            "device label, and whether work runs on a device apart from the host (then Self CPU is shown beside",
            "the device time). Read through `shared/backends.ts`; its commands are `names.ts`'s BACKEND_COMMANDS.",
        ]),
        constant("DEFAULT_BACKEND", registry.DEFAULT, ["What a request that names no backend gets."]),
        constant("AUTO_ORDER", list(registry.AUTO_ORDER), ["What `auto` tries, best first."]),
    ]
    return constants_module(parts, generator=GENERATOR, sources=["oplens.backends.registry"])


def errors_ts() -> str:
    kinds = {kind: kind for kind in errors.EXIT_CODES}
    parts = [
        [*constant("ERROR_KIND", kinds, [
            "What went wrong, as the engine names it: the `kind` of an error's data (`OpLensError.kind`,",
            "one per exit code of `oplens.records.errors.EXIT_CODES`), each under its own name.",
        ]), "export type ErrorKind = (typeof ERROR_KIND)[keyof typeof ERROR_KIND];"],
    ]
    return constants_module(parts, generator=GENERATOR, sources=["oplens.records.errors"])


def render() -> dict[str, str]:
    """Each generated file (its path from the repository root) and its text."""
    return {f"{GENERATED}/run.ts": run_ts(), f"{GENERATED}/views.ts": views_ts(),
            f"{GENERATED}/settings.ts": settings_ts(), f"{GENERATED}/errors.ts": errors_ts(),
            f"{GENERATED}/backends.ts": backends_ts()}


def stale(files: dict[str, str]) -> list[str]:
    return [path for path, text in files.items()
            if not (ROOT / path).is_file() or (ROOT / path).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail if a generated file is stale")
    check = parser.parse_args(argv).check
    files = render()
    if check:
        for path in stale(files):
            print(f"{path} is stale (the Python it is generated from changed): run `make generate`", file=sys.stderr)
        return 1 if stale(files) else 0
    for path, text in files.items():
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
        if not (ROOT / path).is_file() or (ROOT / path).read_text(encoding="utf-8") != text:
            (ROOT / path).write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
