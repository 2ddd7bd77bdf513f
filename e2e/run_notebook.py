"""Run some of a notebook's code cells in a real IPython kernel, in the notebook's folder, as the user's Run
does in Jupyter or VS Code (ipykernel, driven through jupyter_client by tests/support/kernel.py): the end-to-end test's
way to have the `%oplens` magic write its runs while the notebook is open in code-server (which has no kernel
of its own here: the Jupyter extension is not installed).

    python e2e/run_notebook.py NOTEBOOK --cells 1,2,4 [--keep-alive]

--cells: the cells' indexes in the notebook (markdown cells count; they are skipped). One JSON line per cell
run; exit 1 at the first cell that raises, with its traceback. --keep-alive: then keep the kernel running,
its connection file named in `NOTEBOOK.kernel.json` (what the Jupyter stand-in, e2e/standins/jupyter, finds
as the notebook's started kernel), until stdin closes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.kernel import Kernel  # noqa: E402 (the tests' kernel driver)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--cells", required=True, help="comma-separated cell indexes")
    parser.add_argument("--keep-alive", action="store_true", help="keep the kernel for the Jupyter stand-in")
    args = parser.parse_args()
    marker = Path(f"{args.notebook.resolve()}.kernel.json")
    cells = json.loads(args.notebook.read_text())["cells"]
    kernel = Kernel(args.notebook.resolve().parent)
    try:
        for index in (int(i) for i in args.cells.split(",")):
            cell = cells[index]
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out = kernel.run(source)
            if out["error"] is not None:
                print("\n".join(out["error"]["traceback"]), file=sys.stderr)
                return 1
            print(json.dumps({"cell": index, "ran": source.splitlines()[0] if source else ""}), flush=True)
        if args.keep_alive:
            marker.write_text(json.dumps({"connection_file": kernel.km.connection_file}))
            print(json.dumps({"kernel": kernel.km.connection_file}), flush=True)
            sys.stdin.read()  # until the test closes it
    finally:
        marker.unlink(missing_ok=True)
        kernel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
