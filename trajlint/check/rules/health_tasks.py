"""TL6xx task-level health: NeMo Gym's checks over all the repeats of a task.

Each row's verdict is reduced into its task's repeats (`trajlint.repeats.TaskRepeats`, a few
bytes per row); the flagged tasks are reported at the end of the run, at the task's first row.
A repeat is judged with every rollout health check, whatever the selection: a reduction sees a
row, not the findings the selected rules made of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint import repeats
from trajlint.check.subject import Subject
from trajlint.check.rule import Violation, run_rule
from trajlint.findings import Location, Rollout
from trajlint.health import view_verdict


class _TaskRule:
    """Collects each row's verdict into its task's repeats; reports the flagged tasks at the end."""

    check = ""

    def __init__(self) -> None:
        self.by_task = repeats.TaskRepeats()

    def digest(self, subject: Subject) -> tuple[Any, ...]:
        row = subject.row
        verdict, digest = subject.memo("health-verdict", view_verdict)  # both task rules need it
        return (
            repeats.task_index(row),
            repeats.rollout_index(row),
            verdict,
            repeats.stage_index(row),
            subject.rollout,
            digest.policy_calls_observed,
            digest.successful_turn_calls > 0,
        )

    def absorb(self, location: Location, digest: tuple[Any, ...]) -> None:
        task, index, verdict, stage, rollout, policy_calls_observed, successful = digest
        if task is None:  # NeMo Gym counts such a row as a task of its own
            task = ("row", location.path, location.line)
        self.by_task.add(
            task,
            index,
            verdict,
            stage=stage,
            first=location,
            rollout=rollout,
            policy_calls_observed=policy_calls_observed,
            successful=successful,
        )

    def finish(self) -> Iterator[tuple[Location, Rollout | None, Violation]]:
        for task, entry in self.by_task.tasks.items():
            outcome = self.by_task.outcome(task)
            if self.check in outcome.flags:
                yield entry.first, entry.rollout, Violation("", self.message(outcome))

    def message(self, outcome: repeats.TaskOutcome) -> str:
        raise NotImplementedError


@run_rule("task-consistently-unhealthy", reads=["row"])
class TaskConsistentlyUnhealthy(_TaskRule):
    """Every repeat of the task that could be judged (at least two) is unhealthy."""

    check = repeats.TASK_UNHEALTHY

    def message(self, outcome: repeats.TaskOutcome) -> str:
        judged = outcome.counts[repeats.UNHEALTHY]
        unobserved = outcome.counts[repeats.UNOBSERVED]
        return (
            f"all {judged} repeats of this task that could be judged are unhealthy"
            + (f" ({unobserved} more could not be judged)" if unobserved else "")
            + ": the task, its environment or its verifier is likely broken, not the policy"
        )


@run_rule("task-no-successful-model-calls", reads=["row"])
class TaskNoSuccessfulModelCalls(_TaskRule):
    """No repeat of the task has a successful model call that one of its turns references."""

    check = repeats.TASK_NO_SUCCESS

    def message(self, outcome: repeats.TaskOutcome) -> str:
        return (
            f"none of the task's {outcome.repeats} repeats has a successful model call behind its "
            "turns: the policy never answered, so the task's rewards say nothing about it"
        )
