"""Checking units of input as tasks on a Ray cluster (`--executor ray`).

The units are the ones the local pool checks: a file, a byte-range shard of a plain one, or a
batch of lines of a stream. Every unit is one Ray task; a worker reads its file or shard itself,
from a shared file system (the path as the driver spells it, from the driver's working
directory) or from object storage (the URL), so no file's bytes pass through the driver. Only
a stream the driver alone can read (standard input, a compressed file) is read here and sent in
batches as task arguments. Results are taken in input order and absorbed by the run here, as
the local pool's are, so the report is the same as with ``--jobs 1``.

Tasks in flight are bounded (`TASKS_PER_CPU` per CPU of the cluster, and the bytes of batches
sent ahead by `parallel.READ_AHEAD_BYTES`), so neither the driver nor the object store holds
more than a window of results. A task whose worker dies is retried by Ray (`MAX_RETRIES`); a
unit that fails every time ends the run with `UnitFailed`. Closing the iterator (Ctrl-C,
SIGTERM) cancels the tasks still queued or running.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from trajlint import read
from trajlint.check.executor import UnitFailed, describe
from trajlint.check.parallel import READ_AHEAD_BYTES
from trajlint.read.remote import is_url

if TYPE_CHECKING:
    from trajlint.check.engine import RowChecker, UnitResult
    from trajlint.check.kinds import FileKind
    from trajlint.check.parallel import Unit

# Two tasks per CPU keep every worker busy while the driver absorbs a result.
TASKS_PER_CPU = 2
# Ray reruns a task whose worker process or node died this many times.
MAX_RETRIES = 3


class RayUnavailable(Exception):
    """Ray is not installed, or the cluster cannot be reached; the message is one line."""


class RayExecutor:
    """Units as Ray tasks on the cluster at `address` (None: `RAY_ADDRESS`, else a Ray started here)."""

    def __init__(self, address: str | None = None):
        self.address = address
        self._ray: Any = None
        self._connected_here = False

    def _connect(self) -> Any:
        if self._ray is not None:
            return self._ray
        try:
            import ray
        except ImportError:
            raise RayUnavailable("--executor ray needs Ray: pip install 'trajlint[ray]'") from None
        if not ray.is_initialized():
            options: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
            if self.address:
                options["address"] = self.address
            elif not os.environ.get("RAY_ADDRESS"):
                options["include_dashboard"] = False
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or os.environ.get("RAY_ADDRESS") or "a local Ray"
                text = " ".join(str(exc).split())[:300]
                raise RayUnavailable(f"cannot connect to the Ray cluster at {where}: {text}") from None
            self._connected_here = True
        self._ray = ray
        return ray

    def workers(self) -> int:
        ray = self._connect()
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        """Disconnect, if this executor connected (a caller that connected stays connected)."""
        if self._connected_here and self._ray is not None:
            self._ray.shutdown()
        self._ray, self._connected_here = None, False

    def check_units(
        self, checker: RowChecker, planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int
    ) -> Iterator[tuple[Unit, Iterable[UnitResult]]]:
        ray = self._connect()
        task = ray.remote(max_retries=MAX_RETRIES)(_check_task)
        limit = TASKS_PER_CPU * self.workers()
        # Put once: every task gets a reference, and a worker unpickles the checker once.
        checker_ref = [ray.put(checker)]
        cwd = os.getcwd()
        units = [unit for unit, _ in planned]
        ahead = _tasks(planned, max_row_bytes, limit)
        pending: deque[tuple[int, int, Any, Any]] = deque()  # (unit index, bytes held, work, reference)
        held = 0

        def fill() -> None:
            nonlocal held
            while len(pending) < limit and (not pending or held < READ_AHEAD_BYTES):
                nxt = next(ahead, None)
                if nxt is None:
                    return
                index, work = nxt
                size = work[0].size if isinstance(work[0], read.Batch) else 0
                pending.append((index, size, work[0], task.remote(checker_ref, work, max_row_bytes, cwd)))
                held += size

        def results(index: int) -> Iterator[UnitResult]:
            nonlocal held
            while pending and pending[0][0] == index:
                _, size, work, ref = pending[0]
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    raise UnitFailed(_failure(work, exc)) from None
                pending.popleft()
                held -= size
                fill()
                yield result

        try:
            fill()
            for index, unit in enumerate(units):
                yield unit, results(index)
        finally:
            ahead.close()
            for _, _, _, ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - finished, or already gone with its node
                    pass
            pending.clear()
            self.close()


def _failure(work: Any, exc: BaseException) -> str:
    kind = type(exc).__name__
    if kind in ("WorkerCrashedError", "NodeDiedError", "OwnerDiedError", "ObjectLostError"):
        why = f"its worker died on every one of {MAX_RETRIES + 1} tries ({kind})"
    elif kind == "TaskCancelledError":
        why = "its task was cancelled on the cluster"
    else:
        text = " ".join(str(getattr(exc, "cause", None) or exc).split())
        why = f"its task failed on the cluster: {text[:300]}"
    return f"{describe(work)} could not be checked: {why}"


def _tasks(
    planned: Sequence[tuple[Unit, FileKind]], max_row_bytes: int, tasks_at_once: int
) -> Iterator[tuple[int, tuple[Any, FileKind]]]:
    """(index of the unit, what a task checks) in input order: a unit a worker reads itself, or
    a batch of a stream read here.

    A compressed file cannot be cut by offset. While there are fewer of them than tasks the
    cluster runs at once, each is read here and sent in batches, so that one large file still
    keeps every worker busy; with at least that many, each is one task that reads the whole file
    itself, so that the driver and the object store carry none of their bytes.
    """
    compressed = sum(1 for unit, _ in planned if isinstance(unit, read.Source) and unit.stream is None and unit.compression)
    whole = compressed >= tasks_at_once
    for index, (unit, kind) in enumerate(planned):
        if isinstance(unit, read.Source) and (unit.stream is not None or (unit.compression and not whole)):
            for batch in read.batches(unit, max_row_bytes):
                yield index, (batch, kind)
        else:
            yield index, (unit, kind)


# The checker each worker process holds, by the reference it came as.
_checkers: dict[str, Any] = {}


def _check_task(checker_ref: list[Any], work: tuple[Any, FileKind], max_row_bytes: int, cwd: str) -> UnitResult:
    import ray

    key = checker_ref[0].hex()
    checker = _checkers.get(key)
    if checker is None:
        _checkers.clear()
        checker = _checkers[key] = ray.get(checker_ref[0])
    unit, kind = work
    if not isinstance(unit, read.Batch) and not is_url(unit.path) and not os.path.isabs(unit.path):
        # The driver's relative paths name files on the shared file system from its directory.
        try:
            os.chdir(cwd)
        except OSError:
            pass  # not mounted here: the read reports the file as unreadable
    return checker.check_unit(unit, max_row_bytes, kind)
