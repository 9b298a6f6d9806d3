"""The core's proof of the ownership rules (TL201-TL209) against the Python path.

The proof stands on the core's ownership ledger (src/build/ledger.rs), a port of the build's
ledger: each row the core proves clean must be one of whose ownership rules Python finds
nothing. Checked on the catalog's examples, on every row of the test data, and on rows mutated
where the rules read (ids, references, owners, sessions, verifier ids, compaction records).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint import api
from trajlint.check import catalog, fast
from trajlint.read import native

from .conftest import EXAMPLES, ROOT

CODES = sorted(fast.FAMILIES[fast.OWNERSHIP])
BIT = fast.OWNERSHIP
ENTRIES = [entry for code, entry in sorted(catalog.packaged().items()) if code in CODES]


@pytest.fixture
def python_only(monkeypatch):
    monkeypatch.setenv("TRAJLINT_CORE", "off")
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")


def _lines(text: str | bytes) -> list[bytes]:
    raw = text.encode() if isinstance(text, str) else text
    return [line for line in raw.split(b"\n") if line.strip()]


def _ownership_findings(lines: list[bytes]) -> dict[int, set[str]]:
    """line (from 1) -> the ownership codes the Python path reports there."""
    report = api.check_rows(lines, select=CODES, isolated=True, max_row_bytes=256 * 1024 * 1024)
    found: dict[int, set[str]] = defaultdict(set)
    for finding in report.findings:
        if finding.code in CODES:
            found[finding.line].add(finding.code)
    return found


def _proved(core, raw: bytes) -> bool:
    return core.clean_families(raw, BIT) == BIT


def _findings_with(monkeypatch, mode: str, lines: list[bytes]) -> list[dict]:
    # `native.mode` reads TRAJLINT_CORE once a process: the mode is set on it directly.
    monkeypatch.setattr(native, "mode", lambda: mode)
    report = api.check_rows(lines, select=CODES, isolated=True, max_row_bytes=256 * 1024 * 1024)
    return [finding.to_dict() for finding in report.findings]


def _reports_as_python(core, monkeypatch, lines: list[bytes]) -> int:
    """The rows the core proves with unowned calls (TL209, which it reports itself): with the
    core on, their findings are the Python path's, field for field. How many such rows."""
    reported = [raw for raw in lines if (proof := core.check_row(raw, BIT)) is not None and proof[4]]
    if reported:
        on = _findings_with(monkeypatch, "on", reported)
        assert on == _findings_with(monkeypatch, "off", reported)
        assert {finding["code"] for finding in on} == {"TL209"}
    return len(reported)


def test_the_family_is_proved(core):
    assert core.PROVED & BIT


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.code)
def test_catalog_examples(core, python_only, entry):
    """A failing example's flagged rows are never proved; a passing example's rows all are."""
    for example in entry.examples:
        lines = _lines(example.jsonl)
        found = _ownership_findings(lines)
        if example.expect == "fail":
            assert any(entry.code in codes for codes in found.values()), example.description
        for number, raw in enumerate(lines, 1):
            if found.get(number):
                assert not _proved(core, raw), f"{entry.code} {example.description}: line {number}"
            elif example.expect == "pass":
                assert _proved(core, raw), f"{entry.code} {example.description}: line {number} is not proved"


def test_clean_example_rows_are_proved(core):
    lines = _lines((EXAMPLES / "clean.jsonl").read_bytes())
    assert lines and all(_proved(core, raw) for raw in lines)


def _data_files() -> list[Path]:
    data = ROOT / "tests" / "data"
    return [*sorted(EXAMPLES.rglob("*.jsonl")), *sorted(data.rglob("*.jsonl"))]


def test_test_data(core, python_only):
    """Every row of the test data: proved only where Python finds no ownership rule."""
    proved = 0
    for path in _data_files():
        lines = path.read_bytes().split(b"\n")
        found = _ownership_findings([line for line in lines if line.strip()])
        kept = 0
        for raw in lines:
            if not raw.strip():
                continue
            kept += 1
            if _proved(core, raw):
                proved += 1
                assert not found.get(kept), f"{path.relative_to(ROOT)}: row {kept}: Python finds {sorted(found[kept])}"
            elif core.check_row(raw, BIT) is not None:
                # Proved but for the calls it reports unowned: TL209 is all Python finds.
                assert found.get(kept) == {"TL209"}, f"{path.relative_to(ROOT)}: row {kept}: Python finds {sorted(found.get(kept, ()))}"
    assert proved


def test_unowned_calls_are_reported_as_python_reports_them(core, monkeypatch, generated_seeds):
    """TL209's findings from the core's list: the same pointers, messages, related places and
    fingerprints as the Python rule's, on every row of the test data that has them."""
    lines = [line for path in _data_files() for line in path.read_bytes().split(b"\n") if line.strip()]
    assert _reports_as_python(core, monkeypatch, lines + generated_seeds)


def test_unowned_call_without_ids_is_named_by_its_place(core, monkeypatch):
    row = {
        "_ng_task_index": 0, "_ng_rollout_index": 0,
        "ng_model_call_capture": {"calls": [{"model_call_id": "a1"}, {"model_call_id": ""}, {"model_call_id": "j\u00e9'\"", "response_id": "r"}]},
        "ng_agent_observations": {"source": "t", "records": [
            {"kind": "agent_invocation", "invocation_id": "root", "status": "completed", "model_calls": [{"model_call_id": "a1"}]}], "gaps": []},
    }
    raw = json.dumps(row).encode()
    assert core.check_row(raw, BIT)[4] == [(None, 1, None, None), (None, 2, "j\u00e9'\"", "r")]
    assert _reports_as_python(core, monkeypatch, [raw]) == 1


# -- mutated rows --------------------------------------------------------------------------------

_SKIP = frozenset({"request", "response", "request_raw", "response_raw", "conversation", "output", "metrics"})
_SECTIONS = ("ng_trajectory", "ng_agent_observations", "ng_model_call_capture", "ng_verifier_invocations")
_ID_KEYS = ("model_call_id", "response_id", "invocation_id", "client_session_id", "verifier_invocation_id")


def _paths(node, path, out):
    out.append(path)
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in _SKIP:
                _paths(value, (*path, key), out)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _paths(value, (*path, index), out)


def _ids(node, out):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                out.add(value)
            elif key not in _SKIP:
                _ids(value, out)
    elif isinstance(node, list):
        for value in node:
            _ids(value, out)


def _get(row, path):
    node = row
    for step in path:
        node = node[step]
    return node


def _mutate(data, row):
    ids = set()
    _ids(row, ids)
    ids = sorted(ids) or ["x"]
    ident = st.sampled_from(ids)
    ref = st.one_of(
        st.builds(lambda i: {"model_call_id": i}, ident),
        st.builds(lambda r: {"model_ref": {"type": "responses_api_models", "name": "policy"}, "response_id": r}, ident),
        st.builds(lambda i, r: {"model_call_id": i, "response_id": r}, ident, ident),
        st.sampled_from([{}, None, "a1", {"model_call_id": ""}]).map(copy.deepcopy),  # changed after the draw
    )
    value = st.one_of(ident, ref, st.sampled_from([None, "", 0, 1.5, -1, "12", True, [], {}, "fresh"]).map(copy.deepcopy))
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["set", "delete", "dup", "compaction", "session", "verifier", "claim"]))
        paths: list[tuple] = []
        for section in _SECTIONS:
            if section in row:
                _paths(row[section], (section,), paths)
        if op in ("set", "delete", "dup") and paths:
            path = data.draw(st.sampled_from(paths))
            if not path:
                continue
            parent, last = _get(row, path[:-1]), path[-1]
            if op == "set":
                parent[last] = data.draw(value)
            elif op == "delete":
                del parent[last]
            elif isinstance(parent, list):
                parent.insert(last, copy.deepcopy(parent[last]))
        elif op == "compaction":
            bundle = row.setdefault("ng_agent_observations", {"source": "test", "records": [], "gaps": []})
            if isinstance(bundle, dict) and isinstance(bundle.get("records"), list):
                record = {"kind": "context_compaction", "invocation_id": data.draw(ident),
                          "model_calls": data.draw(st.lists(ref, max_size=2))}
                for name in ("before_model_call", "after_model_call"):
                    if data.draw(st.booleans()):
                        record[name] = data.draw(ref)
                bundle["records"].append(record)
        elif op in ("session", "verifier"):
            calls = row.get("ng_model_call_capture", {}).get("calls") if isinstance(row.get("ng_model_call_capture"), dict) else None
            if isinstance(calls, list) and calls and isinstance(calls[0], dict):
                call = calls[data.draw(st.integers(0, len(calls) - 1))]
                if isinstance(call, dict):
                    key = "client_session_id" if op == "session" else "verifier_invocation_id"
                    call[key] = data.draw(ident)
        else:
            holders = [p for p in paths if len(p) >= 1 and p[-1] == "model_calls" and isinstance(_get(row, p), list)
                       and not (len(p) == 2 and p[0] == "ng_trajectory")]
            if holders:
                _get(row, data.draw(st.sampled_from(holders))).append(data.draw(ref))
    return row


def _seeds() -> list[bytes]:
    seeds = _lines((EXAMPLES / "clean.jsonl").read_bytes())
    for entry in ENTRIES:
        for example in entry.examples:
            seeds += _lines(example.jsonl)
    return seeds


@pytest.fixture(scope="module")
def generated_seeds(tmp_path_factory):
    path = tmp_path_factory.mktemp("ownership") / "generated.jsonl"
    made = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "40", "--defects", "0.1",
         "--payload-kb", "1", "--seed", "11", "-o", str(path)],
        capture_output=True, text=True,
    )
    assert made.returncode == 0, made.stderr
    return [line for line in _lines(path.read_bytes()) if isinstance(_loads(line), dict)]


def _loads(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_rows(core, python_only, generated_seeds, data):
    """A mutated row the core proves clean is one of whose ownership rules Python finds nothing."""
    row = _loads(data.draw(st.sampled_from(_seeds() + generated_seeds)))
    if not isinstance(row, dict):
        return
    raw = json.dumps(_mutate(data, row)).encode()
    if _proved(core, raw):
        assert not _ownership_findings([raw]).get(1), raw.decode()[:2000]
    elif core.check_row(raw, BIT) is not None:
        assert _ownership_findings([raw]).get(1) == {"TL209"}, raw.decode()[:2000]
