"""Read a row's evidence sections into items the build can trust.

NeMo Gym validates a section as a whole and drops all of it for one bad record. trajlint keeps
what validates: a section that passes its schema is taken whole (the fast path for clean data);
otherwise each item is checked on its own, the valid ones are kept and the others are listed as
excluded, with their pointers, for the rules to see. An invocation that is invalid only because
of items of its conversation is kept without them (its ownership claims stay in the build); the
items are the ones excluded. The observations and the stated trajectory are read as NeMo Gym's
lax validation reads them first (`contract.lax`): a count written `"12"` or `12.0` is the count
12 to the build, as it is to NeMo Gym.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from trajlint.contract import lax
from trajlint.contract import validate as validation
from trajlint.pointer import child
from trajlint.row.sections import CAPTURE, OBSERVATIONS, STATED, VERIFIERS

_GAP = "common.schema.json#/$defs/ObservationGap"
_PARTS = {
    "invocations": "trajectory.schema.json#/$defs/AgentInvocation",
    "turns": "trajectory.schema.json#/$defs/TrajectoryTurn",
    "model_calls": "trajectory.schema.json#/$defs/TrajectoryModelCall",
    "tool_calls": "trajectory.schema.json#/$defs/TrajectoryToolCall",
    "gaps": _GAP,
}
_RECORD = "agent-observations.schema.json#/properties/records/items"
_CONVERSATION_ITEM = "conversation-item.schema.json"


class Item(NamedTuple):
    # A named tuple, not a frozen dataclass: a row holds dozens of items and a frozen
    # dataclass costs twice as much to make.
    pointer: str
    data: dict[str, Any]


@dataclass(slots=True)
class Evidence:
    """The usable parts of one row, each item with the pointer where it stands."""

    stated: bool = False  # the row carries an `ng_trajectory` object: its turns take precedence
    stated_section: dict[str, Any] | None = None  # ... as NeMo Gym reads it (`lax.normalized`)
    stated_valid: bool = False  # ... and NeMo Gym would accept it whole
    stated_ids: tuple[Any, Any] = (None, None)  # its task_id and rollout_id as written
    stated_parts: dict[str, list[Item]] = field(default_factory=dict)
    observations: bool = False
    observations_valid: bool = False
    records: list[Item] = field(default_factory=list)
    record_claims: list[Item] = field(default_factory=list)  # every dict record, valid or not
    observation_gaps: list[Item] = field(default_factory=list)
    capture_calls: list[Item] = field(default_factory=list)  # every dict call (projection is defensive)
    capture_gaps: list[Item] = field(default_factory=list)
    invalid_capture_gaps: int = 0
    verifiers: list[Item] = field(default_factory=list)  # every dict verifier invocation
    excluded: list[str] = field(default_factory=list)  # pointers of items left out of the build
    coerced: list[lax.Coerced] = field(default_factory=list)  # values read only by NeMo Gym's coercion
    # The conversation kept of an invocation some of whose conversation items are excluded, by the
    # `id` of the invocation's dict (the item keeps the dict its section holds: claims are told apart by it).
    conversations: dict[int, list[Any]] = field(default_factory=dict)

    def conversation(self, item: Item) -> list[Any] | None:
        """The conversation the build uses for an invocation item; None: the item's own."""
        return self.conversations.get(id(item.data)) if self.conversations else None


def _valid(ref: str, value: Any) -> bool:
    return validation.part_checker(ref).is_valid(value)


def _without_bad_conversation(ptr: str, value: dict[str, Any], valid: Any, excluded: list[str]) -> list[Any] | None:
    """The conversation of `value` without the items NeMo Gym rejects, if only they make `value` invalid."""
    conversation = value.get("conversation")
    if not isinstance(conversation, list):
        return None
    item_valid = validation.part_checker(_CONVERSATION_ITEM).is_valid
    bad = [index for index, item in enumerate(conversation) if not item_valid(item)]
    if not bad:
        return None
    dropped = set(bad)
    kept = [item for index, item in enumerate(conversation) if index not in dropped]
    if not valid({**value, "conversation": kept}):
        return None
    excluded.extend(f"{ptr}/conversation/{index}" for index in bad)
    return kept


def _items(
    base: str,
    values: Any,
    ref: str | None,
    whole_valid: bool,
    excluded: list[str],
    conversations: dict[int, list[Any]] | None = None,
) -> list[Item]:
    """The valid dict items of a list; with `conversations`, also invocations valid once bad conversation items go."""
    if not isinstance(values, list):
        return []
    valid = None if whole_valid or ref is None else validation.part_checker(ref).is_valid
    kept = []
    for index, value in enumerate(values):
        ptr = f"{base}/{index}"  # bases are constant pointers; an index needs no escaping
        if isinstance(value, dict) and (valid is None or valid(value)):
            kept.append(Item(ptr, value))
        elif conversations is not None and isinstance(value, dict):
            conversation = _without_bad_conversation(ptr, value, valid, excluded)
            if conversation is None:
                excluded.append(ptr)
            else:
                conversations[id(value)] = conversation
                kept.append(Item(ptr, value))
        else:
            excluded.append(ptr)
    return kept


def _duplicates(values: list[Any]) -> bool:
    counts = Counter(v for v in values if v)
    return any(n > 1 for n in counts.values())


def _record_invariants_hold(stated: dict[str, Any]) -> bool:
    """NeMo Gym's TrajectoryRecord validators, which JSON Schema cannot express."""
    invocations = [i.get("invocation_id") for i in stated.get("invocations", []) if isinstance(i, dict)]
    calls = [c.get("model_call_id") for c in stated.get("model_calls", []) if isinstance(c, dict)]
    turns = [t for t in stated.get("turns", []) if isinstance(t, dict)]
    if len(set(invocations)) != len(invocations) or _duplicates(calls):
        return False
    keys = [(t.get("invocation_id"), t.get("turn_no")) for t in turns]
    if len(set(keys)) != len(keys):
        return False
    identity = (stated.get("task_id"), stated.get("rollout_id"))
    return all((t.get("task_id"), t.get("rollout_id")) == identity for t in turns)


def _bundle_invariants_hold(records: list[Item]) -> bool:
    """Unique invocation ids and an acyclic parent graph, as NeMo Gym's bundle requires."""
    parents: dict[Any, Any] = {}
    for item in records:
        if item.data.get("kind") == "agent_invocation":
            key = item.data.get("invocation_id")
            if key in parents:
                return False
            parents[key] = item.data.get("parent_invocation_id")
    # Each invocation is walked through once: an earlier walk that passed it found its way up
    # ends at a root. (Walking every start to its root is quadratic on a long chain.)
    cleared: set[Any] = set()
    for start in parents:
        seen, node = set(), start
        while node in parents and node is not None and node not in cleared:
            if node in seen:
                return False
            seen.add(node)
            node = parents[node]
        cleared |= seen
    return True


_STATED_BASES = {part: child("", STATED, part) for part in _PARTS}
_RECORDS = child("", OBSERVATIONS, "records")
_OBSERVATION_GAPS = child("", OBSERVATIONS, "gaps")
_CAPTURE_CALLS = child("", CAPTURE, "calls")
_CAPTURE_GAPS = child("", CAPTURE, "gaps")
_VERIFIERS = child("", VERIFIERS)


def read(row: dict[str, Any]) -> Evidence:
    ev = Evidence()
    excluded = ev.excluded

    stated = row.get(STATED)
    if isinstance(stated, dict):
        stated, coerced = lax.normalized(STATED, stated)
        ev.coerced += coerced
        ev.stated = True
        ev.stated_section = stated
        whole = validation.checker("trajectory").is_valid(stated)
        ev.stated_valid = whole and _record_invariants_hold(stated)
        ev.stated_ids = (stated.get("task_id"), stated.get("rollout_id"))
        for part, ref in _PARTS.items():
            conversations = ev.conversations if part == "invocations" else None
            ev.stated_parts[part] = _items(_STATED_BASES[part], stated.get(part), ref, whole, excluded, conversations)

    bundle = row.get(OBSERVATIONS)
    if isinstance(bundle, dict):
        bundle, coerced = lax.normalized(OBSERVATIONS, bundle)
        ev.coerced += coerced
        ev.observations = True
        whole = validation.checker("agent-observations").is_valid(bundle)
        records = bundle.get("records")
        if isinstance(records, list):
            ev.record_claims = [Item(f"{_RECORDS}/{i}", r) for i, r in enumerate(records) if isinstance(r, dict)]
            if whole and len(ev.record_claims) == len(records):
                ev.records = ev.record_claims  # what `_items` would keep: every record, none excluded
            else:
                ev.records = _items(_RECORDS, records, _RECORD, whole, excluded, ev.conversations)
        ev.observations_valid = whole and _bundle_invariants_hold(ev.records)
        ev.observation_gaps = _items(_OBSERVATION_GAPS, bundle.get("gaps"), _GAP, whole, excluded)

    capture = row.get(CAPTURE)
    if isinstance(capture, dict):
        ev.capture_calls = _items(_CAPTURE_CALLS, capture.get("calls"), None, True, excluded)
        gaps = capture.get("gaps")
        if isinstance(gaps, list):
            for index, gap in enumerate(gaps):
                if isinstance(gap, dict) and _valid(_GAP, gap):
                    ev.capture_gaps.append(Item(f"{_CAPTURE_GAPS}/{index}", gap))
                elif isinstance(gap, dict):
                    # NeMo Gym keeps a trace of it as `model_call_capture_gap_invalid`.
                    ev.invalid_capture_gaps += 1
                    excluded.append(f"{_CAPTURE_GAPS}/{index}")

    verifiers = row.get(VERIFIERS)
    if isinstance(verifiers, list):
        ev.verifiers = [Item(f"{_VERIFIERS}/{i}", v) for i, v in enumerate(verifiers) if isinstance(v, dict)]
    return ev
