"""Schema errors become trajlint's own pointer and message, whatever the library says."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from trajlint.check.schema_errors import describe, pointer, show
from trajlint.contract.validate import _PythonChecker

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["turns", "id"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "status": {"enum": ["completed", "failed"]},
        "version": {"const": "1.0"},
        "n": {"type": ["integer", "null"], "minimum": 0},
        "ref": {
            "type": "object",
            "anyOf": [
                {"required": ["model_call_id"]},
                {"required": ["model_ref", "response_id"]},
            ],
        },
        "t": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        "turns": {"type": "array", "items": {"type": "object", "properties": {"a/b~c": {"type": "string"}}}},
    },
}


def messages(instance):
    checker = _PythonChecker(Draft202012Validator(SCHEMA))
    out = []
    for error in checker.errors(instance):
        for path, keyword, message in describe(error, "ng_trajectory"):
            out.append((pointer(["ng_trajectory", *path]), keyword, message))
    return sorted(out)


def test_each_keyword_gets_a_specific_message():
    got = messages(
        {
            "id": "",
            "status": "done",
            "version": "2.0",
            "n": -3,
            "ref": {"response_id": "r"},
            "t": "soon",
            "turns": [{"a/b~c": 5}],
            "extra1": 1,
            "extra2": 2,
        }
    )
    assert got == [
        ("/ng_trajectory/extra1", "additionalProperties", "unknown field `extra1` in `ng_trajectory`"),
        ("/ng_trajectory/extra2", "additionalProperties", "unknown field `extra2` in `ng_trajectory`"),
        ("/ng_trajectory/id", "minLength", "`id` must not be empty"),
        ("/ng_trajectory/n", "minimum", "`n` must be ≥ 0, got -3"),
        ("/ng_trajectory/ref", "anyOf", "`ref` must carry `model_call_id` or `model_ref` and `response_id` (non-empty), got an object"),
        ("/ng_trajectory/status", "enum", '`status` must be one of "completed", "failed"; got "done"'),
        ("/ng_trajectory/t", "anyOf", '`t` must be a number or null, got a string "soon"'),
        ("/ng_trajectory/turns/0/a~1b~0c", "type", "`a/b~c` must be a string, got an integer 5"),
        ("/ng_trajectory/version", "const", '`version` must be "1.0", got "2.0"'),
    ]


def test_required_names_the_missing_field_at_the_object():
    assert messages({"turns": []}) == [
        ("/ng_trajectory", "required", "`ng_trajectory` is missing the required field `id`")
    ]


def test_nullable_type_and_array_items():
    got = messages({"id": "x", "turns": ["nope"], "n": "7"})
    assert ("/ng_trajectory/n", "type", '`n` must be an integer or null, got a string "7"') in got
    assert ("/ng_trajectory/turns/0", "type", '`turns[0]` must be an object, got a string "nope"') in got


def test_show_truncates_long_values():
    assert show("x" * 500).endswith("…")
    assert len(show("x" * 500)) == 60
    assert show({}) == "{}" and show([1, 2]) == "an array of 2"


def test_dependent_required_names_what_is_missing_and_why():
    checker = _PythonChecker(Draft202012Validator({"dependentRequired": {"a": ["b", "c"]}}))
    found = sorted(m for e in checker.errors({"a": 1, "c": 2}) for _, _, m in describe(e, "x"))
    assert found == ["`x` has `a` but is missing `b`"]
