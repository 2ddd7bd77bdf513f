"""One variant's calls out of a profile that holds several variants' calls interleaved (a compare, pure).

`oplens compare` calls its variants in one worker under one profiler session, round after round
(worker/sidebyside.py), each call in its own iteration range `oplens.iter:<k>`, `k` counting every
variant's calls in the order they ran. A variant's run is the attribution of its own calls alone:
`calls_of` keeps the events of the iterations `ks` (its calls, in order) and numbers them 0, 1, ...
again, so the rest of the chain (attribution, work, insights) sees one function's profile as if it
had been measured alone. `oplens analyze` of such a run splits its stored trace the same way.

Which events are a call's:
- a CPU event (any thread: autograd's too) that starts inside the call's iteration range;
- a device event linked (correlation id) to one of those, or, with no link, starting inside the range.
Everything between the calls (the device's synchronisation, the profiler's step) belongs to no call,
as in a profile of one function.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oplens.analysis.arrays import np
from oplens.analysis.columns import COLUMNS, ITER, AnyEvents, Events, RawEvent, of

if TYPE_CHECKING:
    from numpy.typing import NDArray


def calls_of(events: AnyEvents, ks: Sequence[int]) -> Events:
    """The events of iterations `ks` (`oplens.iter:<k>`), those iterations renamed `oplens.iter:0`, `:1`, ... in
    the order of `ks`."""
    ev = of(events)
    local = {k: i for i, k in enumerate(ks)}
    names = list(ev.names)
    renamed: dict[int, int] = {}  # name code of oplens.iter:<k> → the local index
    for code, name in enumerate(names):
        if name.startswith(ITER):
            try:
                k = int(name[len(ITER) :])
            except ValueError:
                continue
            if k in local:
                renamed[code] = local[k]
                names[code] = f"{ITER}{local[k]}"
    codes = ev.name.tolist()
    starts_list = ev.start_ns.tolist()
    ends_list = ev.end_ns.tolist()
    spans = sorted((starts_list[i], ends_list[i]) for i, c in enumerate(codes) if c in renamed)
    span_starts = [s for s, _ in spans]
    span_ends = [e for _, e in spans]

    def inside(t: int) -> bool:
        j = bisect.bisect_right(span_starts, t) - 1
        return j >= 0 and t <= span_ends[j]

    on_device = ev.on_device.tolist()
    keep = [not dev and inside(t) for dev, t in zip(on_device, starts_list, strict=True)]
    correlations = ev.correlation_id.tolist()
    linked = {c for c, k in zip(correlations, keep, strict=True) if k and c}
    for i, (dev, link) in enumerate(zip(on_device, ev.linked_correlation_id.tolist(), strict=True)):
        if dev:
            keep[i] = link in linked if link else inside(starts_list[i])
    mask: NDArray[np.bool_] = np.fromiter(keep, np.bool_, len(keep))
    columns = {c: getattr(ev, c)[mask] for c in COLUMNS}
    rows = sources = None
    if ev.rows is not None or ev.sources is not None:
        index = [i for i, k in enumerate(keep) if k]
        if ev.rows is not None:
            rows = [_renamed(ev.rows[i], names[codes[i]]) for i in index]
        if ev.sources is not None:
            sources = [ev.sources[i] for i in index]
    return Events(names=names, name=ev.name[mask], rows=rows, sources=sources, **columns)


def _renamed(row: RawEvent, name: str) -> RawEvent:
    return row if row.name == name else dataclasses.replace(row, name=name)


def device_events_of(device_events: Sequence[RawEvent], kept: Events) -> list[RawEvent]:
    """A device runtime's executions (each linked to its launching op) that belong to the ops in `kept`."""
    linked = {c for c in kept.correlation_id.tolist() if c}
    return [e for e in device_events if e.linked_correlation_id in linked]
