"""How the ownership rules name calls and claims, and cite the evidence behind a finding.

A conflict finding points at one claim and cites every other claim on the call (and the call
itself) in `related`, so a reader can open each place. Persisted rows repeat claims (an
invocation's ref in the bundle and in the trajectory, a turn's ref next to its invocation's);
`first_claims` folds such repeats so that one owner is one claimant.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trajlint.builder.ledger import (
    AGENT,
    COMPACTION,
    COMPACTION_AFTER,
    COMPACTION_BEFORE,
    SESSION,
    TURN,
    VERIFIER,
    Claim,
    ref_key,
)

_PHRASES = {
    AGENT: "agent invocation {owner}",
    SESSION: "agent invocation {owner} (through the call's session header)",
    COMPACTION: "a compaction of invocation {owner}",
    COMPACTION_BEFORE: "the before-compaction marker of invocation {owner}",
    COMPACTION_AFTER: "the after-compaction marker of invocation {owner}",
    VERIFIER: "verifier invocation {owner}",
    TURN: "a stated turn of invocation {owner}",
}


def owner_text(owner: str | None) -> str:
    return repr(owner) if owner is not None else "(no id)"


def claim_phrase(claim: Claim) -> str:
    return _PHRASES[claim.kind].format(owner=owner_text(claim.owner))


def ref_label(ref: Any) -> str:
    key = ref_key(ref)
    if key is None:
        return "an unusable reference"
    call_id, server, response_id = key
    if call_id:
        return f"model_call_id {call_id!r}"
    server_text = f" on {server[1]!r}" if server else ""
    return f"response id {response_id!r}{server_text}"


def first_claims(claims: Iterable[Claim], kinds: Iterable[str]) -> dict[str | None, Claim]:
    """One claim per owner among claims of `kinds`, owners in claim order.

    The claim kept is the owner's first outside the stated trajectory when it has one: in a
    persisted row the trajectory's invocations are copies of the bundle's, and a finding should
    point where the harness wrote the claim.
    """
    wanted = set(kinds)
    out: dict[str | None, Claim] = {}
    for claim in claims:
        if claim.kind not in wanted:
            continue
        kept = out.get(claim.owner)
        if kept is None or (_in_trajectory(kept) and not _in_trajectory(claim)):
            out[claim.owner] = claim
    return out


def _in_trajectory(claim: Claim) -> bool:
    return claim.pointer.startswith("/ng_trajectory/")
