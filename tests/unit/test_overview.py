"""A program overview from stored events (`analysis`, `records/overview.py`): self and total time along each op's
user frames, the call tree's paths and recursion, a frame met already running, two overviews diffed by function,
and the stored record (an older one inside a run still loads). Captures are tests/worker/test_overview.py's."""

from __future__ import annotations

import json
from pathlib import Path

from oplens.analysis.functions import OpTime, Profile, PyFrame, Span, attribute, function_at
from oplens.engine.overview_diff import diff_overviews
from oplens.records.overview import FunctionStat, Overview, OverviewRun
from oplens.records.run import BackendInfo, Config, Target, Totals

# ---- the attribution on known records -----------------------------------------------------------------


def test_self_and_total_follow_the_user_frames_on_each_ops_stack(tmp_path: Path) -> None:
    """outer (user) calls helper (a library) which calls inner (user): an op in inner is inner's self and
    both's total; an op under only the library frame is outer's self; a frameless thread's op goes to what
    the main thread was in; an op outside the step is not counted."""
    src = tmp_path / "prog.py"
    src.write_text("def outer():\n    pass\n\n\ndef inner():\n    pass\n")
    lib = "/usr/lib/python3/lib.py"
    is_user = {str(src): str(src)}.get
    frames = [
        PyFrame(f"{src}(1): outer", 1, 100, 1000),
        PyFrame(f"{lib}(7): helper", 1, 150, 900),
        PyFrame(f"{src}(5): inner", 1, 200, 400),
    ]
    ops = [
        OpTime(1, 210, 300, 0),  # in inner: 90 ns, of which its child below 40
        OpTime(1, 220, 260, 0),
        OpTime(1, 500, 600, 0),  # under helper only: outer's self
        OpTime(2, 700, 750, 0),  # an autograd thread: on outer at 700 (helper open): outer's
        OpTime(1, 1100, 1200, 0),  # after the step
    ]
    profile = Profile(frames, ops, steps=[Span("0", 1, 0, 1050)])
    o = attribute(profile, is_user)
    f = {x.qualname: x for x in o.functions}
    assert f["inner"].self_cpu_us * 1000 == 90 and f["inner"].total_cpu_us * 1000 == 90
    assert f["outer"].self_cpu_us * 1000 == 150 and f["outer"].total_cpu_us * 1000 == 240
    assert o.total_cpu_us * 1000 == 240 and o.outside_user_device_us == 0
    assert f["outer"].calls == 1 and f["inner"].def_line == 5
    # the call tree (the icicle chart): outer at the top, inner under it (the library frame between left out)
    tree = [(o.functions[n.function].qualname, n.parent, round(n.self_cpu_us * 1000), round(n.total_cpu_us * 1000))
            for n in o.frames]  # fmt: skip
    assert tree == [("outer", -1, 150, 240), ("inner", 0, 90, 90)]


def test_the_call_tree_keeps_each_path_apart_and_recursion_as_it_ran(tmp_path: Path) -> None:
    """a calls b twice, once directly and once through c; b recurses once: each path its own node, the
    totals of a node its own and its children's, siblings hottest first, a parent before its children."""
    src = tmp_path / "prog.py"
    src.write_text("def a():\n    pass\n\n\ndef b():\n    pass\n\n\ndef c():\n    pass\n")
    is_user = {str(src): str(src)}.get
    frames = [
        PyFrame(f"{src}(1): a", 1, 0, 1000),
        PyFrame(f"{src}(5): b", 1, 10, 100),
        PyFrame(f"{src}(9): c", 1, 200, 600),
        PyFrame(f"{src}(5): b", 1, 210, 590),
        PyFrame(f"{src}(5): b", 1, 300, 500),  # b calling itself
    ]
    ops = [OpTime(1, 20, 40, 0), OpTime(1, 220, 260, 0), OpTime(1, 310, 410, 0), OpTime(1, 700, 705, 0)]
    o = attribute(Profile(frames, ops, steps=[Span("0", 1, 0, 1000)]), is_user)
    tree = [("/".join(_path(o, i)), round(n.self_cpu_us * 1000), round(n.total_cpu_us * 1000))
            for i, n in enumerate(o.frames)]  # fmt: skip
    assert tree == [("a", 5, 165), ("a/c", 0, 140), ("a/c/b", 40, 140), ("a/c/b/b", 100, 100), ("a/b", 20, 20)]
    assert all(n.parent < i for i, n in enumerate(o.frames))
    b = next(f for f in o.functions if f.qualname == "b")
    assert round(b.total_cpu_us * 1000) == 160  # each op once, whatever the recursion


def _path(o: Overview, i: int) -> list[str]:
    names = []
    while i >= 0:
        names.insert(0, o.functions[o.frames[i].function].qualname)
        i = o.frames[i].parent
    return names


def test_a_frame_met_already_running_is_found_by_its_enclosing_def(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("class A:\n    def f(self):\n        x = 1\n        return x\n\n\n"
                   "def g():\n    def f():\n        return 2\n    return f\n")
    assert function_at(str(src), 2, "f") == ("A.f", 2)
    assert function_at(str(src), 4, "f") == ("A.f", 2)  # the current line of a running frame
    assert function_at(str(src), 9, "f") == ("g.f", 8)
    assert function_at(str(src), 3, "<module>") == ("<module>", 3)


# ---- before/after -------------------------------------------------------------------------------------


def _overview_run(run_id: str, functions: list[tuple[str, list[float]]]) -> OverviewRun:
    stats = [FunctionStat(file="/w/m.py", qualname=q, def_line=i + 1, self_device_us=sum(s) / len(s), self_samples_us=s)
             for i, (q, s) in enumerate(functions)]  # fmt: skip
    total = sum(f.self_device_us for f in stats)
    return OverviewRun(target=Target("/w/m.py", "step", 1, 2, ""), backend=BackendInfo("cpu", "CPU"),
                       config=Config(0, 5), totals=Totals(total, total, 0), run_id=run_id,
                       overview=Overview(steps=5, total_device_us=total, functions=stats))  # fmt: skip


def test_two_overviews_diff_by_function_with_a_verdict_from_the_steps() -> None:
    before = _overview_run("a", [("hot", [100, 101, 99, 100, 102, 98, 103, 100]), ("same", [50, 51, 49, 50, 50, 52, 48, 50]),
                                 ("gone", [10] * 8)])  # fmt: skip
    after = _overview_run("b", [("hot", [150, 149, 151, 150, 152, 148, 153, 150]), ("same", [50, 49, 51, 50, 50, 48, 52, 51]),
                                ("new", [5] * 8)])  # fmt: skip
    d = diff_overviews(before, after)
    verdicts = {c.qualname: c.verdict for c in d.functions}
    assert verdicts == {"hot": "slower", "same": "same", "gone": "removed", "new": "new"}
    assert d.functions[0].qualname == "hot" and abs((d.functions[0].ratio or 0) - 1.5) < 0.01


def test_an_overview_is_stored_as_its_own_record_and_an_older_one_inside_a_run_still_loads(tmp_path: Path) -> None:
    """An overview has its own file in its run directory (`overview.json`, an `OverviewRun`); a `result.json` of
    an older OpLens, where it rode on a run with no lines (`"overview": {...}`), is read as one too."""
    from oplens.engine import runs
    from oplens.lsp.shared import ResultStore
    from oplens.records.run import Run

    new = _overview_run("20260101-000002-step-bbbbbb", [("hot", [100.0] * 4)])
    staged = runs.stage(tmp_path, new.run_id)
    runs.commit(tmp_path, staged, new)
    assert (tmp_path / new.run_id / runs.OVERVIEW).is_file() and not (tmp_path / new.run_id / runs.RESULT).exists()
    old = _overview_run("20260101-000001-step-aaaaaa", [("hot", [90.0] * 4)])
    data = {**old.to_dict(), "lines": [], "ops": [], "schema": "oplens.result/1"}
    (tmp_path / old.run_id).mkdir()
    (tmp_path / old.run_id / runs.RESULT).write_text(json.dumps(data), encoding="utf-8")

    assert [p.name for p in runs.list_runs(tmp_path)] == [old.run_id, new.run_id]
    loaded = runs.load(tmp_path / old.run_id)
    assert isinstance(loaded, OverviewRun) and not isinstance(loaded, Run)
    assert loaded.overview.functions[0].self_device_us == 90.0 and loaded.run_id == old.run_id
    assert isinstance(runs.find(tmp_path, new.run_id), OverviewRun)
    assert abs((diff_overviews(loaded, runs.find(tmp_path, "latest")).functions[0].ratio or 0) - 100 / 90) < 1e-6
    store = ResultStore(tmp_path)
    assert store.load() == 2 and store.overview is not None and store.overview.run_id == new.run_id
    assert store.latest == {}, "an overview is not a run of its step function's lines"
