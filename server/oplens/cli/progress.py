"""Progress of a profile: a rich bar on a terminal, one plain line per stage when piped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

STAGES = {
    "importing": "importing",
    "warmup": "warm-up",
    "profile": "profiling",
    "ingesting": "reading the device runtime's trace",
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


@contextmanager
def capture_display(console: Console, targets: str) -> Iterator[Callable[[str, int, int], None]]:
    """A capture's progress as a few plain lines (the program's own output shares the terminal)."""
    said: set[str] = set()

    def say(stage: str, done: int, total: int) -> None:
        key = stage if stage != "capture" or done < total else "captured"
        if key in said:
            return
        said.add(key)
        text = {
            "waiting": f"waiting for the first call of {targets}",
            "capture": "capturing calls",
            "captured": f"captured {total} call(s)",
            "ingesting": "reading the device runtime's trace",
            "processing": "attributing",
        }.get(key)
        if text:
            console.print(f"[dim]oplens: {escape(text)}[/]", highlight=False)

    yield say
