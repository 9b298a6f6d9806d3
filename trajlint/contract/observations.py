"""What an agent harness reports about one rollout: `ng_agent_observations`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from trajlint.contract.common import (
    ModelCallRef,
    NonNegativeFloat,
    NonNegativeInt,
    ObservationGap,
    ObservationModel,
    duplicates,
)
from trajlint.contract.conversation import ConversationItem


class AgentInvocation(ObservationModel):
    """One root agent or subagent conversation observed by a harness."""

    kind: Literal["agent_invocation"] = Field(default="agent_invocation", description="Record kind.")
    invocation_id: str = Field(description="Unique within the bundle and within the trajectory.")
    parent_invocation_id: str | None = Field(
        default=None, description="Invocation that spawned this one; may name an invocation outside the bundle."
    )
    spawned_by_tool_call_id: str | None = Field(
        default=None, description="Tool call in the parent invocation that spawned this one."
    )
    status: Literal["completed", "failed", "incomplete", "unknown"] = Field(
        default="unknown", description="Outcome reported by the harness."
    )
    duration_ms: NonNegativeFloat | None = Field(default=None, description="Wall duration in milliseconds.")
    error_type: str | None = Field(default=None, description="Error class when the invocation failed.")
    model_calls: list[ModelCallRef] = Field(
        default_factory=list, description="Ownership claims: the model calls this invocation made."
    )
    conversation: list[ConversationItem] = Field(
        default_factory=list,
        description="Normalized model-visible history: Responses API input items, as NeMo Gym reads them.",
    )


class ToolCallObservation(ObservationModel):
    """Timing of one tool call, measured at a boundary the agent owns.

    Validated outside the schema: `completed_at >= started_at` when both are set.
    """

    kind: Literal["tool_call"] = Field(default="tool_call", description="Record kind.")
    invocation_id: str = Field(description="Invocation that issued the tool call.")
    tool_call_id: str = Field(description="Joins with `call_id` of the conversation's `function_call` item.")
    sandbox_id: str | None = Field(
        default=None, description="Enclosing sandbox; shared by concurrent calls, so not a per-call attribution."
    )
    tool_name: str | None = Field(default=None, description="Name of the tool.")
    started_at: float | None = Field(default=None, description="Start, UTC Unix seconds.")
    completed_at: float | None = Field(default=None, description="End, UTC Unix seconds.")
    duration_ms: NonNegativeFloat | None = Field(default=None, description="Duration in milliseconds.")
    timing_source: Literal["executor", "artifact", "harness"] | None = Field(
        default=None, description="Where the timing was measured."
    )
    status: Literal["completed", "failed", "timeout", "cancelled", "incomplete", "unknown"] = Field(
        default="unknown", description="Outcome of the tool call."
    )
    error_type: str | None = Field(default=None, description="Error class when the tool call failed.")

    @model_validator(mode="after")
    def _check_timing_order(self) -> ToolCallObservation:
        if self.started_at is not None and self.completed_at is not None and self.completed_at < self.started_at:
            raise ValueError(f"completed_at ({self.completed_at}) is before started_at ({self.started_at})")
        return self


class SandboxObservation(ObservationModel):
    """Resource usage and outcome of one sandbox used by the agent, the verifier or the environment."""

    kind: Literal["sandbox"] = Field(default="sandbox", description="Record kind.")
    role: Literal["agent", "verifier", "environment"] = Field(description="Who used the sandbox.")
    provider: str | None = Field(default=None, description="Sandbox provider.")
    sandbox_id: str | None = Field(default=None, description="Provider's sandbox id.")
    outcome: Literal["completed", "failed", "timeout", "oom", "sandbox_error", "cancelled", "unknown"] = Field(
        default="unknown", description="How the sandbox ended."
    )
    exit_code: int | None = Field(default=None, description="Exit code of the sandboxed process.")
    wall_time_s: NonNegativeFloat | None = Field(default=None, description="Wall time in seconds.")
    cpu_time_s: NonNegativeFloat | None = Field(default=None, description="Cumulative measured CPU time in seconds.")
    peak_memory_mib: NonNegativeFloat | None = Field(
        default=None, description="Measured memory high-water mark in MiB (never a configured limit)."
    )
    resource_usage_source: str | None = Field(default=None, description="Where the resource figures come from.")
    error_type: str | None = Field(default=None, description="Error class when the sandbox failed.")


class ContextCompactionObservation(ObservationModel):
    """One compaction of an invocation's context, with the helper calls that produced the summary."""

    kind: Literal["context_compaction"] = Field(default="context_compaction", description="Record kind.")
    invocation_id: str = Field(description="Invocation whose context was compacted.")
    observed_at: float | None = Field(default=None, description="When it was observed, UTC Unix seconds.")
    trigger: str | None = Field(default=None, description="What triggered it, e.g. `harbor_summarize`.")
    tokens_before: NonNegativeInt | None = Field(default=None, description="Context size before compaction.")
    tokens_after: NonNegativeInt | None = Field(
        default=None, description="Context size after; may exceed `tokens_before` (producer accounting differs)."
    )
    outcome: Literal["completed", "failed", "aborted", "unknown"] = Field(
        default="unknown", description="How the compaction ended."
    )
    summary: str | None = Field(default=None, description="Summary text that replaced the compacted history.")
    first_kept_item_id: str | None = Field(default=None, description="First conversation item kept verbatim.")
    before_model_call: ModelCallRef | None = Field(
        default=None, description="Last call of the invocation observed before the compaction."
    )
    model_calls: list[ModelCallRef] = Field(
        default_factory=list,
        description="Helper calls that produced the summary; owned by the invocation, never policy turns.",
    )
    after_model_call: ModelCallRef | None = Field(
        default=None, description="First call of the invocation after the compaction."
    )


AgentObservationRecord = Annotated[
    AgentInvocation | ToolCallObservation | ContextCompactionObservation | SandboxObservation,
    Field(discriminator="kind"),
]


def parent_cycle(invocations: list[AgentInvocation]) -> list[str] | None:
    """The first cycle in the parent graph (ids in parent order), or None; parents outside the list end a chain."""
    parents = {inv.invocation_id: inv.parent_invocation_id for inv in invocations}
    cleared: set[str] = set()
    for start in parents:
        chain: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in cleared:
            if node in chain:
                return chain[chain.index(node) :] + [node]
            chain.append(node)
            node = parents[node]
        cleared.update(chain)
    return None


class AgentObservationBundle(ObservationModel):
    """Everything one agent server reports for one rollout; `records` are unordered.

    Validated outside the schema: `invocation_id` unique among `agent_invocation` records, and the
    `parent_invocation_id` graph acyclic (a self-parent is a cycle; parents absent from the bundle are allowed).
    """

    source: str = Field(description="Producer name, e.g. `claude_code`, `hermes`, `simple_agent`.")
    records: list[AgentObservationRecord] = Field(
        default_factory=list, description="Observation records of any kind; list position implies nothing."
    )
    gaps: list[ObservationGap] = Field(default_factory=list, description="Facts the harness could not observe.")

    @model_validator(mode="after")
    def _check_invocation_graph(self) -> AgentObservationBundle:
        invocations = [record for record in self.records if isinstance(record, AgentInvocation)]
        repeated = duplicates(inv.invocation_id for inv in invocations)
        if repeated:
            raise ValueError(f"agent invocation ids are not unique: {', '.join(map(repr, repeated))}")
        cycle = parent_cycle(invocations)
        if cycle:
            raise ValueError(f"parent_invocation_id forms a cycle: {' -> '.join(cycle)}")
        return self
