"""Rows broken on purpose, each break recorded with the line and JSON pointer where it stands.

Every defect is one thing a real rollout file has been seen to get wrong; a defective row is
otherwise clean, so each defect is the only problem on its line (a duplicate identity also makes
the earlier row with that identity part of the finding).
"""

from __future__ import annotations

import random
from typing import Any

import orjson

from . import dialects

DEFECTS = (
    "nan",  # a NaN literal: not JSON
    "truncated-line",  # the line stops mid-row (a partial write)
    "array-line",  # the line holds an array, not a row object
    "negative-token-count",  # a captured call with tokens_out < 0
    "turn-no-zero",  # a trajectory turn numbered 0 (turns count from 1)
    "unknown-key",  # a key the contract forbids (observation tool records have no `output`)
    "duplicate-rollout-identity",  # two rows claim the same (task, rollout)
    "compaction-helper-turn",  # a compaction helper call also claimed by a turn (NeMo Gym 0.7.0 wrote those)
    "agent-claims-verifier-call",  # an agent invocation claims the verifier's judge call
    "unmatched-reference",  # a claim naming a call the capture does not have
    "json-string-section",  # a section written as a JSON string instead of an object
)

_NAN = "__bench_nan__"


def applies(defect: str, kind: str, rollout_index: int) -> bool:
    """Whether a row of this kind can carry the defect (after `requirements` are applied)."""
    if defect == "duplicate-rollout-identity":
        return rollout_index > 0
    if defect == "compaction-helper-turn":
        return kind == "harness"
    if defect in ("turn-no-zero", "unknown-key", "agent-claims-verifier-call", "unmatched-reference"):
        return kind in ("harness", "simple")
    return True


def requirements(defect: str, kind: str) -> dict[str, Any]:
    """What the row must have for the defect to be possible: a trajectory, a compaction, a judge."""
    if defect == "compaction-helper-turn":
        return {"persisted": True, "compaction": True}
    if defect == "turn-no-zero" and kind == "harness":
        return {"persisted": True}
    if defect == "agent-claims-verifier-call":
        return {"min_judges": 1}
    return {}


def _policy_call(row: dict[str, Any], rng: random.Random) -> int:
    calls = row["ng_model_call_capture"]["calls"]
    usable = [i for i, c in enumerate(calls) if c.get("tokens_out") is not None]
    return rng.choice(usable)


def _root_record(row: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    """The root agent invocation and the pointer of its list, in the bundle or the stated trajectory."""
    bundle = row.get("ng_agent_observations")
    if isinstance(bundle, dict):
        for i, record in enumerate(bundle["records"]):
            if record["kind"] == "agent_invocation" and record["parent_invocation_id"] is None:
                return i, record, f"/ng_agent_observations/records/{i}"
    return 0, row["ng_trajectory"]["invocations"][0], "/ng_trajectory/invocations/0"


def _helper_turn(row: dict[str, Any]) -> tuple[str, str]:
    traj = row["ng_trajectory"]
    compaction = next(r for r in row["ng_agent_observations"]["records"] if r["kind"] == "context_compaction")
    helper_ref = compaction["model_calls"][0]
    call = next(c for c in traj["model_calls"] if c["model_call_id"] == helper_ref["model_call_id"])
    question, answer, reasoning = dialects.turn_content(call["response_metadata"]["dialect"], call["request"], call["response"])
    owner = compaction["invocation_id"]
    later = [t for t in traj["turns"] if t["invocation_id"] == owner and t["timestamp"] > call["started_at"]]
    turn = {
        "invocation_id": owner,
        "task_id": traj["task_id"],
        "rollout_id": traj["rollout_id"],
        "turn_no": 0,
        "timestamp": call["started_at"],
        "question": question,
        "answer": answer,
        "reasoning_content": reasoning,
        "resolved": None,
        "step_count": later[0]["step_count"] if later else 0,
        "model_calls": [dict(helper_ref)],
    }
    at = next((i for i, t in enumerate(traj["turns"]) if t["timestamp"] > call["started_at"]), len(traj["turns"]))
    traj["turns"].insert(at, turn)
    numbers: dict[str, int] = {}
    for t in traj["turns"]:  # NeMo Gym 0.7.0 numbers turns per invocation in list order
        numbers[t["invocation_id"]] = numbers.get(t["invocation_id"], 0) + 1
        t["turn_no"] = numbers[t["invocation_id"]]
    return f"/ng_trajectory/turns/{at}/model_calls/0", f"helper call {helper_ref['model_call_id']} made a turn"


def apply(defect: str, row: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """Break the row in place; returns (JSON pointer, detail). Line-level defects happen in `serialize`."""
    if defect in ("truncated-line", "array-line"):
        return "", defect.replace("-", " ")
    if defect == "duplicate-rollout-identity":
        return "/_ng_rollout_index", f"rollout {row['_ng_task_index']}-{row['_ng_rollout_index']} written twice"
    if defect == "nan":
        j = rng.randrange(len(row["ng_model_call_capture"]["calls"]))
        row["ng_model_call_capture"]["calls"][j]["latency_total_ms"] = _NAN
        return f"/ng_model_call_capture/calls/{j}/latency_total_ms", "NaN latency"
    if defect == "negative-token-count":
        j = _policy_call(row, rng)
        call = row["ng_model_call_capture"]["calls"][j]
        call["tokens_out"] = -max(1, call["tokens_out"])
        return f"/ng_model_call_capture/calls/{j}/tokens_out", f"tokens_out {call['tokens_out']}"
    if defect == "turn-no-zero":
        row["ng_trajectory"]["turns"][0]["turn_no"] = 0
        return "/ng_trajectory/turns/0/turn_no", "turn_no 0"
    if defect == "unknown-key":
        bundle = row.get("ng_agent_observations")
        if isinstance(bundle, dict):
            i = next((i for i, r in enumerate(bundle["records"]) if r["kind"] == "tool_call"), None)
            if i is None:
                i, _, _ = _root_record(row)
            bundle["records"][i]["output"] = "1 passed in 0.04s"
            return f"/ng_agent_observations/records/{i}/output", "observation record with `output`"
        row["ng_trajectory"]["turns"][0]["reward"] = 1.0
        return "/ng_trajectory/turns/0/reward", "turn with `reward`"
    if defect == "compaction-helper-turn":
        return _helper_turn(row)
    if defect == "agent-claims-verifier-call":
        calls = row["ng_model_call_capture"]["calls"]
        j = next(i for i, c in enumerate(calls) if c["model_ref"]["name"] == "judge_model")
        judge = calls[j]
        claim = {"model_call_id": judge["model_call_id"], "model_ref": judge["model_ref"], "response_id": judge["response_id"]}
        _, record, base = _root_record(row)
        record["model_calls"].append(claim)
        traj = row.get("ng_trajectory")
        if base.startswith("/ng_agent_observations") and isinstance(traj, dict):
            for inv in traj["invocations"]:  # a persisted row states the claim in both places
                if inv["invocation_id"] == record["invocation_id"]:
                    inv["model_calls"].append(dict(claim))
        return f"{base}/model_calls/{len(record['model_calls']) - 1}", f"claims judge call {judge['model_call_id']}"
    if defect == "unmatched-reference":
        _, record, base = _root_record(row)
        claim = {"model_call_id": None, "model_ref": {"type": "responses_api_models", "name": "policy_model"}, "response_id": "resp_" + f"{rng.getrandbits(192):048x}"}
        record["model_calls"].append(claim)
        return f"{base}/model_calls/{len(record['model_calls']) - 1}", f"no captured call {claim['response_id']}"
    if defect == "json-string-section":
        present = [k for k in ("ng_agent_observations", "ng_trajectory", "ng_verifier_invocations", "ng_model_call_capture") if k in row]
        key = rng.choice(present)
        row[key] = orjson.dumps(row[key]).decode()
        return f"/{key}", f"{key} is a JSON string"
    raise ValueError(f"unknown defect {defect!r}")


def serialize(defect: str | None, row: dict[str, Any], rng: random.Random) -> bytes:
    """The row's line, newline included, with any line-level defect applied."""
    line = orjson.dumps(row)
    if defect == "nan":
        line = line.replace(f'"{_NAN}"'.encode(), b"NaN")
    elif defect == "truncated-line":
        line = line[: int(len(line) * rng.uniform(0.2, 0.9))]
    elif defect == "array-line":
        line = b"[" + line + b"]"
    return line + b"\n"
