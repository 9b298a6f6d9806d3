"""The typed data contract of a NeMo Gym rollout row (pydantic v2, lax like NeMo Gym itself).

The JSON Schemas in `schemas/` are generated from these models by `trajlint.schemagen`; checks
JSON Schema cannot express (uniqueness, identity, cycles, timing order) live only here, as model
validators, and are listed in each model's docstring.
"""

from trajlint.contract.capture import CaptureMetrics, ModelCallCapture, ModelCallRecord
from trajlint.contract.common import ModelCallRef, ModelServerRef, ObservationGap, ObservationModel
from trajlint.contract.observations import (
    AgentInvocation,
    AgentObservationBundle,
    AgentObservationRecord,
    ContextCompactionObservation,
    SandboxObservation,
    ToolCallObservation,
)
from trajlint.contract.row import AgentRef, RolloutRow
from trajlint.contract.trajectory import (
    TrajectoryModelCall,
    TrajectoryRecord,
    TrajectoryResponseMetadata,
    TrajectoryTokenStats,
    TrajectoryToolCall,
    TrajectoryTurn,
)
from trajlint.contract.verifier import VerifierInvocation, VerifierInvocations

__all__ = [
    "AgentInvocation",
    "AgentObservationBundle",
    "AgentObservationRecord",
    "AgentRef",
    "CaptureMetrics",
    "ContextCompactionObservation",
    "ModelCallCapture",
    "ModelCallRecord",
    "ModelCallRef",
    "ModelServerRef",
    "ObservationGap",
    "ObservationModel",
    "RolloutRow",
    "SandboxObservation",
    "ToolCallObservation",
    "TrajectoryModelCall",
    "TrajectoryRecord",
    "TrajectoryResponseMetadata",
    "TrajectoryTokenStats",
    "TrajectoryToolCall",
    "TrajectoryTurn",
    "VerifierInvocation",
    "VerifierInvocations",
]
