"""The packaged JSON Schemas: in step with the models, valid, offline, and right about real rows."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import referencing.exceptions
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import Field, create_model

from trajlint.contract import ObservationModel, TrajectoryTurn, schemas
from trajlint.contract import generate as schemagen
from trajlint.contract.data import schemas_dir

SAMPLES = Path(__file__).parent / "data" / "contract" / "clean-rollouts.jsonl"
SECTION_SCHEMAS = {
    "ng_model_call_capture": "model-call-capture",
    "ng_agent_observations": "agent-observations",
    "ng_trajectory": "trajectory",
    "ng_verifier_invocations": "verifier-invocations",
}
CONTRACT_FILES = [
    "common.schema.json",
    "rollout-row.schema.json",
    "model-call-capture.schema.json",
    "agent-observations.schema.json",
    "trajectory.schema.json",
    "verifier-invocations.schema.json",
    "conversation-item.schema.json",
    "report.schema.json",
]
POLICY = {"type": "responses_api_models", "name": "policy_model"}

with SAMPLES.open(encoding="utf-8") as _lines:
    ROWS: list[dict[str, Any]] = [json.loads(line) for line in _lines if line.strip()]


@pytest.fixture
def fresh_caches():
    """Let a test swap the schema directory without leaking cached schemas into other tests."""

    def clear() -> None:
        schemas._load.cache_clear()
        schemas._validator.cache_clear()
        schemas.registry.cache_clear()

    clear()
    yield
    clear()


def _drifted(generated: dict[str, dict]) -> list[str]:
    directory = schemas_dir()
    return [
        name
        for name, schema in generated.items()
        if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != schemagen.dump(schema)
    ]


def _errors(schema_name: str, instance: Any) -> list[tuple[str, str]]:
    """(JSON pointer, keyword) of every error, sorted."""
    found = []
    for error in schemas.validator(schema_name).iter_errors(instance):
        pointer = "".join(f"/{part}" for part in error.absolute_path)
        found.append((pointer, error.validator))
    return sorted(found)


# --- generation ------------------------------------------------------------------------------------


def test_generates_exactly_the_contract_files():
    assert list(schemagen.generate()) == CONTRACT_FILES


def test_committed_schemas_match_the_models():
    drifted = _drifted(schemagen.generate())
    assert not drifted, (
        f"schemas/ is out of date with trajlint.contract ({', '.join(drifted)}); "
        "run `trajlint schema --write` and commit the result"
    )


def test_drift_test_notices_a_removed_field(monkeypatch):
    fields = {name: (field.annotation, field) for name, field in TrajectoryTurn.model_fields.items()}
    del fields["reasoning_content"]
    reduced_turn = create_model("TrajectoryTurn", __base__=ObservationModel, __doc__=TrajectoryTurn.__doc__, **fields)
    record_model, title = schemagen.SECTIONS["trajectory.schema.json"]
    record_fields = {name: (field.annotation, field) for name, field in record_model.model_fields.items()}
    record_fields["turns"] = (list[reduced_turn], Field(default_factory=list, description="Policy turns."))
    reduced_record = create_model(
        "TrajectoryRecord", __base__=ObservationModel, __doc__=record_model.__doc__, **record_fields
    )
    monkeypatch.setitem(schemagen.SECTIONS, "trajectory.schema.json", (reduced_record, title))

    generated = schemagen.generate()
    assert _drifted(generated) == ["trajectory.schema.json"]
    assert "reasoning_content" not in generated["trajectory.schema.json"]["$defs"]["TrajectoryTurn"]["properties"]


def test_write_produces_the_committed_bytes(tmp_path):
    written = schemagen.write(tmp_path / "out")
    assert [path.name for path in written] == CONTRACT_FILES
    for path in written:
        assert path.read_bytes() == (schemas_dir() / path.name).read_bytes()


@pytest.mark.parametrize("file_name", CONTRACT_FILES)
def test_schema_header(file_name):
    schema = schemas.load(file_name)
    assert list(schema)[:4] == ["$schema", "$id", "title", "description"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://trajlint.invalid/schemas/{file_name}"
    assert schema["title"] and schema["description"]


def _walk(node: Any):
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key not in ("const", "enum", "default"):
                yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


@pytest.mark.parametrize("file_name", CONTRACT_FILES)
def test_nullable_simple_types_use_a_type_list(file_name):
    for node in _walk(schemas.load(file_name)):
        for branches in (node.get("anyOf"), node.get("oneOf")):
            if branches and {"type": "null"} in branches:
                others = [branch for branch in branches if branch != {"type": "null"}]
                assert [set(branch) for branch in others] == [{"$ref"}], node


@pytest.mark.parametrize("file_name", CONTRACT_FILES[1:])
def test_shared_definitions_live_only_in_common(file_name):
    defs = schemas.load(file_name).get("$defs", {})
    assert not {"ModelServerRef", "ModelCallRef", "ObservationGap"} & set(defs)


def test_row_references_each_section_by_file():
    properties = schemas.load("rollout-row")["properties"]
    for key, name in SECTION_SCHEMAS.items():
        refs = [branch.get("$ref") for branch in properties[key].get("anyOf", [properties[key]])]
        assert f"{name}.schema.json" in refs


# --- the schemas themselves --------------------------------------------------------------------------


@pytest.mark.parametrize("name", schemas.names())
def test_schema_passes_the_metaschema(name):
    Draft202012Validator.check_schema(schemas.load(name))


def test_names_and_load():
    assert set(schemas.names()) >= {Path(name).name.removesuffix(".schema.json") for name in CONTRACT_FILES}
    assert schemas.load("trajectory") == schemas.load("trajectory.schema.json")
    schemas.load("trajectory")["title"] = "changed"
    assert schemas.load("trajectory")["title"] != "changed"
    with pytest.raises(KeyError, match="no packaged schema named 'nope'"):
        schemas.load("nope")


def test_validator_is_cached_and_checks_no_formats():
    assert schemas.validator("trajectory") is schemas.validator("trajectory.schema.json")
    assert schemas.validator("trajectory").format_checker is None


def test_every_ref_resolves_through_the_registry_alone():
    registry = schemas.registry()
    checked = 0
    for name in schemas.names():
        schema = schemas.load(name)
        resolver = registry.resolver(base_uri=schema["$id"])
        for base, ref in schemas._refs(schema, schema["$id"]):
            assert base == schema["$id"]
            resolved = resolver.lookup(ref).contents
            assert isinstance(resolved, dict)
            checked += 1
    assert checked > 20


def test_registry_holds_every_schema_under_its_id():
    registry = schemas.registry()
    for name in schemas.names():
        schema = schemas.load(name)
        assert registry.contents(schema["$id"]) == schema


@pytest.mark.parametrize(
    "uri",
    [
        "https://trajlint.invalid/schemas/nope.schema.json",
        "https://json-schema.org/draft/2019-09/schema",
        "https://example.com/schema.json",
    ],
)
def test_unknown_uri_raises_instead_of_fetching(uri):
    with pytest.raises(referencing.exceptions.Unresolvable):
        schemas.registry().resolver().lookup(uri)


def test_unknown_ref_in_an_instance_schema_raises():
    schema = {"$id": "https://trajlint.invalid/schemas/test", "$ref": "missing.schema.json"}
    validator = Draft202012Validator(schema, registry=schemas.registry())
    with pytest.raises(referencing.exceptions.Unresolvable):
        validator.validate({})


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("missing.schema.json", "missing.schema.json"),
        ("common.schema.json#/$defs/Missing", "common.schema.json#/$defs/Missing"),
        ("https://example.com/remote.json", "https://example.com/remote.json"),
    ],
)
def test_broken_package_fails_at_registry_build(tmp_path, monkeypatch, fresh_caches, ref, problem):
    for path in schemas_dir().glob("*.schema.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    broken = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://trajlint.invalid/schemas/broken.schema.json",
        "properties": {"x": {"items": {"$ref": ref}}},
    }
    (tmp_path / "broken.schema.json").write_text(json.dumps(broken), encoding="utf-8")
    monkeypatch.setattr(schemas, "schemas_dir", lambda: tmp_path)

    assert "broken" in schemas.names()
    with pytest.raises(schemas.SchemaPackageError, match="broken.schema.json") as caught:
        schemas.registry()
    assert problem in str(caught.value)
    with pytest.raises(schemas.SchemaPackageError):
        schemas.validator("rollout-row")


def test_extra_schema_files_are_picked_up(tmp_path, monkeypatch, fresh_caches):
    for path in schemas_dir().glob("*.schema.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    report = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://trajlint.invalid/schemas/report.schema.json",
        "type": "object",
        "properties": {"gaps": {"type": "array", "items": {"$ref": "common.schema.json#/$defs/ObservationGap"}}},
    }
    (tmp_path / "report.schema.json").write_text(json.dumps(report), encoding="utf-8")
    monkeypatch.setattr(schemas, "schemas_dir", lambda: tmp_path)

    assert "report" in schemas.names()
    assert _errors("report", {"gaps": [{"code": "x"}]}) == []
    assert _errors("report", {"gaps": [{}]}) == [("/gaps/0", "required")]


# --- the samples -------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(ROWS)))
def test_sample_row_validates_whole(index):
    assert _errors("rollout-row", ROWS[index]) == []


def _sections() -> list[Any]:
    return [
        pytest.param(key, row[key], id=f"row{index}-{key}")
        for index, row in enumerate(ROWS)
        for key in SECTION_SCHEMAS
        if key in row
    ]


@pytest.mark.parametrize(("key", "section"), _sections())
def test_sample_section_validates(key, section):
    assert _errors(SECTION_SCHEMAS[key], section) == []


# --- invalid rows and sections -----------------------------------------------------------------------


def _row_with(key: str) -> dict[str, Any]:
    return copy.deepcopy(next(row for row in ROWS if key in row))


def _bundle_with(kind: str) -> tuple[dict[str, Any], int]:
    """A sample bundle holding a record of `kind`, and that record's index."""
    for row in ROWS:
        records = row.get("ng_agent_observations", {}).get("records", [])
        for index, record in enumerate(records):
            if record["kind"] == kind:
                return copy.deepcopy(row["ng_agent_observations"]), index
    raise LookupError(kind)


def test_negative_token_count():
    row = _row_with("ng_model_call_capture")
    row["ng_model_call_capture"]["calls"][1]["tokens_in"] = -1
    assert _errors("rollout-row", row) == [("/ng_model_call_capture/calls/1/tokens_in", "minimum")]
    assert _errors("model-call-capture", row["ng_model_call_capture"]) == [("/calls/1/tokens_in", "minimum")]


def test_turn_number_zero():
    row = _row_with("ng_trajectory")
    row["ng_trajectory"]["turns"][0]["turn_no"] = 0
    assert _errors("trajectory", row["ng_trajectory"]) == [("/turns/0/turn_no", "minimum")]
    assert _errors("rollout-row", row) == [("/ng_trajectory/turns/0/turn_no", "minimum")]


def test_unknown_key_in_a_turn():
    trajectory = _row_with("ng_trajectory")["ng_trajectory"]
    trajectory["turns"][0]["reward"] = 1.0
    assert _errors("trajectory", trajectory) == [("/turns/0", "additionalProperties")]


def test_bad_status_literal():
    bundle, index = _bundle_with("tool_call")
    bundle["records"][index]["status"] = "succeeded"
    assert _errors("agent-observations", bundle) == [(f"/records/{index}/status", "enum")]


def test_null_is_not_a_status():
    bundle, index = _bundle_with("agent_invocation")
    bundle["records"][index]["status"] = None
    assert _errors("agent-observations", bundle) == [
        (f"/records/{index}/status", "enum"),
        (f"/records/{index}/status", "type"),
    ]


def test_nullable_literal_accepts_null_and_its_values_only():
    bundle, index = _bundle_with("tool_call")
    bundle["records"][index]["timing_source"] = None
    assert _errors("agent-observations", bundle) == []
    bundle["records"][index]["timing_source"] = "stopwatch"
    assert _errors("agent-observations", bundle) == [(f"/records/{index}/timing_source", "enum")]


@pytest.mark.parametrize(
    "ref",
    [
        {},
        {"response_id": "resp_1"},
        {"model_ref": POLICY},
        {"model_call_id": ""},
        {"model_ref": POLICY, "response_id": ""},
        {"model_ref": None, "response_id": "resp_1"},
        {"model_call_id": None, "model_ref": POLICY, "response_id": None},
    ],
)
def test_model_call_ref_join_key_rule(ref):
    row = _row_with("ng_verifier_invocations")
    row["ng_verifier_invocations"][0]["model_calls"] = [ref]
    assert _errors("verifier-invocations", row["ng_verifier_invocations"]) == [("/0/model_calls/0", "anyOf")]
    assert _errors("rollout-row", row) == [("/ng_verifier_invocations/0/model_calls/0", "anyOf")]


@pytest.mark.parametrize(
    "ref",
    [
        {"model_call_id": "abc"},
        {"model_call_id": "abc", "model_ref": None, "response_id": None},
        {"model_ref": POLICY, "response_id": "resp_1"},
        {"model_call_id": "", "model_ref": POLICY, "response_id": "resp_1"},
    ],
)
def test_model_call_ref_joinable(ref):
    assert _errors("verifier-invocations", [{"invocation_id": "v", "model_calls": [ref]}]) == []


def test_string_trajectory():
    row = _row_with("ng_trajectory")
    row["ng_trajectory"] = json.dumps(row["ng_trajectory"])
    assert _errors("rollout-row", row) == [("/ng_trajectory", "type")]


@pytest.mark.parametrize("key", list(SECTION_SCHEMAS))
def test_null_section(key):
    """Null is absent to NeMo Gym everywhere, but only agents' reply models write it (for observations)."""
    row = _row_with(key)
    row[key] = None
    expected = [] if key == "ng_agent_observations" else [(f"/{key}", "type")]
    assert _errors("rollout-row", row) == expected


@pytest.mark.parametrize("kind", ["turn", "model_call"])
def test_unknown_record_kind(kind):
    bundle = {"source": "test", "records": [{"kind": kind, "invocation_id": "a"}]}
    assert _errors("agent-observations", bundle) == [("/records/0/kind", "enum")]


def test_record_without_kind():
    bundle = {"source": "test", "records": [{"invocation_id": "a"}, "not a record"]}
    assert _errors("agent-observations", bundle) == [("/records/0", "required"), ("/records/1", "type")]


def test_record_checked_against_its_kind_only():
    bundle = {"source": "test", "records": [{"kind": "sandbox", "role": "judge", "invocation_id": "a"}]}
    assert _errors("agent-observations", bundle) == [
        ("/records/0", "additionalProperties"),
        ("/records/0/role", "enum"),
    ]


def test_tool_output_only_on_trajectory_tools():
    tool = {"kind": "tool_call", "invocation_id": "a", "tool_call_id": "c", "output": "ok"}
    assert _errors("agent-observations", {"source": "s", "records": [tool]}) == [
        ("/records/0", "additionalProperties")
    ]
    assert _errors("trajectory", {"task_id": "t", "rollout_id": "r", "tool_calls": [tool]}) == []


@pytest.mark.parametrize(
    ("row_patch", "expected"),
    [
        ({"_ng_task_index": -1}, [("/_ng_task_index", "minimum")]),
        ({"_ng_rollout_index": "0"}, [("/_ng_rollout_index", "type")]),
        ({"_ng_attempt_index": None}, [("/_ng_attempt_index", "type")]),
        ({"_ng_rollout_id": "-x"}, [("/_ng_rollout_id", "pattern")]),
        ({"agent_ref": {"type": "responses_api_models", "name": "a"}}, []),
        ({"agent_ref": {"name": "a"}}, []),
        ({"agent_ref": None}, []),
        ({"agent_ref": "a"}, [("/agent_ref", "anyOf")]),
        ({"_ng_task_index": "7"}, []),
        ({"_ng_task_index": 7.5}, [("/_ng_task_index", "type")]),
        ({"_ng_task_id": {"taskset": "s", "task_id": "t"}}, []),
        ({"_ng_task_id": "t"}, [("/_ng_task_id", "type")]),
        ({"_ng_failure_stage": "bogus"}, [("/_ng_failure_stage", "enum")]),
        ({"_ng_rollout_id": "x-a2"}, [("/_ng_rollout_id", "not")]),
        ({"_ng_rollout_id": "x-a0"}, []),
        ({"resolved": "yes"}, [("/resolved", "type")]),
        ({"_ng_failure_http_status": None, "_ng_failure_message": None}, []),
        ({"any_agent_key": {"nested": [1]}}, []),
    ],
)
def test_row_envelope(row_patch, expected):
    row = {"_ng_task_index": 0, "_ng_rollout_index": 0, **row_patch}
    assert _errors("rollout-row", row) == expected


def test_row_requires_indices():
    assert _errors("rollout-row", {"task_id": "t"}) == [("", "required"), ("", "required")]


def test_capture_is_open_to_new_keys_and_old_rows():
    capture = {
        "rollout_id": "0-0",
        "metrics": {"num_calls": 1, "future_metric": 3},
        "calls": [{"call_index": 0, "output_budget_refit": {"requested": 9}}],
        "future_key": True,
    }
    assert _errors("model-call-capture", capture) == []
    capture["calls"][0]["call_index"] = None
    assert _errors("model-call-capture", capture) == [("/calls/0/call_index", "type")]


def test_best_match_points_into_the_record():
    bundle, index = _bundle_with("context_compaction")
    bundle["records"][index]["tokens_before"] = -5
    error = best_match(schemas.validator("agent-observations").iter_errors(bundle))
    assert list(error.absolute_path) == ["records", index, "tokens_before"]
    assert error.validator == "minimum"


# --- generated shapes the messages rely on -------------------------------------------------------


def test_a_union_of_types_is_one_type_list_when_exact():
    item = schemas.load("conversation-item")["$defs"]
    assert item["EasyMessageItem"]["properties"]["content"]["type"] == ["string", "array"]
    assert "anyOf" not in item["EasyMessageItem"]["properties"]["content"]
    # A union whose branches share a keyword is left alone: merging it would change its meaning.
    assert schemagen._merge_by_type([{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}]) is None
    assert schemagen._merge_by_type([{"type": "string", "pattern": "a"}, {"type": "string"}]) is None


def test_a_nullable_union_on_a_key_stays_a_union_on_that_key():
    environment = schemas.load("conversation-item")["$defs"]["ShellCallItem"]["properties"]["environment"]
    assert environment["type"] == ["object", "null"] and environment["required"] == ["type"]
    assert _errors("conversation-item", {"type": "shell_call", "id": "s", "call_id": "c", "status": "completed",
                                         "action": {"commands": []}, "environment": {"type": "docker"}}) == [
        ("/environment/type", "enum")
    ]
    assert _errors("conversation-item", {"type": "shell_call", "id": "s", "call_id": "c", "status": "completed",
                                         "action": {"commands": []}, "environment": None}) == []
