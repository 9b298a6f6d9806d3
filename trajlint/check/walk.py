"""Where things stand in a row: the items of each section, with their JSON pointers.

Rules read the row as written (a finding must point at the value a user can open and fix), and
a row may be malformed anywhere, so every walk here skips what is not the expected shape instead
of failing; the schema rules report the shape.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from trajlint.check.spec import Subject
from trajlint.pointer import child

CAPTURE = "ng_model_call_capture"
OBSERVATIONS = "ng_agent_observations"
STATED = "ng_trajectory"
VERIFIERS = "ng_verifier_invocations"


Items = list[tuple[str, dict[str, Any]]]


def items(row: dict[str, Any], *path: str) -> Items:
    """(pointer, item) for each object in the list at `path` (a section key, then keys).

    A list, not a generator: most callers read every item, and a list is made faster than a
    generator is resumed once per item.
    """
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


def section(row: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = row.get(key)
    return value if isinstance(value, dict) else None


def records(row: dict[str, Any], kind: str) -> Items:
    """The observation records of one kind (`agent_invocation`, `tool_call`, ...)."""
    return [(p, r) for p, r in items(row, OBSERVATIONS, "records") if r.get("kind") == kind]


def capture_calls(row: dict[str, Any]) -> Items:
    return items(row, CAPTURE, "calls")


def stated(row: dict[str, Any], part: str) -> Items:
    """Items of the stated trajectory: `invocations`, `turns`, `model_calls`, `tool_calls`, `gaps`."""
    return items(row, STATED, part)


def verifier_invocations(row: dict[str, Any]) -> Items:
    return items(row, VERIFIERS)


def invocations(row: dict[str, Any]) -> Items:
    """Agent invocations wherever they stand: observed records first, then the stated ones.

    A persisted row holds most invocations twice (NeMo Gym copies the joined bundle into the
    trajectory); callers that count or compare must treat a repeat of one id as one invocation.
    """
    return records(row, "agent_invocation") + stated(row, "invocations")


def row_invocations(subject: Subject) -> Items:
    """`invocations` of a subject's row, walked once per row for every rule that looks them up."""
    return subject.memo("invocations", _invocations_of)


def _invocations_of(subject: Subject) -> Items:
    return invocations(subject.row)


def tool_calls(row: dict[str, Any]) -> Items:
    """Tool calls wherever they stand: observed `tool_call` records, then the stated ones."""
    return records(row, "tool_call") + stated(row, "tool_calls")


def gaps(row: dict[str, Any]) -> Items:
    """Every gap the row carries, in the order NeMo Gym produces them: the agent's bundle, the
    capture, then the trajectory (which repeats most of the others)."""
    return items(row, OBSERVATIONS, "gaps") + items(row, CAPTURE, "gaps") + stated(row, "gaps")


def text(value: Any) -> str | None:
    """A usable id: a non-empty string (NeMo Gym treats "" as absent)."""
    return value if isinstance(value, str) and value else None


def number(value: Any) -> float | int | None:
    """A JSON number that is not a boolean."""
    return value if type(value) in (int, float) else None
