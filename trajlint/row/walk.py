"""Where things stand in a row: the items of each section, with their JSON pointers.

Rules read the row as written (a finding must point at the value a user can open and fix), and
a row may be malformed anywhere, so every walk here skips what is not the expected shape instead
of failing; the schema rules report the shape.

Each walk takes a row, or a subject whose row it walks: a subject's walks are made once per row
(`Subject.memo`) for all the rules that take the same one, so their lists are shared and must
not be changed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

from trajlint.pointer import child
from trajlint.row.sections import CAPTURE, OBSERVATIONS, STATED, VERIFIERS


class Subject(Protocol):
    """A row that keeps what is derived from it (the check stage's subject): its walks are shared."""

    @property
    def row(self) -> dict[str, Any]: ...

    def memo(self, key: str, compute: Callable[[Any], Any]) -> Any: ...


Items = list[tuple[str, dict[str, Any]]]
Where = Subject | dict[str, Any]  # a subject (walks shared per row) or a bare row


def items(where: Where, *path: str) -> Items:
    """(pointer, item) for each object in the list at `path` (a section key, then keys).

    A list, not a generator: most callers read every item, and a list is made faster than a
    generator is resumed once per item.
    """
    if not isinstance(where, dict):
        key, walk_row = _walker(path)
        return where.memo(key, walk_row)
    return _items(where, path)


def _items(row: dict[str, Any], path: tuple[str, ...]) -> Items:
    node: Any = row
    for key in path:
        if not isinstance(node, dict):
            return []
        node = node.get(key)
    if not isinstance(node, list):
        return []
    base = _base(path)
    return [(f"{base}/{index}", item) for index, item in enumerate(node) if isinstance(item, dict)]


@cache
def _base(path: tuple[str, ...]) -> str:
    """The pointer of a list the walks visit; the few paths there are are escaped once."""
    return child("", *path)


@cache
def _walker(path: tuple[str, ...]) -> tuple[str, Callable[[Subject], Items]]:
    """The memo key and the walk of one path, made once per path (not once per call)."""
    return "walk:" + _base(path), lambda subject: _items(subject.row, path)


def section(row: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = row.get(key)
    return value if isinstance(value, dict) else None


def records(where: Where, kind: str) -> Items:
    """The observation records of one kind (`agent_invocation`, `tool_call`, ...)."""
    if not isinstance(where, dict):
        key, select = _selector(kind)
        return where.memo(key, select)
    return _records(where, kind)


@cache
def _selector(kind: str) -> tuple[str, Callable[[Subject], Items]]:
    """The memo key and the selection of one kind of record, made once per kind."""
    return f"records:{kind}", lambda subject: _records(subject, kind)


def _records(where: Where, kind: str) -> Items:
    return [(p, r) for p, r in items(where, OBSERVATIONS, "records") if r.get("kind") == kind]


def capture_calls(where: Where) -> Items:
    return items(where, CAPTURE, "calls")


def stated(where: Where, part: str) -> Items:
    """Items of the stated trajectory: `invocations`, `turns`, `model_calls`, `tool_calls`, `gaps`."""
    return items(where, STATED, part)


def verifier_invocations(where: Where) -> Items:
    return items(where, VERIFIERS)


def invocations(where: Where) -> Items:
    """Agent invocations wherever they stand: observed records first, then the stated ones.

    A persisted row holds most invocations twice (NeMo Gym copies the joined bundle into the
    trajectory); callers that count or compare must treat a repeat of one id as one invocation.
    """
    return records(where, "agent_invocation") + stated(where, "invocations")



def gaps(where: Where) -> Items:
    """Every gap the row carries, in the order NeMo Gym produces them: the agent's bundle, the
    capture, then the trajectory (which repeats most of the others)."""
    if not isinstance(where, dict):
        return where.memo("walk:gaps", _subject_gaps)  # one walk of the three lists per row
    return _gaps(where)


def _gaps(row: dict[str, Any]) -> Items:
    return _items(row, _BUNDLE_GAPS) + _items(row, _CAPTURE_GAPS) + _items(row, _STATED_GAPS)


def _subject_gaps(subject: Subject) -> Items:
    return _gaps(subject.row)


_BUNDLE_GAPS, _CAPTURE_GAPS, _STATED_GAPS = (OBSERVATIONS, "gaps"), (CAPTURE, "gaps"), (STATED, "gaps")


def text(value: Any) -> str | None:
    """A usable id: a non-empty string (NeMo Gym treats "" as absent)."""
    return value if isinstance(value, str) and value else None


def number(value: Any) -> float | int | None:
    """A JSON number that is not a boolean."""
    return value if type(value) in (int, float) else None
