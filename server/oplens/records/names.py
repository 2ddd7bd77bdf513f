"""Names that the Python side shares with editors: LSP commands, notifications, progress stages,
the line markers' range names. Defined once here; the TypeScript side keeps its own copy in
`extension/shared/names.ts`, checked against this module by `extension/shared/names.test.ts` through
the fixture `names.json`, which `tests/unit/test_extension_fixtures.py` keeps in step with this file."""

from __future__ import annotations

# The LSP protocol of OpLens's own commands and notifications. Raised when a client must change
# with it; the server announces it in `serverInfo.version` as `<package version>+protocol.<N>`.
PROTOCOL_VERSION = 3  # 3: oplens.profile takes a program (a capture); a run may carry capture and ranks

# workspace/executeCommand
PROFILE_COMMAND = "oplens.profile"
COMPARE_COMMAND = "oplens.compare"
SHOW_RUN_COMMAND = "oplens.showRun"
CLEAR_COMMAND = "oplens.clear"
CANCEL_COMMAND = "oplens.cancel"
FUNCTIONS_COMMAND = "oplens.functions"  # a file's functions and where its runs sit (for pickers)
DIFF_COMMAND = "oplens.diff"  # one function's run against an earlier one, line by line (and its earlier runs)
DOCTOR_COMMAND = "oplens.doctor"  # `oplens doctor` on the server's host: its report, as `--json -` prints it
MERGE_COMMAND = "oplens.merge"  # `oplens merge DIR...` on the server's host: the runs of several hosts as one run
RANK_PART_COMMAND = "oplens.rankPart"  # one rank's own run within a distributed run (`oplens run --rank R`)
OVERVIEW_COMMAND = "oplens.overview"  # a program overview (`oplens run --step`): the step's time per user function
HOT_FUNCTIONS_COMMAND = "oplens.hotFunctions"  # the latest overview's functions, by self or total device time
OPEN_PERFETTO_COMMAND = "oplens.openPerfetto"  # {run_id}: the one-shot page that opens the run in Perfetto UI: {url}
EXPORT_COMMAND = "oplens.export"  # {run_id, format}: the run written for Perfetto, speedscope or TensorBoard/HTA
FLAME_GRAPH_COMMAND = "oplens.flameGraph"  # {run_id}: the run's stacks as a speedscope profile for the editor's flame graph
SLURM_COMMAND = "oplens.slurm"  # whether the server's host submits Slurm jobs (sbatch on its PATH): {sbatch, note}
BACKENDS_COMMAND = "oplens.backends"  # the backends of the server's host: auto's choice, each one's presence
RUN_PAGE_COMMAND = "oplens.runPage"  # a run's results page as the server writes it (oplens.views.run), or one rank's

# The qualname of a `%%oplens` cell's run: the notebook cell itself, profiled as one function
CELL_QUALNAME = "<cell>"

# server → client notifications
RESULT_NOTIFICATION = "oplens/result"  # {uri, run}: the whole result.json of a finished run
DOCUMENT_NOTIFICATION = "oplens/document"  # {uri, version, functions, runs}: after didOpen/didChange/results

# Progress stages a worker reports (and the server's own "queued"), in order. A capture inside a
# program (`oplens run`) reports "waiting" (calls seen, out of those to skip) and "capture"
# (calls profiled, out of the window's) instead of "warmup" and "profile". "ingesting": a device runtime's
# own trace processed by its vendor tool (Neuron: the system trace, by neuron-explorer), once per run.
STAGES = ("queued", "importing", "waiting", "warmup", "capture", "profile", "ingesting", "processing")

# The profiler ranges OpLens opens (worker/linemarks.py) and reads back (analysis/attribution.py), each under one prefix.
MARKER = "oplens."
ITER_RANGE = "oplens.iter:"  # oplens.iter:<i>, one per profiled iteration
WORK_RANGE = "oplens.work:"  # oplens.work:<digest>, in an iteration: its arguments' shapes (a capture's calls)
LINE_RANGE = "oplens.line:"  # oplens.line:<n>, one per executed line of the target
INNER_RANGE = "oplens.inner:"  # oplens.inner:<function>:<n>, lines of same-file helpers
MODULE_RANGE = "oplens.module:"  # oplens.module:<path>, one per nn.Module call in a program overview
FRAME_RANGE = "oplens.frame:"  # oplens.frame:<file>(<def line>): <name>, one per call of a user function (overview)
# oplens.probe:<n>, the lines of a function of empty lines marked as the target's are, once per run after the last
# recorded call: what a line mark itself costs in this profile (a line's time outside operators less it)
PROBE_RANGE = "oplens.probe:"
