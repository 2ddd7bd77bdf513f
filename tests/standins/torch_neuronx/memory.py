"""STAND-IN of TorchNeuron's device memory counters (tests only), over python_device.py's tensors.

The surface: `memory_stats(device)`, `memory_allocated(device)`, `max_memory_allocated(device)`,
`reset_peak_memory_stats(device)`, the memory profiling guide's API (torch/guides/memory-profiling-guide.rst,
Neuron 2.33); the dict's layout is TorchNeuron's early source's (parmoham-aws/test-repo-parmoham,
torch_neuronx/memory.py: `allocated_bytes` → `current`, `peak`, `allocated`, `freed`), or torch's CUDA layout
with STANDIN_MEMORY_STATS=flat (an ASSUMPTION of a later release, named in the tests), or none of these
functions with STANDIN_MEMORY_STATS=none (a release without them).

What it counts: a block per storage of a tensor on the stand-in's `neuron:0`, from its first tensor to the
last one freed; "Requests smaller than 16 MB are rounded up to a size class, with a minimum of 256 bytes"
(torch/reference/guidelines-memory-management.rst): the size classes are not listed there, so the stand-in
rounds up to a multiple of 256 bytes (an ASSUMPTION), which is also what tells a test the device's figures
from the host's (a 4-byte scalar is 256 bytes here). Every read is recorded (STANDIN_RECORD) with whether
the device was synchronised since the last op ran: "Always call torch.neuron.synchronize() before you read
any memory statistic".
"""

from __future__ import annotations

import os
from typing import Any

import torch

SMALL = 16 << 20
GRAIN = 256

_refs: dict[int, int] = {}  # a storage's data pointer → tensors on the device holding it
_sizes: dict[int, int] = {}  # → its block's bytes
_counts = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
_state = {"synced": True}


def block_bytes(nbytes: int) -> int:
    return nbytes if nbytes >= SMALL else max(GRAIN, -(-nbytes // GRAIN) * GRAIN)


def hold(held: torch.Tensor) -> int:
    """A tensor on the device now holds `held`'s storage: its block, allocated on the first; its key."""
    storage = held.untyped_storage()
    key, n = storage.data_ptr(), storage.nbytes()
    if not key or not n:
        return 0
    if key in _refs:
        _refs[key] += 1
    else:
        _refs[key], _sizes[key] = 1, block_bytes(n)
        _counts["current"] += _sizes[key]
        _counts["allocated"] += _sizes[key]
        _counts["peak"] = max(_counts["peak"], _counts["current"])
    return key


def release(key: int) -> None:
    if not key or key not in _refs:
        return
    _refs[key] -= 1
    if _refs[key] == 0:
        del _refs[key]
        n = _sizes.pop(key)
        _counts["current"] -= n
        _counts["freed"] += n


def ran_op() -> None:
    _state["synced"] = False


def synchronized() -> None:
    _state["synced"] = True


def _read(what: str) -> None:
    from torch_neuronx import record

    record("memory_read", what=what, synced=_state["synced"])


def memory_stats(device: Any = None) -> dict[str, Any]:
    _read("memory_stats")
    if os.environ.get("STANDIN_MEMORY_STATS") == "flat":
        return {f"allocated_bytes.all.{k}": v for k, v in _counts.items()} | {"num_ooms": 0}
    return {"allocated_bytes": dict(_counts), "reserved_bytes": dict(_counts), "active_bytes": dict(_counts),
            "num_alloc_retries": 0, "num_ooms": 0, "num_tensor_frees": 0, "allocation_requests": 0}  # fmt: skip


def memory_allocated(device: Any = None) -> int:
    _read("memory_allocated")
    return _counts["current"]


def max_memory_allocated(device: Any = None) -> int:
    _read("max_memory_allocated")
    return _counts["peak"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _counts["peak"] = _counts["current"]
