"""An independent per-line check of `oplens profile`: each line's ops as OpLens attributes them, against
the same calls measured without OpLens by the legacy profiler's Python stacks.

1. `python -m oplens profile FILE::QUALNAME --args EXPR --backend cpu --json -` through the CLI, as a user
   runs it (in `--cwd`, the workspace; the interpreter is `--python`, default this one).
2. In a fresh process, with no OpLens imported: the target's module imported as the program would (the
   dotted name OpLens recorded in `target.module`, imported with `importlib.import_module` from the
   folder that name implies, and checked to be that very file; a `<script>` by its path), `--args`
   evaluated in its namespace (with `torch` and the top-level package), the function called as many
   times as OpLens called it before its recorded calls (warm-up and profiler warm-up), then `--iters`
   times under `torch.autograd.profiler_legacy.profile(with_stack=True)`. That profiler records, for
   each op, the Python stack with the *current* line of every frame (`file(line): func`; the Kineto
   profiler's `with_stack` only has each function's first line, and no stack at all without
   `verbose`). Each op goes to the innermost frame that is in the target's file and within its line
   span (`inspect.getsourcelines`): a same-file helper outside the span, or torch's own Python
   (`nn.Linear`), counts for the target's line that called it, as in OpLens.
3. Compared per line, like with like (records/run.py `LineStat`): `ops`, every op that ran on the line
   (nested ones too; a dispatch duplicate, an op whose only child has its own name, folded into it, as
   `key_averages` and `EventList` both do) with its calls per call; and `op_calls`, the number of
   top-level ops per call (ops not nested inside another op). A line is equal when both are.

Prints the per-line table (line, source, OpLens's ops, the stacks' ops, equal?); exit 1 where any line
differs, 2 where either measurement failed.

    .venv/bin/python bench/independent_lines.py mypkg/model.py::block --args "torch.randn(8, 16), Layer(16)"
    .venv/bin/python bench/independent_lines.py SITE/transformers/models/llama/modeling_llama.py::LlamaMLP.forward \\
        --args "LlamaMLP(LlamaConfig(hidden_size=64, intermediate_size=128)), torch.randn(2, 8, 64)" --cwd /tmp/ws
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")
SCRIPT = "<script>"  # records/run.py SCRIPT_MODULE (not imported: this side stays free of OpLens)
EPS = 1e-9


def oplens_profile(opts: argparse.Namespace) -> dict[str, Any]:
    """The run `oplens profile --json -` prints, through the CLI."""
    argv = [opts.python, "-m", "oplens", "profile", opts.target, "--backend", "cpu", "--warmup", str(opts.warmup),
            "--iters", str(opts.iters), "--json", "-"]  # fmt: skip
    if opts.args is not None:
        argv += ["--args", opts.args]
    if opts.out:
        argv += ["--out", opts.out]
    proc = subprocess.run(argv, cwd=opts.cwd, capture_output=True, text=True, timeout=opts.timeout)
    if proc.returncode != 0:
        sys.exit(f"oplens profile exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    run: dict[str, Any] = json.loads(proc.stdout)
    return run


def independent(opts: argparse.Namespace, run: dict[str, Any]) -> dict[str, Any]:
    """The same calls measured in a fresh process by the legacy profiler's stacks (`measure`)."""
    target = run["target"]
    spec = {
        "file": target["file"],
        "qualname": target["qualname"],
        "module": target["module"],
        "args": opts.args or "",
        "before": run["config"]["warmup"] + run["config"].get("profiler_warmup", 0),
        "iters": run["config"]["iters"],
    }
    proc = subprocess.run([opts.python, str(Path(__file__).resolve()), "--measure", json.dumps(spec)], cwd=opts.cwd,
                          capture_output=True, text=True, timeout=opts.timeout)  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"the independent measurement exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    measured: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return measured


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs in its own process, without OpLens: import, call, profile with the legacy stacks, attribute."""
    import importlib
    import importlib.util
    import inspect

    import torch
    from torch.autograd.profiler_legacy import profile

    file = Path(spec["file"]).resolve()
    sys.path[0] = os.getcwd()  # as `python -m` would: the workspace, not bench/
    name = spec["module"]
    if name == SCRIPT:
        sys.path.insert(0, str(file.parent))
        mod_spec = importlib.util.spec_from_file_location(file.stem, file)
        assert mod_spec is not None and mod_spec.loader is not None
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[file.stem] = module
        mod_spec.loader.exec_module(module)
    else:
        root = file.parents[len(name.split(".")) - (0 if file.name == "__init__.py" else 1)]
        if str(root) not in sys.path and not any(Path(p).resolve() == root for p in sys.path if p):
            sys.path.insert(0, str(root))
        module = importlib.import_module(name)
        loaded = Path(module.__file__ or "").resolve()
        if loaded != file:
            raise SystemExit(f"importing {name} gave {loaded}, not {file}")
    fn: Any = module
    for part in spec["qualname"].split("."):
        fn = getattr(fn, part)
    lines, first = inspect.getsourcelines(fn)
    span = (first, first + len(lines) - 1)
    namespace = dict(vars(module))
    namespace.setdefault("torch", torch)
    top = name.partition(".")[0]
    if "." in name and top in sys.modules:
        namespace.setdefault(top, sys.modules[top])
    value = eval(spec["args"], namespace) if spec["args"].strip() else ()
    args = value if isinstance(value, tuple) else (value,)
    for _ in range(spec["before"]):
        fn(*args)
    with profile(with_stack=True) as prof:  # type: ignore[no-untyped-call]
        for _ in range(spec["iters"]):
            fn(*args)
    every: dict[int, Counter[str]] = {}
    top_level: dict[int, Counter[str]] = {}
    outside: Counter[str] = Counter()
    for ev in prof.function_events:
        line = _line_of(ev.stack, file, span)
        if line is None:
            outside[ev.name] += 1
            continue
        every.setdefault(line, Counter())[ev.name] += 1
        if ev.cpu_parent is None:
            top_level.setdefault(line, Counter())[ev.name] += 1
    n = spec["iters"]
    return {
        "module": module.__name__,
        "span": list(span),
        "lines": {
            str(line): {"ops": {k: v / n for k, v in c.items()}, "top": {k: v / n for k, v in top_level.get(line, {}).items()}}
            for line, c in every.items()
        },
        "outside": {k: v / n for k, v in outside.items()},
    }


def _line_of(stack: list[str], file: Path, span: tuple[int, int]) -> int | None:
    """The current line of the innermost frame in `file` within `span` (stacks are innermost first)."""
    for frame in stack:
        m = FRAME.match(frame)
        if m is None:
            continue
        line = int(m["line"])
        if span[0] <= line <= span[1] and _same_file(m["file"], file):
            return line
    return None


_SAME: dict[str, bool] = {}


def _same_file(name: str, file: Path) -> bool:
    if name not in _SAME:
        try:
            _SAME[name] = Path(name).resolve() == file
        except OSError:
            _SAME[name] = False
    return _SAME[name]


def compare(run: dict[str, Any], measured: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per line that either side gives ops: both sides' ops per call, top-level counts, equal?
    (OpLens also lists lines with memory figures and no ops: left out where the stacks have none either.)"""
    ours = {ln["line"]: ln for ln in run["lines"]}
    theirs = {int(k): v for k, v in measured["lines"].items()}
    source = Path(run["target"]["file"]).read_text().splitlines()
    rows = []
    for line in sorted(set(ours) | set(theirs)):
        a = {o["name"]: o["calls"] for o in ours[line]["ops"]} if line in ours else {}
        a = {k: v for k, v in a.items() if v > EPS}
        a_top = ours[line]["op_calls"] if line in ours else 0.0
        b = theirs.get(line, {}).get("ops", {})
        b_top_names = theirs.get(line, {}).get("top", {})
        b_top = sum(b_top_names.values())
        if not a and not b and a_top == b_top == 0:
            continue  # a line with memory figures only (records/run.py), no ops on either side
        equal = set(a) == set(b) and all(abs(a[k] - b[k]) < EPS for k in a) and abs(a_top - b_top) < EPS
        rows.append({"line": line, "source": source[line - 1].strip() if line <= len(source) else "",
                     "oplens": a, "oplens_top": a_top, "stacks": b, "stacks_top": b_top,
                     "stacks_top_names": b_top_names, "equal": equal})  # fmt: skip
    return rows


def _ops(ops: dict[str, float]) -> str:
    def one(name: str, calls: float) -> str:
        short = name.removeprefix("aten::")
        return short if abs(calls - 1) < EPS else f"{short}×{calls:g}"

    return ", ".join(one(k, ops[k]) for k in sorted(ops))


def table(rows: list[dict[str, Any]], markdown: bool) -> str:
    head = ["line", "source", "OpLens: top-level / all ops per call", "with_stack: top-level / all ops per call", "equal"]
    body = [
        [str(r["line"]), r["source"], f"{r['oplens_top']:g} / {_ops(r['oplens'])}",
         f"{r['stacks_top']:g} ({_ops(r['stacks_top_names'])}) / {_ops(r['stacks'])}", "yes" if r["equal"] else "NO"]
        for r in rows
    ]  # fmt: skip
    if markdown:
        esc = [[c.replace("|", "\\|") for c in row] for row in body]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(f"`{c}`" if i == 1 else c for i, c in enumerate(row)) + " |" for row in esc]
        return "\n".join(lines)
    width = [min(max(len(row[i]) for row in [head, *body]), 60) for i in range(2)]
    return "\n".join(
        f"{row[0]:>{width[0]}}  {row[1][: width[1]]:<{width[1]}}  {row[4]:<5}  OpLens {row[2]}\n"
        f"{'':>{width[0]}}  {'':<{width[1]}}  {'':<5}  stacks {row[3]}"
        for row in body
    )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        print(json.dumps(measure(json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="FILE::QUALNAME, as for oplens profile")
    parser.add_argument("--args", default=None, help="the positional arguments, as for oplens profile")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--cwd", default=os.getcwd(), help="the workspace both run in (default: here)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (default: this one)")
    parser.add_argument("--out", default="", help="oplens profile's --out")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--markdown", action="store_true", help="the table in Markdown")
    parser.add_argument("--json", default="", help="also write the rows here")
    opts = parser.parse_args()
    run = oplens_profile(opts)
    measured = independent(opts, run)
    rows = compare(run, measured)
    target = run["target"]
    print(f"{target['file']}::{target['qualname']} (lines {target['first_line']}-{target['last_line']}), "
          f"imported as {target['module']} by OpLens, {measured['module']} independently "
          f"(span {measured['span'][0]}-{measured['span'][1]}); {run['config']['iters']} calls each")  # fmt: skip
    print(table(rows, opts.markdown))
    if measured["outside"]:
        print(f"ops outside the function's lines in the stacks (per call): {_ops(measured['outside'])}")
    differ = [r["line"] for r in rows if not r["equal"]]
    print(f"{len(rows) - len(differ)} of {len(rows)} lines equal" + (f"; differ: {differ}" if differ else ""))
    if opts.json:
        Path(opts.json).write_text(json.dumps({"target": target, "rows": rows, "outside": measured["outside"]}, indent=1))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
