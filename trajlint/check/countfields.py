"""Every count, duration and latency a row can hold, with the bound NeMo Gym puts on it.

The count rules (`negative-count`, `non-integer-count`) own these values: they say what the
value means and what NeMo Gym does with a bad one, which a schema error cannot. The schema rules
therefore leave a below-bound or non-integer value at one of these places to them
(`owned_by_count_rules`); a test checks this table covers every bound in the packaged schemas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from trajlint.check.subject import Subject
from trajlint.pointer import child
from trajlint.row import walk


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


_METRICS = child("", walk.CAPTURE, "metrics")


def _present(out: list[tuple[str, Any, Count]], base: str, item: dict[str, Any], fields: tuple[Count, ...]) -> None:
    for field in fields:
        value = item.get(field.name)
        if value is not None:
            # Field names are plain identifiers: no pointer escaping needed (this runs per count).
            out.append((f"{base}/{field.name}", value, field))


def count_fields(where: walk.Where) -> list[tuple[str, Any, Count]]:
    """(pointer, value, field) for every non-null count in the row (or a subject's), in row order."""
    row = where.row if isinstance(where, Subject) else where
    out: list[tuple[str, Any, Count]] = []
    for base, call in walk.capture_calls(where):
        _present(out, base, call, CAPTURE_CALL)
    capture = walk.section(row, walk.CAPTURE)
    if capture is not None and isinstance(capture.get("metrics"), dict):
        _present(out, _METRICS, capture["metrics"], CAPTURE_METRICS)
    for base, record in walk.items(where, walk.OBSERVATIONS, "records"):
        kind = record.get("kind")
        _present(out, base, record, RECORD.get(kind, ()) if isinstance(kind, str) else ())
    for base, invocation in walk.stated(where, "invocations"):
        _present(out, base, invocation, DURATION)
    for base, turn in walk.stated(where, "turns"):
        _present(out, base, turn, TURN)
    for base, call in walk.stated(where, "model_calls"):
        _present(out, base, call, DURATION)
        for part, fields in (("response_metadata", TTFT), ("token_stats", TOKEN_STATS)):
            if isinstance(call.get(part), dict):
                _present(out, f"{base}/{part}", call[part], fields)
    for base, tool in walk.stated(where, "tool_calls"):
        _present(out, base, tool, DURATION)
    for base, verifier in walk.verifier_invocations(where):
        _present(out, base, verifier, DURATION)
    return out



def row_counts(subject: Subject) -> list[tuple[str, Any, Count]]:
    """`count_fields` of the subject's row, walked once per row for every rule that reads counts."""
    return subject.memo("count-fields", _count_fields_of)


def _count_fields_of(subject: Subject) -> list[tuple[str, Any, Count]]:
    return count_fields(subject)


class Defects(NamedTuple):
    """The row's counts the count rules report: below their bound, and not JSON integers.

    A non-integer count NeMo Gym's lax validation reads without loss (`"12"` or `12.0` in the
    observations or the trajectory) is not one: `noncanonical-value` reports it as a warning.
    """

    negative: list[tuple[str, Any, Count]]
    lax: list[tuple[str, Any, Count, str]]  # ..., and what the value is instead (`lax_kind`)


def count_defects(subject: Subject) -> Defects:
    """Both count rules' findings in one pass over the row's counts (almost every count is fine)."""
    return subject.memo("count-defects", _count_defects_of)


def _count_defects_of(subject: Subject) -> Defects:
    defects = Defects([], [])
    for ptr, value, field in row_counts(subject):
        if type(value) is int:  # the usual count: at most below its bound, never lax
            if value < field.minimum:
                defects.negative.append((ptr, value, field))
            continue
        if is_negative(value, field):
            defects.negative.append((ptr, value, field))
        kind = lax_kind(value, field)
        if kind is not None and ptr not in _coerced(subject):
            defects.lax.append((ptr, value, field, kind))
    return defects


def _coerced(subject: Subject) -> frozenset[str]:
    return subject.memo("coerced-pointers", lambda s: frozenset(c.pointer for c in s.build.evidence.coerced))


def count_pointers(subject: Subject) -> dict[str, Count]:
    """The row's count fields by pointer, for the schema rules (see `owned_by_count_rules`)."""
    return subject.memo("count-pointers", _count_pointers_of)


def _count_pointers_of(subject: Subject) -> dict[str, Count]:
    return {ptr: field for ptr, _, field in row_counts(subject)}


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
