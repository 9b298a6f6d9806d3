"""From a raw captured exchange to NeMo Gym's `ModelCallRecord` and capture metrics (contract §5).

The generator writes each model call as the capture middleware sees it (request, response, timing,
headers) and derives the record's fields the way NeMo Gym's normalizer does, so that the record's
token counts always agree with the response's `usage` (§5.5).
"""

from __future__ import annotations

import json
from typing import Any


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _first(*values: Any) -> int | None:
    for value in values:
        if _count(value) is not None:
            return value
    return None


def token_fields(response: Any) -> dict[str, int | None]:
    """tokens_in/out/reasoning/total and cached/cache-creation tokens from a response's usage (§5.5)."""
    u = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(u, dict):
        return dict.fromkeys(("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens", "cache_creation_tokens"))
    tokens_in = _first(u.get("input_tokens"), u.get("prompt_tokens"))
    read, written = _count(u.get("cache_read_input_tokens")), _count(u.get("cache_creation_input_tokens"))
    if read is not None or written is not None:  # Anthropic-native usage: cache tokens count as input
        cache = (read or 0) + (written or 0)
        if tokens_in is not None or cache > 0:
            tokens_in = (tokens_in or 0) + cache
    tokens_out = _first(u.get("output_tokens"), u.get("completion_tokens"))
    total = _first(u.get("total_tokens"))
    if total is None and tokens_in is not None and tokens_out is not None:
        total = tokens_in + tokens_out
    details_out = u.get("output_tokens_details") or u.get("completion_tokens_details") or {}
    reasoning = _first(details_out.get("reasoning_tokens") if isinstance(details_out, dict) else None, u.get("reasoning_output_tokens"))
    details_in = u.get("prompt_tokens_details") or u.get("input_tokens_details") or {}
    cached = None
    if isinstance(details_in, dict):
        cached = _first(details_in.get("cached_tokens"), details_in.get("cached_input_tokens"))
    if cached is None:
        cached = _first(read, u.get("cached_input_tokens"))
    return {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_reasoning": reasoning,
        "tokens_total": total,
        "cached_tokens": cached,
        "cache_creation_tokens": written,
    }


def _arguments(value: Any) -> Any:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {"_raw": value}
    return {}


def _tool_calls_and_reasoning(response: Any) -> tuple[list[dict[str, Any]], str | None]:
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    if not isinstance(response, dict):
        return calls, None
    if isinstance(response.get("output"), list):
        for item in response["output"]:
            if item.get("type") == "function_call":
                calls.append({"call_id": item.get("call_id") or item.get("id"), "name": item["name"], "arguments": _arguments(item.get("arguments"))})
            elif item.get("type") == "reasoning":
                reasoning.extend(s["text"] for s in item.get("summary") or [] if isinstance(s.get("text"), str))
    elif isinstance(response.get("choices"), list):
        for choice in response["choices"]:
            message = choice.get("message") or {}
            for tc in message.get("tool_calls") or []:
                calls.append({"call_id": tc["id"], "name": tc["function"]["name"], "arguments": _arguments(tc["function"].get("arguments"))})
            text = message.get("reasoning_content") or message.get("reasoning")
            if isinstance(text, str) and text:
                reasoning.append(text)
    elif isinstance(response.get("content"), list):
        for block in response["content"]:
            if block.get("type") == "tool_use":
                calls.append({"call_id": block["id"], "name": block["name"], "arguments": block.get("input") or {}})
            elif block.get("type") in ("thinking", "redacted_thinking") and isinstance(block.get("thinking"), str):
                reasoning.append(block["thinking"])
    return calls, ("\n".join(reasoning) or None)


def _finish_reason(response: Any) -> str | None:
    if not isinstance(response, dict):
        return None
    if isinstance(response.get("stop_reason"), str):
        return response["stop_reason"]
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0].get("finish_reason"), str):
        return choices[0]["finish_reason"]
    details = response.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return details["reason"]
    return None


def record(exchange: dict[str, Any], call_index: int) -> dict[str, Any]:
    """The `ng_model_call_capture.calls[]` entry NeMo Gym writes for one exchange (§5.3)."""
    req, resp = exchange["request"], exchange["response"]
    tokens = token_fields(resp)
    tool_calls, reasoning = _tool_calls_and_reasoning(resp)
    response_id = resp.get("id") if isinstance(resp, dict) and isinstance(resp.get("id"), str) else None
    model = resp.get("model") if isinstance(resp, dict) and isinstance(resp.get("model"), str) else req.get("model")
    out: dict[str, Any] = {
        "model_call_id": exchange["model_call_id"],
        "response_id": response_id,
        "client_session_id": exchange.get("client_session_id"),
    }
    if "verifier_invocation_id" in exchange:
        out["verifier_invocation_id"] = exchange["verifier_invocation_id"]
    out.update(
        {
            "call_index": call_index,
            "model_ref": exchange["model_ref"],
            "model": model,
            "dialect": exchange["dialect"],
            "status_code": exchange["status_code"],
            "response_status": resp.get("status") if isinstance(resp, dict) and isinstance(resp.get("status"), str) else None,
            "finish_reason": _finish_reason(resp),
            "upstream_attempted": True,
            "response_source": "upstream",
            "upstream_status_code": exchange["status_code"],
            "local_response_reason": None,
            "started_at": exchange["started_at"],
            "completed_at": exchange["completed_at"],
            "tokens_in": tokens["tokens_in"],
            "tokens_out": tokens["tokens_out"],
            "tokens_reasoning": tokens["tokens_reasoning"],
            "tokens_total": tokens["tokens_total"],
            "request": req,
            "response": resp,
            "request_raw": None,
            "response_raw": None,
            "tool_calls": tool_calls,
            "reasoning_content": reasoning,
            "cache_hit": None if tokens["cached_tokens"] is None else tokens["cached_tokens"] > 0,
            "cached_tokens": tokens["cached_tokens"],
            "cache_creation_tokens": tokens["cache_creation_tokens"],
            "error_category": exchange.get("error_category"),
            "latency_total_ms": exchange["latency_ms"],
            "latency_ttft_ms": exchange.get("latency_ttft_ms"),
        }
    )
    return out


_METRIC_FIELDS = ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens", "latency_total_ms")


def metrics(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over the calls of the non-null values; null when no call had one (§5.2)."""
    out: dict[str, Any] = {}
    for name in _METRIC_FIELDS:
        values = [c[name] for c in calls if c.get(name) is not None]
        total = sum(values) if values else None
        out[name] = round(total, 2) if isinstance(total, float) else total
    out["num_calls"] = len(calls)
    return out
