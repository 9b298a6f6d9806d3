"""Checking units of input in worker processes, handing the results back in input order.

A unit is a file or a shard of one (`trajlint.read.shards`), with the file's kind
(`trajlint.check.kinds`), decided before the file was cut. Workers run the row half of the
run (`RowChecker`) and return each unit's findings and digests; the parent absorbs them in input
order, so a run gives the same report whatever the number of jobs. A stream a worker cannot seek
into (a compressed file, standard input) is read by the parent and handed out in batches of
lines (`trajlint.read.batches`), so it is checked on every core too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from trajlint import read
from trajlint.check import engine
from trajlint.check.kinds import FileKind
from trajlint.read import Source, Unreadable, units

if TYPE_CHECKING:
    from concurrent.futures import Future

    from trajlint.check.engine import RowChecker, UnitResult

Unit = Source | Unreadable

# Below this much input, starting workers costs more than it saves (forking, and the parent
# waiting for the slowest unit); the run then stays in one process whatever --jobs says.
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
# A compressed file's bytes on disk understate the work by about this much.
_COMPRESSION_RATIO = 5
_UNITS_IN_FLIGHT_PER_WORKER = 3
_SHARDS_PER_WORKER = 4
_MIN_SHARD_BYTES = 1024 * 1024
_PARENT_POLL_SECONDS = 0.5
# Bytes of stream batches handed out but not yet checked, beyond one batch per worker.
READ_AHEAD_BYTES = 32 * 1024 * 1024


def plan_units(sources: Iterable[tuple[Source | Unreadable, FileKind]], jobs: int) -> list[tuple[Unit, FileKind]]:
    """The units of work, in input order: files, with the plain ones over two shards long cut,
    each with its file's kind.

    One process cuts at `units.SHARD_BYTES` (only its memory depends on it). With workers the
    shards are made smaller when the input is small, so that each worker gets several and the
    last to finish does not keep the others waiting.
    """
    sources = list(sources)
    shard_bytes = units.SHARD_BYTES
    if jobs > 1:
        total = sum(_size(s) for s, _ in sources if isinstance(s, Source) and not s.compression and not s.whole)
        shard_bytes = min(shard_bytes, max(_MIN_SHARD_BYTES, total // (jobs * _SHARDS_PER_WORKER)))
    return [
        (u, kind) for s, kind in sources for u in (read.shards(s, shard_bytes) if isinstance(s, Source) else [s])
    ]


def _size(source: Source) -> int:
    if source.stream is not None:
        return 0
    return read.input_size(source.path) or 0


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the system tells)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def check_units(
    checker: RowChecker, planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int, jobs: int
) -> Iterator[tuple[Unit, Iterable[UnitResult]]]:
    """(unit, the parts of its result) for every unit of `planned` (units with their file's
    kind), in the order given.

    Each unit's parts are to be absorbed, in order, before the next unit is taken: a unit
    checked here comes in parts of `engine.PART_ROWS` rows, a shard from a worker whole, and a
    stream as one part per batch. A caller that stops early (Ctrl-C, SIGTERM) closes the
    generator: what is queued is cancelled and the units being checked are let finish, since
    a worker stopped halfway through sending its result would leave the pool waiting forever.
    """
    units = [unit for unit, _ in planned]
    # A stream, however long, can keep every worker busy; a file or shard keeps one.
    workers = jobs if any(_is_stream(u) for u in units) else min(jobs, len(units))
    if workers < 2 or _work_bytes(units) < PARALLEL_MIN_BYTES:
        for unit, kind in planned:
            yield unit, checker.check_parts(unit, max_row_bytes, engine.PART_ROWS, kind)
        return
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # An executor, not multiprocessing.Pool: a worker that dies (killed, out of memory) breaks
    # the run with an error instead of leaving the parent waiting forever.
    pool = ProcessPoolExecutor(workers, mp_context=_context(), initializer=_start_worker, initargs=(checker, max_row_bytes))
    # Results are taken in input order. A few tasks per worker are in flight, so a slow one
    # never lets the results of every later one pile up here; a stream is read only as far
    # ahead as the workers need, and never more than `READ_AHEAD_BYTES` beyond one batch
    # per worker (a stream of huge rows is one row a batch).
    ahead = _tasks(planned, max_row_bytes)
    pending: deque[tuple[int, int, Future[UnitResult]]] = deque()  # (unit index, bytes held, future)
    held = 0

    def fill() -> None:
        nonlocal held
        while len(pending) < workers * _UNITS_IN_FLIGHT_PER_WORKER and (len(pending) < workers or held < READ_AHEAD_BYTES):
            task = next(ahead, None)
            if task is None:
                return
            index, work = task
            size = work[0].size if isinstance(work[0], read.Batch) else 0
            try:
                # Workers are forked here: they must not get a stop signal before they have
                # set themselves up to ignore it (`_start_worker`).
                with _stop_signals_held():
                    future = pool.submit(_check_in_worker, work)
            except BrokenProcessPool:
                raise WorkerLost(units[index].path) from None
            pending.append((index, size, future))
            held += size

    def results(index: int, unit: Unit) -> Iterator[UnitResult]:
        nonlocal held
        while pending and pending[0][0] == index:
            _, size, future = pending.popleft()
            try:
                result = future.result()
            except BrokenProcessPool:
                raise WorkerLost(unit.path) from None
            held -= size
            fill()
            yield result

    try:
        fill()
        for index, unit in enumerate(units):
            yield unit, results(index, unit)
    finally:
        ahead.close()  # the stream being read, if any
        pool.shutdown(wait=True, cancel_futures=True)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait (the kernel keeps them pending) until the block is left, and a
    process forked inside it starts with them held too."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no fork, no such signals to hold
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _is_stream(unit: Unit) -> bool:
    """Whether only this process can read the unit's lines: standard input, or a compressed file
    (which has no offsets a worker could start at)."""
    return isinstance(unit, Source) and (unit.stream is not None or bool(unit.compression))


Work = tuple[Unit | read.Batch, FileKind]


def _tasks(planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int) -> Iterator[tuple[int, Work]]:
    """(index of the unit, what a worker checks: a unit or batch with its file's kind) in input
    order; a stream is read here, lazily."""
    for index, (unit, kind) in enumerate(planned):
        if _is_stream(unit):
            for batch in read.batches(unit, max_row_bytes):  # type: ignore[arg-type]
                yield index, (batch, kind)
        else:
            yield index, (unit, kind)


class WorkerLost(Exception):
    """A worker process ended without finishing its unit: killed, or out of memory."""

    def __init__(self, path: str):
        super().__init__(
            f"a worker process ended abruptly while checking {path} (killed, or out of memory?); "
            "rerun with fewer --jobs, or --jobs 1 to check in one process"
        )


def _work_bytes(units: Sequence[Unit]) -> int:
    total = 0
    for unit in units:
        if not isinstance(unit, Source):
            continue
        if unit.stream is not None:
            # Standard input's length is unknown until it is read; it is taken as large, since
            # what is piped to a linter is usually a decompressed run, and a worker pool costs
            # a small input tens of milliseconds.
            total += PARALLEL_MIN_BYTES
            continue
        if unit.span is not None and unit.span[1] is not None:
            total += unit.span[1] - unit.span[0]
            continue
        size = read.input_size(unit.path)
        if size is None:
            continue
        size -= unit.span[0] if unit.span else 0
        total += size * (_COMPRESSION_RATIO if unit.compression else 1)
    return total


def _context() -> Any:
    # fork starts a worker in milliseconds with the rules already loaded; where the platform
    # has no fork, the checker is pickled to each worker instead. Imported here: a run that
    # stays in one process (a pre-commit hook on a few rows) does not pay for it.
    import multiprocessing

    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


_worker: tuple[RowChecker, int] | None = None


def _start_worker(checker: RowChecker, max_row_bytes: int) -> None:
    global _worker
    # Ctrl-C reaches every process of the terminal's group: the parent alone answers it (it
    # lets the workers finish what they hold and exit), so a worker does not die with a
    # traceback of its own. SIGTERM ends a worker plainly, whatever handler the parent had
    # when it forked. Both were held from the fork until now (`_stop_signals_held`).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    _worker = (checker, max_row_bytes)


def _exit_with_parent(parent: int) -> None:
    """End this worker once its parent is gone (killed, say, with SIGKILL): nobody would take its
    results, and a worker left running keeps the run's output pipes open."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_SECONDS)
    os._exit(1)


def _check_in_worker(work: Work) -> UnitResult:
    assert _worker is not None, "the pool starts every worker with _start_worker"
    checker, max_row_bytes = _worker
    unit, kind = work
    return checker.check_unit(unit, max_row_bytes, kind)
