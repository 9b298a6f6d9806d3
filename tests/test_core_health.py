"""The core's health judgement (TL601-TL609, src/families/health.rs) against the Python path.

A row the core judges must be one on which Python's health view (`trajlint.health.view`) finds
nothing of the nine row checks; and the judgement it hands back must be Python's own: the same
checks unobserved, and the row's `Digest` field for field. Checked on every row of every corpus,
on the catalog's examples, and on rows mutated where the checks read (token counts, usage, status
codes, response status, error categories, finish reasons, turn references, gaps).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from trajlint import api
from trajlint.check import catalog, fast
from trajlint.check.subject import row_subject
from trajlint.health.checks import ROW_CHECKS
from trajlint.health.view import view_of
from trajlint.read import native

from .conftest import EXAMPLES, ROOT

BIT = fast.HEALTH
CODES = sorted(fast.FAMILIES[BIT])
ENTRIES = [entry for code, entry in sorted(catalog.packaged().items()) if code in CODES]
REAL = ROOT / "tests" / "data" / "real"
HOSTILE = ROOT / "tests" / "data" / "hostile"
PERSISTED = ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"


def _lines(text: str | bytes) -> list[bytes]:
    raw = text.encode() if isinstance(text, str) else text
    return [line for line in raw.split(b"\n") if line.strip()]


def _loads(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def _python(raw: bytes):
    """(rules found, unobserved bits, digest tuple) of the Python health view; None for a line
    that is no row."""
    subject = row_subject("-", 1, raw)
    if not isinstance(subject.value, dict):
        return None
    view = view_of(subject)
    found, unobserved = set(), 0
    for i, check in enumerate(ROW_CHECKS):
        findings = view.findings(check)
        if findings is None:
            unobserved |= 1 << i
        elif findings:
            found.add(check.rules[0])
    return found, unobserved, tuple(view.digest())


def _core_judgement(core, raw: bytes):
    judged = core.health_judgement(raw)
    if judged is None:
        return None
    unobserved, digest = judged
    digest = list(digest)
    digest[3] = tuple(tuple(pair) for pair in digest[3])
    return unobserved, tuple(digest)


def _agrees(core, raw: bytes, where: str) -> bool:
    """Assert the core's judgement is Python's; whether the core judged the row."""
    judged = _core_judgement(core, raw)
    if judged is None:
        assert not core.clean_families(raw, BIT), where
        return False
    assert core.clean_families(raw, BIT) == BIT, where
    python = _python(raw)
    assert python is not None, where
    found, unobserved, digest = python
    assert not found, f"{where}: the core judges the row, Python finds {sorted(found)}"
    assert judged == (unobserved, digest), f"{where}: core {judged}, Python {(unobserved, digest)}"
    return True


def generate_pair(out: Path, rows: int, seeds: tuple[int, int]) -> list[Path]:
    """A defective and a mostly clean generated file of small rows, from these seeds."""
    files = []
    for name, defects, seed in (("defective.jsonl", "0.3", seeds[0]), ("mostly-clean.jsonl", "0.03", seeds[1])):
        path = out / name
        made = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", str(rows), "--defects", defects,
             "--payload-kb", "2", "--seed", str(seed), "-o", str(path)],
            capture_output=True, text=True,
        )
        assert made.returncode == 0, made.stderr
        files.append(path)
    return files


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate_pair(tmp_path_factory.mktemp("health"), 150, (7, 8))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _corpus(generated: list[Path]) -> list[Path]:
    files = [*sorted(EXAMPLES.rglob("*.jsonl")), *sorted(REAL.rglob("*.jsonl")), *sorted(HOSTILE.rglob("*.jsonl"))]
    files += sorted((ROOT / "tests" / "data" / "contract").rglob("*.jsonl"))
    files += [PERSISTED, *generated]
    return [path for path in files if path.is_file()]


def test_the_family_is_registered(core):
    assert core.HEALTH == BIT
    assert [f"TL60{i}" for i in range(1, 10)] == CODES


def test_every_judgement_is_pythons(core, generated):
    judged = 0
    for path in _corpus(generated):
        for number, raw in enumerate(_lines(path.read_bytes()), 1):
            judged += _agrees(core, raw, f"{_name(path)}:{number}")
    assert judged


def test_the_engine_finds_nothing_on_judged_rows(core, generated, monkeypatch):
    """End to end: the run's TL601-TL609 (not only the view) report nothing on a judged line."""
    monkeypatch.setattr(native, "mode", lambda: "off")
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    judged = 0
    for path in _corpus(generated):
        lines = path.read_bytes().split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        report = api.check_rows(lines, select=CODES, isolated=True, max_row_bytes=256 * 1024 * 1024)
        flagged = {finding.line for finding in report.findings if finding.code in CODES}
        for number, raw in enumerate(lines, 1):
            if raw.strip() and core.health_judgement(raw) is not None:
                judged += 1
                assert number not in flagged, f"{_name(path)}:{number}"
    assert judged


def _modelled(raw: bytes) -> bool:
    """A row whose build the judgement models: a stated trajectory NeMo Gym accepts whole, or none
    (the build makes the turns from the evidence); and observations (if any) it accepts whole."""
    subject = row_subject("-", 1, raw)
    if not isinstance(subject.value, dict):
        return False
    evidence = subject.build.evidence
    stated_ok = evidence.stated_valid or not evidence.stated
    return stated_ok and (evidence.observations_valid or not evidence.observations)


def test_coverage_of_the_modelled_rows(core, generated):
    """Every modelled row Python finds healthy is judged."""
    judged = built = 0
    for path in (EXAMPLES / "clean.jsonl", PERSISTED, *generated):
        for number, raw in enumerate(_lines(path.read_bytes()), 1):
            python = _python(raw)
            if python is None or python[0] or not _modelled(raw):
                continue
            assert _core_judgement(core, raw) is not None, f"{_name(path)}:{number} is not judged"
            judged += 1
            built += not isinstance(json.loads(raw).get("ng_trajectory"), dict)
    assert judged > 100 and built > 50


def test_rows_outside_the_model_are_not_judged(core):
    """A stated trajectory NeMo Gym does not accept whole, observations it does not accept whole,
    and lines that are no row, are left to Python."""
    clean = [json.loads(raw) for raw in _lines((EXAMPLES / "clean.jsonl").read_bytes())]
    stated = next(row for row in clean if isinstance(row.get("ng_trajectory"), dict))
    assert core.health_judgement(json.dumps(stated).encode()) is not None
    invalid = copy.deepcopy(stated)
    invalid["ng_trajectory"]["turns"][0]["turn_no"] = "1"  # NeMo Gym's lax reading coerces it
    assert core.health_judgement(json.dumps(invalid).encode()) is None
    observed = next(row for row in clean if isinstance(row.get("ng_agent_observations"), dict))
    assert core.health_judgement(json.dumps(observed).encode()) is not None
    unknown = copy.deepcopy(observed)
    unknown["ng_agent_observations"]["records"][0]["output"] = "x"  # a key the schema does not know
    assert core.health_judgement(json.dumps(unknown).encode()) is None
    for raw in (b"", b"[]", b"{", b'{"ng_trajectory": {"task_id": "0", "rollout_id": "0-0"}, "ng_agent_observations": []}'):
        assert core.health_judgement(raw) is None


def test_counts_written_as_negative_zero_are_not_judged(core):
    """`-0` is the integer 0 to orjson and the float -0.0 to the core: a count or status written
    so is not judged."""
    raw = next(raw for raw in _lines((EXAMPLES / "clean.jsonl").read_bytes()) if core.health_judgement(raw))
    row = json.loads(raw)
    for key in ("tokens_in", "tokens_out", "status_code"):
        call = copy.deepcopy(row)
        call["ng_model_call_capture"]["calls"][0][key] = "NEGATIVE_ZERO"
        line = json.dumps(call).replace('"NEGATIVE_ZERO"', "-0").encode()
        assert core.health_judgement(line) is None, key
    usage = copy.deepcopy(row)
    usage.setdefault("response", {}).setdefault("usage", {})["input_tokens"] = "NEGATIVE_ZERO"
    assert core.health_judgement(json.dumps(usage).replace('"NEGATIVE_ZERO"', "-0").encode()) is None


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.code)
def test_catalog_examples(core, monkeypatch, entry):
    """A failing example's flagged rows are never judged; every judged row agrees with Python."""
    monkeypatch.setattr(native, "mode", lambda: "off")  # the mode is cached: never set it for the session
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    for example in entry.examples:
        lines = _lines(example.jsonl)
        report = api.check_rows(lines, select=CODES, isolated=True)
        flagged = {finding.line for finding in report.findings if finding.code in CODES}
        if example.expect == "fail":
            assert flagged, example.description
        for number, raw in enumerate(lines, 1):
            judged = _agrees(core, raw, f"{entry.code} {example.description}: line {number}")
            assert not (judged and number in flagged), f"{entry.code} {example.description}: line {number}"


# -- mutations where the checks read -------------------------------------------------------------

_count = st.one_of(st.integers(-2, 60), st.sampled_from([None, 0, 1.0, "7", True, 2**64 - 1]))
_status = st.one_of(st.sampled_from([None, 200, 201, 399, 400, 429, 500, 503, 99, -1, 200.0, "500", True]))
_response_status = st.sampled_from([None, "completed", "failed", "error", "cancelled", "incomplete", "", 3])
_category = st.sampled_from([None, "", "timeout", "rate_limit", 0])
_finish = st.sampled_from([None, "stop", "length", "max_output_tokens", "max_tokens", "tool_calls", 1])
_gap_code = st.sampled_from([
    "model_call_reference_unmatched", "model_call_reference_ambiguous", "model_call_reference_conflict",
    "model_calls_unavailable", "model_call_capture_incomplete", "model_call_capture_unreadable",
    "model_call_capture_records_unreadable", "turn_model_call_scope_incomplete", "turns_unavailable",
    "conversation_unavailable", "something_else",
])
_text = st.sampled_from(["", " ", "\x1c", "\u3000", "ok", "42"])


def _stated_calls(row):
    stated = row.get("ng_trajectory")
    calls = stated.get("model_calls") if isinstance(stated, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _captured_calls(row):
    capture = row.get("ng_model_call_capture")
    calls = capture.get("calls") if isinstance(capture, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _turns(row):
    stated = row.get("ng_trajectory")
    turns = stated.get("turns") if isinstance(stated, dict) else None
    return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []


def _set(data, target: dict, key: str, value) -> None:
    if value is None and data.draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = value


def _mutate(data, row: dict) -> dict:
    row = copy.deepcopy(row)
    if data.draw(st.booleans()):
        row.pop("ng_agent_observations", None)  # more rows the judgement models
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from([
            "stated-tokens", "captured-tokens", "usage", "stated-meta", "captured-meta", "response",
            "turn-refs", "turn-content", "gaps", "started-at", "model-ref", "drop-call", "records",
        ]))
        stated_calls, captured_calls, turns = _stated_calls(row), _captured_calls(row), _turns(row)
        if op == "stated-tokens" and stated_calls:
            call = data.draw(st.sampled_from(stated_calls))
            stats = call.setdefault("token_stats", {}) if isinstance(call.get("token_stats"), dict) or "token_stats" not in call else {}
            _set(data, stats, data.draw(st.sampled_from(["prompt_tokens", "completion_tokens"])), data.draw(_count))
        elif op == "captured-tokens" and captured_calls:
            call = data.draw(st.sampled_from(captured_calls))
            _set(data, call, data.draw(st.sampled_from(["tokens_in", "tokens_out"])), data.draw(_count))
        elif op == "usage":
            response = row.setdefault("response", {})
            if isinstance(response, dict):
                usage = response.setdefault("usage", {})
                if isinstance(usage, dict):
                    key = data.draw(st.sampled_from(["input_tokens", "output_tokens", "prompt_tokens", "completion_tokens"]))
                    _set(data, usage, key, data.draw(_count))
        elif op == "stated-meta" and stated_calls:
            call = data.draw(st.sampled_from(stated_calls))
            meta = call.get("response_metadata")
            if isinstance(meta, dict):
                key, values = data.draw(st.sampled_from([
                    ("status_code", _status), ("response_status", _response_status),
                    ("error_category", _category), ("finish_reason", _finish),
                ]))
                _set(data, meta, key, data.draw(values))
        elif op == "captured-meta" and captured_calls:
            call = data.draw(st.sampled_from(captured_calls))
            key, values = data.draw(st.sampled_from([
                ("status_code", _status), ("response_status", _response_status),
                ("error_category", _category), ("finish_reason", _finish),
            ]))
            _set(data, call, key, data.draw(values))
        elif op == "response" and (captured_calls or stated_calls):
            call = data.draw(st.sampled_from(captured_calls + stated_calls))
            _set(data, call, "response", data.draw(st.sampled_from([
                None, {}, {"status": "failed"}, {"output": []}, {"output_text": " "},
                {"choices": [{"message": {"content": ""}}]}, {"choices": [{"text": "x"}]},
                {"content": [{"type": "text", "text": "hi"}]}, {"choices": "x"},
            ])))
        elif op == "turn-refs" and turns:
            turn = data.draw(st.sampled_from(turns))
            refs = turn.get("model_calls")
            if isinstance(refs, list):
                action = data.draw(st.sampled_from(["drop", "duplicate", "rename", "empty", "pair"]))
                if action == "drop" and refs:
                    refs.pop(data.draw(st.integers(0, len(refs) - 1)))
                elif action == "duplicate" and refs:
                    refs.append(copy.deepcopy(refs[0]))
                elif action == "rename" and refs and isinstance(refs[0], dict):
                    refs[0]["model_call_id"] = data.draw(st.sampled_from(["", "nope", "a1", None]))
                elif action == "empty":
                    refs.clear()
                elif refs and isinstance(refs[0], dict):
                    refs[0].pop("model_call_id", None)
        elif op == "turn-content" and turns:
            turn = data.draw(st.sampled_from(turns))
            key = data.draw(st.sampled_from(["answer", "reasoning_content"]))
            _set(data, turn, key, data.draw(st.one_of(
                st.none(), _text, st.builds(lambda t: [{"type": "output_text", "text": t}], _text),
                st.just([{"type": "function_call", "name": "f"}]), st.just({"tool_calls": []}),
                st.just([{"type": "redacted_thinking", "data": "x"}]),
            )))
        elif op == "gaps":
            section = data.draw(st.sampled_from(["ng_trajectory", "ng_model_call_capture"]))
            holder = row.get(section)
            if isinstance(holder, dict):
                gaps = holder.setdefault("gaps", [])
                if isinstance(gaps, list):
                    gaps.append({"code": data.draw(_gap_code), "invocation_id": None, "detail": data.draw(st.sampled_from([None, "x"]))})
        elif op == "started-at" and (captured_calls or stated_calls):
            call = data.draw(st.sampled_from(captured_calls + stated_calls))
            _set(data, call, "started_at", data.draw(st.sampled_from([None, 0, 1.5, 1786032100.0, 2**60, "1"])))
        elif op == "model-ref" and captured_calls:
            call = data.draw(st.sampled_from(captured_calls))
            _set(data, call, "model_ref", data.draw(st.sampled_from([
                None, {"type": "responses_api_models", "name": "judge"}, {"type": "other", "name": "x"},
            ])))
        elif op == "records" and isinstance(row.get("ng_agent_observations"), dict):
            records = row["ng_agent_observations"].get("records")
            holders = [r for r in records if isinstance(r, dict) and isinstance(r.get("model_calls"), list)] if isinstance(records, list) else []
            if holders:
                refs = data.draw(st.sampled_from(holders))["model_calls"]
                action = data.draw(st.sampled_from(["drop", "duplicate", "rename", "session"]))
                if action == "drop" and refs:
                    refs.pop(data.draw(st.integers(0, len(refs) - 1)))
                elif action == "duplicate" and refs:
                    refs.append(copy.deepcopy(refs[-1]))
                elif action == "rename" and refs and isinstance(refs[0], dict):
                    refs[0]["model_call_id"] = data.draw(st.sampled_from(["", "nope", None]))
                elif action == "session" and captured_calls:
                    owner = data.draw(st.sampled_from(holders)).get("invocation_id")
                    data.draw(st.sampled_from(captured_calls))["client_session_id"] = owner
        elif op == "drop-call" and captured_calls:
            calls = row["ng_model_call_capture"]["calls"]
            calls.pop(data.draw(st.integers(0, len(calls) - 1)))
    return row


def _seeds() -> list[bytes]:
    seeds = [raw for raw in _lines(PERSISTED.read_bytes()) + _lines((EXAMPLES / "clean.jsonl").read_bytes())]
    for entry in ENTRIES:
        for example in entry.examples:
            seeds += _lines(example.jsonl)
    return seeds


@pytest.fixture(scope="module")
def generated_seeds(generated):
    return [line for line in _lines(generated[1].read_bytes()) if isinstance(_loads(line), dict)]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_rows(core, generated_seeds, data):
    """A mutated row the core judges is healthy to Python, with Python's judgement."""
    seeds = _seeds() + generated_seeds
    if data.draw(st.booleans()):  # mostly rows the judgement models: a stated trajectory
        seeds = [raw for raw in seeds if b'"ng_trajectory"' in raw]
    row = _loads(data.draw(st.sampled_from(seeds)))
    if not isinstance(row, dict):
        return
    raw = json.dumps(_mutate(data, row)).encode()
    event("judged" if _agrees(core, raw, raw.decode()[:2000]) else "not judged")
