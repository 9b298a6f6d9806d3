"""The core's proof of the drift rules (TL501 trajectory-drift, TL502 gap-unreported) against the
Python path.

The proof stands on the core's build (src/build/): the ownership ledger, the turns the evidence
supports (src/build/turns.rs) and the join's gaps (src/build/join.rs). Each row the core proves
clean must be one of whose drift rules Python finds nothing, info findings (a hollow turn, a
step count, `resolved`) included. Checked on the catalog's examples, on every row of the test
data, and on rows mutated where the rules read: stated turns, their references and content, the
responses the turns are built from, ownership claims, sessions, compaction records and gaps.
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

from .conftest import EXAMPLES, ROOT

CODES = sorted(fast.FAMILIES[fast.DRIFT])
BIT = fast.DRIFT
ENTRIES = [entry for code, entry in sorted(catalog.packaged().items()) if code in CODES]


@pytest.fixture
def python_only(monkeypatch):
    monkeypatch.setenv("TRAJLINT_CORE", "off")
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")


def _lines(text: str | bytes) -> list[bytes]:
    raw = text.encode() if isinstance(text, str) else text
    return [line for line in raw.split(b"\n") if line.strip()]


def _drift_findings(lines: list[bytes]) -> dict[int, set[str]]:
    """line (from 1) -> the drift codes the Python path reports there, whatever their severity."""
    report = api.check_rows(lines, select=CODES, isolated=True, max_row_bytes=256 * 1024 * 1024)
    found: dict[int, set[str]] = defaultdict(set)
    for finding in report.findings:
        if finding.code in CODES:
            found[finding.line].add(finding.code)
    return found


def _proved(core, raw: bytes) -> bool:
    return core.clean_families(raw, BIT) == BIT


def test_the_family_is_proved(core):
    assert core.PROVED & BIT
    assert core.DRIFT == BIT


def test_the_fast_path_asks_for_the_family():
    assert fast.wanted_families(["TL501", "TL502", "TL503"], BIT) == BIT
    assert fast.wanted_families(["TL501"], fast.OWNERSHIP) is None


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.code)
def test_catalog_examples(core, python_only, entry):
    """A failing example's flagged rows are never proved; a passing example's rows all are."""
    for example in entry.examples:
        lines = _lines(example.jsonl)
        found = _drift_findings(lines)
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
    """Every row of the test data: proved only where Python finds no drift rule; and the rows
    of the persisted NeMo Gym file that Python finds clean are all proved."""
    proved = flagged = 0
    for path in _data_files():
        lines = path.read_bytes().split(b"\n")
        found = _drift_findings([line for line in lines if line.strip()])
        flagged += len(found)
        kept = 0
        for raw in lines:
            if not raw.strip():
                continue
            kept += 1
            if _proved(core, raw):
                proved += 1
                assert not found.get(kept), f"{path.relative_to(ROOT)}: row {kept}: Python finds {sorted(found[kept])}"
            elif path.name == "nemo-gym-0.7-persisted.jsonl":
                assert found.get(kept), f"{path.relative_to(ROOT)}: row {kept} is clean but not proved"
    assert proved and flagged


# -- rows that tell the rules' cases apart -----------------------------------------------------


def _example(code: str, expect: str) -> dict:
    entry = next(e for e in ENTRIES if e.code == code)
    example = next(e for e in entry.examples if e.expect == expect)
    return json.loads(_lines(example.jsonl)[0])


def _turn(row: dict, index: int = 0) -> dict:
    return row["ng_trajectory"]["turns"][index]


def _case_rows() -> dict[str, tuple[dict, bool]]:
    """name -> (row, whether Python finds a drift rule on it)."""
    cases: dict[str, tuple[dict, bool]] = {}
    clean = _example("TL501", "pass")
    cases["clean"] = (clean, False)

    row = copy.deepcopy(clean)
    _turn(row, 1)["step_count"] = 2  # neither 1 (before) nor 1 + 0 tool calls of its own
    cases["step count"] = (row, True)
    row = copy.deepcopy(clean)
    _turn(row, 0)["step_count"] = 1  # the inclusive count: the turn's own function call
    cases["inclusive step count"] = (row, False)
    row = copy.deepcopy(clean)
    _turn(row, 1)["step_count"] = 1.0  # not an integer: the count rules judge it
    cases["float step count"] = (row, False)

    row = copy.deepcopy(clean)
    _turn(row, 1)["answer"] = []
    cases["hollow answer"] = (row, True)
    row = copy.deepcopy(clean)
    row["ng_model_call_capture"]["calls"][1]["response"]["output"].insert(0, {"type": "reasoning", "summary": []})
    cases["reasoning left out"] = (row, True)

    row = copy.deepcopy(clean)
    row["resolved"] = True
    _turn(row, 1)["resolved"] = False
    cases["resolved contradicts"] = (row, True)
    row = copy.deepcopy(clean)
    row["resolved"] = True
    _turn(row, 1)["resolved"] = True
    cases["resolved agrees"] = (row, False)

    row = copy.deepcopy(clean)
    _turn(row, 1)["invocation_id"] = "other"
    cases["turn of another invocation"] = (row, True)
    row = copy.deepcopy(clean)
    _turn(row, 1)["model_calls"] = []
    cases["turn without a call"] = (row, True)
    row = copy.deepcopy(clean)
    _turn(row, 1)["model_calls"] = copy.deepcopy(_turn(row, 0)["model_calls"])
    cases["two turns on one call"] = (row, True)
    row = copy.deepcopy(clean)
    del row["ng_trajectory"]["turns"][1]
    cases["missing turn"] = (row, True)
    row = copy.deepcopy(clean)
    row["ng_model_call_capture"]["calls"][1]["response"] = None
    cases["turn on a call without response"] = (row, True)

    # Chat Completions and Anthropic Messages responses.
    row = copy.deepcopy(clean)
    call = row["ng_model_call_capture"]["calls"][1]
    call["dialect"] = "chat"
    call["response"] = {"id": "resp_b2", "choices": [{"message": {"role": "assistant", "content": "42", "reasoning_content": "think"}}]}
    cases["chat reasoning left out"] = (row, True)
    row = copy.deepcopy(row)
    _turn(row, 1)["reasoning_content"] = "think"
    cases["chat turn in full"] = (row, False)
    cases["hollow messages turn"] = (_messages_row(), True)

    # A call its client session gives to the invocation, which references only the first.
    row = copy.deepcopy(clean)
    for holder in (row["ng_agent_observations"]["records"][0], row["ng_trajectory"]["invocations"][0]):
        del holder["model_calls"][1]
    row["ng_model_call_capture"]["calls"][1]["client_session_id"] = "root"
    cases["turn of a session's call"] = (row, False)
    row = copy.deepcopy(clean)
    row["ng_agent_observations"]["records"].append(
        {"kind": "agent_invocation", "invocation_id": "other", "model_calls": [{"model_call_id": "b2"}]}
    )
    cases["call two invocations claim"] = (row, True)

    # An observed invocation that is not valid takes no part in the join: its calls are unowned.
    row = copy.deepcopy(clean)
    row["ng_agent_observations"]["records"][0]["status"] = "done"
    cases["invalid invocation"] = (row, True)

    # TL502: an unowned captured call, and the stated gap that records it.
    cases["unreported gap"] = (_example("TL502", "fail"), True)
    cases["reported gap"] = (_example("TL502", "pass"), False)
    row = _example("TL502", "pass")
    row["ng_trajectory"]["gaps"][0]["detail"] = "capture:j1:call_index=4"
    cases["gap of another call index"] = (row, True)
    row = _example("TL502", "pass")
    row["ng_agent_observations"]["gaps"] = [{"code": "model_call_ownership_unavailable", "invocation_id": None, "detail": "capture:j1:call_index=3"}]
    cases["bundle gap the join writes anew"] = (row, False)
    row = _example("TL502", "pass")
    row["ng_model_call_capture"]["gaps"] = [{"code": "model_call_reference_unmatched", "invocation_id": "root", "detail": "zz"}]
    cases["capture gap unreported"] = (row, True)
    row = _example("TL502", "pass")
    row["ng_agent_observations"]["records"].append(
        {"kind": "context_compaction", "invocation_id": "other", "model_calls": [{"model_call_id": "a1"}]}
    )
    cases["compaction of another invocation's call"] = (row, True)
    row = _example("TL502", "pass")
    row["ng_agent_observations"]["records"][0]["model_calls"].append({"model_call_id": "nope"})
    cases["unmatched reference unreported"] = (row, True)
    return cases


def _messages_row() -> dict:
    entry = next(e for e in ENTRIES if e.code == "TL501")
    example = next(e for e in entry.examples if "Anthropic" in e.description)
    return json.loads(_lines(example.jsonl)[0])


CASES = _case_rows()


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(core, python_only, name):
    """Each case is flagged by Python as expected, and proved exactly when it is clean."""
    row, flagged = CASES[name]
    raw = json.dumps(row).encode()
    found = _drift_findings([raw]).get(1, set())
    assert bool(found) == flagged, found
    assert _proved(core, raw) == (not flagged)


# -- mutated rows --------------------------------------------------------------------------------

_SKIP = frozenset({"request", "request_raw", "conversation", "metrics", "text", "arguments", "input", "parameters", "tools"})
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


_VALUES = [None, "", 0, 1, 2, 3, 1.0, -1, "12", True, False, [], {}, [{}], {"a": 1}, "fresh", "capture:x:call_index=0"]
_ITEMS = [
    {"type": "reasoning", "summary": []}, {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
    {"type": "message", "content": []}, {"type": "thinking", "thinking": "t"}, {"type": "tool_use", "id": "t"},
    {"type": "text", "text": "x"}, {}, "s",
]


def _mutate(data, row):
    ids = set()
    _ids(row, ids)
    ids = sorted(ids) or ["x"]
    ident = st.sampled_from(ids)
    ref = st.one_of(
        st.builds(lambda i: {"model_call_id": i}, ident),
        st.builds(lambda r: {"model_ref": {"type": "responses_api_models", "name": "policy"}, "response_id": r}, ident),
        st.builds(lambda i, r: {"model_call_id": i, "response_id": r}, ident, ident),
        st.sampled_from([{}, None, "a1", {"model_call_id": ""}]),
    ).map(copy.deepcopy)
    # Copies: a value drawn twice must not become one object in two places (or inside itself).
    item = st.sampled_from(_ITEMS).map(copy.deepcopy)
    value = st.one_of(ident, ref, st.sampled_from(_VALUES).map(copy.deepcopy), item)
    gap = st.builds(
        lambda code, inv, detail: {"code": code, "invocation_id": inv, "detail": detail},
        st.sampled_from(["model_call_reference_unmatched", "model_call_reference_conflict", "model_call_ownership_unavailable", "x"]),
        st.one_of(st.none(), ident),
        st.one_of(st.none(), ident, st.builds(lambda i, n: f"capture:{i}:call_index={n}", ident, st.integers(0, 3)),
                  st.builds(lambda i: f"model_calls:{i}", ident)),
    )
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["set", "set", "delete", "dup", "compaction", "session", "verifier", "claim", "gap", "turn", "item"]))
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
        elif op == "gap":
            holders = [p for p in paths if p and p[-1] == "gaps" and isinstance(_get(row, p), list)]
            if holders:
                _get(row, data.draw(st.sampled_from(holders))).append(data.draw(gap))
        elif op == "turn":
            stated = row.get("ng_trajectory")
            if isinstance(stated, dict) and isinstance(stated.get("turns"), list) and stated["turns"]:
                turns = stated["turns"]
                turn = turns[data.draw(st.integers(0, len(turns) - 1))]
                if isinstance(turn, dict):
                    key = data.draw(st.sampled_from(["step_count", "answer", "reasoning_content", "resolved", "invocation_id", "model_calls"]))
                    turn[key] = data.draw(st.one_of(value, st.lists(ref, max_size=2)))
                    if data.draw(st.booleans()):
                        row["resolved"] = data.draw(st.sampled_from([True, False, None, 1]))
        elif op == "item":
            holders = [p for p in paths if p and p[-1] in ("output", "content", "choices", "tool_calls") and isinstance(_get(row, p), list)]
            if holders:
                _get(row, data.draw(st.sampled_from(holders))).append(data.draw(item))
        else:
            holders = [p for p in paths if p and p[-1] == "model_calls" and isinstance(_get(row, p), list)
                       and not (len(p) == 2 and p[0] == "ng_trajectory")]
            if holders:
                _get(row, data.draw(st.sampled_from(holders))).append(data.draw(ref))
    return row


def _seeds() -> list[bytes]:
    seeds = _lines((EXAMPLES / "clean.jsonl").read_bytes())
    seeds += _lines((ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl").read_bytes())
    for entry in ENTRIES:
        for example in entry.examples:
            seeds += _lines(example.jsonl)
    return seeds + [json.dumps(row).encode() for row, _ in CASES.values()]


@pytest.fixture(scope="module")
def generated_seeds(tmp_path_factory):
    path = tmp_path_factory.mktemp("drift") / "generated.jsonl"
    made = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "60", "--defects", "0.1",
         "--payload-kb", "1", "--seed", "12", "-o", str(path)],
        capture_output=True, text=True,
    )
    assert made.returncode == 0, made.stderr
    return [line for line in _lines(path.read_bytes()) if isinstance(_loads(line), dict) and b"ng_trajectory" in line]


def _loads(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_rows(core, python_only, generated_seeds, data):
    """A mutated row the core proves clean is one of whose drift rules Python finds nothing."""
    row = _loads(data.draw(st.sampled_from(_seeds() + generated_seeds)))
    if not isinstance(row, dict):
        return
    raw = json.dumps(_mutate(data, row)).encode()
    if _proved(core, raw):
        assert not _drift_findings([raw]).get(1), raw.decode()[:2000]
