"""Progress bars that the library can drive without knowing whether a terminal is watching."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

Advance = Callable[[int], None]


class ProgressSink(Protocol):
    def task(self, description: str, total: int | None) -> AbstractContextManager[Advance]: ...


class Silent:
    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        yield lambda n: None


class RichProgress:
    """One rich progress display per command; each phase (embed, train, scan) adds a bar."""

    def __init__(self, console=None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Advance]:
        task_id = self._progress.add_task(description, total=total)
        yield lambda n: self._progress.advance(task_id, n)
        self._progress.update(task_id, completed=total if total is not None else None)
