"""The ownership ledger: every claim on every captured call, and every claim that found no call.

NeMo Gym resolves ownership silently (the first claimant wins the join, the last gets the turn)
and drops what loses. The ledger keeps all of it — agent invocations, sessions, compaction
records, verifier invocations, stated turns — each with the JSON pointer where it stands, so
that every conflict can be reported. Claims join by `model_call_id`, or by the exact
(`model_ref`, `response_id`) pair; never by timestamps or list position.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# Who may claim a call, and what the claim means:
AGENT = "agent"  # an agent invocation's `model_calls` ref: "this call was my decision"
SESSION = "session"  # the capture's `client_session_id` names an invocation (NeMo Gym's auto-ownership)
COMPACTION = "compaction"  # a compaction record's `model_calls`: a summarization helper call
COMPACTION_BEFORE = "compaction-before"  # boundary markers: the calls around a compaction
COMPACTION_AFTER = "compaction-after"
VERIFIER = "verifier"  # a verifier invocation's claim (its list, or the call's `verifier_invocation_id`)
TURN = "turn"  # a turn of the row's stated `ng_trajectory` references the call

AGENT_KINDS = frozenset({AGENT, SESSION})

# What became of a call in the build:
OUTCOME_TURN = "turn"
OUTCOME_VERIFIER = "verifier"
OUTCOME_HELPER = "compaction-helper"
OUTCOME_UNOWNED = "unowned"
OUTCOME_NO_RESPONSE = "no-response"


class Claim(NamedTuple):
    # A named tuple, not a frozen dataclass: a row holds dozens of claims, and a named tuple
    # is made in half the time.
    kind: str
    owner: str | None  # invocation id (agent, session, compaction, turn) or verifier invocation id
    pointer: str  # where the claim stands in the row
    valid: bool = True  # the record holding the claim passed its schema (only valid claims own turns)
    names_id: bool = False  # the claim names the call's model_call_id (breaks ties between agents)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "owner": self.owner, "pointer": self.pointer, "valid": self.valid}


@dataclass(slots=True)
class CallEntry:
    """One model call of the built trajectory and everything said about it."""

    index: int  # position in the built `ng_trajectory.model_calls`
    model_call_id: str | None
    response_id: str | None
    model_ref: tuple[str, str] | None
    locations: list[str]  # where the call stands in the row (capture and/or stated trajectory)
    has_response: bool
    claims: list[Claim] = field(default_factory=list)
    outcome: str = OUTCOME_UNOWNED
    owner: str | None = None  # the invocation whose turn it became

    def claims_of(self, *kinds: str) -> Iterator[Claim]:
        return (c for c in self.claims if c.kind in kinds)

    @property
    def is_helper(self) -> bool:
        return self._claimed_as(COMPACTION)

    @property
    def is_verifier_owned(self) -> bool:
        return self._claimed_as(VERIFIER)

    def _claimed_as(self, kind: str) -> bool:
        # A loop rather than any(<generator>): asked of every call by the build and many rules.
        for claim in self.claims:  # noqa: SIM110
            if claim.kind == kind:
                return True
        return False

    def agent_owners(self, *, valid_only: bool = True) -> list[str]:
        """Distinct agent invocations claiming the call, in claim order."""
        owners: dict[str, None] = {}  # a dict keeps claim order and looks an owner up at once
        for claim in self.claims:
            if claim.kind in AGENT_KINDS and claim.owner is not None and (claim.valid or not valid_only):
                owners.setdefault(claim.owner)
        return list(owners)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "model_call_id": self.model_call_id,
            "response_id": self.response_id,
            "model_ref": {"type": self.model_ref[0], "name": self.model_ref[1]} if self.model_ref else None,
            "locations": self.locations,
            "outcome": self.outcome,
            "owner": self.owner,
            "claims": [c.to_dict() for c in self.claims],
        }


@dataclass(frozen=True, slots=True)
class Unresolved:
    """A claim whose reference matched no call (`candidates` empty) or several."""

    claim: Claim
    ref: Any
    candidates: tuple[int, ...]
    reason: str  # "unmatched", "ambiguous" or "unjoinable" (the ref can never match anything)

    def to_dict(self) -> dict[str, Any]:
        return {**self.claim.to_dict(), "ref": self.ref, "candidates": list(self.candidates), "reason": self.reason}


@dataclass(slots=True)
class Ledger:
    calls: list[CallEntry] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)

    @property
    def unmatched(self) -> list[Unresolved]:
        return [u for u in self.unresolved if u.reason != "ambiguous"]

    @property
    def ambiguous(self) -> list[Unresolved]:
        return [u for u in self.unresolved if u.reason == "ambiguous"]

    def to_dict(self) -> dict[str, Any]:
        return {"calls": [c.to_dict() for c in self.calls], "unresolved": [u.to_dict() for u in self.unresolved]}


def call_label(entry: CallEntry) -> str:
    """How a message names a call: its capture id, else its response id, else its place."""
    return label(entry.model_call_id, entry.response_id, entry.locations[0])


def label(model_call_id: str | None, response_id: str | None, location: str) -> str:
    """`call_label` of a call with these ids, standing first at `location`."""
    if model_call_id:
        return f"model call {model_call_id!r}"
    if response_id:
        return f"model call with response id {response_id!r}"
    return f"the model call at {location}"


def ref_key(ref: Any) -> tuple[str | None, tuple[str, str] | None, str | None] | None:
    """(model_call_id, model_ref, response_id) of a reference dict; empty strings count as absent."""
    if not isinstance(ref, dict):
        return None
    call_id = ref.get("model_call_id")
    response_id = ref.get("response_id")
    model_ref = ref.get("model_ref")
    return (
        call_id if isinstance(call_id, str) and call_id else None,
        server_key(model_ref),
        response_id if isinstance(response_id, str) and response_id else None,
    )


def server_key(model_ref: Any) -> tuple[str, str] | None:
    if isinstance(model_ref, dict):
        kind, name = model_ref.get("type"), model_ref.get("name")
        if isinstance(kind, str) and isinstance(name, str):
            return (kind, name)
    return None


class CallIndex:
    """Finds the calls a reference names: by id (agreeing on ref and response id when given), else
    by the exact (model_ref, response_id) pair.

    Every form of reference is one dictionary lookup, and a form's answer is one shared tuple:
    when thousands of calls share an id and thousands of references name it, filtering the
    calls per reference (or copying the answer) would be quadratic.
    """

    def __init__(self, calls: list[CallEntry]):
        # (model_call_id, model_ref or None, response_id or None) -> calls; the id alone, the
        # id with either filter, the id with both; and (None, model_ref, response_id) for pairs.
        found: dict[tuple[str | None, tuple[str, str] | None, str | None], list[CallEntry]] = {}
        for entry in calls:
            call_id, model_ref, response_id = entry.model_call_id, entry.model_ref, entry.response_id
            response_id = response_id if isinstance(response_id, str) else None  # a key's is text
            if isinstance(call_id, str) and call_id:
                found.setdefault((call_id, None, None), []).append(entry)
                if model_ref is not None:
                    found.setdefault((call_id, model_ref, None), []).append(entry)
                if response_id:
                    found.setdefault((call_id, None, response_id), []).append(entry)
                if model_ref is not None and response_id:
                    found.setdefault((call_id, model_ref, response_id), []).append(entry)
            if model_ref is not None and response_id:
                found.setdefault((None, model_ref, response_id), []).append(entry)
        self._found = {key: tuple(entries) for key, entries in found.items()}

    def match(self, ref: Any) -> tuple[CallEntry, ...] | None:
        """The matching calls, or None when the reference can never match (not joinable)."""
        return self.match_key(ref_key(ref))

    def match_key(
        self, key: tuple[str | None, tuple[str, str] | None, str | None] | None
    ) -> tuple[CallEntry, ...] | None:
        """`match` for a reference whose `ref_key` the caller already has."""
        if key is None:
            return None
        call_id, model_ref, response_id = key
        if call_id is None and (model_ref is None or response_id is None):
            return None
        return self._found.get(key, ())
