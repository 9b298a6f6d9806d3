"""Where things stand in a row: the items of each section, with their JSON pointers.

Rules read the row as written (a finding must point at the value a user can open and fix), and
a row may be malformed anywhere, so every walk here skips what is not the expected shape instead
of failing; the schema rules report the shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from trajlint.pointer import child

CAPTURE = "ng_model_call_capture"
OBSERVATIONS = "ng_agent_observations"
STATED = "ng_trajectory"
VERIFIERS = "ng_verifier_invocations"


def items(row: dict[str, Any], *path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(pointer, item) for each object in the list at `path` (a section key, then keys)."""
    node: Any = row
    for key in path:
        if not isinstance(node, dict):
            return
        node = node.get(key)
    if not isinstance(node, list):
        return
    base = _base(path)
    for index, item in enumerate(node):
        if isinstance(item, dict):
            yield f"{base}/{index}", item  # an index needs no escaping


@cache
def _base(path: tuple[str, ...]) -> str:
    """The pointer of a list the walks visit; the few paths there are are escaped once."""
    return child("", *path)


def section(row: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = row.get(key)
    return value if isinstance(value, dict) else None


def records(row: dict[str, Any], kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The observation records of one kind (`agent_invocation`, `tool_call`, ...)."""
    return ((p, r) for p, r in items(row, OBSERVATIONS, "records") if r.get("kind") == kind)


def capture_calls(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    return items(row, CAPTURE, "calls")


def stated(row: dict[str, Any], part: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Items of the stated trajectory: `invocations`, `turns`, `model_calls`, `tool_calls`, `gaps`."""
    return items(row, STATED, part)


def verifier_invocations(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    return items(row, VERIFIERS)


def invocations(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Agent invocations wherever they stand: observed records first, then the stated ones.

    A persisted row holds most invocations twice (NeMo Gym copies the joined bundle into the
    trajectory); callers that count or compare must treat a repeat of one id as one invocation.
    """
    yield from records(row, "agent_invocation")
    yield from stated(row, "invocations")


def tool_calls(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Tool calls wherever they stand: observed `tool_call` records, then the stated ones."""
    yield from records(row, "tool_call")
    yield from stated(row, "tool_calls")


def gaps(row: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every gap the row carries, in the order NeMo Gym produces them: the agent's bundle, the
    capture, then the trajectory (which repeats most of the others)."""
    yield from items(row, OBSERVATIONS, "gaps")
    yield from items(row, CAPTURE, "gaps")
    yield from stated(row, "gaps")


def text(value: Any) -> str | None:
    """A usable id: a non-empty string (NeMo Gym treats "" as absent)."""
    return value if isinstance(value, str) and value else None


def number(value: Any) -> float | int | None:
    """A JSON number that is not a boolean."""
    return value if type(value) in (int, float) else None
