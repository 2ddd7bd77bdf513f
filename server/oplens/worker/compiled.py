"""Which source lines a `torch.compile` graph fused (worker side).

While the warm-up compiles, OpLens listens to Dynamo's `graph_code` log: each traced graph
arrives as a `GraphModule` whose nodes carry the user's stack traces. The graph's compile id
(`0/0`) names its profiler region (`Torch-Compiled Region: 0/0`), so a region on a line can
list the lines it fused, and its work be counted from the graph (worker/graphwork.py).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from oplens.analysis.work import LineWork
from oplens.records.run import SourceRef
from oplens.worker import graphwork

_LOGGER = "torch._dynamo.output_graph.__graph_code"
_FRAME = re.compile(r'File "?(?P<file>[^",]+?)"?(?:, line |:)(?P<line>\d+),? in (?P<function>[\w<>.]+)')


class FusedLines(logging.Handler):
    """Collects `{region name: [SourceRef]}` for graphs compiled while it is installed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.regions: dict[str, list[SourceRef]] = {}
        self.graphs = 0
        self._modules: dict[str, Any] = {}  # region → its GraphModule, until its work is counted
        self._work: dict[str, LineWork] = {}
        self._logger = logging.getLogger(_LOGGER)
        self._saved: tuple[int, bool] = (logging.NOTSET, True)

    def __enter__(self) -> FusedLines:
        self._saved = (self._logger.level, self._logger.propagate)
        self._logger.setLevel(logging.DEBUG)
        self._logger.propagate = False  # keep the graph listing out of the user's log
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._saved[0])
        self._logger.propagate = self._saved[1]

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.graphs += 1
            gm = _graph_module(record)
            if gm is not None:
                compile_id = str(getattr(gm, "meta", {}).get("dynamo_compile_id", "") or "")
                refs = _refs_from_graph(gm)
            else:  # an unknown torch version: read the listing's "# File: f:12 in fn" comments
                compile_id, refs = "", _refs_from_text(record.getMessage())
            name = f"Torch-Compiled Region: {compile_id}" if compile_id else f"graph {self.graphs}"
            if gm is not None and compile_id:
                self._modules[name] = gm
            merged = self.regions.setdefault(name, [])
            merged.extend(r for r in refs if r not in merged)
            merged.sort(key=lambda r: (r.file, r.line))
        except Exception:  # never let bookkeeping break the user's compile
            pass


    def work(self) -> dict[str, LineWork]:
        """Each compiled region's work in one call, counted from its graph (worker/graphwork.py)
        once, after the compile (not inside it); a graph that cannot be counted has none."""
        for name in list(self._modules):
            gm = self._modules.pop(name)
            try:
                found = graphwork.work_of(gm)
            except Exception:  # an op without a fake kernel, an unusual graph: its work stays unknown
                found = None
            if found is not None:
                self._work[name] = found
        return dict(self._work)


def _graph_module(record: logging.LogRecord) -> Any:
    """The GraphModule behind the lazy log message: an argument of it, or held by its closure."""
    for arg in record.args if isinstance(record.args, tuple) else ():
        cells = getattr(getattr(arg, "func", None), "__closure__", None) or ()
        candidates = [*getattr(arg, "args", ()), *(c.cell_contents for c in cells)]
        for inner in candidates:
            if hasattr(inner, "graph") and hasattr(inner, "meta"):
                return inner
    return None


def _refs_from_graph(gm: Any) -> list[SourceRef]:
    refs: list[SourceRef] = []
    for node in gm.graph.nodes:
        trace = node.meta.get("stack_trace")
        if not trace:
            continue
        frames = list(_FRAME.finditer(trace))
        if frames:  # the innermost frame is the line that created the node
            m = frames[-1]
            ref = SourceRef(file=m["file"], line=int(m["line"]), function=m["function"])
            if ref not in refs:
                refs.append(ref)
    return refs


def _refs_from_text(text: str) -> list[SourceRef]:
    refs: list[SourceRef] = []
    for m in re.finditer(r"# File: (?P<file>.+?):(?P<line>\d+) in (?P<function>[\w<>.]+)", text):
        ref = SourceRef(file=m["file"], line=int(m["line"]), function=m["function"])
        if ref not in refs:
            refs.append(ref)
    return refs
