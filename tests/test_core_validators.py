"""The Python rules' validators compiled by the native core (`_core.schema_validator`) against
jsonschema-rs's, which stay the reference: the same verdicts and the same errors (by repr, so
that 1, 1.0 and True are told apart; in any order, which no finding depends on), a fallback to
jsonschema-rs for whatever orjson cannot hand the core exactly, and check mode stopping on any
difference."""

from __future__ import annotations

import math

import orjson
import pytest
from click.testing import CliRunner

from trajlint.cli import main
from trajlint.contract import schemas
from trajlint.contract import validate as validation
from trajlint.read import native

from .conftest import EXAMPLES, ROOT, check_paths
from .test_validation_backends import SAMPLES, _mutants

pytest.importorskip("jsonschema_rs")

REAL = ROOT / "tests" / "data" / "real"
#: The sections of a row and the packaged document each is validated against.
SECTIONS = {
    "ng_trajectory": "trajectory",
    "ng_agent_observations": "agent-observations",
    "ng_model_call_capture": "model-call-capture",
    "ng_verifier_invocations": "verifier-invocations",
}


@pytest.fixture(scope="module")
def rows():
    lines = [line for path in sorted(REAL.rglob("*.jsonl")) for line in path.read_bytes().splitlines()]
    lines += [line for path in sorted(EXAMPLES.glob("*.jsonl")) for line in path.read_bytes().splitlines()]
    lines += SAMPLES.read_bytes().splitlines()
    found = []
    for line in lines:
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict):
            found.append(row)
    return found + _mutants(found, 300, seed=11)


@pytest.fixture(autouse=True)
def validators_of_jsonschema_rs_again():
    """A test hands the core's validators (or a fake's) over: the tests after it start afresh."""
    yield
    validation.validate_through(None)


def _both(core, name):
    schema = schemas.load(name)
    return validation._CoreChecker(schema, core.schema_validator), validation._RustChecker(schema)


def _same(by_core, by_rs, instance) -> int:
    """Both engines alike on the instance; the number of its errors."""
    assert by_core.is_valid(instance) == by_rs.is_valid(instance)
    errors = list(by_rs.errors(instance))
    assert sorted(map(repr, by_core.errors(instance))) == sorted(map(repr, errors))
    return len(errors)


def test_every_section_and_row_validates_alike(core, rows):
    pairs = {name: _both(core, name) for name in [*SECTIONS.values(), "rollout-row", "conversation-item", "common"]}
    errors = 0
    for row in rows:
        errors += _same(*pairs["rollout-row"], row)
        for key, name in SECTIONS.items():
            if key in row:
                errors += _same(*pairs[name], row[key])
        observations = row.get("ng_agent_observations")
        invocations = observations.get("invocations") if isinstance(observations, dict) else None
        for invocation in invocations if isinstance(invocations, list) else []:
            conversation = invocation.get("conversation") if isinstance(invocation, dict) else None
            for item in conversation if isinstance(conversation, list) else []:
                errors += _same(*pairs["conversation-item"], item)
    # The corpus holds invalid sections as well as valid ones: errors were compared, not only verdicts.
    assert errors > 300


def test_each_part_of_each_document_validates_alike(core, rows):
    # Every `$defs` part, on every value of a few rows of every kind: most fail, with every keyword.
    sample = rows[:: max(1, len(rows) // 40)]
    values = [value for row in sample for value in _values(row, 3)]
    compared = errors = 0
    for name in schemas.names():
        for part in schemas.load(name).get("$defs", {}):
            ref = f"{name}{schemas.SUFFIX}#/$defs/{part}"
            uri = validation._uri(ref)
            schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": uri}
            by_core, by_rs = validation._CoreChecker(schema, core.schema_validator), validation._RustChecker(schema)
            for value in values:
                errors += _same(by_core, by_rs, value)
                compared += 1
    assert compared > 10_000 and errors > 10_000


def _values(node, depth):
    yield node
    if depth == 0:
        return
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from _values(child, depth - 1)


@pytest.mark.parametrize(
    "instance",
    [
        {"version": math.nan},
        {"version": -math.inf, "turns": []},
        {"turns": ({"kind": "turn"},)},  # a tuple: orjson writes a list
        {"turns": [], "step_count": 2**70},  # past 64 bits: orjson refuses it
        {1: "a key that is no string"},
        {"rollout_id": "\ud800"},  # no UTF-8
    ],
)
def test_what_the_core_cannot_be_handed_goes_to_jsonschema_rs(core, instance):
    _same(*_both(core, "trajectory"), instance)


def test_nesting_past_the_cores_depth_goes_to_jsonschema_rs(core):
    deep: list = []
    for _ in range(150):  # the core's document stops at 127; jsonschema-rs goes on
        deep = [deep]
    _same(*_both(core, "trajectory"), {"turns": deep})
    assert validation._text({"turns": deep}) is not None  # orjson writes it: the core refuses it


def test_an_instance_found_valid_is_not_validated_again(core):
    by_core, _ = _both(core, "conversation-item")
    asked = []

    class Spy:
        def __init__(self, real):
            self._real = real

        def is_valid(self, text):
            asked.append(text)
            return self._real.is_valid(text)

        def errors(self, text):
            asked.append(text)
            return self._real.errors(text)

    by_core._validator = Spy(by_core._validator)
    item = {"type": "compaction_trigger"}
    assert by_core.is_valid(item) and list(by_core.errors(item)) == []
    assert len(asked) == 1
    assert list(by_core.errors({"type": "bogus"}))
    assert len(asked) == 3  # asked whether, then for the errors


def test_a_run_with_the_core_validates_through_it(core, monkeypatch, rules):
    monkeypatch.setenv("TRAJLINT_CORE", "on")
    check_paths([EXAMPLES], rules)
    assert isinstance(validation.checker("trajectory"), validation._CoreChecker)
    monkeypatch.setenv("TRAJLINT_CORE", "off")
    native.mode.cache_clear()
    check_paths([EXAMPLES], rules)
    assert isinstance(validation.checker("trajectory"), validation._RustChecker)


def test_check_mode_compares_every_validation_on_the_corpora(core, monkeypatch, rules, tmp_path, rows):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"\n".join(orjson.dumps(row) for row in rows) + b"\n")
    compared = []
    real_errors = validation._CheckedChecker.errors

    def counted(self, instance):
        compared.append(1)
        return real_errors(self, instance)

    monkeypatch.setattr(validation._CheckedChecker, "errors", counted)
    monkeypatch.setenv("TRAJLINT_CORE", "check")
    result = check_paths([corpus, EXAMPLES, REAL], rules)
    assert isinstance(validation.checker("trajectory"), validation._CheckedChecker)
    assert result.internal_errors == 0
    assert any(f.code.startswith("TL1") for f in result.findings)
    assert len(compared) > 1_000


def test_check_mode_stops_where_the_core_validates_otherwise(core, monkeypatch, tmp_path):
    real = core.schema_validator

    class Lenient:
        """A core validator that finds every instance valid."""

        def __init__(self, schema):
            self._real = real(schema)

        def is_valid(self, text):
            return True if self._real is not None else None

        def errors(self, text):
            return [] if self._real is not None else None

    monkeypatch.setattr(core, "schema_validator", Lenient)
    broken = tmp_path / "broken.jsonl"
    row = (EXAMPLES / "clean.jsonl").read_text(encoding="utf-8").splitlines()[0]
    broken.write_text(row.replace('"_ng_rollout_index": 0', '"_ng_rollout_index": "x"', 1) + "\n", encoding="utf-8")
    monkeypatch.setenv("TRAJLINT_CORE", "check")
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    result = CliRunner().invoke(main, ["check", "--isolated", "--jobs", "1", str(broken)])
    assert result.exit_code == 2, result.output
    assert "the native core and the Python path disagree" in result.output
    assert "jsonschema-rs" in result.output
