"""The route a profile takes through OpLens's own files, from `oplens profile` to the per-line attribution
and on to the run it sends back, as it runs (not as the code reads): how many of OpLens's files it enters,
and how often it comes back into one it had left. The figure issue 32 asks to bring down ("files visited
… without doubling back").

    .venv/bin/python bench/route.py                 # this checkout
    .venv/bin/python bench/route.py --repo DIR      # another checkout (e.g. a `git worktree` of an older commit)

Both processes are followed: the parent (`oplens profile`: the request, the target, the staging, the job)
up to where it starts the worker, and the worker (prepare, measure, process, the run described and sent)
to its end; `attributions` counts its calls of `analysis/attribution.attribute`. A `sitecustomize` on
PYTHONPATH installs `sys.setprofile` in each. Counted: the OpLens files a function of which runs (a module's
body run by an import is loading, not the route); the distinct call edges between files; and the edges that
double back: a call into a file that is already on the stack below the caller (A calls B, and B calls back
into A: a callback, named with the function called). Loops do not inflate the counts (edges are distinct)
and nothing is timed: one run is exact.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# Installed in every Python process of the profile (parent and worker) through PYTHONPATH.
SITECUSTOMIZE = r'''
import os, sys, json, atexit
_root = os.environ["OPLENS_ROUTE_ROOT"]
_out = os.path.join(os.environ["OPLENS_ROUTE_OUT"], f"{os.getpid()}.json")
_files = []  # OpLens's files in the order first entered
_edges = {}  # "caller -> callee" (files) -> times
_back = set()  # edges into a file that is already on the stack below the caller: the route doubles back
_done = [False]
_attributions = [0]

def _file(frame):
    f = frame.f_code.co_filename
    if frame.f_code.co_name == "<module>":
        return None  # an import runs the module's body: loading, not the route
    return os.path.relpath(f, _root) if f.startswith(_root) else None

def _importing(frame):
    """A call made while one of OpLens's modules is being imported (a decorator, a table built at load)."""
    while frame is not None:
        c = frame.f_code
        if c.co_name == "<module>" and c.co_filename.startswith(_root) and not c.co_filename.endswith("__main__.py"):
            return True
        frame = frame.f_back
    return False

def _stack(frame):
    out = []
    while frame is not None:
        f = _file(frame)
        if f is not None and (not out or out[-1] != f):
            out.append(f)
        frame = frame.f_back
    return out  # innermost first

def _prof(frame, event, arg):
    if _done[0] or event != "call":
        return
    code = frame.f_code
    if code.co_name == "_execute_child" and code.co_filename.endswith("subprocess.py"):
        _stop()  # the parent's part ends where it starts the worker
        return
    f = _file(frame)
    if f is None or _importing(frame):
        return
    below = _stack(frame.f_back)
    if f not in _files:
        _files.append(f)
    if below and below[0] != f:
        edge = f"{below[0]} -> {f}"
        _edges[edge] = _edges.get(edge, 0) + 1
        if f in below[1:]:
            _back.add(f"{edge} ({code.co_name})")
    if f.endswith("analysis/attribution.py") and code.co_name == "attribute":
        _attributions[0] += 1

def _stop():
    _done[0] = True
    sys.setprofile(None)
    _save()

def _save():
    with open(_out, "w") as fh:
        json.dump({"argv": sys.argv, "files": _files, "edges": _edges, "back": sorted(_back),
                   "attributions": _attributions[0], "reached": _attributions[0] > 0}, fh)

atexit.register(_save)
_exit = os._exit
def _leave(code):  # a worker may end by os._exit, past atexit
    _save()
    _exit(code)
os._exit = _leave
sys.setprofile(_prof)
'''


def summarize(part: dict[str, Any]) -> dict[str, Any]:
    return {"files": len(part["files"]), "call_edges": len(part["edges"]), "doubling_back": part["back"],
            "attributions": part["attributions"]}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=HERE.parent, help="the OpLens checkout to follow (default: this one)")
    a = ap.parse_args()
    repo = a.repo.resolve()
    root = str(repo / "server" / "oplens") + os.sep
    with tempfile.TemporaryDirectory() as tmp:
        site, out = Path(tmp) / "site", Path(tmp) / "routes"
        site.mkdir()
        out.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(repo / "server")]),
               "OPLENS_ROUTE_ROOT": root, "OPLENS_ROUTE_OUT": str(out), "OMP_NUM_THREADS": "1"}  # fmt: skip
        cmd = [sys.executable, "-m", "oplens", "profile", str(repo / "examples" / "rmsnorm.py") + "::rmsnorm_naive",
               "--args", "make_inputs(2, 64, 256)", "--iters", "3", "--warmup", "1", "--backend", "cpu",
               "--out", str(Path(tmp) / "runs")]  # fmt: skip
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return proc.returncode
        parts = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    worker = next((p for p in parts if p["reached"]), None)
    parent = next((p for p in parts if "profile" in p["argv"] and not p["reached"]), None)
    if worker is None or parent is None:
        print("no process reached analysis/attribution.attribute", file=sys.stderr)
        return 1
    to_attribution = worker["files"][: worker["files"].index("analysis/attribution.py") + 1]
    report = {"parent": summarize(parent), "worker": summarize(worker),
              "files": len(set(parent["files"]) | set(worker["files"])),
              "files_to_attribution": len(set(parent["files"]) | set(to_attribution)),
              "parent_files": parent["files"], "worker_files": worker["files"]}  # fmt: skip
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
