"""The repeats of each task, kept compact, and NeMo Gym's task-level health checks over them.

NeMo Gym reduces a task over its repeats: the rows of one `_ng_task_index`, one repeat per
`_ng_rollout_index`. Copies of one repeat with different verdicts count as unobserved, and
duplicated copies of one rollout as unhealthy. A run can have millions of rows, so a copy costs
one small integer here, and a task a few fields.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from trajlint.findings import Location, Rollout
from trajlint.row.values import group_key

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
    """

    def __init__(self, duplicates: bool = True):
        self.tasks: dict[Any, Task] = {}
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
            entry = self.tasks[task] = Task(first, rollout)
        # Copies in one stage are duplicates of one rollout, as NeMo Gym's check has them.
        copy = _CODE[verdict] if stage is None else (stage, _CODE[verdict])
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
        return position

    def copies(self, task: Any, rollout_index: Any) -> list[tuple[str, int]]:
        """(final verdict, duplicate count) of each copy; a duplicate is unhealthy."""
        bucket = self.tasks[task].buckets[rollout_index]
        raw = bucket if isinstance(bucket, list) else [bucket]
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
        entry = self.tasks[task]
        verdicts = []
        for rollout_index in entry.buckets:
            finals = {verdict for verdict, _ in self.copies(task, rollout_index)}
            verdicts.append(finals.pop() if len(finals) == 1 else UNOBSERVED)
        counts = Counter(verdicts)
        computable = [v for v in verdicts if v != UNOBSERVED]
        flags = []
        coverage = {TASK_UNHEALTHY: len(computable) >= 2, TASK_NO_SUCCESS: entry.policy_calls_observed}
        if coverage[TASK_UNHEALTHY] and all(v == UNHEALTHY for v in computable):
            flags.append(TASK_UNHEALTHY)
        if coverage[TASK_NO_SUCCESS] and not entry.successful:
            flags.append(TASK_NO_SUCCESS)
        return TaskOutcome(len(verdicts), {v: counts.get(v, 0) for v in VERDICTS}, tuple(flags), coverage)


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
