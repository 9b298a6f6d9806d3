"""Items in the exact shape NeMo Gym serializes them: every field present, nulls included.

A row written by an agent may leave optional keys out; the built trajectory always has them,
the way `TrajectoryRecord.model_dump(mode="json")` writes it.
"""

from __future__ import annotations

from typing import Any

from trajlint.builder.project import empty_metadata, empty_token_stats

_INVOCATION = (
    ("kind", "agent_invocation"),
    ("invocation_id", None),
    ("parent_invocation_id", None),
    ("spawned_by_tool_call_id", None),
    ("status", "unknown"),
    ("duration_ms", None),
    ("error_type", None),
)
_TOOL = (
    ("kind", "tool_call"),
    ("invocation_id", None),
    ("tool_call_id", None),
    ("sandbox_id", None),
    ("tool_name", None),
    ("started_at", None),
    ("completed_at", None),
    ("duration_ms", None),
    ("timing_source", None),
    ("status", "unknown"),
    ("error_type", None),
)
_TURN = (
    ("invocation_id", None),
    ("task_id", None),
    ("rollout_id", None),
    ("turn_no", None),
    ("timestamp", None),
    ("question", None),
    ("answer", None),
    ("reasoning_content", None),
    ("resolved", None),
    ("step_count", None),
)


def ref(value: dict[str, Any]) -> dict[str, Any]:
    return {
        "model_call_id": value.get("model_call_id"),
        "model_ref": value.get("model_ref"),
        "response_id": value.get("response_id"),
    }


def gap(value: dict[str, Any]) -> dict[str, Any]:
    return {"code": value.get("code"), "invocation_id": value.get("invocation_id"), "detail": value.get("detail")}


def invocation(value: dict[str, Any], conversation: list[Any] | None = None) -> dict[str, Any]:
    """`conversation`, when given, replaces the invocation's own (the build left items of it out)."""
    out = {key: value.get(key, default) for key, default in _INVOCATION}
    out["model_calls"] = [ref(r) for r in value.get("model_calls") or [] if isinstance(r, dict)]
    out["conversation"] = list(value.get("conversation") or [] if conversation is None else conversation)
    return out


def tool_call(value: dict[str, Any]) -> dict[str, Any]:
    out = {key: value.get(key, default) for key, default in _TOOL}
    out["output"] = value.get("output")
    return out


def turn(value: dict[str, Any]) -> dict[str, Any]:
    out = {key: value.get(key, default) for key, default in _TURN}
    out["model_calls"] = [ref(r) for r in value.get("model_calls") or [] if isinstance(r, dict)]
    return out


def model_call(value: dict[str, Any]) -> dict[str, Any]:
    metadata = empty_metadata()
    metadata.update(value.get("response_metadata") or {})
    tokens = empty_token_stats()
    tokens.update(value.get("token_stats") or {})
    return {
        "model_call_id": value.get("model_call_id"),
        "started_at": value.get("started_at"),
        "completed_at": value.get("completed_at"),
        "duration_ms": value.get("duration_ms"),
        "request": value.get("request"),
        "response": value.get("response"),
        "response_metadata": metadata,
        "token_stats": tokens,
    }
