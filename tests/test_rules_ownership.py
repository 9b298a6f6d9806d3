"""TL2xx: every ownership conflict is one finding of its owner rule, citing every claim involved."""

from __future__ import annotations

from trajlint.builder import build

from .rule_rows import JUDGE, call, compaction, findings, invocation, of, row, trajectory, turn

HELPER_CLAIM_BY_B = "/ng_agent_observations/records/1/model_calls/0"
TURN_REF = "/ng_trajectory/turns/1/model_calls/0"


def _claim_pointers(r: dict, call_id: str) -> set[str]:
    (entry,) = [e for e in build(r).ledger.calls if e.model_call_id == call_id]
    return {c.pointer for c in entry.claims} | set(entry.locations)


def _cites_everything(finding, r: dict, call_id: str) -> bool:
    cited = {loc.pointer for loc in finding.related}
    return cited == _claim_pointers(r, call_id) - {finding.pointer}


def _turn_set_drift(found):
    return [f for f in of(found, "trajectory-drift") if f.severity != "info"]


def _helper_row(**extra):
    """Call h is the helper of A's compaction, claimed by invocation B and by a stated turn of B."""
    records = [invocation("A", "a"), invocation("B", "h"), compaction("A", "h")]
    stated = trajectory([turn("A", 1, "a"), turn("B", 1, "h")], [invocation("A", "a"), invocation("B", "h")])
    return row([call("a"), call("h", 1)], records, ng_trajectory=stated, **extra)


def test_helper_claimed_by_another_invocation_and_made_a_turn(rules, tmp_path):
    r = _helper_row()
    found = findings([r], rules, tmp_path)
    (conflict,) = of(found, "compaction-claim-conflict")
    assert conflict.pointer == HELPER_CLAIM_BY_B and conflict.severity == "error"
    assert _cites_everything(conflict, r, "h")
    (as_turn,) = of(found, "compaction-call-as-turn")
    assert as_turn.pointer == TURN_REF and as_turn.severity == "error"
    assert _cites_everything(as_turn, r, "h")
    # one defect, one owner: the agents' claims on a helper are not an agent-vs-agent conflict
    assert of(found, "ownership-conflict") == [] and _turn_set_drift(found) == []


def test_verifier_owned_call_claimed_by_an_agent_and_made_a_turn(rules, tmp_path):
    records = [invocation("A", "a"), invocation("B", "j")]
    stated = trajectory([turn("A", 1, "a"), turn("B", 1, "j")], [invocation("A", "a"), invocation("B", "j")])
    verifiers = [{"invocation_id": "v", "model_calls": [{"model_call_id": "j"}]}]
    r = row([call("a"), call("j", 1, ref=JUDGE)], records, ng_trajectory=stated, ng_verifier_invocations=verifiers)
    found = findings([r], rules, tmp_path)
    (claimed,) = of(found, "verifier-call-claimed-by-agent")
    assert claimed.pointer == HELPER_CLAIM_BY_B
    assert _cites_everything(claimed, r, "j")
    (as_turn,) = of(found, "verifier-call-as-turn")
    assert as_turn.pointer == TURN_REF
    assert _cites_everything(as_turn, r, "j")
    assert "/ng_verifier_invocations/0/model_calls/0" in {loc.pointer for loc in as_turn.related}
    assert of(found, "ownership-conflict") == [] and _turn_set_drift(found) == []


def test_verifier_and_compaction_on_one_call_belong_to_the_verifier_rules(rules, tmp_path):
    verifiers = [{"invocation_id": "v", "model_calls": [{"model_call_id": "h"}]}]
    r = _helper_row(ng_verifier_invocations=verifiers)
    found = findings([r], rules, tmp_path)
    (conflict,) = of(found, "verifier-claim-conflict")
    assert conflict.pointer == "/ng_agent_observations/records/2/model_calls/0"  # the compaction's claim
    assert _cites_everything(conflict, r, "h")
    assert len(of(found, "verifier-call-claimed-by-agent")) == 1  # B (A's claim is only its compaction)
    assert [f.pointer for f in of(found, "verifier-call-as-turn")] == [TURN_REF]
    assert of(found, "compaction-claim-conflict") == of(found, "compaction-call-as-turn") == []


def test_two_verifiers_on_one_call(rules, tmp_path):
    verifiers = [{"invocation_id": "v1", "model_calls": [{"model_call_id": "j"}]},
                 {"invocation_id": "v2", "model_calls": [{"model_call_id": "j"}]}]
    r = row([call("a"), call("j", 1, ref=JUDGE, verifier_invocation_id="v1")], [invocation("A", "a")],
            ng_verifier_invocations=verifiers)
    (conflict,) = of(findings([r], rules, tmp_path), "verifier-claim-conflict")
    assert conflict.pointer == "/ng_verifier_invocations/1/model_calls/0"
    assert _cites_everything(conflict, r, "j")


def test_two_agents_claiming_one_call(rules, tmp_path):
    r = row([call("a"), call("b", 1)], [invocation("A", "a", "b"), invocation("B", "b")])
    (conflict,) = of(findings([r], rules, tmp_path), "ownership-conflict")
    assert conflict.pointer == "/ng_agent_observations/records/1/model_calls/0"
    assert _cites_everything(conflict, r, "b")
    assert "'A'" in conflict.message and "'B'" in conflict.message


def test_a_session_header_is_an_agent_claim(rules, tmp_path):
    r = row([call("a", client_session_id="B")], [invocation("A", "a"), invocation("B")])
    (conflict,) = of(findings([r], rules, tmp_path), "ownership-conflict")
    assert conflict.pointer == "/ng_model_call_capture/calls/0/client_session_id"


def test_claims_repeated_by_their_owner_are_no_conflict(rules, tmp_path):
    """A persisted row holds each invocation's claims in the bundle and in the trajectory, and
    each turn's claim next to its invocation's."""
    records = [invocation("A", "a", "h"), compaction("A", "h", before_model_call={"model_call_id": "a"})]
    stated = trajectory([turn("A", 1, "a")], [invocation("A", "a", "h")])
    verifiers = [{"invocation_id": "v", "model_calls": [{"model_call_id": "j"}]}]
    r = row([call("a", client_session_id="A"), call("h", 1), call("j", 2, ref=JUDGE, verifier_invocation_id="v")],
            records, ng_trajectory=stated, ng_verifier_invocations=verifiers)
    found = findings([r], rules, tmp_path)
    assert [f for f in found if f.code.startswith("TL2")] == []


def test_unmatched_claim_repeated_by_its_owner_is_one_finding(rules, tmp_path):
    stated = trajectory([turn("A", 1, "a")], [invocation("A", "a", "gone")])
    r = row([call("a")], [invocation("A", "a", "gone")], ng_trajectory=stated)
    (unmatched,) = of(findings([r], rules, tmp_path), "unmatched-reference")
    assert unmatched.pointer == "/ng_trajectory/invocations/0/model_calls/1"
    assert [loc.pointer for loc in unmatched.related] == ["/ng_agent_observations/records/0/model_calls/1"]


def test_ambiguous_claim_cites_its_candidates(rules, tmp_path):
    pair = {"model_ref": {"type": "responses_api_models", "name": "policy"}, "response_id": "resp_x"}
    r = row([call("a", response_id="resp_x"), call("b", 1, response_id="resp_x")],
            [dict(invocation("A"), model_calls=[pair])])
    found = findings([r], rules, tmp_path)
    (ambiguous,) = of(found, "ambiguous-reference")
    assert {loc.pointer for loc in ambiguous.related} == {"/ng_model_call_capture/calls/0", "/ng_model_call_capture/calls/1"}
    assert of(found, "unowned-model-call") == []  # the calls are claimed, only not uniquely


def test_unowned_call_only_where_ownership_was_observed(rules, tmp_path):
    claimed = row([call("a"), call("j", 1, ref=JUDGE)], [invocation("A", "a")])
    capture_only = row([call("a"), call("j", 1, ref=JUDGE)])
    found = findings([claimed, capture_only], rules, tmp_path)
    unowned = of(found, "unowned-model-call")
    assert [(f.line, f.pointer, f.severity) for f in unowned] == [(1, "/ng_model_call_capture/calls/1", "info")]


def test_boundary_marker_on_another_invocations_call(rules, tmp_path):
    records = [invocation("A", "a"), invocation("B", "b"), compaction("A", after_model_call={"model_call_id": "b"})]
    found = findings([row([call("a"), call("b", 1)], records)], rules, tmp_path)
    (conflict,) = of(found, "compaction-claim-conflict")
    assert conflict.pointer == "/ng_agent_observations/records/2/after_model_call"
