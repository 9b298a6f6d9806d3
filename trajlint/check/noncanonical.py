"""Values NeMo Gym 0.7.0 reads without loss but never writes: what `noncanonical-value` reports.

The schemas say what NeMo Gym writes, so they reject these values, and NeMo Gym still reads
them: a count written `"12"` or `12.0` that its validation coerces, a negative or boolean task
index that its health check takes as it is, a null trajectory it reads as absent. Such a value is
a warning (the writer should write the canonical form) rather than an error, so the schema rules
leave each one listed here to that rule (`owned`), as they leave bad counts to the count rules.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from trajlint.check.schema_errors import got, show
from trajlint.check.subject import Subject
from trajlint.contract.lax import BOOLEAN, INTEGER
from trajlint.pointer import child
from trajlint.row.sections import STATED

_WRITES = {INTEGER: "a JSON integer", BOOLEAN: "a JSON boolean"}


class Noncanonical(NamedTuple):
    pointer: str
    message: str


def noncanonical(subject: Subject) -> list[Noncanonical]:
    """The row's values NeMo Gym reads but never writes, in row order (made once per row)."""
    return subject.memo("noncanonical", _noncanonical)


def owned(subject: Subject) -> frozenset[str]:
    """The pointers of those values: a schema error there is reported by `noncanonical-value`."""
    return subject.memo("noncanonical-pointers", lambda s: frozenset(found.pointer for found in noncanonical(s)))


def _index(key: str, value: Any) -> str | None:
    """Why a task or rollout index NeMo Gym's health check accepts is still not one it writes."""
    whose = "tasks" if key == "_ng_task_index" else "repeats"
    if isinstance(value, bool):
        return f"NeMo Gym's health check reads it as {int(value)}, but NeMo Gym numbers {whose} with integers"
    if isinstance(value, float) and value.is_integer():
        return f"NeMo Gym's health check reads it as {int(value)}, but NeMo Gym numbers {whose} with integers"
    if type(value) is int and value < 0:
        return f"NeMo Gym accepts it as it is, but numbers {whose} from 0"
    if isinstance(value, str) and key == "_ng_rollout_index":
        return "NeMo Gym's health check accepts a string, but NeMo Gym numbers repeats with integers from 0"
    return None  # canonical, or a value NeMo Gym cannot read (the row schema reports it)


def _noncanonical(subject: Subject) -> list[Noncanonical]:
    row = subject.row
    out = []
    for key in ("_ng_task_index", "_ng_rollout_index"):
        why = _index(key, row[key]) if key in row else None
        if why is not None:
            out.append(Noncanonical(child("", key), f"`{key}` is {got(row[key])}; {why}"))
    for key in (STATED, "ng_perf"):
        if key in row and row[key] is None:
            out.append(Noncanonical(child("", key), f"`{key}` is null; NeMo Gym reads it as absent, but never writes null there (leave the key out)"))
    for value in subject.build.evidence.coerced:
        writes = _WRITES.get(value.kind, "a JSON number")
        out.append(Noncanonical(
            value.pointer,
            f"`{value.name}` is {got(value.value)}; NeMo Gym's validation reads it as {show(value.read_as)},"
            f" but NeMo Gym writes {writes} here",
        ))
    return out
