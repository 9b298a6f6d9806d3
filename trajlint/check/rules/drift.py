"""TL5xx: the stated trajectory against the evidence it was built from.

`trajectory-drift` compares the stated turns with the turns the ledger supports
(`build.expected_turns`); a stated turn on a compaction helper or a verifier-owned call is left
to `compaction-call-as-turn` / `verifier-call-as-turn`, a reference that matches no call to
`unmatched-reference`, and a turn that went to one of two claimants to `ownership-conflict`.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from trajlint.builder.dialects import turn_content
from trajlint.builder.ledger import AGENT_KINDS, OUTCOME_TURN, TURN, CallEntry, Claim, call_label
from trajlint.check import catalog
from trajlint.check.catalog import GapCode
from trajlint.check.claims import first_claims, owner_text
from trajlint.check.rule import Violation, row_rule
from trajlint.check.rules._cite import cite, places
from trajlint.check.schema_errors import show
from trajlint.check.subject import Subject
from trajlint.pointer import child
from trajlint.row import walk
from trajlint.row.sections import STATED
from trajlint.row.values import hashable

_STATED_TURNS = child("", STATED, "turns")
CONTENT = "info"  # drift in what one turn says; drift in which turns exist keeps the rule's severity


def _turn_index(claim: Claim) -> int:
    return int(claim.pointer.split("/")[3])  # /ng_trajectory/turns/<t>/model_calls/<j>


def _turn_name(turn: dict[str, Any]) -> str:
    invocation = turn.get("invocation_id")
    # show(), not repr(), for an id of the wrong type: an array may nest too deep for repr
    owner = owner_text(invocation) if invocation is None or isinstance(invocation, str) else show(invocation)
    return f"stated turn {owner}#{show(turn.get('turn_no'))}"


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {} or value == ""


class _View:
    """The stated turns and the ledger, cross-indexed once per row."""

    def __init__(self, subject: Subject):
        build = subject.build
        self.calls = build.ledger.calls
        turn_calls = [e.index for e in self.calls if e.outcome == OUTCOME_TURN]
        self.expected = dict(zip(turn_calls, build.expected_turns))
        self.model_calls = build.trajectory["model_calls"]
        self.refs: dict[int, list[CallEntry]] = {}  # stated turn index -> calls its refs name
        self.turns_of: dict[int, list[Claim]] = {}  # call index -> stated-turn claims on it
        self.turn_claim: dict[tuple[int, int], Claim] = {}  # (call, stated turn) -> its first claim
        # Computed once per call, not once per turn: thousands of turns may name one call, and
        # each of these looks at every claim on it.
        self.other_rules = {e.index for e in self.calls if e.is_helper or e.is_verifier_owned}
        self._owners: dict[int, dict[str, None]] = {}
        for entry in self.calls:
            for claim in entry.claims_of(TURN):
                turn = _turn_index(claim)
                self.refs.setdefault(turn, []).append(entry)
                self.turns_of.setdefault(entry.index, []).append(claim)
                self.turn_claim.setdefault((entry.index, turn), claim)
        self.unresolved_turns = {
            _turn_index(u.claim) for u in build.ledger.unresolved if u.claim.kind == TURN
        }

    def agent_owners(self, entry: CallEntry) -> dict[str, None]:
        """The call's agent owners in claim order (a dict: thousands of turns may ask about one)."""
        owners = self._owners.get(entry.index)
        if owners is None:
            owners = self._owners[entry.index] = dict.fromkeys(entry.agent_owners(valid_only=False))
        return owners

    def tool_calls(self, entry: CallEntry) -> int:
        # The count depends on the response alone; the request's question is not needed.
        return turn_content(None, self.model_calls[entry.index]["response"]).tool_calls

    def dialect(self, entry: CallEntry) -> Any:
        return self.model_calls[entry.index]["response_metadata"].get("dialect")


def _missing_turns(subject: Subject, view: _View) -> Iterator[Violation]:
    for index, turn in view.expected.items():
        if index in view.turns_of:
            continue
        entry = view.calls[index]
        owner = turn["invocation_id"]
        claim = first_claims(entry.claims, AGENT_KINDS).get(owner)
        yield Violation(
            entry.locations[0],
            f"{call_label(entry)} belongs to agent invocation {owner_text(owner)}"
            f"{f' ({claim.pointer})' if claim else ''} and returned a response, so it is a policy "
            "turn, but no stated turn references it",
            cite(subject, entry, leave_out=entry.locations[0]),
        )


def _content(subject: Subject, view: _View, base: str, turn: dict[str, Any], entry: CallEntry) -> Iterator[Violation]:
    expected = view.expected[entry.index]
    hollow = [f for f in ("answer", "reasoning_content") if _empty(turn.get(f)) and not _empty(expected[f])]
    if hollow:
        why = (
            " (NeMo Gym 0.7.0 reads no Anthropic Messages response, so its turns on them are hollow)"
            if view.dialect(entry) == "messages"
            else ""
        )
        yield Violation(
            child(base, hollow[0]) if hollow[0] in turn else base,  # a producer may leave it out
            f"{_turn_name(turn)} has no {' and no '.join(hollow)}, but the response of {call_label(entry)} "
            f"holds {'both' if len(hollow) > 1 else 'one'}{why}",
            cite(subject, entry, leave_out=""),
            severity=CONTENT,
        )
    steps = turn.get("step_count")
    if type(steps) is int and steps >= 0:  # a negative or non-integer count is the count rules'
        before = expected["step_count"]
        including = before + view.tool_calls(entry) if steps != before else before
        if steps not in (before, including):
            counted = f"{before}" if before == including else f"{before} (or {including} with this turn's own)"
            yield Violation(
                child(base, "step_count"),
                f"{_turn_name(turn)} has step_count {steps}, but the tool calls its invocation made before it "
                f"number {counted}",
                cite(subject, entry, leave_out=""),
                severity=CONTENT,
            )
    resolved, row_resolved = turn.get("resolved"), subject.row.get("resolved")
    if isinstance(resolved, bool) and isinstance(row_resolved, bool) and resolved != row_resolved:
        yield Violation(
            child(base, "resolved"),
            f"{_turn_name(turn)} says resolved={show(resolved)}, but the row's verifier result is "
            f"resolved={show(row_resolved)}",
            (subject.location("/resolved"),),
            severity=CONTENT,
        )


def _stated_turn(subject: Subject, view: _View, t: int, turn: dict[str, Any]) -> Iterator[Violation]:
    base = f"{_STATED_TURNS}/{t}"
    refs = turn.get("model_calls")
    if not refs:
        yield Violation(
            base,
            f"{_turn_name(turn)} references no model call, though the row holds {len(view.calls)}; a turn "
            "that names no call cannot be checked against the capture or counted for tokens",
        )
        return
    entries = [e for e in view.refs.get(t, []) if e.index not in view.other_rules]
    if not entries:
        return  # unresolved references and helper/verifier turns have rules of their own
    invocation = turn.get("invocation_id")
    for entry in entries:
        if entry.index in view.expected and view.expected[entry.index]["invocation_id"] == invocation:
            yield from _content(subject, view, base, turn, entry)
            return
    entry = entries[0]
    owners = view.agent_owners(entry)
    if not entry.has_response:
        why = "returned no response (a call that returned nothing is no policy decision)"
    elif not owners:
        why = "no agent invocation claims"
    elif isinstance(invocation, str) and invocation in owners:  # a turn's id may be any JSON value
        return  # the call went to another claimant: ownership-conflict reports it
    else:
        why = f"belongs to agent invocation {owner_text(next(iter(owners)))}"
    ref = view.turn_claim[(entry.index, t)]
    yield Violation(
        ref.pointer,
        f"{_turn_name(turn)} references {call_label(entry)}, which {why}",
        cite(subject, entry, leave_out=ref.pointer),
    )


def _shared_calls(subject: Subject, view: _View) -> Iterator[Violation]:
    for index, claims in view.turns_of.items():
        entry = view.calls[index]
        if index in view.other_rules:
            continue
        by_turn: dict[int, Claim] = {}
        for claim in claims:
            by_turn.setdefault(_turn_index(claim), claim)
        for claim in list(by_turn.values())[1:]:
            yield Violation(
                claim.pointer,
                f"{call_label(entry)} is referenced by {len(by_turn)} stated turns; one model call "
                "is one policy decision, so one turn",
                cite(subject, entry, leave_out=claim.pointer),
            )


@row_rule("trajectory-drift", reads=["row", "trajectory", "model-calls"])
def trajectory_drift(subject: Subject) -> Iterator[Violation]:
    stated = subject.row[STATED]
    if not isinstance(stated, dict):
        return
    view = _View(subject)
    yield from _missing_turns(subject, view)
    turns = stated.get("turns")
    for t, turn in enumerate(turns if isinstance(turns, list) else []):
        if isinstance(turn, dict) and (t in view.refs or t not in view.unresolved_turns):
            yield from _stated_turn(subject, view, t, turn)
    yield from _shared_calls(subject, view)


# -- gaps --------------------------------------------------------------------------------------


@cache
def gap_codes() -> dict[str, GapCode]:
    """The gap codes `observation-gap` knows, from its catalog entry (`[[gap]]`)."""
    entry = next(e for e in catalog.packaged().values() if e.name == "observation-gap")
    return {gap.code: gap for gap in entry.gaps}


def _gap_key(gap: dict[str, Any]) -> tuple[Any, Any, Any]:
    """NeMo Gym's de-duplication key, (code, invocation_id, detail), made hashable whatever it holds."""
    return hashable(gap.get("code")), hashable(gap.get("invocation_id")), hashable(gap.get("detail"))


def _gap_text(code: str, invocation_id: Any, detail: Any) -> str:
    where = f" for invocation {invocation_id!r}" if isinstance(invocation_id, str) else ""
    said = f" ({detail})" if isinstance(detail, str) and detail else ""
    known = gap_codes().get(code)
    if known is not None:
        meaning = known.meaning
    else:
        meaning = "reported by the producer" if code.endswith(("_unavailable", "_missing")) else "a code trajlint does not know"
    return f"gap `{code}`{where}{said}: {meaning}"


@row_rule("observation-gap", reads=["row"])
def observation_gap(subject: Subject) -> Iterator[Violation]:
    """Every gap the row carries, once: a persisted row repeats the bundle's and capture's gaps."""
    seen: dict[tuple[Any, Any, Any], list[str]] = {}
    for ptr, gap in walk.gaps(subject):
        if isinstance(gap.get("code"), str):
            seen.setdefault(_gap_key(gap), []).append(ptr)
    known = gap_codes()
    for (code, invocation_id, detail), pointers in seen.items():
        entry = known.get(code)
        yield Violation(
            pointers[0],
            f"NeMo Gym {_gap_text(code, invocation_id, detail)}",
            places(subject, pointers, leave_out=pointers[0]),
            # A code trajlint does not know is listed: it may be news, and only the table can
            # say that a gap is one a user cannot act on.
            severity=entry.severity if entry is not None else "info",
            availability=entry is not None and entry.availability,
        )


_JOIN_CODES = ("model_call_reference_conflict", "model_call_reference_ambiguous", "model_call_reference_unmatched")


def _is_join_gap(gap: dict[str, Any]) -> bool:
    if gap["code"] in _JOIN_CODES:
        return True
    detail = gap["detail"] or ""
    return gap["code"] == "model_call_ownership_unavailable" and detail.startswith(("capture:", "model_calls:"))


def _named_calls(subject: Subject, detail: Any) -> list[CallEntry]:
    """The calls a join gap's detail names (`<id>`, `model_calls:<id>`, `capture:<id>:call_index=n`)."""
    if not isinstance(detail, str):
        return []
    label = detail.split(":", 1)[1] if detail.split(":", 1)[0] in (
        "model_calls", "before_model_call", "after_model_call", "capture") else detail
    label = label.split(":call_index=", 1)[0]
    return [e for e in subject.build.ledger.calls if label in (e.model_call_id, e.response_id)]


@row_rule("gap-unreported", reads=["row", "trajectory", "observations", "capture"])
def gap_unreported(subject: Subject) -> Iterator[Violation]:
    """A join conflict the evidence shows that the stated trajectory's gaps leave out."""
    trajectory = subject.row[STATED]
    if not isinstance(trajectory, dict):
        return  # the trajectory schema rule reports it
    stated = {_gap_key(gap) for _, gap in walk.stated(subject, "gaps")}
    gaps = trajectory.get("gaps")
    ptr = "/ng_trajectory/gaps" if isinstance(gaps, list) else "/ng_trajectory"
    for gap in subject.build.trajectory["gaps"]:
        if not _is_join_gap(gap) or _gap_key(gap) in stated:
            continue
        related = [loc for e in _named_calls(subject, gap["detail"]) for loc in cite(subject, e, leave_out="")]
        yield Violation(
            ptr,
            f"joining the observations to the capture gives {_gap_text(gap['code'], gap['invocation_id'], gap['detail'])}; "
            "the stated trajectory's gaps do not record it, so a reader of the trajectory alone "
            "takes the evidence for complete",
            tuple(related),
        )
