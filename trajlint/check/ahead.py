"""Lines proved a few batches ahead, on a thread of their own, while the rows before them are checked.

In one process the native core's proof of a line (`check.fast`) and the Python work on the rows
it hands back take turns on one core, though the core holds no interpreter lock while it
proves. Where a second core is free (a run of one process on a machine of several), a helper
thread proves the next batches of lines (`_core.check_rows`, the lock released for each whole
batch) while this thread turns the batches before into subjects and checks them: the two costs
overlap instead of adding up. The answers are the ones `check_row` gives line by line, taken in
input order, so nothing a run reports depends on whether they were taken ahead.

The thread lives as long as one unit's lines are read and is joined when they end (or when the
reader stops early): no thread outlives a unit, so a process that forks workers afterwards
forks no helper half-way through its work. A unit shorter than one batch starts none (a one-row
file's check pays for no thread), and where the system refuses a thread, the lines are proved here.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from queue import SimpleQueue
from typing import Any

from trajlint.read import Line

#: A batch ends at this many lines or bytes of lines, whichever comes first, and this many
#: batches are proved ahead of the one being checked. Many small batches in flight did best on
#: 25 KB rows (bench/run.py, 2 cores: 6 of 64 lines ran 1.4x faster than none, 2 of 256 lines
#: 1.2x): the helper then rarely stands idle waiting for the interpreter's lock while the
#: checking thread needs it. The lines held ahead stay a few megabytes, whatever the file's size.
BATCH_LINES = 64
BATCH_BYTES = 1024 * 1024
BATCHES_AHEAD = 6
#: No more bytes of lines than this are held ahead: a file of rows of tens of megabytes holds
#: one batch at a time, as it holds one line at a time without the helper.
BYTES_AHEAD = 8 * 1024 * 1024

ProveMany = Callable[[list[bytes]], list[Any]]


def proved_ahead(items: Iterable[Any], prove_many: ProveMany) -> Iterator[tuple[Any, Any]]:
    """(item, the core's answer for it) for each of `items` in order: a `Line`'s answer is its
    `check_row` answer, any other item's (a skipped line, an error) is None."""
    batches = _batches(items)
    first = next(batches, None)
    if first is None:
        return
    # A unit whose first batch is not full has no other (a one-row file starts no thread).
    helper = _Helper.started(prove_many) if first[2] else None
    if helper is None:
        for batch, _, _ in chain([first], batches):
            yield from _answered(batch, _proved(batch, prove_many))
        return
    pending: deque[tuple[list[Any], int]] = deque()
    held = 0
    try:
        for batch, size, _ in chain([first], batches):
            helper.ask(_raws(batch))
            pending.append((batch, size))
            held += size
            while pending and (len(pending) > BATCHES_AHEAD or held > BYTES_AHEAD):
                taken, size = pending.popleft()
                held -= size
                yield from _answered(taken, helper.answer())
        while pending:
            yield from _answered(pending.popleft()[0], helper.answer())
    finally:
        helper.stop()


class _Helper:
    """One thread proving the batches it is asked for, in the order asked."""

    def __init__(self, prove_many: ProveMany):
        self._asked: SimpleQueue[list[bytes] | None] = SimpleQueue()
        self._answers: SimpleQueue[tuple[bool, Any]] = SimpleQueue()
        self._stopping = False
        # A daemon: a run stopped by Ctrl-C is not held up at exit by a batch being proved.
        self._thread = threading.Thread(target=self._work, args=(prove_many,), name="trajlint-prove", daemon=True)

    @classmethod
    def started(cls, prove_many: ProveMany) -> _Helper | None:
        """A running helper, or None where the system refuses a thread (RLIMIT_NPROC, pids.max)."""
        helper = cls(prove_many)
        try:
            helper._thread.start()
        except RuntimeError:
            return None
        return helper

    def _work(self, prove_many: ProveMany) -> None:
        while (raws := self._asked.get()) is not None:
            if self._stopping:
                continue  # nobody takes the answer: the batches still queued are dropped
            try:
                self._answers.put((True, prove_many(raws) if raws else []))
            except BaseException as exc:  # noqa: BLE001 - raised again in the thread that takes it
                self._answers.put((False, exc))

    def ask(self, raws: list[bytes]) -> None:
        self._asked.put(raws)

    def answer(self) -> list[Any]:
        """The answers to the batch asked for first of those not answered yet."""
        proved, answers = self._answers.get()
        if not proved:
            raise answers
        return answers

    def stop(self) -> None:
        self._stopping = True
        self._asked.put(None)
        self._thread.join()


def _raws(batch: list[Any]) -> list[bytes]:
    return [item.raw for item in batch if isinstance(item, Line)]


def _proved(batch: list[Any], prove_many: ProveMany) -> list[Any]:
    raws = _raws(batch)
    return prove_many(raws) if raws else []


def _batches(items: Iterable[Any]) -> Iterator[tuple[list[Any], int, bool]]:
    """(items, bytes of their lines, whether the batch is full) of consecutive items: only the
    last batch can be short of full."""
    batch: list[Any] = []
    lines = size = 0
    for item in items:
        batch.append(item)
        if isinstance(item, Line):
            lines += 1
            size += len(item.raw)
            if lines >= BATCH_LINES or size >= BATCH_BYTES:
                yield batch, size, True
                batch, lines, size = [], 0, 0
    if batch:
        yield batch, size, False


def _answered(batch: list[Any], answers: list[Any]) -> Iterator[tuple[Any, Any]]:
    proofs = iter(answers)
    for item in batch:
        yield item, next(proofs) if isinstance(item, Line) else None
