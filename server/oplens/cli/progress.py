"""Progress of a profile: a rich bar on a terminal, one plain line per stage when piped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

STAGES = {
    "importing": "importing",
    "warmup": "warm-up",
    "profile": "profiling",
    "processing": "attributing",
}


@contextmanager
def progress_display(console: Console, target: str) -> Iterator[Callable[[str, int, int], None]]:
    if not console.is_terminal:
        last: list[str] = []

        def plain(stage: str, done: int, total: int) -> None:
            if done >= total and stage not in last:
                last.append(stage)
                console.print(f"oplens: {target}: {STAGES.get(stage, stage)} done ({total})", highlight=False)

        yield plain
        return

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(f"{target}: starting", total=None)

        def rich_update(stage: str, done: int, total: int) -> None:
            bar.update(task, description=f"{target}: {STAGES.get(stage, stage)}", completed=done, total=total or None)

        yield rich_update
