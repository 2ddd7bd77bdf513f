"""Which profiled calls are outliers: the same work as the other calls, far slower (pure Python).

Every headline figure (each line's time, the totals, the roofline, the insights' time to win) is a
mean over the profiled calls, so that lines sum exactly to the totals; one stalled call (a page-fault
storm, a descheduled thread, a GC pause inside an op) can move such a mean tenfold. So, before those
figures are made (analysis/attribution.py decides, then sums once), each call gets

    its work    the ops it ran, by name and by the line (and helper line) they ran on, with their
                counts, and the shapes and dtypes of its arguments where the calls may differ (a
                capture's `oplens.work:<digest>` range, worker/calls.py; a profile's `--args` are the
                same every iteration): calls whose work differs in any of these are never compared
    its time    its self device time and its self CPU time, all lines (on the CPU both are CPU time)

and, among the calls of one kind of work, a call is an outlier where one of its two times is far
above their median (`stats.outlier_bar`: above both three times the median and the median + 5 robust
standard deviations, among at least 5 such calls of which at most a quarter are that far out; the
reasons for each figure are stats.py's). Only slower calls: a stall only adds time. A call that ran
other work (a data-dependent branch, a longer sequence) is never an outlier: it is real cost and
counts in full.

The headline figures are then means over the kept calls, so they still sum line by line to the
totals; the per-call samples, spreads and shares keep every call, and `Outliers` records the mean over
all calls beside them.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Hashable, Sequence

from oplens.analysis import stats
from oplens.records.format import fmt_us
from oplens.records.run import OutlierCall, Outliers


def find(device_us: Sequence[float], cpu_us: Sequence[float], work: Sequence[Hashable]) -> list[OutlierCall]:
    """The outlier calls, by index: `device_us`/`cpu_us` each call's time (all lines), `work` its kind
    of work (calls of equal kinds are the same work)."""
    groups: defaultdict[Hashable, list[int]] = defaultdict(list)
    for i, w in enumerate(work):
        groups[w].append(i)
    found: dict[int, OutlierCall] = {}
    for members in groups.values():
        for figure in (device_us, cpu_us):
            bar, median = stats.outlier_bar([figure[i] for i in members])
            out = [i for i in members if figure[i] > bar]
            if not out or len(out) > stats.OUTLIER_MAX_SHARE * len(members):
                continue
            for i in out:
                slower = figure[i] / median
                if i not in found or slower > found[i].slower:
                    found[i] = OutlierCall(call=i, device_us=device_us[i], cpu_us=cpu_us[i], slower=slower)
    return [found[i] for i in sorted(found)]


def record(calls: Sequence[OutlierCall], device_us: Sequence[float], cpu_us: Sequence[float], works: int) -> Outliers:
    """The `Outliers` record of a run's calls (its words are `note`'s, once the device is known)."""
    n = len(device_us)
    return Outliers(calls=list(calls), kept=n - len(calls), profiled=n, works=works,
                    all_device_us=sum(device_us) / n if n else 0.0, all_cpu_us=sum(cpu_us) / n if n else 0.0)  # fmt: skip


def merged(parts: Sequence[Outliers | None], ranks: Sequence[int]) -> Outliers | None:
    """The outliers of a distributed run's ranks (each decided on its own calls, as its own figures are):
    every rank's, named by rank; the all-call means over the ranks, as the merged figures are (None
    where a rank's run is older than the record). Its words are `note`'s."""
    if not parts or any(p is None for p in parts):
        return None
    present = [p for p in parts if p is not None]
    calls = [dataclasses.replace(c, rank=r) for p, r in zip(present, ranks, strict=True) for c in p.calls]
    n = len(present)
    return Outliers(calls=calls, kept=min(p.kept for p in present), profiled=min(p.profiled for p in present),
                    works=max(p.works for p in present), all_device_us=sum(p.all_device_us for p in present) / n,
                    all_cpu_us=sum(p.all_cpu_us for p in present) / n)  # fmt: skip


def note(o: Outliers, label: str, kept_device_us: float) -> str:
    """The outliers in words, for the CLI, the hover, the notebook and the results page (calls counted
    from 1, as people count): `1 of 10 calls left out of the figures as an outlier (the same work as the
    others, far slower: a stall): call 8 (CPU 46.00 ms, 107.0× the median call). Self CPU per call
    431.2 µs without it, 5.03 ms over every call`; "" where none is."""
    if not o.calls:
        return ""
    many = len(o.calls) > 1
    which = "; ".join(
        (f"rank {c.rank} " if c.rank is not None else "")
        + f"call {c.call + 1} ({label} {fmt_us(c.device_us)}"
        + (f", CPU {fmt_us(c.cpu_us)}" if c.cpu_us != c.device_us else "")
        + f", {c.slower:.1f}× the median call)"
        for c in o.calls[:5]
    ) + (f"; … {len(o.calls) - 5} more" if len(o.calls) > 5 else "")
    of = f"{o.profiled} calls" + (" of each rank" if any(c.rank is not None for c in o.calls) else "")
    them = "them" if many else "it"
    return (f"{len(o.calls)} of {of} left out of the figures as {'outliers' if many else 'an outlier'} "
            f"(the same work as the others, far slower: a stall): {which}. Self {label} per call "
            f"{fmt_us(kept_device_us)} without {them}, {fmt_us(o.all_device_us)} over every call")  # fmt: skip
