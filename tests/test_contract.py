"""The typed contract accepts what NeMo Gym writes and rejects what NeMo Gym's models reject."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from trajlint.contract import (
    AgentInvocation,
    AgentObservationBundle,
    ContextCompactionObservation,
    ModelCallCapture,
    ModelCallRecord,
    ModelCallRef,
    ModelServerRef,
    ObservationGap,
    ObservationModel,
    RolloutRow,
    SandboxObservation,
    ToolCallObservation,
    TrajectoryModelCall,
    TrajectoryRecord,
    TrajectoryResponseMetadata,
    TrajectoryTokenStats,
    TrajectoryToolCall,
    TrajectoryTurn,
    VerifierInvocation,
    VerifierInvocations,
)

SAMPLES = Path(__file__).parent / "data" / "contract" / "clean-rollouts.jsonl"
SECTION_MODELS: dict[str, type[BaseModel]] = {
    "ng_model_call_capture": ModelCallCapture,
    "ng_agent_observations": AgentObservationBundle,
    "ng_trajectory": TrajectoryRecord,
    "ng_verifier_invocations": VerifierInvocations,
}
POLICY = {"type": "responses_api_models", "name": "policy_model"}


def _rows() -> list[dict[str, Any]]:
    with SAMPLES.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


ROWS = _rows()


def _sections() -> list[Any]:
    return [
        pytest.param(key, row[key], id=f"row{index}-{key}")
        for index, row in enumerate(ROWS)
        for key in SECTION_MODELS
        if key in row
    ]


def _rejects(model: type[BaseModel], data: Any, expected: str) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    assert expected in str(caught.value), str(caught.value)
    return caught.value


def _error_types(error: ValidationError) -> set[str]:
    return {detail["type"] for detail in error.errors()}


# --- the samples ---------------------------------------------------------------------------------


def test_samples_cover_every_section():
    assert len(ROWS) == 24
    present = {key for row in ROWS for key in SECTION_MODELS if key in row}
    assert present == set(SECTION_MODELS)


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_every_sample_row_validates(index):
    row = RolloutRow.model_validate(ROWS[index])
    assert row.task_index == ROWS[index]["_ng_task_index"]
    # Agent result keys are kept, not dropped.
    assert row.model_extra is not None and "response" in row.model_extra


@pytest.mark.parametrize(("key", "section"), _sections())
def test_every_sample_section_validates(key, section):
    SECTION_MODELS[key].model_validate(section)


def test_sample_records_of_every_kind_parse_to_their_model():
    kinds: dict[type, int] = {}
    for row in ROWS:
        if "ng_agent_observations" in row:
            for record in AgentObservationBundle.model_validate(row["ng_agent_observations"]).records:
                kinds[type(record)] = kinds.get(type(record), 0) + 1
    assert set(kinds) == {AgentInvocation, ToolCallObservation, ContextCompactionObservation, SandboxObservation}


def _extends(dumped: Any, given: Any) -> bool:
    """Whether `dumped` is `given` with keys added (at any depth), none changed."""
    if isinstance(given, dict):
        return isinstance(dumped, dict) and all(key in dumped and _extends(dumped[key], value) for key, value in given.items())
    if isinstance(given, list):
        return isinstance(dumped, list) and len(dumped) == len(given) and all(map(_extends, dumped, given))
    return dumped == given


def _without_conversations(trajectory: dict[str, Any]) -> dict[str, Any]:
    return {**trajectory, "invocations": [{**inv, "conversation": None} for inv in trajectory["invocations"]]}


def test_persisted_trajectory_round_trips():
    for row in ROWS:
        if "ng_trajectory" in row:
            dumped = TrajectoryRecord.model_validate(row["ng_trajectory"]).model_dump(mode="json")
            assert _without_conversations(dumped) == _without_conversations(row["ng_trajectory"])
            # Conversation items come back as NeMo Gym writes them: every key kept, defaults added.
            for inv, written in zip(dumped["invocations"], row["ng_trajectory"]["invocations"], strict=True):
                assert _extends(inv["conversation"], written["conversation"])


def test_trajectories_nemo_gym_wrote_round_trip_exactly():
    real = Path(__file__).parent / "data"
    files = sorted((real / "real" / "nemo-gym-0.7.0-writers").glob("*.jsonl")) + [real / "nemo-gym-0.7-persisted.jsonl"]
    trajectories = [
        row["ng_trajectory"]
        for path in files
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if isinstance(row.get("ng_trajectory"), dict)
    ]
    assert sum(len(inv["conversation"]) for t in trajectories for inv in t["invocations"]) > 0
    for trajectory in trajectories:
        assert TrajectoryRecord.model_validate(trajectory).model_dump(mode="json") == trajectory


# --- ModelServerRef and ModelCallRef -------------------------------------------------------------


def test_model_server_ref_ignores_unknown_keys_and_checks_type():
    assert ModelServerRef.model_validate({**POLICY, "port": 8000}) == ModelServerRef(**POLICY)
    _rejects(ModelServerRef, {"type": "responses_api_agents", "name": "x"}, "literal_error")


@pytest.mark.parametrize(
    "ref",
    [
        {"model_call_id": "abc"},
        {"model_call_id": "abc", "model_ref": None, "response_id": None},
        {"model_ref": POLICY, "response_id": "resp_1"},
        {"model_call_id": "", "model_ref": POLICY, "response_id": "resp_1"},
        {"model_call_id": "abc", "response_id": ""},
    ],
)
def test_model_call_ref_join_key_rule_accepts(ref):
    ModelCallRef.model_validate(ref)


@pytest.mark.parametrize(
    "ref",
    [
        {},
        {"response_id": "resp_1"},
        {"model_ref": POLICY},
        {"model_call_id": ""},
        {"model_call_id": None, "model_ref": None, "response_id": "resp_1"},
        {"model_ref": POLICY, "response_id": ""},
        {"model_call_id": "", "model_ref": POLICY, "response_id": ""},
    ],
)
def test_model_call_ref_join_key_rule_rejects(ref):
    _rejects(ModelCallRef, ref, "non-empty model_call_id")


def test_model_call_ref_forbids_unknown_keys():
    _rejects(ModelCallRef, {"model_call_id": "abc", "call_index": 0}, "extra_forbidden")


def test_join_key_rule_applies_wherever_a_ref_stands():
    _rejects(AgentInvocation, {"invocation_id": "a", "model_calls": [{"response_id": "r"}]}, "model_calls.0")
    _rejects(
        TrajectoryTurn,
        {"invocation_id": "a", "task_id": "t", "rollout_id": "r", "turn_no": 1, "timestamp": 0.0,
         "step_count": 0, "model_calls": [{}]},
        "model_calls.0",
    )
    _rejects(VerifierInvocation, {"invocation_id": "v", "model_calls": [{"model_ref": POLICY}]}, "model_calls.0")
    _rejects(
        ContextCompactionObservation,
        {"invocation_id": "a", "before_model_call": {"model_call_id": ""}},
        "before_model_call",
    )


def test_observation_gap_requires_code():
    ObservationGap.model_validate({"code": "turns_unavailable"})
    _rejects(ObservationGap, {"detail": "x"}, "code")
    _rejects(ObservationGap, {"code": "x", "severity": "high"}, "extra_forbidden")


# --- tool calls ----------------------------------------------------------------------------------


def _tool(**fields: Any) -> dict[str, Any]:
    return {"invocation_id": "a", "tool_call_id": "call_1", **fields}


@pytest.mark.parametrize("model", [ToolCallObservation, TrajectoryToolCall])
def test_tool_timing_order(model):
    model.model_validate(_tool(started_at=10.0, completed_at=10.0))
    model.model_validate(_tool(started_at=10.0))
    model.model_validate(_tool(completed_at=10.0))
    _rejects(model, _tool(started_at=10.5, completed_at=10.0), "before started_at")


def test_tool_observation_has_no_output_but_trajectory_tool_does():
    _rejects(ToolCallObservation, _tool(output="ok"), "extra_forbidden")
    tool = TrajectoryToolCall.model_validate(_tool(output={"stdout": "ok"}))
    assert tool.kind == "tool_call" and tool.output == {"stdout": "ok"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"status": "succeeded"}, "literal_error"),
        ({"timing_source": "wall_clock"}, "literal_error"),
        ({"kind": "tool"}, "literal_error"),
        ({"duration_ms": -0.5}, "greater_than_equal"),
    ],
)
def test_tool_literals_and_bounds(fields, expected):
    _rejects(ToolCallObservation, _tool(**fields), expected)


# --- the bundle ----------------------------------------------------------------------------------


def _invocation(invocation_id: str, parent: str | None = None) -> dict[str, Any]:
    return {"kind": "agent_invocation", "invocation_id": invocation_id, "parent_invocation_id": parent}


def _bundle(*records: dict[str, Any]) -> dict[str, Any]:
    return {"source": "test", "records": list(records)}


def test_bundle_invocation_ids_unique():
    _rejects(AgentObservationBundle, _bundle(_invocation("a"), _invocation("a")), "not unique: 'a'")


def test_bundle_invocation_id_may_repeat_across_record_kinds():
    AgentObservationBundle.model_validate(
        _bundle(_invocation("a"), {"kind": "tool_call", **_tool()}, {"kind": "tool_call", **_tool()})
    )


@pytest.mark.parametrize(
    "records",
    [
        [_invocation("a", parent="a")],
        [_invocation("a", parent="b"), _invocation("b", parent="a")],
        [_invocation("root"), _invocation("a", parent="c"), _invocation("b", parent="a"), _invocation("c", parent="b")],
    ],
    ids=["self-parent", "two-cycle", "three-cycle"],
)
def test_bundle_parent_cycle(records):
    _rejects(AgentObservationBundle, _bundle(*records), "forms a cycle")


def test_bundle_parent_missing_from_bundle_is_allowed():
    AgentObservationBundle.model_validate(
        _bundle(_invocation("child", parent="not-observed"), _invocation("grandchild", parent="child"))
    )


def test_bundle_shared_parent_is_not_a_cycle():
    AgentObservationBundle.model_validate(
        _bundle(_invocation("root"), _invocation("a", parent="root"), _invocation("b", parent="root"))
    )


@pytest.mark.parametrize("kind", ["turn", "model_call", None])
def test_bundle_rejects_unknown_record_kind(kind):
    record = {"invocation_id": "a"} if kind is None else {"kind": kind, "invocation_id": "a"}
    error = _rejects(AgentObservationBundle, _bundle(record), "records.0")
    assert _error_types(error) <= {"union_tag_invalid", "union_tag_not_found"}


def test_bundle_record_fields_checked_by_kind():
    _rejects(AgentObservationBundle, _bundle({"kind": "sandbox", "role": "judge"}), "literal_error")
    _rejects(AgentObservationBundle, _bundle({"kind": "sandbox"}), "role")
    _rejects(
        AgentObservationBundle,
        _bundle({"kind": "context_compaction", "invocation_id": "a", "tokens_before": -1}),
        "greater_than_equal",
    )


def test_bundle_requires_source_and_forbids_unknown_keys():
    _rejects(AgentObservationBundle, {"records": []}, "source")
    _rejects(AgentObservationBundle, {"source": "x", "version": 2}, "extra_forbidden")


def test_compaction_token_counts_have_no_order():
    ContextCompactionObservation.model_validate({"invocation_id": "a", "tokens_before": 10, "tokens_after": 20})


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        (AgentInvocation, {"invocation_id": "a", "status": "done"}, "literal_error"),
        (AgentInvocation, {"invocation_id": "a", "duration_ms": -1}, "greater_than_equal"),
        (SandboxObservation, {"role": "agent", "outcome": "killed"}, "literal_error"),
        (SandboxObservation, {"role": "agent", "peak_memory_mib": -1}, "greater_than_equal"),
        (SandboxObservation, {"role": "agent", "wall_time_s": -1}, "greater_than_equal"),
        (SandboxObservation, {"role": "agent", "cpu_time_s": -1}, "greater_than_equal"),
        (ContextCompactionObservation, {"invocation_id": "a", "outcome": "ok"}, "literal_error"),
        (ContextCompactionObservation, {"invocation_id": "a", "tokens_after": -3}, "greater_than_equal"),
    ],
)
def test_record_literals_and_bounds(model, data, expected):
    _rejects(model, data, expected)


def test_conversation_items_are_typed_as_nemo_gym_reads_them():
    # A typeless object that looks like nothing NeMo Gym knows is read as an MCP tool listing,
    # whose fields are all optional: accepted, its keys kept.
    invocation = AgentInvocation.model_validate({"invocation_id": "a", "conversation": [{"role": "tool", "whatever": [1, 2]}]})
    assert invocation.conversation[0].model_extra == {"role": "tool", "whatever": [1, 2]}
    _rejects(AgentInvocation, {"invocation_id": "a", "conversation": ["hello"]}, "conversation.0")
    _rejects(AgentInvocation, {"invocation_id": "a", "conversation": [{"type": "reasoning"}]}, "conversation.0.reasoning.id")
    _rejects(AgentInvocation, {"invocation_id": "a", "conversation": [{"type": "bogus"}]}, "union_tag_invalid")


# --- the trajectory ------------------------------------------------------------------------------


def _turn(invocation_id: str = "a", turn_no: int = 1, **fields: Any) -> dict[str, Any]:
    return {"invocation_id": invocation_id, "task_id": "t", "rollout_id": "t-0", "turn_no": turn_no,
            "timestamp": 1.0, "step_count": 0, **fields}


def _trajectory(**fields: Any) -> dict[str, Any]:
    return {"schema_version": "1.0", "task_id": "t", "rollout_id": "t-0", **fields}


def test_trajectory_defaults():
    record = TrajectoryRecord.model_validate({"task_id": "t", "rollout_id": "r"})
    assert record.schema_version == "1.0" and record.turns == [] and record.gaps == []
    call = TrajectoryModelCall()
    assert call.response_metadata == TrajectoryResponseMetadata() and call.token_stats == TrajectoryTokenStats()


def test_trajectory_invocation_ids_unique():
    invocations = [{"invocation_id": "a"}, {"invocation_id": "a"}]
    _rejects(TrajectoryRecord, _trajectory(invocations=invocations), "invocation ids are not unique")


def test_trajectory_model_call_ids_unique_but_empty_ids_may_repeat():
    TrajectoryRecord.model_validate(
        _trajectory(model_calls=[{"model_call_id": None}, {"model_call_id": None}, {"model_call_id": ""},
                                 {"model_call_id": ""}, {"model_call_id": "x"}])
    )
    _rejects(
        TrajectoryRecord,
        _trajectory(model_calls=[{"model_call_id": "x"}, {"model_call_id": "y"}, {"model_call_id": "x"}]),
        "model_call_ids are not unique: 'x'",
    )


@pytest.mark.parametrize("field", ["task_id", "rollout_id"])
def test_trajectory_turn_identity(field):
    _rejects(TrajectoryRecord, _trajectory(turns=[_turn(), _turn(turn_no=2, **{field: "other"})]), "turn 1 has")


def test_trajectory_invocation_turn_no_unique():
    TrajectoryRecord.model_validate(_trajectory(turns=[_turn("a", 1), _turn("b", 1), _turn("a", 2)]))
    _rejects(
        TrajectoryRecord, _trajectory(turns=[_turn("a", 1), _turn("a", 1)]), "(invocation_id, turn_no) pairs"
    )


def test_trajectory_does_not_check_parent_cycles():
    invocations = [{"invocation_id": "a", "parent_invocation_id": "a"}]
    TrajectoryRecord.model_validate(_trajectory(invocations=invocations))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_trajectory(schema_version="2.0"), "literal_error"),
        (_trajectory(turns=[_turn(turn_no=0)]), "greater_than_equal"),
        (_trajectory(turns=[_turn(step_count=-1)]), "greater_than_equal"),
        (_trajectory(turns=[_turn(extra_key=1)]), "extra_forbidden"),
        (_trajectory(turns=[{k: v for k, v in _turn().items() if k != "timestamp"}]), "timestamp"),
        (_trajectory(model_calls=[{"duration_ms": -1}]), "greater_than_equal"),
        (_trajectory(model_calls=[{"token_stats": {"prompt_tokens": -1}}]), "greater_than_equal"),
        (_trajectory(model_calls=[{"token_stats": {"tokens": 1}}]), "extra_forbidden"),
        (_trajectory(model_calls=[{"response_metadata": {"response_source": "cache"}}]), "literal_error"),
        (_trajectory(model_calls=[{"response_metadata": {"latency_ttft_ms": -1}}]), "greater_than_equal"),
        (_trajectory(tool_calls=[_tool(started_at=2.0, completed_at=1.0)]), "before started_at"),
        (_trajectory(gaps=[{"code": "x", "note": "y"}]), "extra_forbidden"),
        (_trajectory(perf={}), "extra_forbidden"),
    ],
)
def test_trajectory_rejects(data, expected):
    _rejects(TrajectoryRecord, data, expected)


# --- capture, verifiers, row ---------------------------------------------------------------------


def _capture(**fields: Any) -> dict[str, Any]:
    return {"rollout_id": "0-0", "metrics": {"num_calls": 1}, "calls": [{"call_index": 0}], **fields}


def test_capture_allows_unknown_keys_and_old_rows():
    capture = ModelCallCapture.model_validate(
        _capture(calls=[{"call_index": 0, "output_budget_refit": {"from": 1}}], new_envelope_key=True)
    )
    assert capture.calls[0].model_extra == {"output_budget_refit": {"from": 1}}
    assert capture.gaps == []


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"call_index": -1}, "greater_than_equal"),
        ({}, "call_index"),
        ({"call_index": 0, "tokens_in": -1}, "greater_than_equal"),
        ({"call_index": 0, "cache_creation_tokens": -1}, "greater_than_equal"),
        ({"call_index": 0, "latency_total_ms": -0.01}, "greater_than_equal"),
        ({"call_index": 0, "response_source": "cache"}, "literal_error"),
        ({"call_index": 0, "model_ref": {"name": "x"}}, "model_ref.type"),
        ({"call_index": 0, "tool_calls": ["bash"]}, "tool_calls.0"),
    ],
)
def test_capture_call_rejects(data, expected):
    _rejects(ModelCallRecord, data, expected)


def test_capture_envelope_rejects():
    _rejects(ModelCallCapture, _capture(metrics={}), "num_calls")
    _rejects(ModelCallCapture, _capture(metrics={"num_calls": -1}), "greater_than_equal")
    _rejects(ModelCallCapture, {"metrics": {"num_calls": 0}, "calls": []}, "rollout_id")
    _rejects(ModelCallCapture, _capture(gaps=[{"detail": "x"}]), "gaps.0.code")


def test_verifier_invocation_is_lenient_but_needs_an_id():
    verifier = VerifierInvocation.model_validate({"invocation_id": "v", "graded_in_process": True})
    assert verifier.model_calls == [] and verifier.model_extra == {"graded_in_process": True}
    _rejects(VerifierInvocation, {"verifier_name": "judge"}, "invocation_id")
    _rejects(VerifierInvocation, {"invocation_id": "v", "duration_ms": -1}, "greater_than_equal")
    _rejects(VerifierInvocations, {"invocation_id": "v"}, "list_type")


def _row(**fields: Any) -> dict[str, Any]:
    return {"_ng_task_index": 0, "_ng_rollout_index": 0, **fields}


def test_row_keeps_agent_result_keys():
    row = RolloutRow.model_validate(_row(reward=1.0, task_id=7, _ng_rollout_id="abc.1", _ng_attempt_index=2))
    assert row.model_extra == {"reward": 1.0}
    assert (row.task_id, row.explicit_rollout_id, row.attempt_index) == (7, "abc.1", 2)
    assert row.model_dump(exclude_none=True)["_ng_rollout_id"] == "abc.1"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"_ng_rollout_index": 0}, "_ng_task_index"),
        ({"_ng_task_index": 0}, "_ng_rollout_index"),
        (_row(_ng_task_index=-1), "greater_than_equal"),
        (_row(_ng_attempt_index=-1), "greater_than_equal"),
        (_row(_ng_rollout_id="-starts-with-dash"), "string_pattern_mismatch"),
        (_row(_ng_rollout_id="has/slash"), "string_pattern_mismatch"),
        (_row(agent_ref="simple_agent"), "agent_ref"),
        (_row(_ng_task_id="t1"), "_ng_task_id"),
        (_row(_ng_task_id={"taskset": "s", "task_id": ""}), "string_too_short"),
        (_row(_ng_task_id={"taskset": "s", "task_id": "t", "x": 1}), "extra_forbidden"),
        (_row(_ng_failure_stage="bogus"), "literal_error"),
        (_row(_ng_rollout_id="abc-a1"), "attempt suffix"),
        (_row(ng_trajectory="{}"), "ng_trajectory"),
        (_row(ng_trajectory=None), "must not be null"),
        (_row(ng_model_call_capture=[]), "ng_model_call_capture"),
        (_row(ng_verifier_invocations={}), "ng_verifier_invocations"),
        (_row(resolved="maybe"), "bool_parsing"),
        (_row(_ng_failure_http_status="five hundred"), "int_parsing"),
    ],
)
def test_row_rejects(data, expected):
    _rejects(RolloutRow, data, expected)


def test_row_as_nemo_gym_0_7_writes_it():
    row = RolloutRow.model_validate(_row(
        _ng_task_index="chunk-3:17", agent_ref={"name": "simple_agent"}, ng_agent_observations=None,
        _ng_task_id={"taskset": "arith:demo", "task_id": "arith-001"}, _ng_failure_stage="verification",
        _ng_rollout_id="abc-a0",
    ))
    assert (row.task_index, row.agent_ref.name, row.ng_agent_observations) == ("chunk-3:17", "simple_agent", None)
    assert row.episode_task_id.taskset == "arith:demo"
    assert RolloutRow.model_validate(_row(agent_ref=None)).agent_ref is None


def test_row_sections_are_validated_with_their_models():
    row = copy.deepcopy(next(r for r in ROWS if "ng_trajectory" in r))
    row["ng_trajectory"]["turns"][0]["turn_no"] = 0
    _rejects(RolloutRow, row, "ng_trajectory.turns.0.turn_no")


# --- every observation/trajectory model forbids unknown keys ---------------------------------------

STRICT_MODELS = [
    ModelCallRef, ObservationGap, AgentInvocation, ToolCallObservation, TrajectoryToolCall, SandboxObservation,
    ContextCompactionObservation, AgentObservationBundle, TrajectoryTokenStats, TrajectoryResponseMetadata,
    TrajectoryModelCall, TrajectoryTurn, TrajectoryRecord,
]


@pytest.mark.parametrize("model", STRICT_MODELS, ids=lambda model: model.__name__)
def test_observation_models_forbid_unknown_keys(model):
    assert issubclass(model, ObservationModel)
    assert model.model_config["extra"] == "forbid"


@pytest.mark.parametrize("model", [*STRICT_MODELS, ModelServerRef, ModelCallCapture, ModelCallRecord,
                                   VerifierInvocation, RolloutRow], ids=lambda model: model.__name__)
def test_every_model_and_field_is_documented(model):
    assert model.__doc__ and model.__doc__.strip()
    undocumented = [name for name, field in model.model_fields.items() if not field.description]
    assert undocumented == []
