"""Lines proved one batch ahead, on a thread of their own, while the rows before them are checked.

In one process the native core's proof of a line (`check.fast`) and the Python work on the rows
it hands back take turns on one core, though the core holds no interpreter lock while it
proves. Where a second core is free (a run of one process on a machine of several), a helper
thread proves the next batch of lines (`_core.check_rows`, the lock released for the whole
batch) while this thread turns the batch before into subjects and checks them: the two costs
overlap instead of adding up. The answers are the ones `check_row` gives line by line, taken in
input order, so nothing a run reports depends on whether they were taken ahead.

The thread lives as long as one unit's lines are read and is joined when they end (or when the
reader stops early): no thread outlives a unit, so a process that forks workers afterwards
forks no helper half-way through its work.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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

ProveMany = Callable[[list[bytes]], list[Any]]


def proved_ahead(items: Iterable[Any], prove_many: ProveMany) -> Iterator[tuple[Any, Any]]:
    """(item, the core's answer for it) for each of `items` in order: a `Line`'s answer is its
    `check_row` answer, any other item's (a skipped line, an error) is None."""
    helper = ThreadPoolExecutor(1, thread_name_prefix="trajlint-prove")
    refused = False
    pending: deque[tuple[list[Any], Future[list[Any]] | None]] = deque()
    try:
        for batch in _batches(items):
            raws = [item.raw for item in batch if isinstance(item, Line)]
            answers: Future[list[Any]] | None = None
            if raws and not refused:
                try:
                    answers = helper.submit(prove_many, raws)
                except RuntimeError:  # no thread to be had (RLIMIT_NPROC, pids.max): proved here
                    refused = True
            if raws and answers is None:
                answers = Future()
                answers.set_result(prove_many(raws))
            pending.append((batch, answers))
            if len(pending) > BATCHES_AHEAD:
                yield from _answered(*pending.popleft())
        while pending:
            yield from _answered(*pending.popleft())
    finally:
        helper.shutdown(wait=True, cancel_futures=True)


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    lines = size = 0
    for item in items:
        batch.append(item)
        if isinstance(item, Line):
            lines += 1
            size += len(item.raw)
            if lines >= BATCH_LINES or size >= BATCH_BYTES:
                yield batch
                batch, lines, size = [], 0, 0
    if batch:
        yield batch


def _answered(batch: list[Any], answers: Future[list[Any]] | None) -> Iterator[tuple[Any, Any]]:
    proofs = iter(answers.result() if answers is not None else ())
    for item in batch:
        yield item, next(proofs) if isinstance(item, Line) else None
