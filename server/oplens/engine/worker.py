"""The worker process: imports torch, waits for one job, runs it, reports, exits.

Started by `engine.jobs.Worker` as `python -m oplens.engine.worker FD`. Messages go to the
parent as JSON lines on file descriptor FD (stdout and stderr belong to the user's code and
are kept in the run's `worker.log`):

    {"type": "ready"}                                   torch is imported; send the job
    {"type": "progress", "stage": "warmup", "done": 2, "total": 3}
    {"type": "result", "run": {...result.json...}}
    {"type": "error", "error": {"kind", "message", "detail", "location"}}

The job arrives as one JSON line on stdin. One job per process: the user's module is
imported fresh every time, and a crash takes nothing else with it.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import IO, Any


def main(argv: list[str]) -> int:
    out: IO[str] = os.fdopen(int(argv[0]), "w", buffering=1, encoding="utf-8")

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    import torch  # noqa: F401  (the warm part: ~2 s that a waiting worker has already paid)

    try:  # the profiler's first start imports these (`hasattr(torch, "_inductor")`): ~2-5 s, paid here
        import torch._dynamo  # noqa: F401
        import torch._inductor  # noqa: F401
    except Exception:  # a torch build without them still profiles
        pass

    from oplens.engine import session
    from oplens.engine.errors import OpLensError
    from oplens.engine.records import Target, from_dict

    send({"type": "ready"})
    line = sys.stdin.readline()
    if not line:
        return 0  # the parent closed us without a job
    try:
        data = json.loads(line)
        data["target"] = from_dict(Target, data["target"])
        job = session.Job(**data)
        run = session.run(job, lambda stage, done, total: send(
            {"type": "progress", "stage": stage, "done": done, "total": total}))
        send({"type": "result", "run": run.to_dict()})
    except OpLensError as e:
        send({"type": "error", "error": e.to_dict()})
    except BaseException as e:  # a bug of OpLens's own: still a message, with our traceback for a report
        send({"type": "error", "error": {
            "kind": "crash",
            "message": f"OpLens failed inside the worker: {type(e).__name__}: {e} (please report this)",
            "detail": traceback.format_exc(),
        }})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: user threads or extension modules must not hang the exit.
    os._exit(code)
