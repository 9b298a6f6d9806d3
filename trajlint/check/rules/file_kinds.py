"""Files that are not rollouts (`trajlint.check.kinds`): what each one is, and the contract of
task inputs (a task dataset, NeMo Gym's materialized inputs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint.check.kinds import DESCRIPTIONS, KINDS, MATERIALIZED_INPUTS, ROLLOUTS, TASK_INPUTS, rollout_evidence
from trajlint.check.rule import Violation, row_rule
from trajlint.check.schema_errors import show
from trajlint.check.subject import Subject
from trajlint.pointer import escape
from trajlint.row.values import json_type

_LINT_AS_ROLLOUTS = "`--file-kind rollouts` lints it as rollouts"


@row_rule("non-rollout-file", reads=["file"], kinds=set(KINDS) - {ROLLOUTS})
def non_rollout_file(subject: Subject) -> Iterator[Violation]:
    """Once per file, at the file: what it is and why its rows are not linted as rollouts."""
    if subject.line or subject.problem is not None:
        return  # a stream that broke: the input rules report it
    kind = subject.kind
    checked = (
        "its rows are checked as task inputs (task-input-schema)"
        if kind.kind in TASK_INPUTS
        else "only its lines are checked, as JSON"
    )
    yield Violation("", f"this file is {DESCRIPTIONS[kind.kind]}, not rollouts: {kind.why}; {checked}; {_LINT_AS_ROLLOUTS}")


@row_rule("task-input-schema", reads=["row"], kinds=TASK_INPUTS)
def task_input_schema(subject: Subject) -> Iterator[Violation]:
    """A row of task inputs, as NeMo Gym's dataset validation and rollout collection read it."""
    row = subject.row
    kind = subject.kind
    evidence = rollout_evidence(row)
    if evidence:
        keys = ", ".join(f"`{key}`" for key in evidence[:5])
        yield Violation(
            "/" + escape(evidence[0]),
            f"the row holds rollout evidence ({keys}) in a file taken for {DESCRIPTIONS[kind.kind]} "
            f"({kind.why}), so it is not linted as a rollout; a rollout among task inputs, or a rollout "
            f"file that does not look like one at its start ({_LINT_AS_ROLLOUTS})",
            severity="warning",
        )
    if isinstance(row.get("task_id"), dict) and "task_input" in row:
        yield from _materialized_task(row)
    else:
        yield from _request(row, kind.kind)
    agent_ref = row.get("agent_ref")
    if agent_ref and not isinstance(agent_ref, dict):
        yield Violation(
            "/agent_ref",
            f"`agent_ref` must be an object naming the agent, got {_type(agent_ref)}: rollout collection "
            "reads its `name` and stops on anything else",
        )
    if kind.kind == MATERIALIZED_INPUTS:
        for key in ("_ng_task_index", "_ng_rollout_index"):
            if key not in row:
                yield Violation(
                    "",
                    f"a materialized input row lacks `{key}`, which rollout collection stamps on every row it "
                    "dispatches; resuming the run and reward profiling look rows up by it and stop without it",
                )


def _materialized_task(row: dict[str, Any]) -> Iterator[Violation]:
    """`task_id` must be NeMo Gym's `TaskId` and `task_input` an object."""
    task_id = row["task_id"]
    for key in ("taskset", "task_id"):
        value = task_id.get(key)
        if not isinstance(value, str) or not value:
            got = "is missing" if key not in task_id else f"is {show(value)}"
            yield Violation(
                f"/task_id/{key}",
                f"a materialized task's `task_id.{key}` must be a non-empty string, but {got}; NeMo Gym "
                "rejects the task",
            )
    for key in task_id:
        if key not in ("taskset", "task_id"):
            yield Violation(
                f"/task_id/{escape(key)}",
                f"`{key}` is not a field of a materialized task's `task_id` ({{taskset, task_id}}); NeMo Gym "
                "rejects the task",
            )
    if not isinstance(row["task_input"], dict):
        yield Violation(
            "/task_input",
            f"a materialized task's `task_input` must be an object, got {_type(row['task_input'])}; NeMo "
            "Gym rejects the task",
        )


def _request(row: dict[str, Any], kind: str) -> Iterator[Violation]:
    """A flat row: its request parameters."""
    if "responses_create_params" not in row:
        if kind == MATERIALIZED_INPUTS:
            yield Violation(
                "",
                "a materialized input row holds neither `responses_create_params` nor a materialized task "
                "(`task_id` object and `task_input`); rollout collection writes one of them into every row "
                "it dispatches, and cannot send this one again",
            )
        else:
            yield Violation(
                "",
                "the row holds neither `responses_create_params` nor a materialized task (`task_id` object "
                "and `task_input`): `gym eval run` stops on it; only a dataset that NeMo Gym wraps into "
                "tasks for an environment server takes it",
                severity="warning",
            )
        return
    params = row["responses_create_params"]
    if not isinstance(params, dict):
        yield Violation(
            "/responses_create_params",
            f"`responses_create_params` must be an object (the model request's parameters), got "
            f"{_type(params)}; NeMo Gym rejects the row",
        )


def _type(value: Any) -> str:
    return json_type(value)
