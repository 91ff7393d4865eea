"""A rich progress bar for long post-processing, shown only when stderr is a terminal."""

from __future__ import annotations

import sys
from contextlib import contextmanager

TYPE_CHECKING = False   # typing is not imported at start-up (docs/design.md, "Start-up of record, wave 10")
if TYPE_CHECKING:   # pragma: no cover
    from typing import Callable, Iterator


@contextmanager
def progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; draws a transient bar on a terminal stderr, does nothing otherwise."""
    if not sys.stderr.isatty() or not total:
        yield lambda _n: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.console import Console

    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
