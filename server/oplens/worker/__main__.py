"""The worker process: imports torch, waits for one job, runs it, reports, exits.

Started by `engine.process.WorkerProcess` as `python -m oplens.worker FD [JOB]`. The messages of
`records/job.py` (Ready, Progress, Finished, Failed, Ended) go to the parent as JSON lines on file
descriptor FD; stdout and stderr belong to the user's code and are kept in the run's `worker.log`.
A profile's `Job` arrives as one JSON line on stdin; a capture's (`oplens run`) in the file JOB, as
the program owns stdin. One job per process: the user's module is imported fresh every time, and a
crash takes nothing else with it.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from oplens.records.errors import OpLensError
from oplens.records.job import Ended, Failed, Finished, Job, Ready, WorkerMessage
from oplens.worker.parent import ToParent, environment_first, watch_parent


def main(argv: list[str]) -> int:
    environment_first()  # the user's code imports the environment's packages, not the extension's copies
    watch_parent()
    parent = ToParent(os.fdopen(int(argv[0]), "w", buffering=1, encoding="utf-8"))
    send = parent.send

    if len(argv) > 1:
        return _capture(Job.from_json(Path(argv[1]).read_text(encoding="utf-8")), send)

    import torch  # noqa: F401  (the warm part: ~2 s that a waiting worker has already paid)

    try:  # the profiler's first start imports these (`hasattr(torch, "_inductor")`): ~2-5 s, paid here
        import torch._dynamo  # noqa: F401
        import torch._inductor  # noqa: F401
    except Exception:  # a torch build without them still profiles
        pass

    from oplens.worker import profiling

    send(Ready())
    line = sys.stdin.readline()
    if not line:
        return 0  # the parent closed us without a job
    try:
        job = Job.from_json(line)
        if job.side_by_side:  # a compare: every variant in this worker, interleaved
            from oplens.worker import sidebyside

            sidebyside.run(job, parent.progress, send)
            return 0
        run = profiling.run(job, parent.progress)
        send(Finished(run))
    except OpLensError as e:
        send(Failed(e))
    except BaseException as e:  # a bug of OpLens's own: still a message, with our traceback for a report
        send(Failed(_crash(e)))
    return 0


def _capture(job: Job, send: Callable[[WorkerMessage], None]) -> int:
    """A capture inside the user's program: its exit status is the worker's."""
    from oplens.worker import profiling, program

    try:
        backend = profiling.prepare_backend(job)
        send(Ready())
        return program.run(job, backend, send)
    except OpLensError as e:
        send(Failed(e))
    except BaseException as e:
        send(Failed(_crash(e)))
    send(Ended(1, []))
    return 1


def _crash(e: BaseException) -> OpLensError:
    message = f"OpLens failed inside the worker: {type(e).__name__}: {e} (please report this)"
    return OpLensError("crash", message, traceback.format_exc())


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: user threads or extension modules must not hang the exit.
    os._exit(code)
