"""TL1xx: each part of a row against its packaged JSON Schema.

One rule per section, so a team can, say, ignore verifier evidence it does not produce yet
without losing the checks on the trajectory. The row envelope is validated without its
sections, which keeps every schema error reported once, by the rule of the section it is in.
A count below its bound or written as a boolean, float or numeric string is left to the count
rules (TL3xx), which own it: they say what the value means and what NeMo Gym does with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from trajlint.check.countfields import count_pointers, owned_by_count_rules
from trajlint.check.rule import Violation, row_rule
from trajlint.check.schema_errors import describe, describe_item, escape, pointer, show
from trajlint.check.subject import Subject
from trajlint.contract import validate as validation
from trajlint.pointer import resolve
from trajlint.row.sections import OBSERVATIONS, SECTION_EVIDENCE, STATED

# The sections whose records hold conversations: the list of records in each.
_CONVERSATION_HOLDERS = {OBSERVATIONS: "records", STATED: "invocations"}
# What NeMo Gym 0.7.0 does with a section that holds an item it rejects.
_REJECTED = {
    OBSERVATIONS: (
        "NeMo Gym 0.7.0 rejects the item, and with it the whole observation bundle"
        " (its collector drops the bundle with the gap `agent_observations_invalid`)"
    ),
    STATED: (
        "NeMo Gym 0.7.0 rejects the item, and with it the whole trajectory (`record_unreadable` in its"
        " health check; its collector drops the trajectory with the gap `producer_trajectory_invalid`)"
    ),
}


def _conversation_item(key: str, path: tuple[str | int, ...]) -> int:
    """How long the part of `path` is that names a conversation item (`records/0/conversation/3`); 0 if none."""
    holder = _CONVERSATION_HOLDERS.get(key)
    inside = (
        holder is not None
        and len(path) >= 4
        and path[0] == holder
        and isinstance(path[1], int)
        and path[2] == "conversation"
        and isinstance(path[3], int)
    )
    return 4 if inside else 0


def _section_errors(subject: Subject, key: str, schema: str) -> Iterator[Violation]:
    value = subject.row[key]
    if isinstance(value, str):
        try:
            encoded = isinstance(orjson.loads(value), (dict, list))
        except orjson.JSONDecodeError:
            encoded = False
        message = (
            f"`{key}` holds a JSON-encoded string; it must be the object itself (the writer serialized it twice)"
            if encoded
            else f"`{key}` must be {'an array' if key == 'ng_verifier_invocations' else 'an object'}, got a string {show(value)}"
        )
        yield Violation("/" + escape(key), message)
        return
    seen: set[tuple[str, str]] = set()
    items: dict[tuple[str | int, ...], list[tuple[list[str | int], Any]]] = {}
    for error in validation.checker(schema).errors(value):
        at = _conversation_item(key, error.path)
        if at:
            items.setdefault(error.path[:at], []).append((list(error.path[at:]), error))
            continue
        for path, keyword, message in describe(error, key):
            ptr = pointer([key, *path])
            if (ptr, message) in seen:
                continue  # a backend may report one missing field per error, the other all at once
            seen.add((ptr, message))
            if keyword in ("minimum", "exclusiveMinimum", "type") and owned_by_count_rules(
                count_pointers(subject), ptr, keyword, error.instance
            ):
                continue  # negative-count / non-integer-count report it, with its meaning
            yield Violation(ptr, message)
    for path, errors in items.items():
        item = resolve(value, pointer(path), None)
        yield Violation(pointer([key, *path]), f"{describe_item(item, errors)}; {_REJECTED[key]}")


@row_rule("row-schema", reads=["row"])
def row_schema(subject: Subject) -> Iterator[Violation]:
    """The row envelope: identity and collector keys, with the sections left to their own rules."""
    # A null section stays in the envelope: the row schema says to leave the key out instead.
    envelope = {k: v for k, v in subject.row.items() if k not in SECTION_EVIDENCE or v is None}
    seen: set[tuple[str, str]] = set()
    for error in validation.checker("rollout-row").errors(envelope):
        for path, _keyword, message in describe(error, "row"):
            if (pointer(path), message) not in seen:
                seen.add((pointer(path), message))
                yield Violation(pointer(path), message)


@row_rule("capture-schema", reads=["row", "capture"])
def capture_schema(subject: Subject) -> Iterator[Violation]:
    yield from _section_errors(subject, "ng_model_call_capture", "model-call-capture")


@row_rule("observations-schema", reads=["row", "observations"])
def observations_schema(subject: Subject) -> Iterator[Violation]:
    yield from _section_errors(subject, "ng_agent_observations", "agent-observations")


@row_rule("trajectory-schema", reads=["row", "trajectory"])
def trajectory_schema(subject: Subject) -> Iterator[Violation]:
    yield from _section_errors(subject, "ng_trajectory", "trajectory")


@row_rule("verifier-schema", reads=["row", "verifiers"])
def verifier_schema(subject: Subject) -> Iterator[Violation]:
    yield from _section_errors(subject, "ng_verifier_invocations", "verifier-invocations")
