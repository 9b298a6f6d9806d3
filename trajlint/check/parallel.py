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
import itertools
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
# Two workers against one process whose helper thread proves lines on the second core
# (`check.ahead`): the one process stays faster up to about 48 MB of 25 KB rows (measured on
# 2 cores: 0.33 s against 0.37 s on 33 MB, 0.43 s against 0.44 s on 49 MB, 0.73 s against
# 0.67 s on 102 MB), so two workers start only from this many times `PARALLEL_MIN_BYTES`.
_BESIDE_HELPER = 4
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
    tail_bytes = 0
    if jobs > 1:
        total = sum(_size(s) for s, _ in sources if isinstance(s, Source) and not s.compression and not s.whole)
        shard_bytes = min(shard_bytes, max(_MIN_SHARD_BYTES, total // (jobs * _SHARDS_PER_WORKER)))
        # The input's end is cut finer, so that the workers finish together.
        tail_bytes = jobs * shard_bytes
    last = max((i for i, (s, _) in enumerate(sources) if isinstance(s, Source)), default=-1)
    return [
        (u, kind)
        for i, (s, kind) in enumerate(sources)
        for u in (read.shards(s, shard_bytes, tail_bytes if i == last else 0) if isinstance(s, Source) else [s])
    ]


def _size(source: Source) -> int:
    if source.stream is not None:
        return 0
    return read.input_size(source.path) or 0


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, and no more than its control
    group's CPU quota (a container limited to 2 CPUs on a 64-core host), where the system tells."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        cores = os.process_cpu_count() or 1
    elif hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0)) or 1
    else:
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return max(1, min(cores, quota)) if quota is not None else cores


def _cgroup_cpu_quota() -> int | None:
    """The CPU quota of this process's control group, in whole cores rounded up (None: none)."""
    for path, parse in (("/sys/fs/cgroup/cpu.max", _cpu_max), ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", _cfs_quota)):
        try:
            with open(path, encoding="ascii") as handle:
                return parse(handle.read(64))
        except (OSError, ValueError):
            continue
    return None


def _cpu_max(text: str) -> int | None:
    quota, _, period = text.strip().partition(" ")
    if quota == "max":
        return None
    return max(1, -(-int(quota) // int(period or 100_000)))


def _cfs_quota(text: str) -> int | None:
    quota = int(text.strip())
    if quota <= 0:
        return None
    with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding="ascii") as handle:
        period = int(handle.read(64).strip())
    return max(1, -(-quota // period))


def check_units(
    checker: RowChecker, planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int, jobs: int
) -> Iterator[tuple[Unit, Iterable[UnitResult]]]:
    """(unit, the parts of its result) for every unit of `planned` (units with their file's
    kind), in the order given.

    Each unit's parts are to be absorbed, in order, before the next unit is taken: a unit
    checked here comes in parts of `engine.PART_ROWS` rows, a shard from a worker whole, and a
    stream as one part per batch. A caller that stops early (Ctrl-C, SIGTERM) closes the
    generator: what is queued is cancelled and the workers are stopped (`_abandon`), since
    nobody takes what they hold.
    """
    units = [unit for unit, _ in planned]
    # One worker per core at most, and one per task at most: a file or shard is one task, a
    # stream one per batch (so its first batches are read before the workers are started).
    cores = usable_cores()
    workers = min(jobs, cores)
    # Checked in this process, lines are proved ahead on a core no worker takes, if this process
    # may run on more than one (`check.ahead`; `taskset -c 0` holds a run to one core) and is not
    # itself one of a pool's workers (the result cache's check small runs side by side).
    prove_ahead = _worker is None and cores > 1
    streams = any(_is_stream(u) for u in units)
    if not streams:
        workers = min(workers, len(units))
    min_bytes = PARALLEL_MIN_BYTES
    if workers == 2 and prove_ahead and getattr(checker, "prove_many", None) is not None:
        min_bytes *= _BESIDE_HELPER
    if workers < 2 or _work_bytes(units) < min_bytes:
        for unit, kind in planned:
            yield unit, checker.check_parts(unit, max_row_bytes, engine.PART_ROWS, kind, prove_ahead)
        return
    read_tasks = _tasks(planned, max_row_bytes)
    ahead: Iterator[tuple[int, Work]] = read_tasks
    if streams:
        first = list(itertools.islice(ahead, workers))
        if len(first) < workers:  # the whole input: fewer tasks than workers
            workers = len(first)
        ahead = itertools.chain(first, ahead)
        if workers < 2:
            try:
                yield from _checked_here(checker, units, ahead, max_row_bytes)
            finally:
                read_tasks.close()
            return
    from concurrent.futures.process import BrokenProcessPool

    try:
        started = _started_pool(checker, max_row_bytes, workers)
    except BaseException:
        read_tasks.close()
        raise
    if started is None:  # not two workers to be had (a limit on processes): the report is the same
        try:
            yield from _checked_here(checker, units, ahead, max_row_bytes)
        finally:
            read_tasks.close()
        return
    pool, refused, workers = started
    # Results are taken in input order. A few tasks per worker are in flight, so a slow one
    # never lets the results of every later one pile up here; a stream is read only as far
    # ahead as the workers need, and never more than `READ_AHEAD_BYTES` beyond one batch
    # per worker (a stream of huge rows is one row a batch).
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
                # A start method other than fork may start a worker here, which must not get
                # a stop signal before it has set itself up to ignore it (`_start_worker`).
                with _stop_signals_held():
                    future = pool.submit(_check_in_worker, work)
            except BrokenProcessPool:
                raise WorkerLost(units[index].path) from None
            except (OSError, RuntimeError) as exc:  # no process or thread to be had (RLIMIT_NPROC, pids.max)
                raise WorkersRefused(exc) from None
            pending.append((index, size, future))
            held += size

    def results(index: int, unit: Unit) -> Iterator[UnitResult]:
        nonlocal held
        while pending and pending[0][0] == index:
            _, size, future = pending.popleft()
            try:
                result = _result(pool, future, refused)
            except BrokenProcessPool:
                raise WorkerLost(unit.path) from None
            held -= size
            fill()
            yield result

    finished = False
    try:
        fill()
        for index, unit in enumerate(units):
            yield unit, results(index, unit)
        finished = True
    finally:
        try:
            read_tasks.close()  # the stream being read, if any
        finally:
            try:
                if finished:
                    pool.shutdown(wait=True)
                else:
                    _abandon(pool)
            finally:
                refused.close()


def _started_pool(checker: RowChecker, max_row_bytes: int, workers: int) -> tuple[Any, _PoolThreadFailures, int] | None:
    """(a pool of workers, every process and thread of it started and answering, how many), or
    None when not even two can be had.

    Where the system refuses that many processes or threads (RLIMIT_NPROC, a pids cgroup), a pool
    of half as many is tried, down to two; the run then goes on with those, or in this process,
    since the report is the same for every number of workers. A pool that started is known to
    work before any unit is handed to it, so a refusal never strands work half done.
    """
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    while workers >= 2:
        # An executor, not multiprocessing.Pool: a worker that dies (killed, out of memory)
        # breaks the run with an error instead of leaving the parent waiting forever.
        pool = ProcessPoolExecutor(workers, mp_context=_context(), initializer=_start_worker, initargs=(checker, max_row_bytes))
        # The pool's own thread starts another one lazily (the queue feeding the workers);
        # refused that, it dies and no result would ever come: its failure is kept here, not
        # printed as a traceback, and turns into WorkersRefused (`_result`).
        refused = _PoolThreadFailures(pool)
        try:
            # Workers are forked here (all of them, with fork): they must not get a stop signal
            # before they have set themselves up to ignore it (`_start_worker`).
            with _stop_signals_held():
                probe = pool.submit(_ready)
            _result(pool, probe, refused)
            return pool, refused, workers
        except (OSError, RuntimeError, WorkersRefused, BrokenProcessPool):
            # OSError: no process (EAGAIN from fork); RuntimeError: no thread.
            _abandon(pool)
            refused.close()
            workers //= 2
        except BaseException:
            _abandon(pool)
            refused.close()
            raise
    return None


def _ready() -> bool:
    return True


class _PoolThreadFailures:
    """What ended the pool's manager thread, caught instead of printed while the pool is in use
    (every other thread's exception still goes to the hook that was there before)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.failures: list[BaseException] = []
        self._previous = threading.excepthook
        threading.excepthook = self._hook

    def _hook(self, args: Any) -> None:
        if args.thread is not None and args.thread is getattr(self._pool, "_executor_manager_thread", None):
            if args.exc_value is not None:
                self.failures.append(args.exc_value)
            return
        self._previous(args)

    def close(self) -> None:
        if threading.excepthook == self._hook:  # unless someone else set one since
            threading.excepthook = self._previous

    def dead(self) -> bool:
        """Whether the pool's thread that hands work to the workers and takes their results back
        has ended while the pool is in use."""
        manager = getattr(self._pool, "_executor_manager_thread", None)
        return manager is not None and manager.ident is not None and not manager.is_alive()


def _result(pool: Any, future: Future[UnitResult], refused: _PoolThreadFailures) -> UnitResult:
    """The future's result; WorkersRefused, not a wait forever, when the pool can no longer
    deliver it (its thread died for want of a thread to start)."""
    from concurrent.futures import TimeoutError as Pending

    while True:
        try:
            return future.result(timeout=_PARENT_POLL_SECONDS)
        except Pending:
            if refused.dead() and not future.done():
                raise WorkersRefused(
                    refused.failures[0] if refused.failures else RuntimeError("the worker pool stopped")
                ) from None


_WORKER_EXIT_SECONDS = 0.5


def _abandon(pool: Any) -> None:
    """Stop the workers of a run that ends early (Ctrl-C, SIGTERM, an error): what they hold is
    not waited for, so that the run stops at once, and none is left behind. Stop signals are
    held meanwhile, so that a second one cannot cut this short."""
    with _stop_signals_held():
        processes = list((getattr(pool, "_processes", None) or {}).values())
        for process in processes:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + _WORKER_EXIT_SECONDS
        for process in processes:
            with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
                process.join(max(0.0, deadline - time.monotonic()))
                if process.is_alive():
                    process.kill()
                    process.join(_WORKER_EXIT_SECONDS)


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


class WorkersRefused(WorkerLost):
    """The system refused to start a worker process or thread (a process limit)."""

    def __init__(self, exc: BaseException):
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        Exception.__init__(
            self,
            f"cannot start worker processes: {reason} (a limit on processes?); "
            "rerun with fewer --jobs, or --jobs 1 to check in one process",
        )


def _checked_here(
    checker: RowChecker, units: Sequence[Unit], tasks: Iterator[tuple[int, Work]], max_row_bytes: int
) -> Iterator[tuple[Unit, Iterable[UnitResult]]]:
    """`check_units` in this process, for tasks already cut (a stream's batches)."""
    pending: list[tuple[int, Work]] = []

    def parts(index: int) -> Iterator[UnitResult]:
        while True:
            task = pending.pop() if pending else next(tasks, None)
            if task is None:
                return
            if task[0] != index:
                pending.append(task)
                return
            work, kind = task[1]
            yield checker.check_unit(work, max_row_bytes, kind)

    for index, unit in enumerate(units):
        yield unit, parts(index)


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
    # Without a thread to spare (a process limit), the worker still works: it just does not
    # notice a parent killed with SIGKILL.
    with contextlib.suppress(RuntimeError):
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
