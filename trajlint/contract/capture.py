"""Captured model calls as the collector merges them into a row: `ng_model_call_capture`.

Unlike the observation models these allow unknown keys: newer NeMo Gym adds keys to captured calls
and to the envelope, and older rows lack some, so only `call_index` is required on a call.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trajlint.contract.common import (
    Dialect,
    FinishReason,
    LocalResponseReason,
    ModelName,
    NonNegativeFloat,
    NonNegativeInt,
    ObservationGap,
    ResponseSource,
    ServedBy,
    StatusCode,
    UpstreamAttempted,
    UpstreamStatusCode,
)


class _OpenModel(BaseModel):
    model_config = ConfigDict(extra="allow")


class ModelCallRecord(_OpenModel):
    """One captured model call, normalized; payload keys are stripped once the trajectory holds them."""

    model_call_id: str | None = Field(default=None, description="Capture id the model server generated (uuid4 hex).")
    response_id: str | None = Field(default=None, description="`id` of the response, when a string.")
    client_session_id: str | None = Field(
        default=None, description="The request's single `x-session-id` header value (evidence, not a boundary)."
    )
    call_index: NonNegativeInt = Field(
        description="Position in the capture file; damaged lines also consume an index, so gaps are possible."
    )
    model_ref: ServedBy = None
    model: ModelName = None
    dialect: Dialect = None
    status_code: StatusCode = None
    response_status: str | None = Field(default=None, description="`status` of the response, when a string.")
    finish_reason: FinishReason = None
    upstream_attempted: UpstreamAttempted = None
    response_source: ResponseSource = None
    upstream_status_code: UpstreamStatusCode = None
    local_response_reason: LocalResponseReason = None
    started_at: float | None = Field(default=None, description="Start, UTC Unix seconds (wall clock).")
    completed_at: float | None = Field(default=None, description="End, UTC Unix seconds (wall clock).")
    tokens_in: NonNegativeInt | None = Field(default=None, description="Input tokens, cached ones included.")
    tokens_out: NonNegativeInt | None = Field(default=None, description="Output tokens.")
    tokens_reasoning: NonNegativeInt | None = Field(default=None, description="Reasoning part of the output tokens.")
    tokens_total: NonNegativeInt | None = Field(default=None, description="Total tokens of the call.")
    request: dict[str, Any] | None = Field(default=None, description="Request body, when it was a JSON object.")
    response: dict[str, Any] | None = Field(
        default=None, description="Response body, or the object reassembled from a stream."
    )
    request_raw: str | None = Field(default=None, description="Request body text when it was not a JSON object.")
    response_raw: str | None = Field(
        default=None, description="Response body text for streams, unparsable bodies or failed calls."
    )
    tool_calls: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Tool calls the response requested, as `{call_id, name, arguments}` objects; `[]` for none.",
    )
    reasoning_content: str | None = Field(default=None, description="Reasoning text of the response, joined.")
    cache_hit: bool | None = Field(default=None, description="Whether any input tokens came from cache.")
    cached_tokens: NonNegativeInt | None = Field(default=None, description="Input tokens served from cache.")
    cache_creation_tokens: NonNegativeInt | None = Field(
        default=None, description="Input tokens written to the cache (Anthropic)."
    )
    error_category: str | None = Field(default=None, description="Failure category of the call, e.g. `timeout`.")
    latency_total_ms: NonNegativeFloat | None = Field(default=None, description="Measured latency in milliseconds.")
    latency_ttft_ms: NonNegativeFloat | None = Field(
        default=None, description="Time to the first body chunk in milliseconds."
    )
    verifier_invocation_id: str | None = Field(
        default=None, description="Verifier invocation that made the call; claims the call for that verifier."
    )


class CaptureMetrics(_OpenModel):
    """Sums over the captured calls; a sum is null when no call had a value."""

    tokens_in: NonNegativeInt | None = Field(default=None, description="Sum of `tokens_in`.")
    tokens_out: NonNegativeInt | None = Field(default=None, description="Sum of `tokens_out`.")
    tokens_reasoning: NonNegativeInt | None = Field(default=None, description="Sum of `tokens_reasoning`.")
    tokens_total: NonNegativeInt | None = Field(default=None, description="Sum of `tokens_total`.")
    cached_tokens: NonNegativeInt | None = Field(default=None, description="Sum of `cached_tokens`.")
    latency_total_ms: NonNegativeFloat | None = Field(default=None, description="Sum of `latency_total_ms`.")
    num_calls: NonNegativeInt = Field(description="Number of captured calls.")


class ModelCallCapture(_OpenModel):
    """The rollout's captured model calls and their metrics (`ng_model_call_capture`)."""

    rollout_id: str = Field(description="Capture key of the rollout.")
    metrics: CaptureMetrics = Field(description="Sums over the captured calls.")
    calls: list[ModelCallRecord] = Field(description="Captured calls in capture-file order.")
    gaps: list[ObservationGap] = Field(
        default_factory=list, description="Capture problems; omitted when there are none."
    )
