"""The canonical trajectory NeMo Gym's builder writes to `ng_trajectory`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from trajlint.contract.common import (
    Dialect,
    FinishReason,
    LocalResponseReason,
    ModelCallRef,
    ModelName,
    NonNegativeFloat,
    NonNegativeInt,
    ObservationGap,
    ObservationModel,
    ResponseSource,
    ServedBy,
    StatusCode,
    UpstreamAttempted,
    UpstreamStatusCode,
    duplicates,
)
from trajlint.contract.observations import AgentInvocation, ToolCallObservation


class TrajectoryToolCall(ToolCallObservation):
    """A tool call with its model-visible output; keeps `kind: "tool_call"` and the timing-order check."""

    output: Any = Field(default=None, description="Output the model saw, as in the conversation.")


class TrajectoryTokenStats(ObservationModel):
    """Token counts of one model call; null means unknown, never zero."""

    prompt_tokens: NonNegativeInt | None = Field(default=None, description="Input tokens, cached ones included.")
    completion_tokens: NonNegativeInt | None = Field(default=None, description="Output tokens.")
    reasoning_tokens: NonNegativeInt | None = Field(default=None, description="Reasoning part of the output tokens.")
    total_tokens: NonNegativeInt | None = Field(default=None, description="Total tokens reported for the call.")
    cached_tokens: NonNegativeInt | None = Field(default=None, description="Input tokens served from cache.")


class TrajectoryResponseMetadata(ObservationModel):
    """What is known about a model call's response besides its payload."""

    response_id: str | None = Field(default=None, description="Protocol response id.")
    model_ref: ServedBy = None
    model: ModelName = None
    dialect: Dialect = None
    status_code: StatusCode = None
    response_status: str | None = Field(default=None, description="Responses API `status` of the response.")
    finish_reason: FinishReason = None
    upstream_attempted: UpstreamAttempted = None
    response_source: ResponseSource = None
    upstream_status_code: UpstreamStatusCode = None
    local_response_reason: LocalResponseReason = None
    error_category: str | None = Field(default=None, description="Failure category of the call, e.g. `timeout`.")
    latency_ttft_ms: NonNegativeFloat | None = Field(
        default=None, description="Time to the first body chunk in milliseconds."
    )


class TrajectoryModelCall(ObservationModel):
    """One captured model call with its payloads (moved here from the capture once projected)."""

    model_call_id: str | None = Field(default=None, description="Capture id; unique among non-empty ids.")
    started_at: float | None = Field(default=None, description="Start, UTC Unix seconds (wall clock).")
    completed_at: float | None = Field(default=None, description="End, UTC Unix seconds (wall clock).")
    duration_ms: NonNegativeFloat | None = Field(default=None, description="Measured latency in milliseconds.")
    request: Any = Field(default=None, description="Dialect request object, or the raw request text.")
    response: Any = Field(default=None, description="Dialect response object, or the raw response text.")
    response_metadata: TrajectoryResponseMetadata = Field(
        default_factory=TrajectoryResponseMetadata, description="Response facts other than the payload."
    )
    token_stats: TrajectoryTokenStats = Field(
        default_factory=TrajectoryTokenStats, description="Token counts of the call."
    )


class TrajectoryTurn(ObservationModel):
    """One semantic policy turn: a model decision within one invocation."""

    invocation_id: str = Field(description="Invocation the turn belongs to.")
    task_id: str = Field(description="Task id; equals the record's.")
    rollout_id: str = Field(description="Rollout id; equals the record's.")
    turn_no: int = Field(ge=1, description="Turn number within the invocation, from 1.")
    timestamp: float = Field(description="When the turn started, UTC Unix seconds.")
    question: Any = Field(default=None, description="Model-visible input of the turn.")
    answer: Any = Field(default=None, description="Model output without reasoning.")
    reasoning_content: Any = Field(default=None, description="Reasoning the model emitted.")
    resolved: bool | None = Field(default=None, description="Task resolution, set on the last turn when known.")
    step_count: int = Field(
        ge=0, description="Producer-reported cumulative step count within the invocation (producer semantics)."
    )
    model_calls: list[ModelCallRef] = Field(default_factory=list, description="Model calls behind the turn.")


class TrajectoryRecord(ObservationModel):
    """The canonical trajectory of one rollout (`ng_trajectory`, version 1.0).

    Validated outside the schema: invocation ids unique; non-empty `model_call_id`s unique; every
    turn's `task_id` and `rollout_id` equal the record's; `(invocation_id, turn_no)` unique.
    """

    schema_version: Literal["1.0"] = Field(default="1.0", description="Trajectory wire format version.")
    task_id: str = Field(description="Task identity derived from the row.")
    rollout_id: str = Field(description="Rollout identity derived from the row.")
    invocations: list[AgentInvocation] = Field(default_factory=list, description="Agent invocations.")
    turns: list[TrajectoryTurn] = Field(default_factory=list, description="Policy turns.")
    model_calls: list[TrajectoryModelCall] = Field(default_factory=list, description="Captured model calls.")
    tool_calls: list[TrajectoryToolCall] = Field(default_factory=list, description="Tool calls with outputs.")
    gaps: list[ObservationGap] = Field(default_factory=list, description="Facts that could not be observed.")

    @model_validator(mode="after")
    def _check_identities(self) -> TrajectoryRecord:
        repeated = duplicates(inv.invocation_id for inv in self.invocations)
        if repeated:
            raise ValueError(f"invocation ids are not unique: {', '.join(map(repr, repeated))}")
        repeated = duplicates(call.model_call_id for call in self.model_calls if call.model_call_id)
        if repeated:
            raise ValueError(f"model_call_ids are not unique: {', '.join(map(repr, repeated))}")
        for number, turn in enumerate(self.turns):
            if (turn.task_id, turn.rollout_id) != (self.task_id, self.rollout_id):
                raise ValueError(
                    f"turn {number} has identity ({turn.task_id!r}, {turn.rollout_id!r}),"
                    f" not the record's ({self.task_id!r}, {self.rollout_id!r})"
                )
        repeated = duplicates((turn.invocation_id, turn.turn_no) for turn in self.turns)
        if repeated:
            listed = ", ".join(f"({inv!r}, {no})" for inv, no in repeated)
            raise ValueError(f"(invocation_id, turn_no) pairs are not unique: {listed}")
        return self
