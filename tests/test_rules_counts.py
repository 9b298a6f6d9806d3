"""TL3xx: a bad count is found wherever it stands, with its exact pointer, and reported once."""

from __future__ import annotations

import copy
import json

import pytest

from trajlint.check import countfields
from trajlint.contract import schemas
from trajlint.pointer import resolve, unescape

from .rule_rows import call, compaction, findings, invocation, of, row, trajectory, turn


def full_row() -> dict:
    """A clean row holding every kind of count: capture, observations, trajectory, verifiers."""
    records = [
        invocation("root", "a", duration_ms=2000.0),
        {"kind": "tool_call", "invocation_id": "root", "tool_call_id": "t1", "started_at": 101.0,
         "completed_at": 102.0, "duration_ms": 1000.0, "status": "completed"},
        {"kind": "sandbox", "role": "agent", "wall_time_s": 3.0, "cpu_time_s": 1.5, "peak_memory_mib": 512.0},
        compaction("root"),
    ]
    stated_call = {
        "model_call_id": "a", "started_at": 100.0, "completed_at": 100.5, "duration_ms": 500.0,
        "request": None, "response": None,
        "response_metadata": {"response_id": "resp_a", "latency_ttft_ms": 80.0},
        "token_stats": {"prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 2,
                        "total_tokens": 15, "cached_tokens": 4},
    }
    stated_tool = {"kind": "tool_call", "invocation_id": "root", "tool_call_id": "t1", "started_at": 101.0,
                   "completed_at": 102.0, "duration_ms": 1000.0, "status": "completed", "output": "ok"}
    stated = trajectory([turn("root", 1, "a", step_count=2)], [invocation("root", "a", duration_ms=2000.0)],
                        model_calls=[stated_call], tool_calls=[stated_tool])
    r = row([call("a", cached_tokens=4, tokens_reasoning=2, cache_creation_tokens=0, latency_ttft_ms=80.0)],
            records, ng_trajectory=stated,
            ng_verifier_invocations=[{"invocation_id": "v", "model_calls": [], "started_at": 103.0,
                                      "completed_at": 104.0, "duration_ms": 1000.0}])
    r["ng_model_call_capture"]["metrics"] = {"tokens_in": 10, "tokens_out": 5, "tokens_reasoning": 2,
                                             "tokens_total": 15, "cached_tokens": 4, "latency_total_ms": 500.0,
                                             "num_calls": 1}
    return r


POSITIONS = [ptr for ptr, _, _ in countfields.count_fields(full_row())]


def test_the_full_row_holds_every_count_and_none_is_bad(rules, tmp_path):
    assert len(POSITIONS) == 35
    found = findings([full_row()], rules, tmp_path)
    assert [f for f in found if f.code.startswith(("TL1", "TL3"))] == []


def _with(r: dict, pointer: str, value) -> dict:
    r = copy.deepcopy(r)
    *parents, last = pointer[1:].split("/")
    parent = resolve(r, "/" + "/".join(parents))
    parent[int(last) if isinstance(parent, list) else unescape(last)] = value
    return r


@pytest.mark.parametrize("pointer", POSITIONS)
def test_a_negative_count_is_found_where_it_stands(rules, tmp_path, pointer):
    value = 0 if pointer.endswith("/turn_no") else -1
    found = findings([_with(full_row(), pointer, value)], rules, tmp_path)
    assert [(f.pointer, f.severity) for f in of(found, "negative-count")] == [(pointer, "error")]
    # the schema rules leave it to negative-count: one defect, one finding
    assert [f for f in found if f.pointer == pointer and f.name != "negative-count"] == []


@pytest.mark.parametrize("value", ["7", True, 7.0, 7.5])
@pytest.mark.parametrize("pointer", ["/ng_model_call_capture/calls/0/tokens_in", "/ng_trajectory/turns/0/step_count",
                                     "/ng_agent_observations/records/3/tokens_before"])
def test_a_count_of_the_wrong_kind_is_found_once(rules, tmp_path, value, pointer):
    """A captured count is read raw (anything but an integer is lost); the observations and the
    trajectory are validated leniently, so there only a count NeMo Gym cannot coerce is an error."""
    coerced = value != 7.5 and not pointer.startswith("/ng_model_call_capture/")
    rule = "noncanonical-value" if coerced else "non-integer-count"
    found = findings([_with(full_row(), pointer, value)], rules, tmp_path)
    assert [(f.pointer, f.severity) for f in of(found, rule)] == [(pointer, "warning" if coerced else "error")]
    assert [f for f in found if f.pointer == pointer and f.name != rule] == []


def test_other_wrong_types_stay_with_the_schema(rules, tmp_path):
    pointer = "/ng_model_call_capture/calls/0/tokens_in"
    found = findings([_with(full_row(), pointer, "many")], rules, tmp_path)
    assert [f.name for f in found if f.pointer == pointer] == ["capture-schema"]
    durations = findings([_with(full_row(), "/ng_verifier_invocations/0/duration_ms", "7")], rules, tmp_path)
    assert of(durations, "non-integer-count") == []  # a duration may be fractional; "7" is a schema error


def _schema_bounds() -> set[tuple[str, str]]:
    """(definition, property) of every lower bound in the section schemas."""
    out = set()
    for name in ("model-call-capture", "agent-observations", "trajectory", "verifier-invocations"):
        for definition, schema in schemas.load(name).get("$defs", {}).items():
            for prop, spec in schema.get("properties", {}).items():
                if "minimum" in spec or "exclusiveMinimum" in spec:
                    out.add((definition, prop))
    return out


def test_every_bound_in_the_schemas_is_a_count_the_rules_own():
    table = {
        "ModelCallRecord": countfields.CAPTURE_CALL,
        "CaptureMetrics": countfields.CAPTURE_METRICS,
        "AgentInvocation": countfields.DURATION,
        "ToolCallObservation": countfields.DURATION,
        "TrajectoryToolCall": countfields.DURATION,
        "TrajectoryModelCall": countfields.DURATION,
        "VerifierInvocation": countfields.DURATION,
        "SandboxObservation": countfields.RECORD["sandbox"],
        "ContextCompactionObservation": countfields.RECORD["context_compaction"],
        "TrajectoryTurn": countfields.TURN,
        "TrajectoryTokenStats": countfields.TOKEN_STATS,
        "TrajectoryResponseMetadata": countfields.TTFT,
    }
    owned = {(definition, field.name) for definition, fields in table.items() for field in fields}
    assert _schema_bounds() <= owned, json.dumps(sorted(_schema_bounds() - owned))


def test_short_total_is_reported_once_where_it_was_captured(rules, tmp_path):
    r = full_row()
    r["ng_model_call_capture"]["calls"][0]["tokens_total"] = 12
    r["ng_model_call_capture"]["metrics"]["tokens_total"] = 12
    r["ng_trajectory"]["model_calls"][0]["token_stats"]["total_tokens"] = 12
    (short,) = of(findings([r], rules, tmp_path), "token-total-inconsistent")
    assert short.pointer == "/ng_model_call_capture/calls/0/tokens_total" and short.severity == "warning"
    assert [loc.pointer for loc in short.related] == ["/ng_trajectory/model_calls/0/token_stats/total_tokens"]


def test_reversed_times_by_kind(rules, tmp_path):
    r = full_row()
    r["ng_agent_observations"]["records"][1]["completed_at"] = 100.0  # tool: before its start at 101
    r["ng_trajectory"]["tool_calls"][0]["completed_at"] = 100.0
    r["ng_model_call_capture"]["calls"][0]["completed_at"] = 99.0
    r["ng_verifier_invocations"][0]["completed_at"] = 102.0
    found = of(findings([r], rules, tmp_path), "time-reversed")
    assert [(f.pointer, f.severity) for f in found] == [
        ("/ng_agent_observations/records/1/completed_at", "error"),
        ("/ng_model_call_capture/calls/0/completed_at", "warning"),
        ("/ng_verifier_invocations/0/completed_at", "warning"),
    ]
    assert [loc.pointer for loc in found[0].related] == ["/ng_trajectory/tool_calls/0/completed_at"]
