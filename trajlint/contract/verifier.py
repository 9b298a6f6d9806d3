"""Verifier evidence, `ng_verifier_invocations`.

NeMo Gym has not fixed where verifier invocations are persisted; this is trajlint's documented
convention. Only the id and the ownership claims matter to the build, so everything else is lenient
and unknown keys are allowed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

from trajlint.contract.common import ModelCallRef, NonNegativeFloat


class VerifierInvocation(BaseModel):
    """One execution of a verifier's `verify()`, with the model calls it explicitly owns."""

    model_config = ConfigDict(extra="allow")

    invocation_id: str = Field(description="Identity of the verify execution.")
    model_calls: list[ModelCallRef] = Field(
        default_factory=list, description="Verifier ownership claims; such calls never become policy turns."
    )
    verifier_name: str | None = Field(default=None, description="Name of the verifier.")
    status: str | None = Field(default=None, description="Outcome reported by the verifier.")
    started_at: float | None = Field(default=None, description="Start, UTC Unix seconds.")
    completed_at: float | None = Field(default=None, description="End, UTC Unix seconds.")
    duration_ms: NonNegativeFloat | None = Field(default=None, description="Duration in milliseconds.")


class VerifierInvocations(RootModel[list[VerifierInvocation]]):
    """The verifier invocations of one rollout (`ng_verifier_invocations`)."""
