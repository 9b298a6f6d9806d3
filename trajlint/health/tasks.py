"""The repeats of each task, kept compact, and NeMo Gym's task-level health checks over them.

NeMo Gym reduces a task over its repeats: the rows of one `_ng_task_index`, one repeat per
`_ng_rollout_index`. Copies of one repeat with different verdicts count as unobserved, and
duplicated copies of one rollout as unhealthy. A run can have millions of rows, so a copy costs
one small integer here, and a task a few fields.
"""

from __future__ import annotations

import heapq
import pickle
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from trajlint.findings import Location, Rollout
from trajlint.row.values import group_key
from trajlint.spill import key_bytes

HEALTHY, UNHEALTHY, UNOBSERVED = "healthy", "unhealthy", "unobserved"
VERDICTS = (HEALTHY, UNHEALTHY, UNOBSERVED)
_CODE = {HEALTHY: 0, UNHEALTHY: 1, UNOBSERVED: 2}

TASK_UNHEALTHY = "task_consistently_unhealthy"
TASK_NO_SUCCESS = "task_no_successful_model_calls"


def verdict(found: bool, unobserved: bool) -> str:
    return UNHEALTHY if found else UNOBSERVED if unobserved else HEALTHY


@dataclass(slots=True)
class Task:
    """One task's repeats: per rollout index, the verdict codes of its copies (with copy keys)."""

    first: Location
    rollout: Rollout | None  # the first row's identity; its task_id is the usual one for the task
    buckets: dict[Any, Any] = field(default_factory=dict)
    policy_calls_observed: bool = True
    successful: bool = False


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    repeats: int
    counts: dict[str, int]
    flags: tuple[str, ...]
    coverage: dict[str, bool]  # task check -> evaluated (False: unobserved)


class TaskRepeats:
    """The run's repeats per task, kept compact: most rows cost one small integer.

    A copy is its verdict code, or (copy key, code) when its key is not the usual one. Copies of
    one rollout index with the same key are duplicates of one rollout, and NeMo Gym's duplicate
    check makes each of them unhealthy. The key is the stage, as `duplicate-rollout-identity`
    and NeMo Gym's check have it: another stage of one rollout is no duplicate.

    Past a budget of tasks the table moves to disk (`TaskTable`), so a run of millions of tasks
    keeps a few thousand in memory. `order(task)` gives the bytes that order tasks for `ordered`.
    """

    def __init__(self, duplicates: bool = True, order: Callable[[Any], bytes] | None = None):
        self.tasks = TaskTable(order or _default_order)
        self.duplicates = duplicates

    def add(
        self,
        task: Any,
        rollout_index: Any,
        verdict: str,
        *,
        stage: Any = None,
        first: Location,
        rollout: Rollout | None,
        policy_calls_observed: bool,
        successful: bool,
    ) -> int:
        """Record a copy; returns its position among the copies of its rollout index."""
        entry = self.tasks.get(task)
        if entry is None:
            entry = Task(first, rollout)
        copy = copy_of(verdict, stage)
        bucket = entry.buckets.get(rollout_index)
        if bucket is None:
            entry.buckets[rollout_index] = copy
            position = 0
        elif isinstance(bucket, list):
            bucket.append(copy)
            position = len(bucket) - 1
        else:
            entry.buckets[rollout_index] = [bucket, copy]
            position = 1
        entry.policy_calls_observed &= policy_calls_observed
        entry.successful |= successful
        self.tasks.put(task, entry)
        return position

    def merge(
        self,
        task: Any,
        buckets: dict[Any, list[Any]],
        *,
        first: Location,
        rollout: Rollout | None,
        policy_calls_observed: bool,
        successful: bool,
    ) -> dict[Any, int]:
        """Record the copies of several rows of one task at once, as `add` would one by one:
        `buckets` maps each rollout index to its copies (`copy_of`) in row order; `first` and
        `rollout` are the first row's. Returns, for each rollout index that had copies
        already, how many: the positions of the new copies are shifted by that much."""
        entry = self.tasks.get(task)
        if entry is None:
            entry = Task(first, rollout)
        shifts = {}
        held = entry.buckets
        for rollout_index, copies in buckets.items():
            bucket = held.get(rollout_index)
            if bucket is None:
                held[rollout_index] = copies[0] if len(copies) == 1 else list(copies)
            elif isinstance(bucket, list):
                shifts[rollout_index] = len(bucket)
                bucket.extend(copies)
            else:
                shifts[rollout_index] = 1
                held[rollout_index] = [bucket, *copies]
        entry.policy_calls_observed &= policy_calls_observed
        entry.successful |= successful
        self.tasks.put(task, entry)
        return shifts

    def copies(self, task: Any, rollout_index: Any) -> list[tuple[str, int]]:
        """(final verdict, duplicate count) of each copy; a duplicate is unhealthy."""
        return self.copies_of(self.tasks[task], rollout_index)

    def copies_of(self, entry: Task, rollout_index: Any) -> list[tuple[str, int]]:
        bucket = entry.buckets[rollout_index]
        if not isinstance(bucket, list):  # one copy, as most rollouts have: no duplicate
            return [(VERDICTS[bucket[1] if isinstance(bucket, tuple) else bucket], 0)]
        raw = bucket
        keys = [c[0] if isinstance(c, tuple) else None for c in raw]
        codes = [c[1] if isinstance(c, tuple) else c for c in raw]
        counts = Counter(keys) if self.duplicates and len(raw) > 1 else Counter()
        out = []
        for key, code in zip(keys, codes):
            copies = counts.get(key, 1)
            duplicate = copies > 1
            out.append((UNHEALTHY if duplicate else VERDICTS[code], copies if duplicate else 0))
        return out

    def outcome(self, task: Any) -> TaskOutcome:
        return self.outcome_of(self.tasks[task])

    def outcome_of(self, entry: Task) -> TaskOutcome:
        # Verdicts counted by code (the order of VERDICTS); a rollout's copies that disagree
        # leave it unobserved.
        tally = [0, 0, 0]
        for rollout_index, bucket in entry.buckets.items():
            kind = type(bucket)
            if kind is int:  # one copy, as most rollouts have: its own verdict
                tally[bucket] += 1
            elif kind is tuple:
                tally[bucket[1]] += 1
            else:
                finals = {verdict for verdict, _ in self.copies_of(entry, rollout_index)}
                tally[_CODE[finals.pop()] if len(finals) == 1 else _CODE[UNOBSERVED]] += 1
        healthy, unhealthy, unobserved = tally
        computable = healthy + unhealthy
        flags = []
        coverage = {TASK_UNHEALTHY: computable >= 2, TASK_NO_SUCCESS: entry.policy_calls_observed}
        if computable >= 2 and not healthy:
            flags.append(TASK_UNHEALTHY)
        if coverage[TASK_NO_SUCCESS] and not entry.successful:
            flags.append(TASK_NO_SUCCESS)
        counts = {HEALTHY: healthy, UNHEALTHY: unhealthy, UNOBSERVED: unobserved}
        return TaskOutcome(healthy + unhealthy + unobserved, counts, tuple(flags), coverage)


def copy_of(verdict: str, stage: Any) -> Any:
    """What a task keeps of one copy of a rollout: its verdict's code, with its stage when it has
    one (copies in one stage are duplicates of one rollout, as NeMo Gym's check has them)."""
    return _CODE[verdict] if stage is None else (stage, _CODE[verdict])


def _default_order(task: Any) -> bytes:
    return key_bytes((task,))


def _spillable(task: Any) -> bool:
    """A task key that is a value (not an object standing for itself, whose identity or later
    changes a copy on disk would lose)."""
    return task is None or isinstance(task, (str, int, float, bytes))


#: Tasks a table keeps in memory before moving them to disk.
MEMORY_TASKS = 50_000


class TaskTable:
    """task -> `Task`, read back in the order tasks were first seen, or sorted (`ordered`).

    A dict while small; past `MEMORY_TASKS` (or `TRAJLINT_SPILL_ITEMS`, for tests) its entries
    move into a private temporary SQLite database, which the system deletes when it closes. Keys
    are compared as dict keys are (`spill.key_bytes`). A task that is an object (a row's position,
    resolved at the end) always stays in memory.
    """

    def __init__(self, order: Callable[[Any], bytes]):
        self._order = order
        self._memory: dict[Any, tuple[int, Task]] = {}
        self._db: Any = None
        self._seq = 0
        self._budget = _table_budget()

    @property
    def spilled(self) -> bool:
        """Whether some of the table is on disk."""
        return self._db is not None

    def get(self, task: Any) -> Task | None:
        hit = self._memory.get(task)
        if hit is not None:
            return hit[1]
        if self._db is not None and _spillable(task):
            row = self._db.execute("SELECT value FROM tasks WHERE key = ?", (key_bytes((task,)),)).fetchone()
            if row is not None:
                return pickle.loads(row[0])
        return None

    def __getitem__(self, task: Any) -> Task:
        entry = self.get(task)
        if entry is None:
            raise KeyError(task)
        return entry

    def put(self, task: Any, entry: Task) -> None:
        """Store `entry` (new, or changed since `get`) under `task`."""
        hit = self._memory.get(task)
        if hit is not None:
            return  # changed in place
        if self._db is not None and _spillable(task):
            cursor = self._db.execute(
                "UPDATE tasks SET value = ? WHERE key = ?", (_dump(entry), key_bytes((task,)))
            )
            if cursor.rowcount:
                return
        self._memory[task] = (self._seq, entry)
        self._seq += 1
        if len(self._memory) > self._budget:
            self._spill()

    def _spill(self) -> None:
        if self._db is None:
            import sqlite3

            # "": a private database in a temporary file, deleted when the connection closes.
            self._db = sqlite3.connect("")
            self._db.execute("PRAGMA journal_mode = OFF")
            self._db.execute("PRAGMA synchronous = OFF")
            self._db.execute(
                "CREATE TABLE tasks (key BLOB PRIMARY KEY, seq INTEGER, sort BLOB, task BLOB, value BLOB)"
            )
        kept = {}
        rows = []
        for task, (seq, entry) in self._memory.items():
            if _spillable(task):
                rows.append((key_bytes((task,)), seq, self._order(task), _dump(task), _dump(entry)))
            else:
                kept[task] = (seq, entry)
        self._db.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?)", rows)
        self._memory = kept

    def __len__(self) -> int:
        on_disk = self._db.execute("SELECT count(*) FROM tasks").fetchone()[0] if self._db is not None else 0
        return len(self._memory) + on_disk

    def __iter__(self) -> Iterator[Any]:
        for task, _ in self.items():
            yield task

    def items(self) -> Iterator[tuple[Any, Task]]:
        """(task, entry) in the order tasks were first seen."""
        memory = sorted(((seq, task, entry) for task, (seq, entry) in self._memory.items()), key=lambda e: e[0])
        stored = self._stored("seq")
        for _, task, entry in heapq.merge(stored, memory, key=lambda e: e[0]):
            yield task, entry

    def ordered(self) -> Iterator[tuple[Any, Task]]:
        """(task, entry) sorted by `order(task)`, ties in the order first seen (as a stable sort)."""
        memory = sorted(
            ((self._order(task), seq, task, entry) for task, (seq, entry) in self._memory.items()),
            key=lambda e: (e[0], e[1]),
        )
        stored = ((sort, seq, task, entry) for seq, task, entry, sort in self._stored("sort, seq", with_sort=True))
        for _, _, task, entry in heapq.merge(stored, memory, key=lambda e: (e[0], e[1])):
            yield task, entry

    def _stored(self, order_by: str, with_sort: bool = False) -> Iterator[tuple[Any, ...]]:
        if self._db is None:
            return
        # A cursor of its own: the table may be read while another read is under way.
        cursor = self._db.execute(f"SELECT seq, task, value, sort FROM tasks ORDER BY {order_by}")  # noqa: S608
        for seq, task, value, sort in cursor:
            if with_sort:
                yield seq, pickle.loads(task), pickle.loads(value), sort
            else:
                yield seq, pickle.loads(task), pickle.loads(value)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._memory = {}


def _dump(value: Any) -> bytes:
    return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def _table_budget() -> int:
    import os

    try:
        items = int(os.environ.get("TRAJLINT_SPILL_ITEMS", 0))
    except ValueError:
        items = 0
    return max(1, items) if items > 0 else MEMORY_TASKS


def stage_index(row: dict[str, Any]) -> Any:
    return group_key(row.get("stage_index"))


def task_index(row: dict[str, Any]) -> Any:
    return group_key(row["_ng_task_index"]) if "_ng_task_index" in row else None


def rollout_index(row: dict[str, Any]) -> Any:
    return group_key(row.get("_ng_rollout_index", 0))


def flag_message(check: str, outcome: TaskOutcome) -> str:
    """What a task check's finding says about a flagged task."""
    if check == TASK_UNHEALTHY:
        judged = outcome.counts[UNHEALTHY]
        unobserved = outcome.counts[UNOBSERVED]
        return (
            f"all {judged} repeats of this task that could be judged are unhealthy"
            + (f" ({unobserved} more could not be judged)" if unobserved else "")
            + ": the task, its environment or its verifier is likely broken, not the policy"
        )
    return (
        f"none of the task's {outcome.repeats} repeats has a successful model call behind its "
        "turns: the policy never answered, so the task's rewards say nothing about it"
    )
