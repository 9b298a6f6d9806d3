"""The progress line on standard error while a long check runs: bytes and rows per second, files done.

Shown only where a person watches: standard error is a terminal, not a CI log (`CI` unset) and
not a dumb one, the run was not asked to be quiet, and it has taken over a second (tqdm's
`delay`), so a short run prints nothing. It is cleared before the report is written, and never
touches standard output, so a report piped elsewhere is the same with or without it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: Seconds a run must last before the line appears.
DELAY = 1.0


def wanted(stream: Any = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return terminal and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


class Progress:
    """Called by the run for each part of a unit it absorbs, and with None at the unit's end."""

    def __init__(self, bar: Any, files: int) -> None:
        self.bar = bar
        self.files = files
        self.done = 0
        self.rows = 0
        self.started = time.monotonic()

    @classmethod
    @contextmanager
    def for_run(cls, sources: Sequence[Any], *, enabled: bool) -> Iterator[Progress | None]:
        if not (enabled and wanted()):
            yield None
            return
        from tqdm import tqdm

        total = sum(_size(source) for source in sources)
        bar = tqdm(
            total=total or None,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc="trajlint",
            file=sys.stderr,
            delay=DELAY,
            leave=False,
            dynamic_ncols=True,
            mininterval=0.25,
        )
        try:
            yield cls(bar, len(sources))
        finally:
            bar.close()

    def __call__(self, unit: Any, part: Any) -> None:
        if part is not None:
            self.rows += part.row_count
        else:
            self.bar.update(_unit_bytes(unit))
            span = getattr(unit, "span", None)
            if span is None or span[1] is None:  # a whole file, or the shard that ends one
                self.done += 1
        elapsed = max(time.monotonic() - self.started, 1e-9)
        self.bar.set_postfix_str(
            f"{self.rows:,} rows, {self.rows / elapsed:,.0f} rows/s, {self.done:,}/{self.files:,} files",
            refresh=False,
        )


def _size(source: Any) -> int:
    if getattr(source, "stream", None) is not None or not hasattr(source, "span"):
        return 0  # standard input, or an unreadable path
    try:
        return os.stat(source.path).st_size
    except OSError:
        return 0


def _unit_bytes(unit: Any) -> int:
    span = getattr(unit, "span", None)
    if span is None:
        return _size(unit)
    start, end = span
    return (end if end is not None else _size(unit)) - start
