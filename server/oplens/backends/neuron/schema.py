"""Which version of Neuron Explorer's Parquet schema a processed profile was written in, and the name of each
table and column OpLens reads in that version (parent side, no torch): issue 33, part 3.

Source: aws-neuron-sdk, `tools/neuron-explorer/profile-schema-reference.rst`. The `Metadata` table's
`profile_schema_version` ("MAJOR.MINOR.PATCH ... MAJOR: incompatible change - table removal or rename, - field
removal or rename, - field type change, - field becomes optional. MINOR: compatible addition"); the 2.31 page
reflects schema 7.4.0, the 2.33 page schema 12.0.1 (`neuron-explorer view --show-profile-schema` prints the
installed one). A table is written only where the profile holds that kind of activity.

One map per known major, logical name (what OpLens's readers ask for) → the table's and column's name in that
major. 7.x: the 7.4.0 page as read. 12.x: the 2.33 page names the version; its table listing was not readable where
this was written, so the 12.x map keeps the 7.4.0 names of the columns OpLens reads. That is an assumption a trn2
owner checks (docs/trainium-checklist.md); it is safe because every read is checked against the Parquet file's own
columns: a column the file lacks is a named warning (version, table, column) and no figure is computed from it, and
an unknown major is named in the run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

METADATA, VERSION_FIELD = "Metadata", "profile_schema_version"

# Every table and column OpLens reads, and what is lost where a column is missing (the readers' own names).
READS: dict[str, dict[str, str]] = {
    "SystemProfileEvents": {
        "id": "Flow edges cannot join events", "name": "no execution can be found (nc_exec_running)",
        "start_ts": "no execution can be timed", "end_ts": "no execution can be timed",
        "trace_event_source": "hardware, runtime and framework rows are told apart by name only",
        "thread_id": "launches are placed on the profiled thread", "nc_idx": "per-core rows merge across cores",
        "pcore_idx": "physical-core rows are not counted", "flow_id": "no execution links to its launch (rule flow)",
        "extra_attributes_json": "executions carry no model_id or nrta_seq_id",
    },
    "Flow": {"in_id": "no Flow edge", "out_id": "no Flow edge", "in_table": "edges of every table taken",
             "out_table": "edges of every table taken"},
    "Warning": {"message": "Explorer's processing warnings are not shown", "category": "warnings shown uncategorised"},
    "ExecutionInfo": {"neff_name": "executions not told apart by graph", "execution_start_ts": "no execution window",
                      "execution_end_ts": "no execution window"},
    "ActiveTime": {"engine": "no engine breakdown", "start_ts": "no engine breakdown", "end_ts": "no engine breakdown"},
    "DmaPacket": {"start_ts": "no DMA active time", "end_ts": "no DMA active time"},
    "Summary": {"total_time": "no device time from the Summary"},
    "Instruction": {"start_ts": "no per-line split", "end_ts": "no per-line split", "duration_ns": "no per-line split",
                    "stack_frame_ids": "no per-line split of compiled graphs"},
    "StackFrame": {"id": "no source lines", "file_location_id": "no source lines", "parent_frame_id": "no call chain"},
    "StackFrameFileLocation": {"id": "no source lines", "file_name_id": "no source files",
                               "function_name_id": "no function names", "line_number": "no source lines"},
    "StackFrameFileName": {"id": "no source files", "name": "no source files"},
    "StackFrameFunctionName": {"id": "no function names", "name": "no function names"},
    "NeffHeader": {"network_name": "graphs named by their folder"},
}  # fmt: skip


# What the measured efficiency per line reads (efficiency.py, issue 33 part 8), apart from READS so that the engine and
# system-trace readers' warnings stay theirs. profile-schema-reference.rst (schema 7.4.0, "FrameworkNode: Framework
# hierarchy node information ... Each Node represents a / separated part of FrameworkInstruction"): `node_name`,
# `children_names` ("Comma separated array of child node names"), `start_ts`/`end_ts` (nanoseconds), `time_intervals`
# ("[[1000, 2000], [3000, 4000]]", ns), `mfu` / `hfu` (number, **percent**: "Model FLOPs Utilization (MFU) percentage
# calculated once for a single operator, as (total element counts excluding transposes / (TENSOR_NUM_ROWS *
# TENSOR_NUM_COLS * total duration in cycles))", HFU the same including transposes), `mbu_per_interval` ("Comma
# separated array of per-interval Memory Bandwidth Utilization (MBU) percentages corresponding to the time intervals";
# the table has no single `mbu` column), `hbm_read_bytes` / `hbm_write_bytes` (bytes, "by all grouped instructions in
# this framework node"). `FrameworkInstruction` (the framework-level debuginfo entries): `framework_name` ("Framework
# operation name. Example: NeuronLlamaDecoderLayer[1]/function[2]/aten.add"), `start_ts` (ns), `hbm_read_bytes`,
# `hbm_write_bytes` (bytes, required there): the bytes where FrameworkNode has none. `Summary` (one row per device
# profile): `mm_arithmetic_intensity` ("The ratio of regular MATMUL flops to total DRAM transfer size"),
# `peak_flops_bandwidth_ratio` ("If mm_arithmetic_intensity is less than this value, the workload is memory bound").
# `ThrottleSummary`: `throttle_type` ("The value "all" means the metric aggregates across all throttle types"),
# `throttle_active_time_percent` (percent, "Percent of total time when throttling was active").
MEASURED: dict[str, dict[str, str]] = {
    "FrameworkNode": {
        "node_name": "framework ops not named", "children_names": "every node counted (leaves not told apart)",
        "start_ts": "no framework op given to its graph", "time_intervals": "no op time to weight by",
        "end_ts": "no op time to weight by", "mfu": "no measured MFU", "hfu": "no measured HFU",
        "mbu_per_interval": "no measured MBU", "hbm_read_bytes": "no measured HBM bytes",
        "hbm_write_bytes": "no measured HBM bytes",
    },
    "FrameworkInstruction": {"framework_name": "framework ops not named", "start_ts": "no op given to its graph",
                             "hbm_read_bytes": "no measured HBM bytes", "hbm_write_bytes": "no measured HBM bytes"},
    "Summary": {"mm_arithmetic_intensity": "no measured arithmetic intensity",
                "peak_flops_bandwidth_ratio": "no measured ridge point"},
    "ThrottleSummary": {"throttle_type": "throttling not told apart by type",
                        "throttle_active_time_percent": "no throttling figure"},
}  # fmt: skip


def _identity() -> dict[str, tuple[str, dict[str, str]]]:
    out = {table: (table, {c: c for c in cols}) for table, cols in READS.items()}
    for table, cols in MEASURED.items():
        out.setdefault(table, (table, {}))[1].update({c: c for c in cols})
    return out


# major → {logical table: (its name, {logical column: its name})}
MAPS: dict[int, dict[str, tuple[str, dict[str, str]]]] = {
    7: _identity(),  # profile-schema-reference.rst, schema 7.4.0 (Neuron 2.31), as read (READS and MEASURED)
    12: _identity(),  # schema 12.0.1 (Neuron 2.33): the 7.4.0 names assumed for what OpLens reads (module docstring)
}
LATEST = max(MAPS)


@dataclass
class Schema:
    """A processed profile's schema version and what OpLens reads by it."""

    version: str  # Metadata.profile_schema_version; "" where the profile has no Metadata table
    major: int | None
    known: bool  # a major with a map here (or no version at all: read as the latest)
    tables: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)

    def table(self, name: str) -> str:
        return self.tables.get(name, (name, {}))[0]

    def column(self, table: str, name: str) -> str:
        return self.tables.get(table, (table, {}))[1].get(name, name)

    @property
    def label(self) -> str:
        return f"profile schema {self.version}" if self.version else "profile schema (no Metadata.profile_schema_version)"


def read_version(folder: Path) -> str:
    """`Metadata.profile_schema_version` of the processed profile in `folder`, "" where there is none."""
    import pyarrow.parquet as pq

    files = sorted(folder.glob(f"{METADATA}.parquet")) + sorted(folder.glob(f"{METADATA}_[0-9]*.parquet"))
    for f in files:
        if VERSION_FIELD in pq.read_schema(f).names:
            values = [v for v in pq.read_table(f, columns=[VERSION_FIELD]).column(VERSION_FIELD).to_pylist() if v]
            if values:
                return str(values[0]).strip()
    return ""


def of(folder: Path) -> Schema:
    """The schema of the processed profile in `folder` (read once per folder and Metadata file state)."""
    meta = folder / f"{METADATA}.parquet"
    try:
        stamp = meta.stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _of(str(folder), stamp)


@functools.lru_cache(maxsize=256)
def _of(folder: str, stamp: int) -> Schema:
    try:
        version = read_version(Path(folder))
    except Exception:  # a Metadata table that is not the documented Parquet: read as unversioned
        version = ""
    if not version:
        return Schema("", None, True, MAPS[LATEST])
    try:
        major: int | None = int(version.split(".", 1)[0])
    except ValueError:
        major = None
    known = major in MAPS
    return Schema(version, major, known, MAPS[major] if major in MAPS else MAPS[LATEST])


def unknown_major_warning(s: Schema) -> str:
    """The warning for a major OpLens has no map for ("" where it has one)."""
    if s.known:
        return ""
    majors = ", ".join(f"{m}.x" for m in sorted(MAPS))
    what = f"major {s.major}" if s.major is not None else "not MAJOR.MINOR.PATCH"
    return (f"Neuron Explorer {s.label} (Metadata.profile_schema_version): {what} is not one OpLens knows ({majors}); "
            f"read by the {LATEST}.x names, each missing table column named; update OpLens, or process the profile with "
            "the neuron-explorer of a known schema")  # fmt: skip


def missing_columns(folder: Path, table: str, columns: list[str]) -> list[str]:
    """The logical `columns` of `table` its Parquet file in `folder` lacks, by the folder's schema ([] where the
    table is absent: a table is written only where the profile holds that activity)."""
    import pyarrow.parquet as pq

    s = of(folder)
    name = s.table(table)
    files = sorted(folder.glob(f"{name}.parquet")) + sorted(folder.glob(f"{name}_[0-9]*.parquet"))
    if not files:
        return []
    present = set(pq.read_schema(files[0]).names)
    return [c for c in columns if s.column(table, c) not in present]


def measured_warnings(folder: Path, tables: list[str]) -> list[str]:
    """As `warnings`, for the measured-efficiency columns (MEASURED) of `tables`, the tables being present."""
    return _missing(folder, tables, MEASURED)


def warnings(folder: Path, tables: list[str] | None = None) -> list[str]:
    """The schema's warnings for the processed profile in `folder`: an unknown major, and each column OpLens reads
    (of `tables`, default all it reads) that a present table lacks, with the version, the table, the column and what
    is not computed without it."""
    out = [w for w in (unknown_major_warning(of(folder)),) if w]
    return out + _missing(folder, tables or list(READS), READS)


def _missing(folder: Path, tables: list[str], reads: dict[str, dict[str, str]]) -> list[str]:
    """One warning for each column of `reads` (table → column → what it gives) that a present table lacks."""
    s = of(folder)
    out = []
    for table in tables:
        try:
            gone = missing_columns(folder, table, list(reads.get(table, {})))
        except Exception:  # a table that is not the documented Parquet: its reader says so
            continue
        for c in gone:
            out.append(f"Neuron Explorer {s.label}: table {s.table(table)} has no column {s.column(table, c)}: "
                       f"{reads[table][c]} (no figure is computed from it)")  # fmt: skip
    return out
