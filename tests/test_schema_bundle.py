"""`trajlint schema --bundle`: one standalone document per schema, usable offline by any
validator (check-jsonschema, editors), that validates exactly as the packaged schemas do."""

from __future__ import annotations

import json

import jsonschema
import orjson
import pytest
import referencing
import referencing.exceptions
from click.testing import CliRunner

from trajlint.cli import main
from trajlint.contract import schemas

from .conftest import EXAMPLES, ROOT


def _no_retrieval(uri: str):
    raise referencing.exceptions.NoSuchResource(ref=uri)


def _offline(document: dict) -> jsonschema.Draft202012Validator:
    """A validator that can read nothing but `document` itself."""
    return jsonschema.Draft202012Validator(document, registry=referencing.Registry(retrieve=_no_retrieval))


def _rows() -> list[dict]:
    rows = []
    for path in [*sorted(EXAMPLES.glob("*.jsonl")), *sorted((ROOT / "tests" / "data" / "real").rglob("*.jsonl"))][:40]:
        for line in path.read_bytes().splitlines()[:5]:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            elif key not in ("const", "enum", "default", "examples"):
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


@pytest.mark.parametrize("name", schemas.names())
def test_a_bundle_refers_only_to_itself(name):
    document = schemas.bundle(name)
    refs = list(_refs(document))
    assert all(ref.startswith("#") for ref in refs), [r for r in refs if not r.startswith("#")]
    _offline(document).check_schema(document)
    # Every reference resolves within the document, with no retrieval.
    resolver = _offline(document)._resolver
    for ref in set(refs):
        resolver.lookup(ref)


def test_an_example_row_validates_against_the_bundle_with_no_retrieval():
    bundle = _offline(schemas.bundle("rollout-row"))
    packaged = schemas.validator("rollout-row")
    rows = _rows()
    assert len(rows) > 20
    clean = orjson.loads((EXAMPLES / "clean.jsonl").read_bytes().splitlines()[0])
    assert list(bundle.iter_errors(clean)) == []
    broken = dict(clean, ng_trajectory={"turns": [{"turn_no": 0}]})
    assert list(bundle.iter_errors(broken))
    # The bundle says what the packaged schemas say, row for row.
    for row in [*rows, broken]:
        got = sorted((list(map(str, e.absolute_path)), e.validator) for e in bundle.iter_errors(row))
        want = sorted((list(map(str, e.absolute_path)), e.validator) for e in packaged.iter_errors(row))
        assert got == want


def test_schema_bundle_command():
    result = CliRunner().invoke(main, ["schema", "--bundle", "trajectory"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["$id"].endswith("/trajectory.bundle.schema.json")
    assert "common.ModelCallRef" in document["$defs"] and "conversation-item" in document["$defs"]
    assert all(ref.startswith("#") for ref in _refs(document))
