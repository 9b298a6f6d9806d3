"""Project captured calls (`ng_model_call_capture.calls[]`) into trajectory model calls.

Projection reads each field through a type guard, so one malformed value becomes null (and is
reported by the rules that read the capture) instead of failing the call or the whole build.
"""

from __future__ import annotations

from typing import Any

from trajlint.row.values import nonnegative_int

METADATA_KEYS = (
    "response_id",
    "model_ref",
    "model",
    "dialect",
    "status_code",
    "response_status",
    "finish_reason",
    "upstream_attempted",
    "response_source",
    "upstream_status_code",
    "local_response_reason",
    "error_category",
    "latency_ttft_ms",
)
TOKEN_SOURCES = (
    ("prompt_tokens", "tokens_in"),
    ("completion_tokens", "tokens_out"),
    ("reasoning_tokens", "tokens_reasoning"),
    ("total_tokens", "tokens_total"),
    ("cached_tokens", "cached_tokens"),
)
CALL_KEYS = ("model_call_id", "started_at", "completed_at", "duration_ms", "request", "response")



def _number(value: Any, *, nonnegative: bool = False) -> float | int | None:
    if type(value) in (int, float) and (not nonnegative or value >= 0):
        return value
    return None


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _model_ref(value: Any) -> dict[str, str] | None:
    if isinstance(value, dict) and value.get("type") == "responses_api_models" and isinstance(value.get("name"), str):
        return {"type": value["type"], "name": value["name"]}
    return None


def _response_source(value: Any) -> str | None:
    return value if value in ("upstream", "local") else None


def empty_metadata() -> dict[str, Any]:
    return dict.fromkeys(METADATA_KEYS)


def empty_token_stats() -> dict[str, Any]:
    return {name: None for name, _ in TOKEN_SOURCES}


def project_call(call: dict[str, Any]) -> dict[str, Any]:
    """The `TrajectoryModelCall` a captured call projects to (all keys present, nulls included)."""
    # Spelled out, key by key in METADATA_KEYS order, rather than a loop over a table of guards:
    # this runs for every captured call of every row.
    get = call.get
    request = get("request")
    response = get("response")
    response_status = get("response_status")
    if not isinstance(response_status, str):
        response_status = response.get("status") if isinstance(response, dict) else None
        if not isinstance(response_status, str):
            response_status = None
    metadata = {
        "response_id": _string(get("response_id")),
        "model_ref": _model_ref(get("model_ref")),
        "model": _string(get("model")),
        "dialect": _string(get("dialect")),
        "status_code": _int(get("status_code")),
        "response_status": response_status,
        "finish_reason": _string(get("finish_reason")),
        "upstream_attempted": _bool(get("upstream_attempted")),
        "response_source": _response_source(get("response_source")),
        "upstream_status_code": _int(get("upstream_status_code")),
        "local_response_reason": _string(get("local_response_reason")),
        "error_category": _string(get("error_category")),
        "latency_ttft_ms": _number(get("latency_ttft_ms"), nonnegative=True),
    }
    return {
        "model_call_id": _string(get("model_call_id")),
        "started_at": _number(get("started_at")),
        "completed_at": _number(get("completed_at")),
        "duration_ms": _number(get("latency_total_ms"), nonnegative=True),
        "request": request if request is not None else get("request_raw"),
        "response": response if response is not None else get("response_raw"),
        "response_metadata": metadata,
        "token_stats": {name: nonnegative_int(get(source)) for name, source in TOKEN_SOURCES},
    }


def merge_into(stated: dict[str, Any], projected: dict[str, Any]) -> dict[str, Any]:
    """Capture wins where it has data; the stated call keeps what the capture lacks.

    A persisted row's capture has its payloads stripped; they survive here from the stated
    trajectory, which is what makes rebuilding a persisted row reproduce it.
    """
    merged = dict(stated)
    for part in ("response_metadata", "token_stats"):
        base = dict(stated.get(part) or {})
        base.update({k: v for k, v in projected[part].items() if v is not None})
        merged[part] = base
    for key in CALL_KEYS:
        if projected[key] is not None:
            merged[key] = projected[key]
    return merged
