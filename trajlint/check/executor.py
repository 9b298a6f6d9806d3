"""Where units of input are checked: the executor `run` hands its planned units to.

An executor takes the units in input order and gives back, for each, the parts of its result in
that order, whatever it checks in parallel; the run absorbs them and finishes the run-level rules
itself, so every executor gives the same report. `LocalPool` checks on this machine
(`trajlint.check.parallel`); `trajlint.check.ray_executor` on a Ray cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from trajlint.check.engine import RowChecker, UnitResult
    from trajlint.check.kinds import FileKind
    from trajlint.check.parallel import Unit


class Executor(Protocol):
    def workers(self) -> int:
        """How many units it checks at once (the planner cuts shards to keep them all busy)."""

    def check_units(
        self, checker: RowChecker, planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int
    ) -> Iterator[tuple[Unit, Iterable[UnitResult]]]:
        """(unit, the parts of its result) for every unit, in the order given; closing the
        iterator stops the work still queued or running."""


class LocalPool:
    """Processes on this machine: `jobs` of them (1: this process alone)."""

    def __init__(self, jobs: int):
        self.jobs = jobs

    def workers(self) -> int:
        return self.jobs

    def check_units(
        self, checker: RowChecker, planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int
    ) -> Iterator[tuple[Unit, Iterable[UnitResult]]]:
        from trajlint.check import parallel

        return parallel.check_units(checker, planned, max_row_bytes, self.jobs)


class UnitFailed(Exception):
    """A unit could not be checked, however often it was tried: the run cannot be complete."""


def describe(unit: object) -> str:
    """A unit as a message names it: its file, and which part of the file it is."""
    from trajlint.read import Batch, Source

    path = getattr(unit, "path", "?")
    if isinstance(unit, Source) and unit.span is not None:
        start, end = unit.span
        return f"{path} (bytes {start:,} to {'its end' if end is None else f'{end:,}'})"
    if isinstance(unit, Batch):
        first = next((item[0] for item in unit.items if type(item) is tuple), None)
        return f"{path} (the batch of lines from {first:,})" if first is not None else f"{path} (a batch of lines)"
    return f"{path} (the whole file)"
