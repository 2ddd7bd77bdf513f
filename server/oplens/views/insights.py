"""What each kind of insight is called where a page tags it (the results page's insight list): one
word or two per `Insight.kind` of `analysis/insights.py`, ranks and roofline. A kind not named here is
written from its name (`some_kind` → `some kind`)."""

from __future__ import annotations

INSIGHT_LABELS = {
    "hot_line": "hot line",
    "fusable_chain": "fusable chain",
    "host_to_device_copy": "host→device copy",
    "device_sync": "device sync",
    "compiled_region": "compiled region",
    "noisy": "noisy",
    "straggler": "straggler",
    "collective_wait": "collective wait",
    "headroom": "headroom",
}


def insight_label(kind: str) -> str:
    """`host_to_device_copy` → `host→device copy`; an unknown kind its name with spaces."""
    return INSIGHT_LABELS.get(kind, kind.replace("_", " "))
