"""The notebook magic's profiled iterations against `oplens profile`'s, on the same function in the same run.

`examples/rmsnorm.py::rmsnorm_naive` on `make_inputs(4, 256, 512)`, each repetition:
  A  `oplens profile examples/rmsnorm.py::rmsnorm_naive --args "make_inputs(4, 256, 512)" --iters N`
     (a worker process imports the file and calls the function);
  B  `%oplens --iters N rmsnorm_naive(x, w)` in a real IPython kernel (ipykernel through jupyter_client, as
     Jupyter and VS Code run it) that imported the same function and made the same inputs;
the order alternating between repetitions. The figure: B's per-iteration wall time (result.json
totals.wall_us.median) over A's, the median of the repetitions' ratios (target <= 1.1x).

    .venv/bin/python bench/notebook_overhead.py [--reps 5] [--iters 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]
ARGS = "make_inputs(4, 256, 512)"


def run_cell(kc: object, code: str) -> str:
    """Execute `code`; the html it displayed (a run's), or fail with what it printed."""
    msg_id = kc.execute(code)  # type: ignore[attr-defined]
    html, errors = "", []
    while True:
        msg = kc.get_iopub_msg(timeout=600)  # type: ignore[attr-defined]
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "display_data":
            html += content["data"].get("text/html", "")
        elif kind == "error" or (kind == "stream" and content["name"] == "stderr" and "Error" in content["text"]):
            errors.append(str(content))
        elif kind == "status" and content["execution_state"] == "idle":
            if errors:
                raise SystemExit(f"{code!r} failed: {errors}")
            return html


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=tmp, env=env)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        try:
            run_cell(kc, f"%load_ext oplens\nimport sys\nsys.path.insert(0, {str(ROOT / 'examples')!r})\n"
                         f"from rmsnorm import rmsnorm_naive, make_inputs\nx, w = {ARGS}\n")  # fmt: skip
            ratios = []
            for rep in range(a.reps):
                order = ["profile", "magic"] if rep % 2 == 0 else ["magic", "profile"]
                wall = {}
                for what in order:
                    if what == "profile":
                        out = subprocess.run([sys.executable, "-m", "oplens", "profile",
                                              f"{ROOT / 'examples' / 'rmsnorm.py'}::rmsnorm_naive", "--args", ARGS,
                                              "--iters", str(a.iters), "--json", "-", "--out", str(Path(tmp) / "cli")],
                                             capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
                        if out.returncode != 0:
                            raise SystemExit(out.stderr)
                        wall[what] = json.loads(out.stdout)["totals"]["wall_us"]["median"]
                    else:
                        html = run_cell(kc, f"%oplens --iters {a.iters} rmsnorm_naive(x, w)")
                        run_id = html.split('data-run-id="', 1)[1].split('"', 1)[0]
                        result = json.loads((Path(tmp) / ".oplens" / "runs" / run_id / "result.json").read_text())
                        wall[what] = result["totals"]["wall_us"]["median"]
                ratios.append(wall["magic"] / wall["profile"])
                print(f"rep {rep}: profile {wall['profile']:.0f} µs/iter, magic {wall['magic']:.0f} µs/iter: "
                      f"{ratios[-1]:.3f}x", flush=True)  # fmt: skip
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    print(f"magic / profile (median of {a.reps}): {statistics.median(ratios):.3f}x (target <= 1.1x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
