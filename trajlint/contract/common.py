"""Building blocks shared by every section of a rollout row: the strict base model, model-server
and model-call references, and observation gaps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Counters and durations: NeMo Gym accepts only values >= 0 and uses null for "unknown", never 0.
NonNegativeInt = Annotated[int, Field(ge=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]


class ObservationModel(BaseModel):
    """Base of every observation and trajectory model: unknown keys are errors, as in NeMo Gym."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelServerRef(BaseModel):
    """Names the NeMo Gym model server that answered a call.

    A plain model in NeMo Gym: unknown keys are ignored rather than rejected.
    """

    type: Literal["responses_api_models"] = Field(description="Server kind; always `responses_api_models`.")
    name: str = Field(description="Name of the model server in the NeMo Gym configuration.")


def _is_joinable(model_call_id: object, model_ref: object, response_id: object) -> bool:
    # Empty strings count as absent: "" can never join to a captured call.
    return bool(model_call_id) or (model_ref is not None and bool(response_id))


# The join-key rule as JSON Schema: one branch per way of naming a call; minLength 1 makes "" absent.
_JOIN_KEY_RULE = {
    "anyOf": [
        {
            "required": ["model_call_id"],
            "properties": {"model_call_id": {"type": "string", "minLength": 1}},
        },
        {
            "required": ["model_ref", "response_id"],
            "properties": {
                "model_ref": {"type": "object"},
                "response_id": {"type": "string", "minLength": 1},
            },
        },
    ]
}


# What a captured call and a trajectory call's response metadata both say about the call, written
# once: the two models carry the same facts under the same names.
ServedBy = Annotated[ModelServerRef | None, Field(description="Model server that served the call.")]
ModelName = Annotated[str | None, Field(description="Model name from the response, else the request.")]
Dialect = Annotated[str | None, Field(description="Wire dialect: `responses`, `chat` or `messages`.")]
StatusCode = Annotated[int | None, Field(description="HTTP status of the call.")]
FinishReason = Annotated[str | None, Field(description="Why generation stopped, in the dialect's words.")]
UpstreamAttempted = Annotated[bool | None, Field(description="Whether the model server forwarded the call upstream.")]
ResponseSource = Annotated[Literal["upstream", "local"] | None, Field(description="Whether the response came from upstream or was made locally by the server.")]
UpstreamStatusCode = Annotated[int | None, Field(description="HTTP status the upstream returned.")]
LocalResponseReason = Annotated[str | None, Field(description="Why the server answered locally, e.g. `context_length_exceeded`.")]


class ModelCallRef(ObservationModel):
    """Identifies one model call so a claim can be joined to the captured call.

    Join-key rule (also in the schema): valid iff `model_call_id` is non-empty, or `model_ref` is set
    and `response_id` is non-empty.
    """

    model_config = ConfigDict(json_schema_extra=_JOIN_KEY_RULE)

    model_call_id: str | None = Field(
        default=None, description="Capture id the model server generated for the call (uuid4 hex)."
    )
    model_ref: ModelServerRef | None = Field(default=None, description="Model server that served the call.")
    response_id: str | None = Field(
        default=None,
        description="Protocol response id (`resp_…`, `chatcmpl-…`, `msg_…`); joins only with `model_ref`.",
    )

    @model_validator(mode="after")
    def _check_join_key(self) -> ModelCallRef:
        if not _is_joinable(self.model_call_id, self.model_ref, self.response_id):
            raise ValueError(
                "a model call reference needs a non-empty model_call_id, or model_ref with a non-empty response_id"
            )
        return self


class ObservationGap(ObservationModel):
    """A fact the producer or NeMo Gym could not observe or join exactly; `code` is an open vocabulary."""

    code: str = Field(description="What could not be observed, e.g. `turns_unavailable`.")
    invocation_id: str | None = Field(default=None, description="Agent invocation the gap concerns, if any.")
    detail: str | None = Field(default=None, description="Producer-specific detail, e.g. the id that did not join.")


def duplicates(values: Iterable[Hashable]) -> list[Hashable]:
    """The values that occur more than once, in first-seen order (for uniqueness validators)."""
    counts = Counter(values)
    return [value for value, count in counts.items() if count > 1]
