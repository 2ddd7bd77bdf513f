"""Per-line device time inside a compiled graph (issue 20, item 2), from the processed device profile
(parent side, no torch).

Source: the AWS Neuron docs, `tools/neuron-explorer/profile-schema-reference.rst` (schema 7.4.0):
`Instruction {start_ts, end_ts, duration_ns, ..., stack_frame_ids}` ("List of stack frame identifiers for
debugging. An instruction can map back to multiple stack frame ids due to compiler optimizations such as
operator fusion. Example: [101, 102, 103]"), `StackFrame {id, file_location_id, parent_frame_id}` ("or 0 if
this is the root frame"), `StackFrameFileLocation {id, file_name_id, function_name_id, line_number}`,
`StackFrameFileName {id, name}`, `StackFrameFunctionName {id, name}`; `ExecutionInfo {neff_name,
execution_start_ts, execution_end_ts}` says which NEFF ran when. The stack frames are there only where the
graph was compiled with framework debug info: `NEURON_FRAMEWORK_DEBUG` "Enables HLO-level stack trace
capture. Required for the Source Code Viewer to map hardware instructions to Python model code"
(`environment-variables.rst`), set "BEFORE compilation" (`how-to-profile-workload.rst`); Neuron 2.33 names
`XLA_IR_DEBUG` and `XLA_HLO_DEBUG` for it (`how-to-link-view-source-code.rst`). OpLens sets all three where the
user asks (`environment.py`).

Each instruction's time goes to the user's lines its stacks name: per stack id, the innermost frame in a
file of the lines the graph fused (Dynamo's record, worker/compiled.py), else the innermost frame outside
torch and site-packages; an instruction naming several lines is shared evenly among them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from oplens.backends.neuron.engines import Columns, device_profiles, read_table
from oplens.records.run import SourceRef

DEBUG_ENV = "NEURON_FRAMEWORK_DEBUG"  # the older pages' name; 2.33's are XLA_IR_DEBUG and XLA_HLO_DEBUG (environment.py)
NO_DEBUG_FIX = ("profile with --neuron-debug-info (OpLens sets XLA_IR_DEBUG=1 and XLA_HLO_DEBUG=1, as Neuron 2.33 names "
                f"them, and {DEBUG_ENV}=1 for older releases, before the first compile; the docs: \"Required for the "
                "Source Code Viewer to map hardware instructions to Python model code\") and let it compile again (a "
                "NEFF from the cache keeps its old debug info: clear the run's NEFF cache or give a fresh "
                "--neff-cache-dir)")  # fmt: skip
Line = tuple[str, int, str]  # (file, line, function)


def _ids(raw: Any) -> list[int]:
    if raw is None:
        return []
    if isinstance(raw, (list, tuple)):
        return [int(v) for v in raw]
    text = str(raw).strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = [v for v in text.strip("[]").split(",") if v.strip()]
    return [int(v) for v in (value if isinstance(value, list) else [value])]


def _by_id(cols: Columns | None, *fields: str) -> dict[int, tuple[Any, ...]]:
    if cols is None:
        return {}
    return {int(i): tuple(cols[f][k] for f in fields) for k, i in enumerate(cols["id"]) if i is not None}


class _Frames:
    """The stack-frame tables of one processed profile."""

    def __init__(self, folder: Path) -> None:
        self.frames = _by_id(read_table(folder, "StackFrame", ["id", "file_location_id", "parent_frame_id"]),
                             "file_location_id", "parent_frame_id")  # fmt: skip
        self.locations = _by_id(read_table(folder, "StackFrameFileLocation", ["id", "file_name_id", "function_name_id",
                                                                               "line_number"]),
                                "file_name_id", "function_name_id", "line_number")  # fmt: skip
        self.files = _by_id(read_table(folder, "StackFrameFileName", ["id", "name"]), "name")
        self.functions = _by_id(read_table(folder, "StackFrameFunctionName", ["id", "name"]), "name")

    def stack(self, frame_id: int) -> list[Line]:
        """The frames from `frame_id` (the deepest) to the root."""
        out: list[Line] = []
        seen: set[int] = set()
        while frame_id and frame_id in self.frames and frame_id not in seen:
            seen.add(frame_id)
            location, parent = self.frames[frame_id]
            loc = self.locations.get(int(location)) if location is not None else None
            if loc is not None:
                file = str(self.files.get(int(loc[0]), ("",))[0])
                function = str(self.functions.get(int(loc[1]), ("",))[0])
                out.append((file, int(loc[2]), function))
            frame_id = int(parent or 0)
        return out


def _user_line(stack: list[Line], fused_files: set[str]) -> Line | None:
    def fused(file: str) -> bool:
        return any(file == f or f.endswith("/" + file.lstrip("./")) or file.endswith("/" + Path(f).name) for f in fused_files)

    for frame in stack:
        if fused_files and fused(frame[0]):
            return frame
    for frame in stack:
        if "site-packages" not in frame[0] and "/torch/" not in frame[0]:
            return frame
    return None


def neff_line_time(root: Path, fused: list[SourceRef]) -> tuple[dict[str, dict[Line, float]], str]:
    """Per NEFF (its name in ExecutionInfo, else the profile folder's), the ns of instructions on each user
    line; and, where no instruction names a line, why (with the fix)."""
    files = {r.file for r in fused}
    out: dict[str, dict[Line, float]] = {}
    seen_instructions = False
    for folder in device_profiles(root) or ([root] if (root / "Instruction.parquet").is_file() else []):
        inst = read_table(folder, "Instruction", ["start_ts", "end_ts", "duration_ns", "stack_frame_ids"])
        if inst is None:
            continue
        seen_instructions = True
        frames = _Frames(folder)
        execs = read_table(folder, "ExecutionInfo", ["neff_name", "execution_start_ts", "execution_end_ts"])
        windows = sorted((int(s), int(e), str(n)) for n, s, e in zip(execs["neff_name"], execs["execution_start_ts"],
                         execs["execution_end_ts"], strict=True) if s is not None and e is not None) if execs else []  # fmt: skip
        for start, end, dur, ids in zip(inst["start_ts"], inst["end_ts"], inst["duration_ns"], inst["stack_frame_ids"],
                                        strict=True):  # fmt: skip
            lines = {ln for i in _ids(ids) if (ln := _user_line(frames.stack(i), files)) is not None}
            if not lines:
                continue
            ns = float(dur if dur is not None else (end or 0) - (start or 0))
            neff = next((n for s, e, n in windows if start is not None and s <= int(start) < e), folder.name)
            per = out.setdefault(neff, defaultdict(float))
            for ln in lines:
                per[ln] += ns / len(lines)
    if out:
        return {k: dict(v) for k, v in out.items()}, ""
    if not seen_instructions:
        return {}, ("no per-line split of compiled graphs: the run's processed profile holds no Instruction table "
                    "(profile with DEVICE in --neuron-modes)")  # fmt: skip
    return {}, ("no per-line split of compiled graphs: no instruction names a source line (no framework debug "
                f"info); {NO_DEBUG_FIX}")  # fmt: skip


def region_shares(per_neff: dict[str, dict[Line, float]], region_models: dict[str, set[str]]) -> dict[str, dict[Line, float]]:
    """Each compiled region's lines as fractions of its graph's instruction time: its NEFFs are those whose
    name holds a model id its executions ran (`neff_<model_id>_vnc_<n>.neff`), or the one NEFF there is."""
    out: dict[str, dict[Line, float]] = {}
    for region, models in region_models.items():
        chosen = [n for n in per_neff if any(m and m in n for m in models)]
        if not chosen and len(per_neff) == 1 and len(region_models) == 1:
            chosen = list(per_neff)
        total: dict[Line, float] = defaultdict(float)
        for n in chosen:
            for ln, ns in per_neff[n].items():
                total[ln] += ns
        whole = sum(total.values())
        if whole > 0:
            out[region] = {ln: ns / whole for ln, ns in total.items()}
    return out
