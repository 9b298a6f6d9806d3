"""One persisted rollout row: the collector's keys and the four evidence sections.

A row is the agent's result plus collector keys, so unknown keys are allowed. The model says
what NeMo Gym 0.7.0 writes. Keys the collector writes only in some rows may be absent, but most
of them never hold null when present: those are declared with `_absent_or_value`, which rejects
null both here and in the generated schema. Where NeMo Gym also reads forms it never writes (a
null trajectory, a non-boolean `resolved`), the lint rules say so with less than an error.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from trajlint.contract.capture import ModelCallCapture
from trajlint.contract.common import NonNegativeInt
from trajlint.contract.observations import AgentObservationBundle
from trajlint.contract.trajectory import TrajectoryRecord
from trajlint.contract.verifier import VerifierInvocations

# An explicit capture key must be usable as a capture file name.
ROLLOUT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# NeMo Gym appends `-a<N>` to a retry's capture key, so an explicit id may not end that way: "x-a1"
# would be the key of "x"'s first retry too (its EpisodeId rejects such an id).
RESERVED_ATTEMPT_SUFFIX = r"-a[1-9][0-9]*$"
FAILURE_STAGES = ("admission", "seed", "agent", "verification", "cleanup")


def _not_reserved(rollout_id: str) -> str:
    if re.search(RESERVED_ATTEMPT_SUFFIX, rollout_id):
        raise ValueError("must not end with the attempt suffix '-a<N>' NeMo Gym reserves for retries")
    return rollout_id


RolloutId = Annotated[
    str,
    Field(pattern=ROLLOUT_ID_PATTERN, json_schema_extra={"not": {"pattern": RESERVED_ATTEMPT_SUFFIX}}),
    AfterValidator(_not_reserved),
]


def _integer_or_string(json_schema: dict[str, Any]) -> None:
    """`int >= 0 | str` as one `type` list: `minimum` binds only numbers, and an error names both types."""
    branches = json_schema.pop("anyOf")
    json_schema["type"] = [branch["type"] for branch in branches]
    json_schema.update({key: value for branch in branches for key, value in branch.items() if key != "type"})


def _drop_null(json_schema: dict[str, Any]) -> None:
    """Remove null from a field's generated schema: None is only the marker for an absent key."""
    branches = json_schema.pop("anyOf", None)
    if branches is not None:
        (present,) = [branch for branch in branches if branch != {"type": "null"}]
        json_schema.update(present)
    elif isinstance(json_schema.get("type"), list):
        (json_schema["type"],) = [kind for kind in json_schema["type"] if kind != "null"]
    json_schema.pop("default", None)


def _absent_or_value(description: str, alias: str | None = None) -> Any:
    """A key that may be left out but is never null when present."""
    return Field(default=None, alias=alias, description=description, json_schema_extra=_drop_null)


class AgentRef(BaseModel):
    """Names the NeMo Gym agent server that ran the rollout.

    The collector writes `{"name": ...}`, or the input row's own object as it was; NeMo Gym reads
    only `name` and takes a missing one as no agent, so other keys are allowed.
    """

    model_config = ConfigDict(extra="allow")

    type: str | None = Field(
        default=None, description="Server kind, `responses_api_agents`, when the input row carried it; never read."
    )
    name: str | None = Field(default=None, description="Name of the agent server in the NeMo Gym configuration.")


class TaskId(BaseModel):
    """Identifies a materialized task: the taskset it belongs to and its id there (NeMo Gym's `TaskId`)."""

    model_config = ConfigDict(extra="forbid")

    taskset: str = Field(min_length=1, description="Run-unique taskset name, e.g. `environment:taskset`.")
    task_id: str = Field(min_length=1, description="Id of the task within its taskset.")


class RolloutRow(BaseModel):
    """One rollout row as persisted in NeMo Gym rollout JSONL; any other keys are the agent's result."""

    model_config = ConfigDict(extra="allow", serialize_by_alias=True)

    task_index: NonNegativeInt | str = Field(
        alias="_ng_task_index",
        description="Index of the task: the input row's own value when it had one (kept as written), else a counter.",
        json_schema_extra=_integer_or_string,
    )
    rollout_index: NonNegativeInt = Field(alias="_ng_rollout_index", description="Repeat index of the rollout.")
    attempt_index: NonNegativeInt | None = _absent_or_value(
        "Retry attempt; present only if the input row had it.", "_ng_attempt_index"
    )
    explicit_rollout_id: RolloutId | None = _absent_or_value(
        "Explicit capture key; present only if the input row had it.", "_ng_rollout_id"
    )
    agent_ref: AgentRef | None = Field(
        default=None, description="Agent server that ran the rollout; null or absent when none is named."
    )
    environment_server: str | None = _absent_or_value(
        "Environment server that ran the row.", "_ng_environment_server"
    )
    result_type: str | None = _absent_or_value("Implementation type of the environment server.", "_ng_result_type")
    episode_task_id: TaskId | None = _absent_or_value(
        "Task of an environment-server episode (a materialized task).", "_ng_task_id"
    )
    failure_class: str | None = _absent_or_value(
        "Failure class, e.g. `agent_run_error` or `environment_server_failed`.", "_ng_failure_class"
    )
    failure_terminal: bool | None = _absent_or_value(
        "Whether the failure must not be retried.", "_ng_failure_terminal"
    )
    # NeMo Gym writes these three even when it has no value for them.
    failure_message: str | None = Field(default=None, alias="_ng_failure_message", description="Failure message.")
    failure_stage: Literal[FAILURE_STAGES] | None = Field(
        default=None, alias="_ng_failure_stage", description="Stage in which the environment failed."
    )
    failure_partial_response: dict[str, Any] | None = _absent_or_value(
        "What the environment produced before failing.", "_ng_failure_partial_response"
    )
    failure_type: str | None = _absent_or_value("Exception class of a failed `/run` call.", "_ng_failure_type")
    failure_http_status: int | None = Field(
        default=None, alias="_ng_failure_http_status", description="HTTP status of a failed `/run` call."
    )
    failure_response_body: str | None = Field(
        default=None, alias="_ng_failure_response_body", description="Size-limited body of a failed `/run` call."
    )
    no_persist: bool | None = _absent_or_value("Whether the row is kept out of the main output.", "_ng_no_persist")
    dispatch_drained: bool | None = _absent_or_value(
        "Whether the dispatch was drained without a result.", "_ng_dispatch_drained"
    )
    resolved: bool | None = Field(default=None, description="Whether the task was resolved; becomes turn resolution.")
    task_id: Any = Field(default=None, description="Task id echoed by the agent; first source of the trajectory's.")
    problem_id: Any = Field(default=None, description="Second source of the trajectory's task id.")
    instance_id: Any = Field(default=None, description="Third source of the trajectory's task id.")
    ng_model_call_capture: ModelCallCapture | None = _absent_or_value("Captured model calls of the rollout.")
    # Agents' reply models write null when they observed nothing, and NeMo Gym reads it as absent.
    ng_agent_observations: AgentObservationBundle | None = Field(
        default=None, description="What the agent harness observed, joined to the capture by the collector."
    )
    ng_trajectory: TrajectoryRecord | None = _absent_or_value(
        "The row's stated trajectory: the builder's output, or the producer's own."
    )
    ng_verifier_invocations: VerifierInvocations | None = _absent_or_value(
        "Verifier invocations and the model calls they own."
    )
    ng_perf: dict[str, Any] | None = _absent_or_value("Per-rollout performance summary derived from `ng_trajectory`.")

    @field_validator("*", mode="before")
    @classmethod
    def _reject_null(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and cls.model_fields[info.field_name].json_schema_extra is _drop_null:
            raise ValueError("must not be null; leave the key out instead")
        return value
