"""The typed data contract of a NeMo Gym rollout row (pydantic v2, lax like NeMo Gym itself).

The JSON Schemas in `schemas/` are generated from these models by `trajlint.contract.generate`; checks
JSON Schema cannot express (uniqueness, identity, cycles, timing order) live only here, as model
validators, and are listed in each model's docstring.

The package also holds what is generated from the models or validates against them: `generate`
(models -> `schemas/*.json`), `schemas` (the packaged, offline registry), `validate` (the schema
backends), `report` (trajlint's own report document) and `data` (where schemas/ and rules/ live).
Its face is lazy, so that a validator or the schema registry loads without pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from trajlint.contract.row import AgentRef, RolloutRow, TaskId
    from trajlint.contract.trajectory import (
        TrajectoryModelCall,
        TrajectoryRecord,
        TrajectoryResponseMetadata,
        TrajectoryTokenStats,
        TrajectoryToolCall,
        TrajectoryTurn,
    )
    from trajlint.contract.verifier import VerifierInvocation, VerifierInvocations

_MODULE_OF = {
    "AgentInvocation": "observations",
    "AgentObservationBundle": "observations",
    "AgentObservationRecord": "observations",
    "AgentRef": "row",
    "CaptureMetrics": "capture",
    "ContextCompactionObservation": "observations",
    "ModelCallCapture": "capture",
    "ModelCallRecord": "capture",
    "ModelCallRef": "common",
    "ModelServerRef": "common",
    "ObservationGap": "common",
    "ObservationModel": "common",
    "RolloutRow": "row",
    "SandboxObservation": "observations",
    "TaskId": "row",
    "ToolCallObservation": "observations",
    "TrajectoryModelCall": "trajectory",
    "TrajectoryRecord": "trajectory",
    "TrajectoryResponseMetadata": "trajectory",
    "TrajectoryTokenStats": "trajectory",
    "TrajectoryToolCall": "trajectory",
    "TrajectoryTurn": "trajectory",
    "VerifierInvocation": "verifier",
    "VerifierInvocations": "verifier",
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"trajlint.contract.{module}"), name)
