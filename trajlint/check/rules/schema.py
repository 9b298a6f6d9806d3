"""TL1xx: each part of a row against its packaged JSON Schema.

One rule per section, so a team can, say, ignore verifier evidence it does not produce yet
without losing the checks on the trajectory. The row envelope is validated without its
sections, which keeps every schema error reported once, by the rule of the section it is in.
A count below its bound or written as a boolean, float or numeric string is left to the count
rules (TL3xx), which own it: they say what the value means and what NeMo Gym does with it. A
value NeMo Gym reads without loss but never writes is left to `noncanonical-value`, a warning.

The schemas say what NeMo Gym 0.7.0 writes. Where it reads the row envelope more leniently and
something is lost, `row-schema` says so as a warning rather than an error: a row without its
task and rollout indices (NeMo Gym before 0.7 wrote them so), a `resolved` that is not a
boolean, an explicit rollout id ending in the reserved attempt suffix on a row that was not an
environment-server episode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from trajlint.check.countfields import count_pointers, owned_by_count_rules
from trajlint.check.noncanonical import noncanonical, owned
from trajlint.check.rule import Violation, row_rule
from trajlint.check.schema_errors import describe, describe_item, escape, got, pointer, show
from trajlint.check.subject import Subject
from trajlint.contract import validate as validation
from trajlint.contract.validate import SchemaError
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


def _envelope_errors(envelope: dict[str, Any]) -> Iterator[SchemaError]:
    for error in validation.checker("rollout-row").errors(envelope):
        yield from _inside_model(error)


def _inside_model(error: SchemaError) -> list[SchemaError]:
    """An object failing the envelope's "model or null" choice (`agent_ref`) fails as a whole; the
    model's own errors say where. (The envelope's `$defs` references are all local to its file.)"""
    if error.keyword == "anyOf" and isinstance(error.instance, dict):
        refs = [
            branch["$ref"] for branch in error.expected
            if isinstance(branch, dict) and set(branch) == {"$ref"} and str(branch["$ref"]).startswith("#/$defs/")
        ]
        if len(refs) == 1:
            inner = list(validation.part_checker(f"rollout-row.schema.json{refs[0]}").errors(error.instance))
            if inner:
                return [found._replace(path=(*error.path, *found.path)) for found in inner]
    return [error]


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
            if ptr in owned(subject):
                continue  # noncanonical-value reports it: NeMo Gym reads it without loss
            if keyword in ("minimum", "exclusiveMinimum", "type") and owned_by_count_rules(
                count_pointers(subject), ptr, keyword, error.instance
            ):
                continue  # negative-count / non-integer-count report it, with its meaning
            yield Violation(ptr, message)
    for path, errors in items.items():
        item = resolve(value, pointer(path), None)
        yield Violation(pointer([key, *path]), f"{describe_item(item, errors)}; {_REJECTED[key]}")


_INDICES = ("_ng_task_index", "_ng_rollout_index")


_TASK_FALLBACK = "the row's position in the file as its task index, so its repeats are not grouped into one task"
_ROLLOUT_FALLBACK = "0 as its rollout index, so two repeats of one task look like one rollout recorded twice"


def _unindexed(row: dict[str, Any]) -> Violation | None:
    """One warning for a row without its task or rollout index, or both (not one error per key)."""
    task, rollout = (key not in row for key in _INDICES)
    if task and rollout:
        message = (
            "the row has neither `_ng_task_index` nor `_ng_rollout_index`, which NeMo Gym 0.7.0 writes on every"
            f" rollout (its releases before 0.7 did not always); its health check takes {_TASK_FALLBACK}"
        )
    elif task or rollout:
        key, fallback = ("_ng_task_index", _TASK_FALLBACK) if task else ("_ng_rollout_index", _ROLLOUT_FALLBACK)
        message = (
            f"the row has no `{key}`, which NeMo Gym 0.7.0 writes on every rollout;"
            f" its health check takes {fallback}"
        )
    else:
        return None
    return Violation("", message, severity="warning")


def _reserved_suffix(row: dict[str, Any], reserved: str) -> Violation:
    """`reserved` is the schema's pattern of the suffix NeMo Gym gives a retry's capture key."""
    value = row["_ng_rollout_id"]
    suffix = re.search(reserved, value)
    if suffix is None:  # the schema and this pattern disagree: say what the schema says
        return Violation("/_ng_rollout_id", f"`_ng_rollout_id` must not match /{reserved}/, got {show(value)}")
    what = f"`_ng_rollout_id` is {show(value)}, which ends in `{suffix.group()}`, the suffix NeMo Gym gives a retry"
    if "_ng_task_id" in row:
        return Violation(
            "/_ng_rollout_id",
            f"{what}; its episode id rejects such an id, so no environment server could have been sent this task",
        )
    return Violation(
        "/_ng_rollout_id",
        f"{what}: {show(value)} is also the capture key of retry {suffix.group()[2:]} of rollout"
        f" {show(value[: suffix.start()])}, so the two rollouts' captures can be mixed up",
        severity="warning",
    )


@row_rule("row-schema", reads=["row"])
def row_schema(subject: Subject) -> Iterator[Violation]:
    """The row envelope: identity and collector keys, with the sections left to their own rules."""
    row = subject.row
    # A null section stays in the envelope: the row schema says which may be null.
    envelope = {k: v for k, v in row.items() if k not in SECTION_EVIDENCE or v is None}
    seen: set[tuple[str, str]] = set()
    unindexed = _unindexed(row)
    if unindexed is not None:
        yield unindexed
    for error in _envelope_errors(envelope):
        if error.keyword == "required" and not error.path:  # the indices have their one warning above
            error = error._replace(expected=[key for key in error.expected if key not in _INDICES])
        for path, keyword, message in describe(error, "row"):
            ptr = pointer(path)
            if (ptr, message) in seen or ptr in owned(subject):
                continue
            seen.add((ptr, message))
            if ptr == "/resolved":
                yield Violation(
                    ptr,
                    f"`resolved` is {got(row['resolved'])}; NeMo Gym keeps the row but ignores the value,"
                    " since only true or false becomes the last turn's resolution",
                    severity="warning",
                )
            elif ptr == "/_ng_rollout_id" and keyword == "not":
                yield _reserved_suffix(row, error.expected["pattern"])
            else:
                yield Violation(ptr, message)


@row_rule("noncanonical-value", reads=["row"])
def noncanonical_value(subject: Subject) -> Iterator[Violation]:
    """Values NeMo Gym reads without loss but never writes (see `trajlint.check.noncanonical`)."""
    for found in noncanonical(subject):
        yield Violation(found.pointer, found.message)


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
