"""A profile's module, kept for a later edit of its function (`records.job.ModuleSnapshot`).

When the function is profiled again after an edit, its earlier version is loaded from this text beside the
new one and the two are measured interleaved in one worker (engine/earlier.py). The earlier version runs with
the other files as they are then, so each file of the user's code it imported is kept by its sha256: where one
changed, the earlier version would not be the code that was measured, and the parent says so instead.

The user's code: every imported module's file under the workspace or under the target's own top-level
package (an installed library's model file: that library), less installed packages inside the workspace
(a `.venv`) and OpLens itself.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import oplens
from oplens.records.atomic import write_json_atomic
from oplens.records.job import MODULE_SNAPSHOT, ModuleSnapshot, file_sha256

_OPLENS_DIR = Path(oplens.__file__).resolve().parent


def keep(stage: Path, file: str, text: str, module_name: str, workspace: str) -> None:
    """Write `stage`/module.json: `text` (the module as imported) and the user's other files now imported."""
    snapshot = ModuleSnapshot(text, user_files(Path(file).resolve(), module_name, Path(workspace).resolve()))
    try:
        write_json_atomic(stage / MODULE_SNAPSHOT, dataclasses.asdict(snapshot))
    except OSError:
        pass  # a later edit is then measured across two processes, saying why; this run is not lost for it


def user_files(target: Path, module_name: str, workspace: Path) -> dict[str, str]:
    """The user's code now imported (see the module's doc), but `target`, by sha256."""
    roots = [workspace]
    top = sys.modules.get(module_name.partition(".")[0]) if "." in module_name else None
    top_file = getattr(top, "__file__", None)
    if top_file:
        roots.append(Path(top_file).resolve().parent)
    found: dict[str, str] = {}
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not name or not name.endswith(".py"):
            continue
        path = Path(name).resolve()
        if path == target or str(path) in found or _OPLENS_DIR in path.parents:
            continue
        inside = [root for root in roots if root in path.parents]
        if not inside or (roots[0] in inside and len(inside) == 1 and "site-packages" in path.parts):
            continue
        digest = file_sha256(path)
        if digest:
            found[str(path)] = digest
    return found
