"""STAND-IN for the runtime bindings of TorchNeuron's early source that its NeuronProfiler calls (tests only).

Followed: parmoham-aws/test-repo-parmoham, `torch_neuronx/profiling.py` (the calls and their order) and the
pybind module's `_get_profiler_mappings`:

    auto mappings = at::neuron::ProfilerMappingCollector::Instance().GetAndClear();
    ... fw_dict["seq_nr"] = fw_id.seq_nr; fw_dict["th_id"] = fw_id.th_id; fw_dict["stream_id"] = fw_id.stream_id;
    entry["nrta_seq_id"] = seq_id; entry["framework_op_exec_ids"] = fw_list; ... result["version"] = 1;

where the collector records, at each submission while enabled (`SubmitOperationContext`),
`operation->pytorch_sequence_nr = at::sequence_number::peek(); operation->pytorch_thread_id =
at::RecordFunction::currentThreadId();`. Nothing runs on a device here: as the stand-in's other traces, the
executions are the known ones of `profiling._executions`, made from the framework trace the profiler wrote
(`<neuron_output_dir>/pytorch_trace.json`, written before the mapping is read and before NRT stops, in the real
stop order); each op's sequence number is its trace's "Sequence number", its thread RecordFunction's first (1).

`_nrt_inspect_stop` writes the runtime's profile where the early tests expect it:
`{output_dir}/{instance_id}_pid_{process_id}/` with `trace_info.pb`, `ntrace.pb`, `neff_<hash>.neff` and
`<hash>_instid_0_vnc_0.ntff` (tests/profiler/test_profiler_integration.py, `_validate_nrt_output_structure`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torch_neuronx import record

_state: dict[str, Any] = {"config": None, "mapping": False, "recorded": False}


def _nrt_inspect_config_allocate() -> dict[str, Any]:
    return {"output_dir": "./output", "nc": [], "types": [], "inspect": False}


def _nrt_inspect_config_set_defaults(config: dict[str, Any]) -> int:
    return 0


def _nrt_inspect_config_set_output_dir(config: dict[str, Any], output_dir: str) -> int:
    config["output_dir"] = output_dir
    return 0


def _nrt_inspect_config_set_enable_inspect(config: dict[str, Any], enabled: bool) -> int:
    config["inspect"] = enabled
    return 0


def _nrt_inspect_config_set_capture_enabled_for_nc(config: dict[str, Any], nc: int, enabled: bool) -> int:
    config["nc"].append(nc)
    return 0


def _nrt_inspect_config_set_capture_enabled_for_event_type_string(config: dict[str, Any], kind: str, enabled: bool) -> int:
    config["types"].append(kind)
    return 0


def _nrt_inspect_begin_with_options(config: dict[str, Any]) -> int:
    _state["config"] = config
    record("nrt_inspect_begin", output_dir=config["output_dir"], nc=config["nc"], types=config["types"])
    return 0


def _nrt_inspect_stop() -> int:
    from torch_neuronx.profiling import _neff_bytes, _system_trace

    config = _state["config"]
    if config is None:
        return 1
    out = Path(config["output_dir"])
    run = out / f"i-0standin0000000_pid_{os.getpid()}"
    run.mkdir(parents=True, exist_ok=True)
    trace = _framework_trace(out)
    (run / "trace_info.pb").write_bytes(b"standin")
    (run / "ntrace.pb").write_bytes(_system_trace(trace) if trace else b"standin")
    for i in range(int(os.environ.get("STANDIN_NEFFS", "1"))):
        (run / f"neff_{395760075800974 + i}.neff").write_bytes(_neff_bytes())
        (run / f"{395760075800974 + i}_instid_0_vnc_0.ntff").write_bytes(b"NTFF" * 256)
    _state["config"] = None
    record("nrt_inspect_stop", directory=str(run))
    return 0


def _set_profiler_mapping_enabled(enabled: bool) -> None:
    _state["mapping"] = bool(enabled)
    _state["recorded"] = _state["recorded"] or bool(enabled)  # the collector records only while enabled
    record("profiler_mapping", enabled=bool(enabled))


def _get_profiler_mappings() -> dict[str, Any]:
    """Get and clear: each known execution launched while the mapping was on, by its nrta_seq_id."""
    from torch_neuronx.profiling import _executions

    config = _state["config"]
    trace = _framework_trace(Path(config["output_dir"])) if config else None
    executions = (_executions(trace) or []) if trace and _state["recorded"] else []
    _state["recorded"] = _state["mapping"]
    warm_in = os.environ.get("STANDIN_MAPPING_WARMUP") == "1"
    data = [
        {"nrta_seq_id": x["nrta_seq_id"],  # a fused execution: one entry per op it carried (RecordProfilerMapping)
         "framework_op_exec_ids": [{"seq_nr": s, "th_id": 1, "stream_id": 0} for s in x.get("seq_nrs", [x["seq_nr"]])]}
        for x in executions
        if warm_in or not x.get("warmup")
    ]
    record("get_profiler_mappings", entries=len(data))
    return {"version": 1, "data": data}


def _framework_trace(out: Path) -> Path | None:
    path = out / "pytorch_trace.json"
    return path if path.is_file() else None
