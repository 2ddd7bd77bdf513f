"""TorchNeuron's framework mapping (`framework_mapping_<YYYYmmdd_HHMMSS_mmm>.json`): which framework op
launched each runtime execution, as the early NeuronProfiler writes it (parent side, no torch).

What the real source shows (TorchNeuron's early source, `parmoham-aws/test-repo-parmoham`):

- `torch_neuronx/profiling.py`, `_dump_profiler_mappings`: `mappings = _C._get_profiler_mappings()`, written
  with `json.dump` to `os.path.join(self.neuron_output_dir, f"framework_mapping_{timestamp}.json")`,
  `timestamp = now.strftime("%Y%m%d_%H%M%S") + f"_{now.microsecond // 1000:03d}"`;
- the binding: `entry["nrta_seq_id"] = seq_id; entry["framework_op_exec_ids"] = fw_list` with
  `fw_dict["seq_nr"]`, `fw_dict["th_id"]`, `fw_dict["stream_id"]`, and `result["version"] = 1`;
- what is recorded, at submission (`SubmitOperationContext`): `operation->pytorch_sequence_nr =
  at::sequence_number::peek(); operation->pytorch_thread_id = at::RecordFunction::currentThreadId();`.

The join key, and what it can and cannot tell (a comment the rule in systrace.py relies on):

- `nrta_seq_id` is the runtime's async sequence id (`nrta_seq_t`, nrt_async.rst: "Monotonically increasing IDs
  of executions. The first 16 bits are an Execution Unit ID, while the last 48 bits are a strictly ordered
  Sequence Number"). The runtime's release notes say it was "added ... to system trace events for correlation
  between async operations and hardware execution events"; `SystemProfileEvents` has no dedicated column for it
  (profile-schema-reference.rst), and its `extra_attributes_json` holds "any additional attributes that were
  present in the event but don't have dedicated column": that is where it is read (`NRTA_KEYS`).
- `seq_nr` is torch's autograd sequence counter read at submission. torch.profiler's Chrome trace carries the
  same counter as an op's `"Sequence number"` arg, read when the op is dispatched at the Autograd key with grad
  mode on (checked on torch 2.13: `aten::mul`, `aten::add`, `aten::matmul`, `aten::mm` on tensors that require
  no grad all carry `"Sequence number": 0`; under `no_grad` / `inference_mode` no op carries one). The counter
  moves only when an autograd node is created, so in a forward-only profile many ops share one value: the key
  names a *position* of the thread's autograd counter, not one op; and an op that creates a node before it
  submits reads one more at submission than its trace shows. OpLens therefore joins by equal value only (no
  guessed offset), and within one value by launch order (executions by `nrta_seq_id`, ops by start), refusing
  where the counts do not fit.
- `th_id` is `RecordFunction::currentThreadId()`, a small per-thread counter the Chrome trace does not show
  for forward ops (its `"Fwd thread id"` is 0, its `tid` the system's): it can only be checked to be one thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PATTERN = "framework_mapping_*.json"
NRTA_KEYS = ("nrta_seq_id", "nrt_sequence_id", "nrta_sequence_id")  # the runtime's event field; the schema's word
SEQ_NUM_BITS = 48  # nrt_async.h: NRTA_SEQ_GET_XU_ID(seq_id) (seq_id >> 48)
SEQUENCE_ARG = "Sequence number"  # torch.profiler's Chrome trace arg (torch 2.13)


@dataclass(frozen=True)
class OpExecId:
    seq_nr: int
    th_id: int
    stream_id: int


@dataclass
class Mapping:
    path: str
    by_seq: dict[int, list[OpExecId]]


def find(out_dir: Path) -> Path | None:
    """The latest framework mapping in the profile's output dir (where the early NeuronProfiler writes it), by
    the timestamp in its name."""
    if not out_dir.is_dir():
        return None
    found = sorted(out_dir.glob(PATTERN)) or sorted(out_dir.glob(f"*_pid_*/{PATTERN}"))
    return found[-1] if found else None


def read(path: Path) -> tuple[Mapping | None, str]:
    """The mapping, or None and why it does not read as the early source writes it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return None, f"{path.name} does not read ({e})"
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None, f"{path.name} holds no data list (the early source writes {{'version': 1, 'data': [...]}})"
    by_seq: dict[int, list[OpExecId]] = {}
    try:
        for entry in data["data"]:
            fw = entry["framework_op_exec_ids"]
            ids = [OpExecId(int(f["seq_nr"]), int(f["th_id"]), int(f.get("stream_id", 0))) for f in fw]
            by_seq.setdefault(int(entry["nrta_seq_id"]), []).extend(ids)
    except (KeyError, TypeError, ValueError) as e:
        return None, f"{path.name}: an entry lacks nrta_seq_id / framework_op_exec_ids {{seq_nr, th_id}} ({e!r})"
    return Mapping(str(path), by_seq), ""


def nrta_seq_id(attrs: dict[str, Any]) -> int | None:
    """An execution's async sequence id from its `extra_attributes_json`."""
    for key in NRTA_KEYS:
        value = attrs.get(key)
        if value is not None:
            try:
                return int(value)
            except (TypeError, ValueError):
                return None
    return None


def sequence_numbers(trace: Path) -> dict[int, int]:
    """Each framework op's `"Sequence number"` by its External id (the correlation id OpLens's events carry)."""
    try:
        data = json.loads(trace.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    out: dict[int, int] = {}
    for e in events if isinstance(events, list) else []:
        args = e.get("args") if isinstance(e, dict) else None
        if isinstance(args, dict) and SEQUENCE_ARG in args and args.get("External id") is not None:
            try:
                out[int(args["External id"])] = int(args[SEQUENCE_ARG])
            except (TypeError, ValueError):
                continue
    return out
