"""The core's proof of the schema family (TL101-TL105, TL107) against the Python rules.

A row the core proves clean of the family must be one on which the Python path, with those
rules selected, finds nothing: on the catalog's examples, on the test corpora, on rows of the
clean example and of a generated file mutated where the rules look. The core validates with the
`jsonschema` crate jsonschema-rs is built on, on the schema documents compiled into it; the fast
path proves nothing of the family unless those are the ones the Python rules use.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint import api
from trajlint.check import fast
from trajlint.contract import lax, validate
from trajlint.contract.data import schemas_dir
from trajlint.read import native

from .conftest import EXAMPLES, ROOT

CODES = sorted(fast.FAMILIES[fast.SCHEMA])
BIT = fast.SCHEMA


@pytest.fixture
def python_only(monkeypatch):
    """The Python path alone decides: a proved row must not skip the rules it is compared with."""
    monkeypatch.setattr(native, "mode", lambda: "off")
    monkeypatch.setenv("TRAJLINT_CORE", "off")


def _lines(text: bytes) -> list[bytes]:
    return [raw for raw in text.split(b"\n") if raw.strip()]


def _python_findings(lines: list[bytes]) -> dict[int, set[str]]:
    """line (from 1) -> the family's codes the Python path reports there (the core off)."""
    assert native.mode() == "off"
    report = api.check_rows(lines, select=CODES, isolated=True, max_row_bytes=256 * 1024 * 1024, jobs=1)
    found: dict[int, set[str]] = defaultdict(set)
    for finding in report.findings:
        found[finding.line].add(finding.code)
    return found


def _proved(core, raw: bytes) -> bool:
    return core.clean_families(raw, BIT) == BIT


def _assert_agrees(core, lines: list[bytes]) -> tuple[int, int]:
    """Every proved line is one Python finds nothing of the family on. Returns how many rollout
    rows (objects with both indices: a line of another kind of file is no rollout row, and the
    family's rules do not look at it) Python finds clean, and how many of those are proved."""
    found = _python_findings(lines)
    proved = clean = 0
    for number, raw in enumerate(lines, 1):
        if _proved(core, raw):
            assert not found.get(number), f"line {number}: proved, Python finds {sorted(found[number])}: {raw[:300]!r}"
        if not found.get(number) and _rollout_row(raw):
            clean += 1
            proved += _proved(core, raw)
    return proved, clean


def _rollout_row(raw: bytes) -> bool:
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(row, dict) and "_ng_task_index" in row and "_ng_rollout_index" in row


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("schema") / "clean.jsonl"
    made = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "40", "--defects", "0",
         "--payload-kb", "22", "--seed", "11", "-o", str(path)],
        capture_output=True, text=True,
    )
    assert made.returncode == 0, made.stderr
    return path


# -- one source of truth ----------------------------------------------------------------------------


def test_the_core_validates_with_the_packaged_schemas_and_the_same_crate(core):
    packaged = {path.name: path.read_bytes().decode("utf-8") for path in schemas_dir().glob("*.schema.json")}
    assert dict(core.SCHEMA_DOCUMENTS) == packaged
    assert version("jsonschema_rs") == core.JSONSCHEMA
    # What the fast path reads without importing importlib.metadata is what that reads.
    assert fast._jsonschema_rs_version() == version("jsonschema_rs")
    cargo = (ROOT / "Cargo.toml").read_text()
    assert re.search(r'^jsonschema = \{ version = "=' + re.escape(core.JSONSCHEMA) + '"', cargo, re.M)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"jsonschema-rs=={core.JSONSCHEMA}"' in pyproject


def test_the_fast_path_proves_the_family_only_when_python_validates_alike(core, monkeypatch):
    monkeypatch.setattr(native, "mode", lambda: "on")
    monkeypatch.setattr(validate, "backend", lambda: "rust")
    assert fast.prover()[1] & BIT

    class Other:
        PROVED = core.PROVED
        check_row = core.check_row
        schema_validator = core.schema_validator
        JSONSCHEMA = core.JSONSCHEMA
        SCHEMA_DOCUMENTS = core.SCHEMA_DOCUMENTS

    monkeypatch.setattr(native, "module", lambda: Other)
    assert fast.prover()[1] & BIT
    monkeypatch.setattr(validate, "backend", lambda: "python")
    assert not fast.prover()[1] & BIT
    monkeypatch.undo()

    for change in ({"JSONSCHEMA": "0.60.0"}, {"SCHEMA_DOCUMENTS": [(n, t + " ") for n, t in core.SCHEMA_DOCUMENTS]}):
        stale = type("Stale", (Other,), change)
        monkeypatch.setattr(native, "module", lambda stale=stale: stale)
        monkeypatch.setattr(native, "mode", lambda: "on")
        monkeypatch.setattr(validate, "backend", lambda: "rust")
        assert not fast.prover()[1] & BIT, change
        assert fast.wanted_families(CODES, fast.prover()[1]) is None


# -- what the catalog and the corpora say -----------------------------------------------------------


def _examples() -> list[tuple[str, str, list[bytes]]]:
    out = []
    for code in CODES:
        (path,) = (ROOT / "rules").glob(f"{code}-*.toml")
        for example in tomllib.loads(path.read_text())["example"]:
            out.append((code, example["expect"], _lines(example["jsonl"].encode())))
    return out


def test_catalog_examples(core, python_only):
    fails = passes = 0
    for code, expect, lines in _examples():
        found = _python_findings(lines)
        for number, raw in enumerate(lines, 1):
            if found.get(number):
                assert not _proved(core, raw), f"{code} {expect} example proved: {raw!r}"
        if expect == "fail":
            assert any(code in codes for codes in found.values()), code
            fails += 1
        elif all(_proved(core, raw) for raw in lines):
            passes += 1
    assert fails >= len(CODES)
    assert passes >= len(CODES)  # most passing examples are whole rows NeMo Gym writes


def _corpus() -> list[Path]:
    files = [*sorted(EXAMPLES.rglob("*.jsonl")), *sorted((ROOT / "tests" / "data").rglob("*.jsonl"))]
    return [path for path in files if path.is_file()]


def test_corpora(core, python_only):
    """Python's verdicts on every corpus line; the rollout rows clean of the family are nearly all
    proved (those that are not hold a count the count rules own)."""
    proved = clean = 0
    for path in _corpus():
        p, c = _assert_agrees(core, _lines(path.read_bytes()))
        proved, clean = proved + p, clean + c
    assert clean >= 300 and proved >= 0.95 * clean, (proved, clean)


def test_clean_rows_are_proved(core, generated):
    for path in (EXAMPLES / "clean.jsonl", generated):
        assert all(_proved(core, raw) for raw in _lines(path.read_bytes())), path


# -- values NeMo Gym reads only by coercing them ---------------------------------------------------

_MODEL_PLACES = {  # model -> (section, list, record kind or None, sub-object or None)
    "AgentInvocation": [("ng_trajectory", "invocations", None, None), ("ng_agent_observations", "records", "agent_invocation", None)],
    "ToolCallObservation": [("ng_agent_observations", "records", "tool_call", None)],
    "SandboxObservation": [("ng_agent_observations", "records", "sandbox", None)],
    "ContextCompactionObservation": [("ng_agent_observations", "records", "context_compaction", None)],
    "TrajectoryTurn": [("ng_trajectory", "turns", None, None)],
    "TrajectoryModelCall": [("ng_trajectory", "model_calls", None, None)],
    "TrajectoryResponseMetadata": [("ng_trajectory", "model_calls", None, "response_metadata")],
    "TrajectoryTokenStats": [("ng_trajectory", "model_calls", None, "token_stats")],
    "TrajectoryToolCall": [("ng_trajectory", "tool_calls", None, None)],
}


def _coercible(kind: str, value: Any) -> Any:
    """The value written in a form NeMo Gym's lax validation reads as it (never writes)."""
    if kind == lax.INTEGER:
        return float(value)  # 12.0: an integer to JSON Schema too
    if kind == lax.NUMBER:
        return str(value)
    return "true" if value else "false"


def test_a_coerced_scalar_is_never_proved(core, generated, python_only):
    assert set(_MODEL_PLACES) == set(lax.SCALARS)
    rows = [orjson.loads(raw) for raw in _lines((EXAMPLES / "clean.jsonl").read_bytes() + b"\n" + generated.read_bytes())]
    made: list[bytes] = []
    fields: list[str] = []
    for model, scalars in lax.SCALARS.items():
        for name, kind in scalars.items():
            for row in rows:
                target = _find(row, model, name)
                if target is None:
                    continue
                mutated = copy.deepcopy(row)
                holder = _find(mutated, model, name)
                holder[name] = _coercible(kind, holder[name])
                made.append(orjson.dumps(mutated))
                fields.append(f"{model}.{name}")
                break
    found = _python_findings(made)
    integers = 0
    for number, (raw, field) in enumerate(zip(made, fields), 1):
        assert not _proved(core, raw), field
        if "TL107" in found.get(number, set()) and found[number] <= {"TL107"}:
            integers += 1  # valid to the schema, a warning only because NeMo Gym coerces it
    assert len(made) >= 10 and integers >= 3, (fields, integers)


def _find(row: dict[str, Any], model: str, name: str) -> dict[str, Any] | None:
    """An item of `model` in the row holding `name` with a value in the form NeMo Gym writes."""
    for section, part, kind, sub in _MODEL_PLACES[model]:
        holder = row.get(section)
        items = holder.get(part) if isinstance(holder, dict) else None
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict) or (kind is not None and item.get("kind") != kind):
                continue
            target = item.get(sub) if sub else item
            if isinstance(target, dict) and target.get(name) is not None and not isinstance(target.get(name), str):
                return target
    return None


# -- mutations where the rules look -----------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=2**63 - 1),
    st.sampled_from([0, 1, 2, -1, 3.0, 0.0, -0.0, 1.5, 1e3, 12.0]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from(["", " ", "x", "12", " 12 ", "12.0", "1.5", "true", "yes", "abc-a1", "abc-a12", "-a0", "a.b_c-d",
                     "message", "function_call", "assistant", "user", "completed", "\u00a0", "0-0"]),
    st.just({}),
    st.just([]),
    st.just({"name": "x"}),
    st.just({"taskset": "t", "task_id": "1"}),
)
_TOP = ["_ng_task_index", "_ng_rollout_index", "_ng_attempt_index", "_ng_rollout_id", "resolved", "agent_ref",
        "_ng_task_id", "_ng_failure_stage", "_ng_failure_class", "ng_perf", "ng_trajectory", "ng_agent_observations",
        "ng_model_call_capture", "ng_verifier_invocations", "task_id"]


def _value(data: Any) -> Any:
    return copy.deepcopy(data.draw(_VALUES))  # a later mutation may change it in place


def _mutate(data: Any, row: dict[str, Any]) -> None:
    if data.draw(st.integers(0, 3)) == 0:  # a top-level key the row rule reads
        key = data.draw(st.sampled_from(_TOP))
        if data.draw(st.booleans()) and key in row:
            del row[key]
        else:
            row[key] = _value(data)
        return
    node: Any = row
    while True:  # walk down to a container, mostly inside the sections
        children = list(node) if isinstance(node, dict) else list(range(len(node)))
        children = [c for c in children if isinstance(node[c], (dict, list)) and node[c]]
        if not children or data.draw(st.integers(0, 3)) == 0:
            break
        node = node[data.draw(st.sampled_from(children))]
    if isinstance(node, dict) and node:
        key = data.draw(st.sampled_from(list(node)))
        action = data.draw(st.sampled_from(["set", "delete", "add"]))
        if action == "set":
            node[key] = _value(data)
        elif action == "delete":
            del node[key]
        else:
            node[data.draw(st.sampled_from(["extra", "type", "kind", "role", "status", key + "_"]))] = _value(data)
    elif isinstance(node, list) and node:
        index = data.draw(st.integers(0, len(node) - 1))
        action = data.draw(st.sampled_from(["set", "drop", "duplicate"]))
        if action == "set":
            node[index] = _value(data)
        elif action == "drop":
            del node[index]
        else:
            node.insert(index, copy.deepcopy(node[index]))


@pytest.fixture(scope="module")
def base_rows(generated) -> list[dict[str, Any]]:
    text = (EXAMPLES / "clean.jsonl").read_bytes() + b"\n" + generated.read_bytes()
    return [orjson.loads(raw) for raw in _lines(text)][:12]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_rows(core, base_rows, python_only, data):
    lines = []
    for _ in range(6):
        row = copy.deepcopy(data.draw(st.sampled_from(base_rows)))
        for _ in range(data.draw(st.integers(1, 3))):
            _mutate(data, row)
        lines.append(orjson.dumps(row))
    _assert_agrees(core, lines)
