"""The trajectory builder: dialects, the ownership outcome table, precedence, robustness."""

from __future__ import annotations

import copy

import orjson
import pytest

from trajlint.builder import build
from trajlint.builder.dialects import turn_content
from trajlint.contract import schemas

from .conftest import EXAMPLES, ROOT

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
POLICY = {"type": "responses_api_models", "name": "policy"}
JUDGE = {"type": "responses_api_models", "name": "judge"}


def responses_call(call_id, *, index=0, started=100.0, tools=0, response=True, ref=POLICY, **extra):
    output = [{"type": "reasoning", "id": f"rs_{call_id}", "summary": [{"type": "summary_text", "text": "think"}]}]
    output += [{"type": "function_call", "call_id": f"c{i}", "name": "bash", "arguments": "{}"} for i in range(tools)]
    output += [] if tools else [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]
    return {
        "model_call_id": call_id,
        "response_id": f"resp_{call_id}",
        "call_index": index,
        "model_ref": ref,
        "dialect": "responses",
        "status_code": 200,
        "started_at": started,
        "completed_at": None if started is None else started + 1,
        "tokens_in": 10,
        "tokens_out": 5,
        "tokens_total": 15,
        "latency_total_ms": 1000.0,
        "request": {"input": [{"role": "user", "content": "hi"}]},
        "response": {"id": f"resp_{call_id}", "status": "completed", "output": output} if response else None,
        **extra,
    }


def invocation(invocation_id, *refs, **extra):
    return {
        "kind": "agent_invocation",
        "invocation_id": invocation_id,
        "status": "completed",
        "model_calls": [r if isinstance(r, dict) else {"model_call_id": r} for r in refs],
        "conversation": [{"role": "user", "content": "hi"}],
        **extra,
    }


def compaction(invocation_id, helpers=(), before=None, after=None):
    return {
        "kind": "context_compaction",
        "invocation_id": invocation_id,
        "outcome": "completed",
        "model_calls": [{"model_call_id": h} for h in helpers],
        "before_model_call": {"model_call_id": before} if before else None,
        "after_model_call": {"model_call_id": after} if after else None,
    }


def row(calls, records=(), verifiers=None, **extra):
    out = {
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "ng_model_call_capture": {"rollout_id": "3-1", "metrics": {"num_calls": len(calls)}, "calls": list(calls)},
        **extra,
    }
    if records:
        out["ng_agent_observations"] = {"source": "test", "records": list(records), "gaps": []}
    if verifiers is not None:
        out["ng_verifier_invocations"] = verifiers
    return out


def outcome(b, call_id):
    (entry,) = [e for e in b.ledger.calls if e.model_call_id == call_id]
    return entry


def claims(entry):
    return sorted((c.kind, c.owner, c.pointer) for c in entry.claims)


def assert_valid(b):
    assert schemas.validator("trajectory").is_valid(b.trajectory), list(
        schemas.validator("trajectory").iter_errors(b.trajectory)
    )[:3]
    b.record()


# -- dialects --------------------------------------------------------------------------------


def test_responses_dialect():
    request = {"input": [{"role": "user", "content": "q"}, {"type": "message", "role": "user", "content": "r"}]}
    response = {
        "output": [
            {"type": "reasoning", "id": "rs", "summary": []},
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"},
            "junk",
        ]
    }
    content = turn_content(request, response)
    assert content.question == [
        {"role": "user", "content": "q", "type": "message"},
        {"type": "message", "role": "user", "content": "r"},
    ]
    assert content.reasoning == [response["output"][0]]
    assert content.answer == response["output"][1:3]
    assert content.tool_calls == 2 and content.dialect == "responses"
    assert "type" not in request["input"][0]  # the row is never modified


def test_chat_dialect():
    message = {"role": "assistant", "content": None, "reasoning_content": "r", "tool_calls": [{"id": "1"}]}
    content = turn_content({"messages": [{"role": "user", "content": "q"}]}, {"choices": [{"message": message}]})
    assert content.question == [{"role": "user", "content": "q"}]
    assert content.reasoning == "r"
    assert content.answer == {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}
    assert content.tool_calls == 1
    alt = turn_content({}, {"choices": [{"message": {"content": "a", "reasoning": "why"}}]})
    assert alt.reasoning == "why" and alt.answer == {"content": "a"} and alt.tool_calls == 0
    broken = turn_content({}, {"choices": [{"message": "a string"}]})
    assert broken.answer is None and broken.tool_calls == 0


def test_anthropic_messages_dialect():
    blocks = [
        {"type": "thinking", "thinking": "Use the tool.", "signature": "s"},
        {"type": "redacted_thinking", "data": "xx"},
        {"type": "text", "text": "Calculating."},
        {"type": "tool_use", "id": "toolu_1", "name": "calc", "input": {"expr": "17*3"}},
        {"type": "tool_use", "id": "toolu_2", "name": "calc", "input": {}},
    ]
    request = {"system": "sys", "messages": [{"role": "user", "content": "What is 17*3?"}]}
    content = turn_content(request, {"type": "message", "content": blocks, "stop_reason": "tool_use"})
    assert content.question == request["messages"]  # system is not part of the question
    assert content.reasoning == blocks[:2]
    assert content.answer == blocks[2:]
    assert content.tool_calls == 2 and content.dialect == "messages"


def test_unrecognized_and_raw_responses_are_hollow():
    assert turn_content("raw request", "raw response text")[:4] == ("raw request", None, None, 0)
    assert turn_content({"input": "x"}, {"weird": 1}).answer is None


def test_anthropic_turn_counts_its_tools_in_step_count():
    def messages_call(call_id, tools, started):
        blocks = [{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "x"}]
        blocks += [{"type": "tool_use", "id": f"{call_id}-{i}", "name": "bash", "input": {}} for i in range(tools)]
        return {
            "model_call_id": call_id, "response_id": f"msg_{call_id}", "call_index": 0, "model_ref": POLICY,
            "dialect": "messages", "started_at": started,
            "request": {"messages": [{"role": "user", "content": "go"}]},
            "response": {"type": "message", "content": blocks, "stop_reason": "tool_use"},
        }

    b = build(row([messages_call("m1", 2, 1.0), messages_call("m2", 1, 2.0), messages_call("m3", 0, 3.0)],
                  [invocation("root", "m1", "m2", "m3")]))
    turns = b.trajectory["turns"]
    assert [t["step_count"] for t in turns] == [0, 2, 3]
    assert turns[0]["reasoning_content"] == [{"type": "thinking", "thinking": "t"}]
    assert turns[0]["answer"][0] == {"type": "text", "text": "x"}
    assert_valid(b)


# -- the ownership outcome table -----------------------------------------------------------------


def test_unclaimed_call_is_no_turn_and_gets_the_ownership_gap():
    b = build(row([responses_call("a")], [invocation("root")]))
    assert outcome(b, "a").outcome == "unowned" and b.trajectory["turns"] == []
    assert {"code": "model_call_ownership_unavailable", "invocation_id": None, "detail": "capture:a:call_index=0"} in b.trajectory["gaps"]
    assert_valid(b)


def test_agent_only_claim_is_a_turn():
    b = build(row([responses_call("a")], [invocation("root", "a")]))
    entry = outcome(b, "a")
    assert entry.outcome == "turn" and entry.owner == "root"
    assert claims(entry) == [("agent", "root", "/ng_agent_observations/records/0/model_calls/0")]
    (turn,) = b.trajectory["turns"]
    assert turn["model_calls"] == [{"model_call_id": "a", "model_ref": POLICY, "response_id": "resp_a"}]
    assert (turn["invocation_id"], turn["turn_no"], turn["task_id"], turn["rollout_id"]) == ("root", 1, "3", "3-1")
    assert_valid(b)


def test_two_agent_claims_keep_both_and_resolve_deterministically():
    by_pair = {"model_ref": POLICY, "response_id": "resp_a"}
    b = build(row([responses_call("a")], [invocation("first", by_pair), invocation("second", by_pair)]))
    entry = outcome(b, "a")
    assert entry.agent_owners() == ["first", "second"]
    assert entry.owner == "first"  # a later claim by (model_ref, response_id) does not take the turn
    assert {"code": "model_call_reference_conflict", "invocation_id": "second", "detail": "a"} in b.trajectory["gaps"]
    b = build(row([responses_call("a")], [invocation("first", by_pair), invocation("second", "a")]))
    assert outcome(b, "a").owner == "second"  # ... one naming the model_call_id does (as NeMo Gym 0.7.0)
    assert len(b.trajectory["turns"]) == 1


def test_compaction_helper_of_the_same_invocation_is_no_turn_but_stays_owned():
    calls = [responses_call("a", started=1), responses_call("h", started=2), responses_call("b", started=3)]
    b = build(row(calls, [invocation("root", "a", "h", "b"), compaction("root", ["h"], before="a", after="b")]))
    helper = outcome(b, "h")
    assert helper.outcome == "compaction-helper"
    assert claims(helper) == [
        ("agent", "root", "/ng_agent_observations/records/0/model_calls/1"),
        ("compaction", "root", "/ng_agent_observations/records/1/model_calls/0"),
    ]
    assert [t["model_calls"][0]["model_call_id"] for t in b.trajectory["turns"]] == ["a", "b"]
    assert [t["turn_no"] for t in b.trajectory["turns"]] == [1, 2]
    assert {c.kind for c in outcome(b, "a").claims} == {"agent", "compaction-before"}
    assert not [g for g in b.trajectory["gaps"] if g["code"].startswith("model_call_reference")]
    assert_valid(b)


def test_compaction_of_one_invocation_claimed_by_another_is_no_turn_and_visible():
    calls = [responses_call("a"), responses_call("h", started=200)]
    b = build(row(calls, [invocation("A", "a"), invocation("B", "h"), compaction("A", ["h"])]))
    helper = outcome(b, "h")
    assert helper.outcome == "compaction-helper"
    assert claims(helper) == [
        ("agent", "B", "/ng_agent_observations/records/1/model_calls/0"),
        ("compaction", "A", "/ng_agent_observations/records/2/model_calls/0"),
    ]
    assert {"code": "model_call_reference_conflict", "invocation_id": "A", "detail": "model_calls:h"} in b.trajectory["gaps"]


def test_compaction_only_claim_is_no_turn():
    b = build(row([responses_call("a"), responses_call("h")], [invocation("A", "a"), compaction("A", ["h"])]))
    assert outcome(b, "h").outcome == "compaction-helper"
    assert {"code": "model_call_ownership_unavailable", "invocation_id": "A", "detail": "model_calls:h"} in b.trajectory["gaps"]


def test_verifier_only_claim_is_no_turn():
    verifiers = [{"invocation_id": "v", "model_calls": [{"model_call_id": "j"}]}]
    b = build(row([responses_call("a"), responses_call("j", ref=JUDGE)], [invocation("A", "a")], verifiers))
    entry = outcome(b, "j")
    assert entry.outcome == "verifier"
    assert claims(entry) == [("verifier", "v", "/ng_verifier_invocations/0/model_calls/0")]
    assert len(b.trajectory["turns"]) == 1


def test_verifier_precedence_over_an_agent_claim_keeps_both():
    b = build(row([responses_call("j", verifier_invocation_id="v")], [invocation("A", "j")]))
    entry = outcome(b, "j")
    assert entry.outcome == "verifier" and b.trajectory["turns"] == []
    assert claims(entry) == [
        ("agent", "A", "/ng_agent_observations/records/0/model_calls/0"),
        ("verifier", "v", "/ng_model_call_capture/calls/0/verifier_invocation_id"),
    ]
    # the agent's reference is not removed from its invocation
    assert b.trajectory["invocations"][0]["model_calls"][0]["model_call_id"] == "j"


def test_verifier_and_compaction_claims_on_one_call_are_all_kept():
    verifiers = [{"invocation_id": "v", "model_calls": [{"model_call_id": "x"}]}]
    b = build(row([responses_call("x")], [invocation("A", "x"), compaction("A", ["x"])], verifiers))
    entry = outcome(b, "x")
    assert entry.outcome == "verifier"
    assert {c.kind for c in entry.claims} == {"agent", "compaction", "verifier"}
    assert b.trajectory["turns"] == []


# -- references --------------------------------------------------------------------------------


def test_unmatched_ambiguous_and_unjoinable_references_are_kept():
    twin, twin2 = responses_call("dup-a"), responses_call("dup-b")
    twin["response_id"] = twin2["response_id"] = "resp_same"
    refs = ["missing", {"model_ref": POLICY, "response_id": "resp_same"}]
    # B's reference can never join, so B fails its schema: its claim is kept, flagged invalid.
    b = build(row([twin, twin2], [invocation("A", *refs), invocation("B", {"response_id": "resp_same"})]))
    reasons = {(u.reason, u.claim.pointer, u.candidates, u.claim.valid) for u in b.ledger.unresolved}
    assert reasons == {
        ("unmatched", "/ng_agent_observations/records/0/model_calls/0", (), True),
        ("ambiguous", "/ng_agent_observations/records/0/model_calls/1", (0, 1), True),
        ("unjoinable", "/ng_agent_observations/records/1/model_calls/0", (), False),
    }
    codes = {(g["code"], g["detail"]) for g in b.trajectory["gaps"]}
    assert ("model_call_reference_unmatched", "missing") in codes
    assert ("model_call_reference_ambiguous", "resp_same") in codes


def test_session_header_claims_the_call_for_its_invocation():
    b = build(row([responses_call("a", client_session_id="root")], [invocation("root")]))
    entry = outcome(b, "a")
    assert entry.outcome == "turn" and entry.owner == "root"
    assert claims(entry) == [("session", "root", "/ng_model_call_capture/calls/0/client_session_id")]
    assert b.trajectory["invocations"][0]["model_calls"] == [
        {"model_call_id": "a", "model_ref": POLICY, "response_id": "resp_a"}
    ]


def test_join_canonicalizes_observed_references():
    b = build(row([responses_call("a")], [invocation("root", {"model_ref": POLICY, "response_id": "resp_a"})]))
    assert b.trajectory["invocations"][0]["model_calls"] == [
        {"model_call_id": "a", "model_ref": POLICY, "response_id": "resp_a"}
    ]


# -- precedence, counts, resolution ------------------------------------------------------------


def stated(turns, task_id="3", rollout_id="3-1", **extra):
    return {"schema_version": "1.0", "task_id": task_id, "rollout_id": rollout_id, "invocations": [],
            "turns": turns, "model_calls": [], "tool_calls": [], "gaps": [], **extra}


def stated_turn(turn_no, call_id, invocation_id="root", timestamp=1.0, **extra):
    return {"invocation_id": invocation_id, "task_id": "3", "rollout_id": "3-1", "turn_no": turn_no,
            "timestamp": timestamp, "step_count": 0, "model_calls": [{"model_call_id": call_id}], **extra}


def test_stated_turns_take_precedence_over_synthesis():
    r = row([responses_call("a"), responses_call("b", started=5)], [invocation("root", "a", "b")])
    r["ng_trajectory"] = stated([stated_turn(2, "b", timestamp=9.0), stated_turn(1, "a", timestamp=3.0)])
    b = build(r)
    assert [t["turn_no"] for t in b.trajectory["turns"]] == [1, 2]  # sorted by timestamp
    assert [t["answer"] for t in b.trajectory["turns"]] == [None, None]  # as stated, not synthesized
    assert len(b.expected_turns) == 2 and b.expected_turns[0]["answer"] is not None
    assert {c.kind for c in outcome(b, "a").claims} == {"agent", "turn"}
    assert not any(g["code"] == "turns_unavailable" for g in b.trajectory["gaps"])
    assert_valid(b)


def test_stated_identity_mismatch_is_a_gap_and_turns_are_rewritten():
    r = row([responses_call("a")])
    r["ng_trajectory"] = stated([dict(stated_turn(1, "a"), task_id="other")], task_id="other")
    b = build(r)
    assert b.trajectory["gaps"][0] == {"code": "producer_trajectory_identity_mismatch", "invocation_id": None, "detail": "task_id"}
    assert b.trajectory["turns"][0]["task_id"] == "3"


def test_invalid_stated_trajectory_keeps_its_valid_parts():
    r = row([responses_call("a")])
    r["ng_trajectory"] = stated([stated_turn(1, "a"), stated_turn(0, "a", invocation_id="bad")])
    b = build(r)
    assert b.trajectory["gaps"][0]["code"] == "producer_trajectory_invalid"
    assert [t["turn_no"] for t in b.trajectory["turns"]] == [1]
    assert b.evidence.excluded == ["/ng_trajectory/turns/1"]
    assert_valid(b)


def test_step_count_is_exclusive_and_per_invocation_and_resolved_goes_last():
    calls = [responses_call("a", started=1, tools=2), responses_call("s", started=2, tools=1),
             responses_call("b", started=3, tools=1), responses_call("c", started=4)]
    r = row(calls, [invocation("root", "a", "b", "c"), invocation("sub", "s", parent_invocation_id="root")], resolved=True)
    turns = build(r).trajectory["turns"]
    assert [(t["invocation_id"], t["turn_no"], t["step_count"]) for t in turns] == [
        ("root", 1, 0), ("sub", 1, 0), ("root", 2, 2), ("root", 3, 3)
    ]
    assert [t["resolved"] for t in turns] == [None, None, None, True]


def test_call_without_response_is_no_turn_and_timestamp_falls_back():
    calls = [responses_call("a", response=False), responses_call("b", started=None)]
    calls[1]["completed_at"] = None
    b = build(row(calls, [invocation("root", "a", "b")]))
    assert outcome(b, "a").outcome == "no-response"
    assert [t["timestamp"] for t in b.trajectory["turns"]] == [0.0]


# -- robustness --------------------------------------------------------------------------------


def test_one_invalid_record_does_not_discard_the_bundle():
    records = [invocation("root", "a"), {"kind": "tool_call", "invocation_id": "root", "tool_call_id": "t", "status": "done"},
               {"kind": "turn"}]
    b = build(row([responses_call("a")], records))
    assert b.trajectory["gaps"][0]["code"] == "agent_observations_invalid"
    assert len(b.trajectory["turns"]) == 1
    assert b.evidence.excluded == ["/ng_agent_observations/records/1", "/ng_agent_observations/records/2"]
    assert_valid(b)


def test_empty_row_builds_an_empty_trajectory_with_availability_gaps():
    b = build({"_ng_task_index": 0, "_ng_rollout_index": 0})
    assert b.trajectory["turns"] == [] and b.trajectory["model_calls"] == []
    assert [g["code"] for g in b.trajectory["gaps"]] == ["model_calls_unavailable", "turns_unavailable", "conversation_unavailable"]
    assert_valid(b)


def test_negative_and_malformed_capture_values_do_not_break_the_build():
    call = responses_call("a", tokens_in=-5, tokens_out=True, latency_total_ms=-1.0, latency_ttft_ms="fast", model_ref="policy")
    b = build(row([call], [invocation("root", "a")]))
    (mc,) = b.trajectory["model_calls"]
    assert mc["token_stats"]["prompt_tokens"] is None and mc["token_stats"]["completion_tokens"] is None
    assert mc["duration_ms"] is None and mc["response_metadata"]["latency_ttft_ms"] is None
    assert_valid(b)


@pytest.mark.parametrize("value", [None, "string", 5, [1, 2], {"records": "x"}, {"calls": [1, None, "x"]}])
def test_malformed_sections_never_raise(value):
    r = {"_ng_task_index": 0, "_ng_rollout_index": 0}
    for key in ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory", "ng_verifier_invocations"):
        r[key] = value
    assert_valid(build(r))


# -- on real rows ------------------------------------------------------------------------------


def _rows(path):
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@pytest.mark.parametrize("source", [SAMPLES, EXAMPLES / "clean.jsonl"], ids=["samples", "examples"])
def test_real_rows_build_valid_trajectories_without_touching_the_row(source):
    for r in _rows(source):
        before = copy.deepcopy(r)
        b = build(r)
        assert r == before
        assert_valid(b)


def persist(r):
    """What NeMo Gym's collector writes: the built trajectory, the joined bundle, payloads stripped."""
    b = build(r)
    out = copy.deepcopy(r)
    out["ng_trajectory"] = b.trajectory
    if "ng_agent_observations" in out:
        bundle = out["ng_agent_observations"]
        built = {inv["invocation_id"]: inv for inv in b.trajectory["invocations"]}
        bundle["records"] = [
            built.get(rec.get("invocation_id"), rec) if rec.get("kind") == "agent_invocation" else rec
            for rec in bundle["records"]
        ]
    for call in out.get("ng_model_call_capture", {}).get("calls", []):
        for key in ("request", "response", "request_raw", "response_raw"):
            call.pop(key, None)
    return out


def test_building_a_persisted_row_reproduces_it():
    for r in _rows(SAMPLES) + _rows(EXAMPLES / "clean.jsonl"):
        persisted = persist(r)
        again = build(persisted)
        assert again.trajectory == persisted["ng_trajectory"]
        assert persist(persisted)["ng_trajectory"] == persisted["ng_trajectory"]


@pytest.mark.parametrize(
    "line",
    [
        '{"_ng_task_index":0,"_ng_rollout_index":0,"ng_trajectory":{"task_id":"0","rollout_id":"0-0","invocations":1}}',
        '{"_ng_task_index":0,"_ng_rollout_index":0,"ng_trajectory":{"task_id":"0","rollout_id":"0-0","turns":1}}',
        '{"_ng_task_index":0,"_ng_rollout_index":0,"ng_model_call_capture":{"rollout_id":"0-0","calls":[{"model_call_id":"a",'
        '"call_index":0,"response":{"content":[{"type":{}}]}}]},"ng_agent_observations":{"source":"t","records":'
        '[{"kind":"agent_invocation","invocation_id":"r","model_calls":[{"model_call_id":"a"}]}]}}',
        '{"_ng_task_index":0,"_ng_rollout_index":0,"ng_agent_observations":{"source":"t","records":[{"kind":"agent_invocation",'
        '"invocation_id":"r","conversation":[{"type":"function_call_output","call_id":[1],"output":"x"}]},'
        '{"kind":"tool_call","invocation_id":"r","tool_call_id":"t"}]}}',
    ],
    ids=["invocations-not-a-list", "turns-not-a-list", "unhashable-block-type", "unhashable-call-id"],
)
def test_wrongly_typed_containers_never_raise(line):
    assert_valid(build(orjson.loads(line)))
