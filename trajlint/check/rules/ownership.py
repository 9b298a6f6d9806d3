"""TL2xx: who claims each model call, read from the build's ownership ledger.

Each conflict has one owner rule, so one defect is one finding: claims between agent
invocations only are `ownership-conflict`; any conflict on a compaction helper is
`compaction-claim-conflict`; any agent claim on a verifier-owned call is
`verifier-call-claimed-by-agent`; verifier against verifier or compaction is
`verifier-claim-conflict`. A stated turn on a helper or verifier call has a rule of its own,
whatever else claims the call. A claim repeated by the same owner (persisted rows hold the
bundle's invocations again in the trajectory) is one claim, never a conflict.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from trajlint.builder.ledger import (
    AGENT_KINDS,
    COMPACTION,
    COMPACTION_AFTER,
    COMPACTION_BEFORE,
    TURN,
    VERIFIER,
    Unresolved,
    call_label,
    label,
    ref_key,
)
from trajlint.check.claims import claim_phrase, first_claims, owner_text, ref_label
from trajlint.check.rule import Violation, row_rule
from trajlint.check.rules._cite import cite, places, some
from trajlint.check.subject import Subject
from trajlint.pointer import resolve
from trajlint.row import walk


@row_rule("ownership-conflict", reads=["row", "model-calls"])
def ownership_conflict(subject: Subject) -> Iterator[Violation]:
    """One call claimed by two agent invocations."""
    for entry in subject.build.ledger.calls:
        if entry.is_helper or entry.is_verifier_owned:
            continue  # compaction-claim-conflict / verifier-call-claimed-by-agent own these
        owners = first_claims(entry.claims, AGENT_KINDS)
        owners.pop(None, None)
        if len(owners) < 2:
            continue
        names = some([owner_text(o) for o in owners])
        for claim in list(owners.values())[1:]:
            yield Violation(
                claim.pointer,
                f"{call_label(entry)} is claimed by {len(owners)} agent invocations ({names}); "
                f"{claim_phrase(claim)} claims a call that {owner_text(next(iter(owners)))} already "
                "owns, so which invocation's turn and token count it belongs to depends on "
                "record order (NeMo Gym reports model_call_reference_conflict)",
                cite(subject, entry, leave_out=claim.pointer),
            )


@row_rule("compaction-call-as-turn", reads=["row", "trajectory", "observations"])
def compaction_call_as_turn(subject: Subject) -> Iterator[Violation]:
    """A stated turn on a call that a compaction record lists as its summarization helper."""
    for entry in subject.build.ledger.calls:
        if not entry.is_helper or entry.is_verifier_owned:
            continue  # a verifier-owned call is verifier-call-as-turn's
        helper = next(entry.claims_of(COMPACTION))
        for claim in entry.claims_of(TURN):
            yield Violation(
                claim.pointer,
                f"{claim_phrase(claim)} references {call_label(entry)}, the summarization helper "
                f"of {claim_phrase(helper)} ({helper.pointer}); a helper call is never a policy "
                "turn (NeMo Gym 0.7.0 makes it one, which trains the policy on the summarizer's output)",
                cite(subject, entry, leave_out=claim.pointer),
            )


_COMPACTION_KINDS = frozenset({COMPACTION, COMPACTION_BEFORE, COMPACTION_AFTER})


@row_rule("compaction-claim-conflict", reads=["row", "observations", "model-calls"])
def compaction_claim_conflict(subject: Subject) -> Iterator[Violation]:
    """A helper (or boundary) call of one invocation's compaction claimed by another invocation."""
    for entry in subject.build.ledger.calls:
        if entry.is_verifier_owned:
            continue  # verifier-claim-conflict owns verifier against compaction
        if not any(c.kind in _COMPACTION_KINDS for c in entry.claims):
            continue  # neither a helper nor a boundary of any compaction: nothing to compare
        helpers = list(entry.claims_of(COMPACTION))
        if helpers:
            compacting = helpers[0]
            claimants = first_claims(entry.claims, (*AGENT_KINDS, COMPACTION))
            for owner, claim in claimants.items():
                if owner is None or owner == compacting.owner:
                    continue
                yield Violation(
                    claim.pointer,
                    f"{call_label(entry)} is the summarization helper of {claim_phrase(compacting)} "
                    f"({compacting.pointer}) but is also claimed by {claim_phrase(claim)}; a helper "
                    "belongs to the invocation whose context it compacted (NeMo Gym reports "
                    "model_call_reference_conflict with detail model_calls:<id>)",
                    cite(subject, entry, leave_out=claim.pointer),
                )
        agent_owners = entry.agent_owners(valid_only=False)
        owning = set(agent_owners)
        for marker in first_claims(entry.claims, (COMPACTION_BEFORE, COMPACTION_AFTER)).values():
            if marker.owner is None or not agent_owners or marker.owner in owning:
                continue
            yield Violation(
                marker.pointer,
                f"{claim_phrase(marker)} names {call_label(entry)}, which belongs to agent "
                f"invocation {owner_text(agent_owners[0])}; a compaction's boundary calls are "
                "calls of the compacted invocation (NeMo Gym reports model_call_reference_conflict)",
                cite(subject, entry, leave_out=marker.pointer),
            )


@row_rule("verifier-call-as-turn", reads=["row", "trajectory", "model-calls"])
def verifier_call_as_turn(subject: Subject) -> Iterator[Violation]:
    """A stated turn on a call a verifier invocation owns."""
    for entry in subject.build.ledger.calls:
        if not entry.is_verifier_owned:
            continue
        verifier = next(entry.claims_of(VERIFIER))
        for claim in entry.claims_of(TURN):
            yield Violation(
                claim.pointer,
                f"{claim_phrase(claim)} references {call_label(entry)}, which "
                f"{claim_phrase(verifier)} owns ({verifier.pointer}); a grading call is never a "
                "policy turn (NeMo Gym 0.7.0 does not know verifier ownership and makes it one)",
                cite(subject, entry, leave_out=claim.pointer),
            )


@row_rule("verifier-call-claimed-by-agent", reads=["row", "model-calls"])
def verifier_call_claimed_by_agent(subject: Subject) -> Iterator[Violation]:
    """An agent invocation claims a call that a verifier invocation owns."""
    for entry in subject.build.ledger.calls:
        if not entry.is_verifier_owned:
            continue
        verifier = next(entry.claims_of(VERIFIER))
        for owner, claim in first_claims(entry.claims, AGENT_KINDS).items():
            if owner is None:
                continue
            yield Violation(
                claim.pointer,
                f"{claim_phrase(claim)} claims {call_label(entry)}, which {claim_phrase(verifier)} "
                f"owns ({verifier.pointer}); the verifier's claim wins, so the call is no turn, but "
                "the agent's token accounting counts the grader's tokens",
                cite(subject, entry, leave_out=claim.pointer),
            )


@row_rule("verifier-claim-conflict", reads=["row", "model-calls"])
def verifier_claim_conflict(subject: Subject) -> Iterator[Violation]:
    """Two verifier invocations, or a verifier and a compaction, claim one call."""
    for entry in subject.build.ledger.calls:
        if not entry.is_verifier_owned:
            continue  # no verifier claims it, so no verifier conflict
        verifiers = first_claims(entry.claims, (VERIFIER,))
        verifiers.pop(None, None)
        if not verifiers:
            continue
        first = next(iter(verifiers.values()))
        for claim in list(verifiers.values())[1:]:
            yield Violation(
                claim.pointer,
                f"{call_label(entry)} is claimed by {claim_phrase(claim)} and by "
                f"{claim_phrase(first)} ({first.pointer}); a grading call belongs to one verify run",
                cite(subject, entry, leave_out=claim.pointer),
            )
        for claim in first_claims(entry.claims, (COMPACTION,)).values():
            yield Violation(
                claim.pointer,
                f"{claim_phrase(claim)} lists {call_label(entry)} as its summarization helper, but "
                f"{claim_phrase(first)} owns it ({first.pointer}); one call cannot be both",
                cite(subject, entry, leave_out=claim.pointer),
            )


def _grouped(unresolved: list[Unresolved]) -> list[list[Unresolved]]:
    """Unresolved claims folded by (owner, reference): a repeat in a persisted row is one claim."""
    groups: dict[tuple[object, ...], list[Unresolved]] = {}
    for item in unresolved:
        groups.setdefault((item.claim.owner, ref_key(item.ref)), []).append(item)
    return list(groups.values())


@row_rule("unmatched-reference", reads=["row", "model-calls"])
def unmatched_reference(subject: Subject) -> Iterator[Violation]:
    """A claim whose reference matches no model call of the row."""
    excluded = _excluded_call_ids(subject)
    unmatched = [
        u
        for u in subject.build.ledger.unresolved
        if u.reason == "unmatched" and not (excluded and _names_any(u.ref, excluded))
    ]
    for group in _grouped(unmatched):
        first = group[0]
        yield Violation(
            first.claim.pointer,
            f"{claim_phrase(first.claim)} references {ref_label(first.ref)}, which matches no "
            "model call of this row; the claim's call is missing from the capture or names the "
            "wrong call (NeMo Gym reports model_call_reference_unmatched)",
            places(subject, (u.claim.pointer for u in group), leave_out=first.claim.pointer),
        )


@row_rule("ambiguous-reference", reads=["row", "model-calls"])
def ambiguous_reference(subject: Subject) -> Iterator[Violation]:
    """A claim whose (model_ref, response_id) reference matches several model calls."""
    ledger = subject.build.ledger
    ambiguous = [u for u in ledger.unresolved if u.reason == "ambiguous"]
    # A reference's candidates depend on its form alone; many owners may name one form, and
    # each look at the candidates costs their number.
    one_id: dict[object, bool] = {}
    for group in _grouped(ambiguous):
        first = group[0]
        key = ref_key(first.ref)
        if key not in one_id:
            one_id[key] = len({ledger.calls[i].model_call_id for i in first.candidates}) == 1
        if one_id[key]:
            continue  # the candidates share one id: duplicate-model-call-id reports the cause
        candidates = (loc for i in first.candidates for loc in ledger.calls[i].locations)  # cited: the first few
        yield Violation(
            first.claim.pointer,
            f"{claim_phrase(first.claim)} references {ref_label(first.ref)}, which matches "
            f"{len(first.candidates)} model calls; without a model_call_id the claim cannot say "
            "which (NeMo Gym reports model_call_reference_ambiguous and owns none of them)",
            places(subject, chain((u.claim.pointer for u in group), candidates), leave_out=first.claim.pointer),
        )


_OWNING_KINDS = frozenset({*AGENT_KINDS, COMPACTION, VERIFIER, TURN})  # claims that make a call owned


@row_rule("unowned-model-call", reads=["row", "model-calls"])
def unowned_model_call(subject: Subject) -> Iterator[Violation]:
    """A call that no agent invocation, compaction or verifier claims."""
    if subject.unowned is not None:
        # A row the core proved clean of the rest of the family: it found these calls unowned.
        for stated, capture, call_id, response_id in subject.unowned:
            locations = [pointer for pointer in (_place(STATED_CALLS, stated), _place(CAPTURE_CALLS, capture)) if pointer]
            yield _unowned(subject, label(call_id, response_id, locations[0]), locations)
        return
    if not walk.invocations(subject):
        return  # no agent evidence at all: ownership was not observed, nothing is "unowned"
    ledger = subject.build.ledger
    # A candidate of an ambiguous claim is claimed, just not uniquely: that is the claim's defect.
    # Each form of reference once: thousands of references may share one form and its candidates.
    contested: set[int] = set()
    forms: set[object] = set()
    for u in ledger.unresolved:
        key = ref_key(u.ref)
        if key not in forms:
            forms.add(key)
            contested.update(u.candidates)
    for entry in ledger.calls:
        if entry.index in contested or any(c.kind in _OWNING_KINDS for c in entry.claims):
            continue
        yield _unowned(subject, call_label(entry), entry.locations)


STATED_CALLS = "/ng_trajectory/model_calls/"
CAPTURE_CALLS = "/ng_model_call_capture/calls/"


def _place(prefix: str, position: int | None) -> str | None:
    return None if position is None else f"{prefix}{position}"


def _unowned(subject: Subject, label: str, locations: list[str]) -> Violation:
    return Violation(
        locations[0],
        f"{label} is claimed by no agent invocation, compaction or verifier; it stays raw "
        "evidence and never becomes a turn (expected for judge or auxiliary calls that their "
        "owner did not record)",
        places(subject, locations, leave_out=locations[0]),
    )


def _excluded_call_ids(subject: Subject) -> set[str]:
    """The ids of model calls the build left out because they break their schema.

    A reference to such a call resolves to nothing only because of that damage, which the
    schema rule reports (and for which NeMo Gym rejects the whole section); saying it matches no
    call would name the wrong cause.
    """
    ids: set[str] = set()
    for pointer in subject.build.evidence.excluded:
        if pointer.startswith(("/ng_trajectory/model_calls/", "/ng_model_call_capture/calls/")):
            item = resolve(subject.row, pointer, None)
            if isinstance(item, dict):
                meta = item.get("response_metadata")
                for value in (
                    item.get("model_call_id"),
                    item.get("response_id"),
                    meta.get("response_id") if isinstance(meta, dict) else None,
                ):
                    if isinstance(value, str) and value:
                        ids.add(value)
    return ids


def _names_any(ref: object, ids: set[str]) -> bool:
    return isinstance(ref, dict) and (ref.get("model_call_id") in ids or ref.get("response_id") in ids)
