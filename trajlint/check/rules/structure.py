"""TL4xx: the structure of one row — unique ids, the invocation tree, references to invocations.

Uniqueness is judged within one list (the capture's calls, the bundle's records, the
trajectory's invocations ...): the same id in the bundle and in the trajectory is the same
thing written twice by NeMo Gym's collector, not a duplicate.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import Any

from trajlint.check.rule import Violation, row_rule
from trajlint.check.rules._cite import places
from trajlint.check.subject import Subject
from trajlint.pointer import child, resolve
from trajlint.row import walk


def _repeats(keyed: Iterable[tuple[str, Hashable]], field: str) -> Iterator[tuple[str, Hashable, list[str]]]:
    """(pointer, key, every pointer of that key) for each occurrence after a key's first.

    `keyed` holds (item pointer, key); the pointers reported are those of the items' `field`,
    made only for the keys that repeat (almost none do).
    """
    seen: dict[Hashable, list[str]] = {}
    for base, key in keyed:
        seen.setdefault(key, []).append(base)
    for key, bases in seen.items():
        if len(bases) > 1:
            pointers = [child(base, field) for base in bases]
            for ptr in pointers[1:]:
                yield ptr, key, pointers


def _ids(found: Iterable[tuple[str, dict[str, Any]]], field: str) -> Iterator[tuple[str, str]]:
    """(item pointer, id) for each item whose `field` is a usable id."""
    for base, item in found:
        value = walk.text(item.get(field))
        if value is not None:
            yield base, value


@row_rule("duplicate-model-call-id", reads=["row", "model-calls"])
def duplicate_model_call_id(subject: Subject) -> Iterator[Violation]:
    lists = (
        ("captured calls", "NeMo Gym's projection fails on it and the row loses its whole trajectory",
         walk.capture_calls(subject)),
        ("trajectory model calls", "NeMo Gym rejects the trajectory record",
         walk.stated(subject, "model_calls")),
    )
    for where, consequence, found in lists:
        for ptr, call_id, pointers in _repeats(_ids(found, "model_call_id"), "model_call_id"):
            yield Violation(
                ptr,
                f"model_call_id {call_id!r} is used by {len(pointers)} {where}; a capture id names "
                f"one call, so references to it are ambiguous and {consequence}",
                places(subject, pointers, leave_out=ptr),
            )


@row_rule("duplicate-invocation-id", reads=["row"])
def duplicate_invocation_id(subject: Subject) -> Iterator[Violation]:
    lists = (
        ("agent_invocation records of the observation bundle", walk.records(subject, "agent_invocation")),
        ("invocations of the trajectory", walk.stated(subject, "invocations")),
        ("verifier invocations", walk.verifier_invocations(subject)),
    )
    for where, found in lists:
        for ptr, invocation_id, pointers in _repeats(_ids(found, "invocation_id"), "invocation_id"):
            yield Violation(
                ptr,
                f"invocation_id {invocation_id!r} is used by {len(pointers)} {where}; claims, turns "
                "and tool calls naming it cannot tell the invocations apart (NeMo Gym rejects the "
                "bundle or trajectory that holds them)",
                places(subject, pointers, leave_out=ptr),
            )


@row_rule("duplicate-turn-number", reads=["row", "trajectory"])
def duplicate_turn_number(subject: Subject) -> Iterator[Violation]:
    keyed = (
        (base, (turn.get("invocation_id"), turn.get("turn_no")))
        for base, turn in walk.stated(subject, "turns")
        if isinstance(turn.get("invocation_id"), str) and type(turn.get("turn_no")) is int
    )
    for ptr, (invocation_id, turn_no), pointers in _repeats(keyed, "turn_no"):
        yield Violation(
            ptr,
            f"invocation {invocation_id!r} has {len(pointers)} turns numbered {turn_no}; a turn "
            "number identifies one turn of its invocation (NeMo Gym rejects the trajectory record)",
            places(subject, pointers, leave_out=ptr),
        )


@row_rule("duplicate-tool-call", reads=["row"])
def duplicate_tool_call(subject: Subject) -> Iterator[Violation]:
    lists = (
        ("tool_call records of the observation bundle", walk.records(subject, "tool_call")),
        ("tool calls of the trajectory", walk.stated(subject, "tool_calls")),
    )
    for where, found in lists:
        keyed = (
            (base, (tool.get("invocation_id"), tool.get("tool_call_id")))
            for base, tool in found
            if isinstance(tool.get("invocation_id"), str) and isinstance(tool.get("tool_call_id"), str)
        )
        for ptr, (invocation_id, tool_call_id), pointers in _repeats(keyed, "tool_call_id"):
            yield Violation(
                ptr,
                f"tool call {tool_call_id!r} of invocation {invocation_id!r} appears {len(pointers)} "
                f"times among the {where}; NeMo Gym merges tool evidence by this key, so one "
                "record's timing and output silently replace the other's",
                places(subject, pointers, leave_out=ptr),
            )


def _parents(subject: Subject) -> dict[str, list[tuple[str, str]]]:
    """invocation id -> [(parent id, pointer of parent_invocation_id)], every place it stands."""
    return subject.memo("invocation-parents", _parents_of)


def _parents_of(subject: Subject) -> dict[str, list[tuple[str, str]]]:
    parents: dict[str, list[tuple[str, str]]] = {}
    for base, invocation in walk.invocations(subject):
        invocation_id = invocation.get("invocation_id")
        parent = invocation.get("parent_invocation_id")
        if isinstance(invocation_id, str) and isinstance(parent, str):
            parents.setdefault(invocation_id, []).append((parent, child(base, "parent_invocation_id")))
    return parents


def _known_invocations(subject: Subject) -> set[str]:
    """The ids of the row's invocations (shared by the rules that look names up in them)."""
    return subject.memo("known-invocations", _known_invocations_of)


def _known_invocations_of(subject: Subject) -> set[str]:
    return {i["invocation_id"] for _, i in walk.invocations(subject) if isinstance(i.get("invocation_id"), str)}


@row_rule("parent-cycle", reads=["row"])
def parent_cycle(subject: Subject) -> Iterator[Violation]:
    parents = _parents(subject)
    # Each invocation is walked through once: a walk stops at an invocation an earlier walk
    # passed, whose way up is known to end at a root, a missing parent or a reported cycle.
    # (Walking every start to its end is cubic on a long chain.)
    done: set[str] = set()
    for start in parents:
        path: dict[str, int] = {}  # invocation -> its place in this walk
        node = start
        while node in parents and node not in path and node not in done:
            path[node] = len(path)
            node = parents[node][0][0]
        done.update(path)
        if node not in path:
            continue
        cycle = list(path)[path[node]:]
        pointers = [ptr for member in cycle for _, ptr in parents[member]]
        loop = " → ".join(repr(m) for m in [*cycle, cycle[0]])
        yield Violation(
            pointers[0],
            f"invocation parents form a cycle: {loop}; a subagent tree has a root, so no "
            "invocation can be its own ancestor (NeMo Gym rejects the observation bundle)",
            places(subject, pointers, leave_out=pointers[0]),
        )


def _explained_orphans(subject: Subject) -> tuple[bool, set[str]]:
    """(the whole tree is said to be incomplete, the invocations said to lack their parent): the
    gaps NeMo Gym's agents write beside a subagent whose parent they could not observe."""
    whole, named = False, set()
    for _, gap in walk.gaps(subject):
        code, invocation_id = gap.get("code"), gap.get("invocation_id")
        if code == "subagent_hierarchy_incomplete" or (code == "subagent_parent_unavailable" and invocation_id is None):
            whole = True
        elif code == "subagent_parent_unavailable" and isinstance(invocation_id, str):
            named.add(invocation_id)
    return whole, named


@row_rule("dangling-parent", reads=["row"])
def dangling_parent(subject: Subject) -> Iterator[Violation]:
    known = _known_invocations(subject)
    whole, named = _explained_orphans(subject)
    if whole:
        return
    for invocation_id, claims in _parents(subject).items():
        missing = [(parent, ptr) for parent, ptr in claims if parent not in known]
        if not missing or invocation_id in named:
            continue
        parent, ptr = missing[0]
        yield Violation(
            ptr,
            f"invocation {invocation_id!r} names parent {parent!r}, which is not among the row's "
            "invocations; the subagent cannot be attached to its tree (NeMo Gym allows partial "
            "trees, usually with a subagent_* gap saying why)",
            places(subject, (p for _, p in missing), leave_out=ptr),
        )


def _named_invocations(subject: Subject) -> Iterator[tuple[str, str, str]]:
    """(pointer of the item, its invocation_id, what it is) for tool calls, compactions and turns."""
    named = (
        ("a tool call record", walk.records(subject, "tool_call")),
        ("a compaction record", walk.records(subject, "context_compaction")),
        ("a trajectory tool call", walk.stated(subject, "tool_calls")),
        ("a stated turn", walk.stated(subject, "turns")),
    )
    for what, found in named:
        for ptr, invocation_id in _ids(found, "invocation_id"):
            yield ptr, invocation_id, what


@row_rule("unknown-invocation", reads=["row"])
def unknown_invocation(subject: Subject) -> Iterator[Violation]:
    if _invocations_damaged(subject):
        return  # a name may be that of a record the schema rules report: the one cause is theirs
    known = _known_invocations(subject)
    unknown: dict[str, list[tuple[str, str]]] = {}
    for ptr, invocation_id, what in _named_invocations(subject):
        if invocation_id not in known:
            unknown.setdefault(invocation_id, []).append((child(ptr, "invocation_id"), what))
    if not unknown:
        return
    names = sorted(known)
    held = ", ".join(repr(n) for n in names[:4]) + (", …" if len(names) > 4 else "") if names else "none"
    for invocation_id, uses in unknown.items():
        ptr, what = uses[0]
        who = f"{what} names" if len(uses) == 1 else f"{len(uses)} records ({what} first) name"
        yield Violation(
            ptr,
            f"{who} invocation {invocation_id!r}, which the row does not hold (it holds: "
            f"{held}); such tool calls, compactions and turns cannot be attributed to an agent",
            places(subject, (p for p, _ in uses), leave_out=ptr),
        )


_NOT_INVOCATIONS = frozenset({"tool_call", "context_compaction", "sandbox"})


def _invocations_damaged(subject: Subject) -> bool:
    """Whether the build left out an invocation, or a record that may have been one (its kind is
    missing or unknown), because it breaks its schema."""
    for pointer in subject.build.evidence.excluded:
        if pointer.startswith("/ng_trajectory/invocations/"):
            return True
        if pointer.startswith("/ng_agent_observations/records/"):
            record = resolve(subject.row, pointer, None)
            kind = record.get("kind") if isinstance(record, dict) else None
            if not isinstance(kind, str) or kind not in _NOT_INVOCATIONS:  # a kind may be any JSON value
                return True
    return False
