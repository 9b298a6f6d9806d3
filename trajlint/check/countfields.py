"""Every count, duration and latency a row can hold, with the bound NeMo Gym puts on it.

The count rules (`negative-count`, `non-integer-count`) own these values: they say what the
value means and what NeMo Gym does with a bad one, which a schema error cannot. The schema rules
therefore leave a below-bound or non-integer value at one of these places to them
(`owned_by_count_rules`); a test checks this table covers every bound in the packaged schemas.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trajlint.check import walk
from trajlint.pointer import child


@dataclass(frozen=True, slots=True)
class Count:
    name: str
    integer: bool  # a count of things (tokens, turns, steps); else a duration or a measure
    minimum: int = 0

    @property
    def what(self) -> str:
        if self.name == "turn_no":
            return "a turn number"
        if self.name == "step_count":
            return "a step count"
        if self.name in ("call_index", "num_calls"):
            return "a call count or index"
        if self.integer:
            return "a token count"
        if self.name.endswith("_ms"):
            return "a duration"
        return "a resource measure"


def _fields(*names: str, integer: bool, minimum: int = 0) -> tuple[Count, ...]:
    return tuple(Count(name, integer, minimum) for name in names)


_TOKENS = _fields("tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens", integer=True)
CAPTURE_CALL = (
    *_fields("call_index", "cache_creation_tokens", integer=True),
    *_TOKENS,
    *_fields("latency_total_ms", "latency_ttft_ms", integer=False),
)
CAPTURE_METRICS = (*_TOKENS, *_fields("num_calls", integer=True), *_fields("latency_total_ms", integer=False))
DURATION = _fields("duration_ms", integer=False)
RECORD = {
    "agent_invocation": DURATION,
    "tool_call": DURATION,
    "sandbox": _fields("wall_time_s", "cpu_time_s", "peak_memory_mib", integer=False),
    "context_compaction": _fields("tokens_before", "tokens_after", integer=True),
}
TURN = (Count("turn_no", True, 1), Count("step_count", True))
TOKEN_STATS = _fields(
    "prompt_tokens", "completion_tokens", "reasoning_tokens", "total_tokens", "cached_tokens", integer=True
)
TTFT = _fields("latency_ttft_ms", integer=False)


def _present(base: str, item: dict[str, Any], fields: tuple[Count, ...]) -> Iterator[tuple[str, Any, Count]]:
    for field in fields:
        value = item.get(field.name)
        if value is not None:
            # Field names are plain identifiers: no pointer escaping needed (this runs per count).
            yield f"{base}/{field.name}", value, field


def count_fields(row: dict[str, Any]) -> Iterator[tuple[str, Any, Count]]:
    """(pointer, value, field) for every non-null count in the row, in row order."""
    for base, call in walk.capture_calls(row):
        yield from _present(base, call, CAPTURE_CALL)
    capture = walk.section(row, walk.CAPTURE)
    if capture is not None and isinstance(capture.get("metrics"), dict):
        yield from _present(child("", walk.CAPTURE, "metrics"), capture["metrics"], CAPTURE_METRICS)
    for base, record in walk.items(row, walk.OBSERVATIONS, "records"):
        kind = record.get("kind")
        yield from _present(base, record, RECORD.get(kind, ()) if isinstance(kind, str) else ())
    for base, invocation in walk.stated(row, "invocations"):
        yield from _present(base, invocation, DURATION)
    for base, turn in walk.stated(row, "turns"):
        yield from _present(base, turn, TURN)
    for base, call in walk.stated(row, "model_calls"):
        yield from _present(base, call, DURATION)
        for part, fields in (("response_metadata", TTFT), ("token_stats", TOKEN_STATS)):
            if isinstance(call.get(part), dict):
                yield from _present(child(base, part), call[part], fields)
    for base, tool in walk.stated(row, "tool_calls"):
        yield from _present(base, tool, DURATION)
    for base, verifier in walk.verifier_invocations(row):
        yield from _present(base, verifier, DURATION)


_NUMERIC_TEXT = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")


def is_negative(value: Any, field: Count) -> bool:
    return type(value) in (int, float) and value < field.minimum


def lax_kind(value: Any, field: Count) -> str | None:
    """What a count is instead of a JSON integer, when it is something NeMo Gym's lax validation
    would coerce (a boolean, a float, a numeric string); None when it is an integer or garbage."""
    if not field.integer:
        return None
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value):
        return "a numeric string"
    return None


def owned_by_count_rules(pointers: dict[str, Count], ptr: str, keyword: str, value: Any) -> bool:
    """Whether a schema error at `ptr` is a defect the count rules report (so the schema rule
    does not report it again)."""
    field = pointers.get(ptr)
    if field is None:
        return False
    if keyword in ("minimum", "exclusiveMinimum"):
        return is_negative(value, field)
    return keyword == "type" and lax_kind(value, field) is not None
