"""TL3xx: counts, token sums and time order, wherever they stand in a row.

A persisted row repeats numbers: the trajectory's model calls project the captured calls, and
its tool calls merge the observed ones. A number that is the same in both places is one piece
of evidence, reported once where it was first written (the capture, the observation) with the
copy cited; a copy that differs from its source is reported on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint.check.countfields import Count, count_defects
from trajlint.check.rule import Violation, row_rule
from trajlint.check.schema_errors import show
from trajlint.check.subject import Subject
from trajlint.pointer import child
from trajlint.row import walk
from trajlint.row.values import hashable, nonnegative_int


@row_rule("negative-count", reads=["row"])
def negative_count(subject: Subject) -> Iterator[Violation]:
    for ptr, value, field in count_defects(subject).negative:
        rule = f"turn numbers start at {field.minimum}" if field.minimum else f"{field.what} is never negative"
        yield Violation(ptr, f"`{field.name}` is {show(value)}; {rule} ({_consequence(ptr, field)})")


def _consequence(ptr: str, field: Count) -> str:
    """What NeMo Gym does with a value below its bound, which depends on where it stands."""
    if ptr.startswith("/ng_model_call_capture/calls/") and not field.integer:
        return "NeMo Gym's trajectory projection fails on it, and the row loses its trajectory"
    if ptr.startswith("/ng_model_call_capture/"):
        return "NeMo Gym reads it as unknown, so it drops out of every usage sum"
    if ptr.startswith("/ng_agent_observations/"):
        return "NeMo Gym rejects the record, and with it the whole observation bundle"
    if ptr.startswith("/ng_trajectory/"):
        return "NeMo Gym rejects the trajectory record"
    return "the verifier run's timing cannot be used"


# The captured counts NeMo Gym's trajectory projection reads, each only when it is a JSON integer.
_PROJECTED = frozenset({"tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens"})


def _unusable(ptr: str, field: Count) -> str:
    """What NeMo Gym does with a count that is not a JSON integer and that it cannot coerce."""
    if ptr.startswith("/ng_model_call_capture/calls/") and field.name in _PROJECTED:
        return "NeMo Gym's trajectory projection reads anything else as unknown, so the call's count is lost"
    if ptr.startswith("/ng_model_call_capture/"):
        return "NeMo Gym's capture writes an integer here"
    if ptr.startswith("/ng_agent_observations/"):
        return "NeMo Gym's validation rejects this one, and with it the whole observation bundle"
    return "NeMo Gym's validation rejects this one, and with it the trajectory record"


@row_rule("non-integer-count", reads=["row"])
def non_integer_count(subject: Subject) -> Iterator[Violation]:
    for ptr, value, field, kind in count_defects(subject).lax:
        yield Violation(
            ptr, f"`{field.name}` is {kind}, {show(value)}; {field.what} must be a JSON integer ({_unusable(ptr, field)})"
        )


def _short_total(item: dict[str, Any], names: tuple[str, str, str]) -> tuple[int, int, int] | None:
    """(input, output, total) when all three are usable counts and the total is short."""
    name_in, name_out, name_total = names
    tokens_in, tokens_out, total = nonnegative_int(item.get(name_in)), nonnegative_int(item.get(name_out)), nonnegative_int(item.get(name_total))
    if tokens_in is None or tokens_out is None or total is None or total >= tokens_in + tokens_out:
        return None
    return tokens_in, tokens_out, total


_CAPTURE_NAMES = ("tokens_in", "tokens_out", "tokens_total")
_STATS_NAMES = ("prompt_tokens", "completion_tokens", "total_tokens")


def _total_message(names: tuple[str, str, str], values: tuple[int, int, int]) -> str:
    (a, b, c), (x, y, z) = names, values
    return (
        f"`{c}` is {z}, below `{a}` + `{b}` = {x + y}; a total never counts fewer tokens than "
        "its parts, so one of the three is wrong (usage sums and token-mismatch health checks "
        "disagree with each other)"
    )


@row_rule("token-total-inconsistent", reads=["row", "model-calls"])
def token_total_inconsistent(subject: Subject) -> Iterator[Violation]:
    row = subject.row
    captured: dict[str, tuple[int, int, int]] = {}
    short_calls = 0
    for base, call in walk.capture_calls(subject):
        values = _short_total(call, _CAPTURE_NAMES)
        call_id = walk.text(call.get("model_call_id"))
        if values is None:
            continue
        short_calls += 1
        if call_id:
            captured.setdefault(call_id, values)
        copies = [
            child(p, "token_stats", "total_tokens")
            for p, c in walk.stated(subject, "model_calls")
            if call_id and c.get("model_call_id") == call_id
            and isinstance(c.get("token_stats"), dict)
            and _short_total(c["token_stats"], _STATS_NAMES) == values
        ]
        yield Violation(
            child(base, "tokens_total"),
            _total_message(_CAPTURE_NAMES, values),
            tuple(subject.location(p) for p in copies),
        )
    capture = walk.section(row, walk.CAPTURE)
    metrics = capture.get("metrics") if capture else None
    if isinstance(metrics, dict) and not short_calls:
        values = _short_total(metrics, _CAPTURE_NAMES)
        if values is not None:
            yield Violation(child("", walk.CAPTURE, "metrics", "tokens_total"), _total_message(_CAPTURE_NAMES, values))
    for base, call in walk.stated(subject, "model_calls"):
        stats = call.get("token_stats")
        values = _short_total(stats, _STATS_NAMES) if isinstance(stats, dict) else None
        if values is None:
            continue
        call_id = walk.text(call.get("model_call_id"))
        if call_id and captured.get(call_id) == values:
            continue  # the projection of a captured call already reported
        yield Violation(child(base, "token_stats", "total_tokens"), _total_message(_STATS_NAMES, values))


def _reversed(item: dict[str, Any]) -> tuple[float, float] | None:
    started, completed = item.get("started_at"), item.get("completed_at")
    if walk.number(completed) is None or walk.number(started) is None or completed >= started:
        return None
    return started, completed


def _time_message(what: str, bounds: tuple[float, float], consequence: str) -> str:
    started, completed = bounds
    return (
        f"{what} completed at {show(completed)}, {started - completed:.3f} s before it started "
        f"({show(started)}); {consequence}"
    )


def _tool_key(tool: dict[str, Any]) -> tuple[Any, Any]:
    return hashable(tool.get("invocation_id")), hashable(tool.get("tool_call_id"))


_MODEL_CALL = "durations and timelines built from it are negative (wall clocks are for correlation only, so this is a warning)"
_TOOL_CALL = "NeMo Gym's tool-call validator rejects the record, and with it the whole observation bundle"


@row_rule("time-reversed", reads=["row"])
def time_reversed(subject: Subject) -> Iterator[Violation]:
    captured: dict[str, tuple[float, float]] = {}
    for base, call in walk.capture_calls(subject):
        bounds = _reversed(call)
        if bounds is None:
            continue
        call_id = walk.text(call.get("model_call_id"))
        copies = [
            p for p, c in walk.stated(subject, "model_calls")
            if call_id and c.get("model_call_id") == call_id and _reversed(c) == bounds
        ]
        if call_id:
            captured.setdefault(call_id, bounds)
        yield Violation(
            child(base, "completed_at"),
            _time_message("the captured model call", bounds, _MODEL_CALL),
            tuple(subject.location(child(p, "completed_at")) for p in copies),
            severity="warning",
        )
    for base, call in walk.stated(subject, "model_calls"):
        bounds = _reversed(call)
        call_id = walk.text(call.get("model_call_id"))
        if bounds is None or (call_id and captured.get(call_id) == bounds):
            continue
        yield Violation(child(base, "completed_at"), _time_message("the model call", bounds, _MODEL_CALL), severity="warning")
    observed: dict[tuple[Any, Any], tuple[float, float]] = {}
    for base, tool in walk.records(subject, "tool_call"):
        bounds = _reversed(tool)
        if bounds is None:
            continue
        key = _tool_key(tool)
        observed.setdefault(key, bounds)
        copies = [
            p for p, t in walk.stated(subject, "tool_calls")
            if _tool_key(t) == key and _reversed(t) == bounds
        ]
        yield Violation(
            child(base, "completed_at"),
            _time_message(f"tool call {show(tool.get('tool_call_id'))}", bounds, _TOOL_CALL),
            tuple(subject.location(child(p, "completed_at")) for p in copies),
        )
    for base, tool in walk.stated(subject, "tool_calls"):
        bounds = _reversed(tool)
        if bounds is None or observed.get(_tool_key(tool)) == bounds:
            continue
        yield Violation(
            child(base, "completed_at"),
            _time_message(f"tool call {show(tool.get('tool_call_id'))}", bounds, "NeMo Gym's trajectory validator rejects the record"),
        )
    for base, verifier in walk.verifier_invocations(subject):
        bounds = _reversed(verifier)
        if bounds is not None:
            yield Violation(
                child(base, "completed_at"),
                _time_message(f"verifier invocation {show(verifier.get('invocation_id'))}", bounds, _MODEL_CALL),
                severity="warning",
            )
