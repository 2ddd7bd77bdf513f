"""One rank of a distributed capture: `python -m torch.distributed.run OPTIONS -m oplens.worker.rank JOB`.

torchrun starts one of these per rank (its environment says which: RANK, LOCAL_RANK, WORLD_SIZE),
each running the user's program with the same capture as a single process (`worker/program.py`).
torchrun gives its workers no pipe of ours, so each rank writes its messages to its own file,
`<ranks_dir>/rank-<RANK>.jsonl`, which the parent reads as they grow, and its part of each run to
`<stage_dir>/ranks/<RANK>/`. When torchrun ends the other ranks (one failed), SIGTERM unwinds the
program like the parent's stop signal: what a rank captured is still sent, as a partial run.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import traceback
from pathlib import Path

from oplens.records.errors import OpLensError
from oplens.records.job import NODE_ENV, STOP_SIGNAL, Ended, Failed, Finished, Job, StagedTarget, WorkerMessage, encode
from oplens.records.run import RankInfo
from oplens.worker.parent import environment_first, watch_parent


def main(argv: list[str]) -> int:
    environment_first()  # the user's program imports the environment's packages, not the extension's copies
    watch_parent()
    job = Job.from_json(Path(argv[0]).read_text(encoding="utf-8"))
    rank = int(os.environ.get("RANK", "0"))
    info = RankInfo(
        rank=rank,
        local_rank=int(os.environ.get("LOCAL_RANK", "0")),
        world_size=int(os.environ.get("WORLD_SIZE", "1")),
        host=os.environ.get(NODE_ENV) or socket.gethostname(),
        part=f"ranks/{rank}",
        pid=os.getpid(),
    )
    out = open(Path(job.ranks_dir) / f"rank-{rank}.jsonl", "a", buffering=1, encoding="utf-8")

    def send(message: WorkerMessage) -> None:
        if isinstance(message, Finished):
            message.run.ranks = [info]
        elif isinstance(message, Failed):
            message.error.message = f"rank {rank}: {message.error.message}"
        out.write(encode(message))
        out.flush()

    job = dataclasses.replace(
        job,
        stage_dir=_part(job.stage_dir, rank),
        more_targets=[StagedTarget(t.target, _part(t.stage_dir, rank)) for t in job.more_targets],
    )
    from oplens.worker import profiling, program

    try:
        backend = profiling.prepare_backend(job)
        info.device = str(backend.device())
        return program.run(job, backend, send, stop_signals=(STOP_SIGNAL, signal.SIGTERM))
    except OpLensError as e:
        send(Failed(e))
    except BaseException as e:
        message = f"OpLens failed inside the worker: {type(e).__name__}: {e} (please report this)"
        send(Failed(OpLensError("crash", message, traceback.format_exc())))
    send(Ended(1, []))
    return 1


def _part(stage_dir: str, rank: int) -> str:
    part = Path(stage_dir) / "ranks" / str(rank)
    part.mkdir(parents=True, exist_ok=True)
    return str(part)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
