"""Property tests: on well-typed but adversarial evidence the build never raises, stays valid,
keeps every claim, and never makes a turn of a compaction helper or a verifier-owned call."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint.builder import build
from trajlint.builder.ledger import OUTCOME_TURN
from trajlint.contract import schemas

IDS = st.sampled_from(["a", "b", "c", "d", ""])
SERVERS = st.sampled_from([{"type": "responses_api_models", "name": "policy"}, {"type": "responses_api_models", "name": "judge"}])
INVOCATIONS = st.sampled_from(["root", "sub", "other", ""])


@st.composite
def refs(draw):
    kind = draw(st.sampled_from(["id", "pair", "both", "junk"]))
    call = draw(IDS)
    if kind == "id":
        return {"model_call_id": call}
    if kind == "pair":
        return {"model_ref": draw(SERVERS), "response_id": f"r{call}"}
    if kind == "both":
        return {"model_call_id": call, "model_ref": draw(SERVERS), "response_id": draw(st.sampled_from([f"r{call}", "rx"]))}
    return draw(st.sampled_from([{}, {"response_id": "ra"}, None, "a", 3]))


@st.composite
def calls(draw):
    call = draw(IDS)
    response = draw(
        st.sampled_from(
            [
                None,
                "raw text",
                {"output": [{"type": "function_call"}, {"type": "reasoning"}, {"type": "message"}]},
                {"choices": [{"message": {"content": "x", "tool_calls": [{}]}}]},
                {"choices": [{"message": "oops"}]},
                {"content": [{"type": "thinking"}, {"type": "tool_use"}, "junk"]},
            ]
        )
    )
    out = {
        "model_call_id": draw(st.sampled_from([call, None, 7])),
        "response_id": f"r{call}",
        "call_index": draw(st.integers(-1, 5)),
        "model_ref": draw(st.one_of(SERVERS, st.none(), st.just("policy"))),
        "started_at": draw(st.one_of(st.none(), st.floats(-1, 10, allow_nan=False), st.just("soon"))),
        "tokens_in": draw(st.sampled_from([None, -3, 0, 12, True, "7", 1.5])),
        "latency_total_ms": draw(st.sampled_from([None, -1.0, 3.5])),
        "response": response,
        "request": draw(st.sampled_from([None, "raw", {"input": [{"role": "user", "content": "q"}]}, {"messages": []}])),
    }
    if draw(st.booleans()):
        out["client_session_id"] = draw(INVOCATIONS)
    if draw(st.booleans()):
        out["verifier_invocation_id"] = draw(st.sampled_from(["v1", "", None, 5]))
    return out


@st.composite
def records(draw):
    kind = draw(st.sampled_from(["agent_invocation", "agent_invocation", "context_compaction", "tool_call", "turn"]))
    if kind == "agent_invocation":
        return {
            "kind": kind,
            "invocation_id": draw(INVOCATIONS),
            "parent_invocation_id": draw(st.one_of(st.none(), INVOCATIONS)),
            "model_calls": draw(st.lists(refs(), max_size=4)),
            "conversation": draw(st.sampled_from([[], [{"type": "function_call_output", "call_id": "t", "output": "o"}]])),
        }
    if kind == "context_compaction":
        return {
            "kind": kind,
            "invocation_id": draw(INVOCATIONS),
            "model_calls": draw(st.lists(refs(), max_size=2)),
            "before_model_call": draw(st.one_of(st.none(), refs())),
            "after_model_call": draw(st.one_of(st.none(), refs())),
        }
    if kind == "tool_call":
        return {"kind": kind, "invocation_id": draw(INVOCATIONS), "tool_call_id": "t", "status": draw(st.sampled_from(["completed", "unknown", "bogus"]))}
    return {"kind": "turn"}


@st.composite
def rows(draw):
    row = {"_ng_task_index": draw(st.sampled_from([0, 1, "x", None])), "_ng_rollout_index": 0}
    if draw(st.booleans()):
        row["resolved"] = draw(st.sampled_from([True, False, "yes", None]))
    row["ng_model_call_capture"] = {"rollout_id": "0-0", "calls": draw(st.lists(calls(), max_size=6))}
    if draw(st.booleans()):
        row["ng_agent_observations"] = {"source": "prop", "records": draw(st.lists(records(), max_size=6)), "gaps": []}
    if draw(st.booleans()):
        row["ng_verifier_invocations"] = [
            {"invocation_id": draw(st.sampled_from(["v1", "v2"])), "model_calls": draw(st.lists(refs(), max_size=2))}
            for _ in range(draw(st.integers(0, 2)))
        ]
    if draw(st.booleans()):
        row["ng_trajectory"] = {
            "schema_version": "1.0",
            "task_id": "0",
            "rollout_id": "0-0",
            "turns": [
                {"invocation_id": draw(INVOCATIONS), "task_id": "0", "rollout_id": "0-0", "turn_no": draw(st.integers(0, 3)),
                 "timestamp": 1.0, "step_count": 0, "model_calls": draw(st.lists(refs(), max_size=2))}
                for _ in range(draw(st.integers(0, 3)))
            ],
        }
    return row


def input_claims(row):
    """Pointer of every reference dict in the row that claims a call."""
    out = set()
    bundle = row.get("ng_agent_observations") or {}
    for i, rec in enumerate(bundle.get("records", [])):
        base = f"/ng_agent_observations/records/{i}"
        if rec.get("kind") in ("agent_invocation", "context_compaction"):
            out |= {f"{base}/model_calls/{j}" for j in range(len(rec["model_calls"]))}
        if rec.get("kind") == "context_compaction":
            out |= {f"{base}/{k}" for k in ("before_model_call", "after_model_call") if rec.get(k) is not None}
    for i, inv in enumerate(row.get("ng_verifier_invocations", [])):
        out |= {f"/ng_verifier_invocations/{i}/model_calls/{j}" for j in range(len(inv["model_calls"]))}
    for i, turn in enumerate((row.get("ng_trajectory") or {}).get("turns", [])):
        out |= {f"/ng_trajectory/turns/{i}/model_calls/{j}" for j in range(len(turn["model_calls"]))}
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows())
def test_build_is_total_valid_deterministic_and_keeps_every_claim(row):
    before = copy.deepcopy(row)
    first = build(row)
    assert row == before
    assert schemas.validator("trajectory").is_valid(first.trajectory)
    assert build(row).trajectory == first.trajectory

    in_ledger = {c.pointer for e in first.ledger.calls for c in e.claims}
    in_ledger |= {u.claim.pointer for u in first.ledger.unresolved}
    assert input_claims(row) <= in_ledger

    for entry in first.ledger.calls:
        if entry.is_helper or entry.is_verifier_owned:
            assert entry.outcome != OUTCOME_TURN
    turned = [e for e in first.ledger.calls if e.outcome == OUTCOME_TURN]
    if "ng_trajectory" not in row:
        assert len(first.trajectory["turns"]) == len(turned)
