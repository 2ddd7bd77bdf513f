"""Which ops are collectives: time a rank spends exchanging with, or waiting for, the other ranks.

Named as the profiler records them: c10d's ops (`c10d::allreduce_`, `c10d::barrier`), the backends'
own ranges (`gloo:all_reduce`, `nccl:all_reduce`), `record_param_comms`, and the functional and
vendor forms (`_c10d_functional::all_reduce`, the Neuron collectives' `all_reduce`/`all_gather` ops).
"""

from __future__ import annotations

import re

COLLECTIVE = "collective"  # OpStat.category

_KINDS = (
    r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|barrier|"
    r"reduce|gather|scatter|send|recv|monitored_barrier"
)
_NAMESPACES = re.compile(r"^(c10d|_c10d_functional|c10d_functional|gloo|nccl|xla|neuron)\w*[:.]+", re.I)
_KIND = re.compile(rf"(^|[:._]){_KINDS}($|[_.(])", re.I)


def is_collective(name: str) -> bool:
    """A collective op or range, by the names c10d, gloo, NCCL and the Neuron collectives use."""
    if name == "record_param_comms" or name.startswith("ProcessGroup"):
        return True
    if _NAMESPACES.match(name):
        return _KIND.search(name.split(":")[-1]) is not None or name.lower().startswith(("gloo", "nccl"))
    return re.search(r"(^|[:_])(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all)", name, re.I) is not None


def category(name: str) -> str:
    return COLLECTIVE if is_collective(name) else ""
