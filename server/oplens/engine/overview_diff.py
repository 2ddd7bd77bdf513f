"""Before/after of a program overview: which of the user's functions got slower or faster, and is it real.

Functions are matched by file and qualname (a function moved within its file is still itself). Each
function's verdict, as a line's in `engine/diff.py`: `slower` or `faster` where its per-step self device
times differ by the Mann-Whitney test (p < ALPHA) *and* the change of their trimmed means is larger than
MIN_EFFECT; else `same` (also under MIN_SHARE of the step in both runs). With fewer than MIN_STEPS steps
a side (a time window is one) there is no test: the change is reported and the verdict is `unknown`.
Parent side, no torch: it reads two stored runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from oplens.analysis.stats import mann_whitney_p, trimmed_mean
from oplens.engine.diff import ALPHA, MIN_EFFECT, MIN_SHARE
from oplens.records.errors import bad_input
from oplens.records.overview import AnyRun, FunctionStat, Overview, OverviewRun

MIN_STEPS = 3  # per side, for the test


@dataclass
class FunctionChange:
    file: str
    qualname: str
    def_line: int  # in the later run (the earlier one's for a removed function)
    before_us: float | None  # self device time per step; None: not seen in that run
    after_us: float | None
    ratio: float | None  # after / before
    p_value: float | None
    verdict: str  # slower | faster | same | unknown | new | removed


@dataclass
class OverviewDiff:
    before_run: str
    after_run: str
    device_label: str
    before_total_us: float
    after_total_us: float
    total_ratio: float | None
    functions: list[FunctionChange] = field(default_factory=list)  # by the size of the change, largest first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def diff_overviews(before: AnyRun, after: AnyRun) -> OverviewDiff:
    if not isinstance(before, OverviewRun) or not isinstance(after, OverviewRun):
        raise bad_input("one of the runs is not a program overview",
                        "diff two overviews (oplens run --step ...), or two line profiles of one function")  # fmt: skip
    if before.backend.name != after.backend.name:
        raise bad_input(f"the runs ran on different backends ({before.backend.name} and {after.backend.name})",
                        "compare runs of one backend: their times are not the same kind of figure")  # fmt: skip
    old, new = before.overview, after.overview
    if old.per != new.per:
        raise bad_input(f"one overview is per {old.per}, the other per {new.per}",
                        "diff overviews made the same way (both with --step, or both over a time window)")  # fmt: skip
    olds = {(f.file, f.qualname): f for f in old.functions}
    news = {(f.file, f.qualname): f for f in new.functions}
    changes = [_change(olds.get(k), news.get(k), old, new) for k in dict.fromkeys([*olds, *news])]
    changes = [c for c in changes if c.before_us or c.after_us]
    changes.sort(key=lambda c: -abs((c.after_us or 0.0) - (c.before_us or 0.0)))
    total_ratio = new.total_device_us / old.total_device_us if old.total_device_us else None
    return OverviewDiff(before.run_id, after.run_id, new.device_label, old.total_device_us, new.total_device_us,
                        total_ratio, changes)  # fmt: skip


def _change(a: FunctionStat | None, b: FunctionStat | None, old: Overview, new: Overview) -> FunctionChange:
    some = b or a
    assert some is not None
    if a is None or b is None:
        return FunctionChange(some.file, some.qualname, some.def_line, a.self_device_us if a else None,
                              b.self_device_us if b else None, None, None, "new" if a is None else "removed")  # fmt: skip
    ratio = b.self_device_us / a.self_device_us if a.self_device_us else None
    share = max(100.0 * a.self_device_us / old.total_device_us if old.total_device_us else 0.0,
                100.0 * b.self_device_us / new.total_device_us if new.total_device_us else 0.0)  # % of the step
    if len(a.self_samples_us) < MIN_STEPS or len(b.self_samples_us) < MIN_STEPS:
        return FunctionChange(b.file, b.qualname, b.def_line, a.self_device_us, b.self_device_us, ratio, None, "unknown")
    p = mann_whitney_p(a.self_samples_us, b.self_samples_us)
    before_m, after_m = trimmed_mean(a.self_samples_us), trimmed_mean(b.self_samples_us)
    moved = after_m / before_m if before_m else None
    verdict = "same"
    if share >= MIN_SHARE and p < ALPHA and moved is not None and abs(moved - 1.0) > MIN_EFFECT:
        verdict = "slower" if moved > 1.0 else "faster"
    return FunctionChange(b.file, b.qualname, b.def_line, a.self_device_us, b.self_device_us, ratio, p, verdict)
