"""The core's health judgement on rows without a stated trajectory, whose turns the build makes
from the evidence (src/families/health.rs `built_turns`), against the Python path.

Such a row's turns are one per call an agent invocation owns, each referencing its own call; a
turn is judged by what the responses of the calls its reference matches say
(`turn_says_something(..., recorded=False)`), in any of the three dialects. The rows here are
mutated where that reading and the checks differ from the stated case: responses emptied or made
of whitespace, reasoning or tool calls only, ids and response ids repeated, counts and usage
missing, failed calls, sessions, compactions, verifiers, two invocations claiming one call, gaps.
Whatever the core judges must be Python's judgement (`test_core_health._agrees`).
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from .conftest import EXAMPLES
from .test_core_health import (
    ENTRIES,
    PERSISTED,
    REAL,
    _agrees,
    _core_judgement,
    _lines,
    _loads,
    _name,
    _python,
    generate_pair,
)

STATED, OBSERVATIONS, CAPTURE = "ng_trajectory", "ng_agent_observations", "ng_model_call_capture"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Generated files (seeds other than test_core_health's): most of their rows state no
    trajectory, in all three dialects."""
    return generate_pair(tmp_path_factory.mktemp("health-built"), 200, (21, 22))


def _unstated(raw: bytes) -> bool:
    row = _loads(raw)
    return isinstance(row, dict) and not isinstance(row.get(STATED), dict)


def _corpus_lines(generated) -> list[tuple[str, int, bytes]]:
    files = [*sorted(EXAMPLES.rglob("*.jsonl")), *sorted(REAL.rglob("*.jsonl")), PERSISTED, *generated]
    return [
        (_name(path), number, raw)
        for path in files
        if path.is_file()
        for number, raw in enumerate(_lines(path.read_bytes()), 1)
    ]


def test_rows_built_from_evidence_are_judged_as_python_judges_them(core, generated):
    """On every corpus: each row without a stated trajectory that the core judges has Python's
    judgement, and nearly every such row Python finds healthy is judged."""
    healthy = judged = rows = 0
    unjudged, dialects = [], set()
    for name, number, raw in _corpus_lines(generated):
        if not _unstated(raw):
            continue
        rows += 1
        was_judged = _agrees(core, raw, f"{name}:{number}")
        judged += was_judged
        if was_judged:
            dialects.update(_dialects(json.loads(raw)))
        python = _python(raw)
        if python is not None and not python[0]:
            healthy += 1
            if not was_judged:
                unjudged.append(f"{name}:{number}")
    print(f"\nrows without a stated trajectory: {rows}; healthy to Python: {healthy}; judged: {judged}")
    assert rows > 200 and healthy > 150
    # Those left to Python hold an observation record NeMo Gym rejects (the build keeps the
    # others, one by one): not modelled.
    assert len(unjudged) <= healthy // 50, unjudged
    assert dialects == {"output", "choices", "content"}


def _dialects(row: dict) -> set[str]:
    """The dialects of the responses of a row's captured calls: Responses, Chat, Anthropic."""
    found = set()
    for call in _turn_calls(row):
        response = call["response"]
        if isinstance(response, dict):
            found.update(key for key in ("output", "choices", "content") if isinstance(response.get(key), list))
    return found


def _a_seed(core) -> dict:
    """A row without a stated trajectory the core judges, with an agent invocation owning calls."""
    for raw in _lines((EXAMPLES / "clean.jsonl").read_bytes()):
        row = json.loads(raw)
        owners = _records(row, "agent_invocation")
        if not isinstance(row.get(STATED), dict) and _core_judgement(core, raw) is not None and owners and _turn_calls(row):
            return row
    raise AssertionError("no seed")


def _turn_calls(row: dict) -> list[dict]:
    capture = row.get(CAPTURE)
    calls = capture.get("calls") if isinstance(capture, dict) else None
    return [c for c in calls if isinstance(c, dict) and c.get("response") is not None] if isinstance(calls, list) else []


def _judge(core, row: dict):
    raw = json.dumps(row).encode()
    judged = _agrees(core, raw, json.dumps(row)[:300])
    return judged, _python(raw)


def test_hollow_and_saying_turns(core):
    """A turn whose response says only whitespace is hollow (Python finds agent-turn-hollow: not
    judged); reasoning alone, or a tool call alone, says something (judged)."""
    seed = _a_seed(core)
    cases = {
        "whitespace": ({"output": [{"type": "message", "content": [{"type": "output_text", "text": " \u3000\x1c"}]}]}, False),
        "reasoning only": ({"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]}]}, True),
        "tool call only": ({"output": [{"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}]}, True),
        "chat reasoning_content blank, reasoning said": (
            {"choices": [{"message": {"content": None, "reasoning_content": " ", "reasoning": "r"}}]}, False),
        "chat reasoning_content empty, reasoning said": (
            {"choices": [{"message": {"content": None, "reasoning_content": "", "reasoning": "r"}}]}, True),
        "chat tool calls": ({"choices": [{"message": {"content": None, "tool_calls": [{"id": "t"}]}}]}, True),
        "chat message as text": ({"choices": [{"message": "hello"}]}, False),
        "anthropic redacted thinking": ({"content": [{"type": "redacted_thinking", "data": "x"}]}, True),
        "anthropic blank text": ({"content": [{"type": "text", "text": ""}]}, False),
        "no dialect": ({"output_text": "hello"}, False),
    }
    for name, (response, says) in cases.items():
        row = copy.deepcopy(seed)
        for call in _turn_calls(row):
            call["response"] = response
            call.pop("finish_reason", None)
        judged, python = _judge(core, row)
        found = python[0]
        assert ("agent-turn-hollow" in found) != says, (name, found)
        assert judged == (not found), (name, found)


def test_repeated_ids(core):
    """A call captured twice under one id: the session's claim takes the last, the turn's
    reference matches both (Python finds trajectory-capture-mismatch); the core never judges it
    otherwise than Python."""
    seed = _a_seed(core)
    row = copy.deepcopy(seed)
    calls = row[CAPTURE]["calls"]
    calls.append(copy.deepcopy(_turn_calls(row)[0]))
    judged, python = _judge(core, row)
    assert not judged or not python[0]


def test_rows_outside_the_model_are_not_judged(core):
    """What the judgement leaves to Python on a row without a stated trajectory: observations
    NeMo Gym does not accept whole (the build keeps their valid records one by one), and a call
    two invocations claim (whose turn's owner is the first claimant's, or a later one naming its
    id)."""
    seed = _a_seed(core)
    unknown_key = copy.deepcopy(seed)
    record = next(r for r in unknown_key[OBSERVATIONS]["records"] if r.get("kind") == "agent_invocation")
    record["output"] = "x"
    assert _core_judgement(core, json.dumps(unknown_key).encode()) is None
    two_owners = copy.deepcopy(seed)
    records = two_owners[OBSERVATIONS]["records"]
    first = next(r for r in records if r.get("kind") == "agent_invocation" and r.get("model_calls"))
    second = {**copy.deepcopy(first), "invocation_id": "another", "model_calls": first["model_calls"][:1]}
    records.append(second)
    assert _core_judgement(core, json.dumps(two_owners).encode()) is None
    for raw in (b"", b"[]", b"{", b'{"ng_agent_observations": {"records": "x"}}'):
        assert core.health_judgement(raw) is None


# -- mutations --------------------------------------------------------------------------------------

_count = st.one_of(st.integers(-2, 60), st.sampled_from([None, 0, 1.0, "7", True]))
_status = st.sampled_from([None, 200, 201, 400, 429, 500, -1, 200.0, "500", True])
_response_status = st.sampled_from([None, "completed", "failed", "error", "cancelled", "", 3])
_category = st.sampled_from([None, "", "timeout", 0])
_finish = st.sampled_from([None, "stop", "length", "max_output_tokens", "max_tokens", "tool_calls", 1])
_text = st.sampled_from(["", " ", "\x1c", "\u3000", "\u200b", "ok"])
_gap_code = st.sampled_from([
    "model_call_reference_unmatched", "model_call_reference_ambiguous", "model_call_reference_conflict",
    "model_calls_unavailable", "model_call_capture_incomplete", "model_call_capture_unreadable",
    "model_call_capture_records_unreadable", "turn_model_call_scope_incomplete", "turns_unavailable",
    "conversation_unavailable", "model_call_ownership_unavailable", "something_else",
])


def _responses(text):
    return st.sampled_from([
        None, {}, {"output": []}, {"output": ["text", 3]}, {"choices": []}, {"choices": "x"}, {"content": "plain"},
        {"output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}]},
        {"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}]},
        {"output": [{"type": "reasoning", "encrypted_content": text}, {"type": "message", "content": []}]},
        {"output": [{"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}]},
        {"output": [{"type": "reasoning", "tool_calls": [1]}]},
        {"output": [{"type": "message", "tool_calls": [1]}]},
        {"output": [{"type": "message", "content": [{"type": "output_text", "text": [{"text": text}]}]}]},
        {"choices": [{"message": {"content": text}}]},
        {"choices": [{"message": {"content": None, "reasoning_content": text, "reasoning": "r"}}]},
        {"choices": [{"message": {"content": None, "reasoning_content": 0, "reasoning": text}}]},
        {"choices": [{"message": {"content": None, "reasoning": text, "refusal": None}}]},
        {"choices": [{"message": {"content": None, "tool_calls": [{"id": "t", "type": "function"}]}}]},
        {"choices": [{"message": {"content": None, "tool_calls": []}}]},
        {"choices": [{"message": {"content": None, "tool_calls": {}, "type": "tool_call"}}]},
        {"choices": [{"message": text}]}, {"choices": [{"message": None, "text": text}]},
        {"choices": ["x"], "content": [{"type": "text", "text": text}]},
        {"choices": [{"message": {"type": "redacted_thinking", "data": text}}]},
        {"choices": [{"message": {"thinking": text, "summary": [text]}}]},
        {"content": [{"type": "thinking", "thinking": text}]},
        {"content": [{"type": "redacted_thinking", "data": text}]},
        {"content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
        {"content": [{"type": "text", "text": text}, "loose"]},
        {"content": [{"type": {"x": 1}, "text": text}]},
        {"output_text": text}, {"output": {}, "content": [{"type": "text", "text": text}]},
    ])


def _captured(row) -> list[dict]:
    capture = row.get(CAPTURE)
    calls = capture.get("calls") if isinstance(capture, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _records(row, kind=None) -> list[dict]:
    bundle = row.get(OBSERVATIONS)
    records = bundle.get("records") if isinstance(bundle, dict) else None
    if not isinstance(records, list):
        return []
    return [r for r in records if isinstance(r, dict) and (kind is None or r.get("kind") == kind)]


def _ref(call: dict) -> dict:
    return {"model_call_id": call.get("model_call_id"), "model_ref": call.get("model_ref"), "response_id": call.get("response_id")}


def _set(data, target: dict, key: str, value) -> None:
    if value is None and data.draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = value


_OPS = [
    "response", "raw", "tokens", "usage", "meta", "duplicate-call", "call-id", "response-id", "model-ref",
    "session", "verifier", "compaction", "second-owner", "refs", "gaps", "drop-observations", "stated",
    "drop-call", "started-at", "bad-record",
]


def _mutate(data, row: dict) -> dict:
    row = copy.deepcopy(row)
    row.pop(STATED, None)
    for _ in range(data.draw(st.integers(1, 5))):
        op = data.draw(st.sampled_from(_OPS))
        calls, invocations = _captured(row), _records(row, "agent_invocation")
        if op == "response" and calls:
            _set(data, data.draw(st.sampled_from(calls)), "response", data.draw(_responses(data.draw(_text))))
        elif op == "raw" and calls:
            call = data.draw(st.sampled_from(calls))
            call["response_raw"], call["response"] = call.get("response"), None
        elif op == "tokens" and calls:
            _set(data, data.draw(st.sampled_from(calls)), data.draw(st.sampled_from(["tokens_in", "tokens_out"])), data.draw(_count))
        elif op == "usage":
            response = row.setdefault("response", {})
            usage = response.setdefault("usage", {}) if isinstance(response, dict) else None
            if isinstance(usage, dict):
                key = data.draw(st.sampled_from(["input_tokens", "output_tokens", "prompt_tokens", "completion_tokens"]))
                _set(data, usage, key, data.draw(_count))
        elif op == "meta" and calls:
            key, values = data.draw(st.sampled_from([
                ("status_code", _status), ("response_status", _response_status),
                ("error_category", _category), ("finish_reason", _finish),
            ]))
            _set(data, data.draw(st.sampled_from(calls)), key, data.draw(values))
        elif op == "duplicate-call" and calls:
            twin = copy.deepcopy(data.draw(st.sampled_from(calls)))
            if data.draw(st.booleans()):
                twin["response_id"] = data.draw(st.sampled_from(["other", "", None]))
            row[CAPTURE]["calls"].insert(data.draw(st.integers(0, len(row[CAPTURE]["calls"]))), twin)
        elif op == "call-id" and calls:
            others = [c.get("model_call_id") for c in calls]
            _set(data, data.draw(st.sampled_from(calls)), "model_call_id", data.draw(st.sampled_from([*others, "", None, 7])))
        elif op == "response-id" and calls:
            others = [c.get("response_id") for c in calls]
            _set(data, data.draw(st.sampled_from(calls)), "response_id", data.draw(st.sampled_from([*others, "", None])))
        elif op == "model-ref" and calls:
            _set(data, data.draw(st.sampled_from(calls)), "model_ref", data.draw(st.sampled_from([
                None, {"type": "responses_api_models", "name": "judge"}, {"type": "other", "name": "x"},
            ])))
        elif op == "session" and calls:
            owners = [r.get("invocation_id") for r in invocations]
            _set(data, data.draw(st.sampled_from(calls)), "client_session_id", data.draw(st.sampled_from([*owners, "nobody", None])))
        elif op == "verifier" and calls:
            _set(data, data.draw(st.sampled_from(calls)), "verifier_invocation_id", data.draw(st.sampled_from(["v", "", None])))
        elif op == "compaction" and calls and invocations:
            owner = data.draw(st.sampled_from(invocations)).get("invocation_id")
            record = {
                "kind": "context_compaction", "invocation_id": owner, "observed_at": 1.0, "trigger": "auto",
                "tokens_before": 10, "tokens_after": 2, "outcome": "completed", "summary": "s",
                "first_kept_item_id": None, "model_calls": [_ref(data.draw(st.sampled_from(calls)))],
            }
            if data.draw(st.booleans()):
                record["before_model_call"] = _ref(data.draw(st.sampled_from(calls)))
            row[OBSERVATIONS]["records"].append(record)
        elif op == "second-owner" and calls and invocations:
            record = copy.deepcopy(data.draw(st.sampled_from(invocations)))
            record["invocation_id"] = data.draw(st.sampled_from(["second", record.get("invocation_id")]))
            record["model_calls"] = [_ref(data.draw(st.sampled_from(calls)))]
            row[OBSERVATIONS]["records"].append(record)
        elif op == "refs" and invocations:
            refs = data.draw(st.sampled_from(invocations)).get("model_calls")
            if isinstance(refs, list):
                action = data.draw(st.sampled_from(["drop", "duplicate", "rename", "empty", "pair"]))
                if action == "drop" and refs:
                    refs.pop(data.draw(st.integers(0, len(refs) - 1)))
                elif action == "duplicate" and refs:
                    refs.append(copy.deepcopy(refs[-1]))
                elif action == "rename" and refs and isinstance(refs[0], dict):
                    refs[0]["model_call_id"] = data.draw(st.sampled_from(["", "nope", None]))
                elif action == "empty":
                    refs.clear()
                elif refs and isinstance(refs[0], dict):
                    refs[0]["model_call_id"] = None
        elif op == "gaps":
            holder = row.get(data.draw(st.sampled_from([OBSERVATIONS, CAPTURE])))
            if isinstance(holder, dict):
                gaps = holder.setdefault("gaps", [])
                if isinstance(gaps, list):
                    gaps.append({"code": data.draw(_gap_code), "invocation_id": None, "detail": data.draw(st.sampled_from([None, "x"]))})
        elif op == "drop-observations":
            row.pop(OBSERVATIONS, None)
        elif op == "stated":
            row[STATED] = data.draw(st.sampled_from([None, [], "x"]))
        elif op == "drop-call" and calls:
            row[CAPTURE]["calls"].pop(data.draw(st.integers(0, len(row[CAPTURE]["calls"]) - 1)))
        elif op == "started-at" and calls:
            _set(data, data.draw(st.sampled_from(calls)), "started_at", data.draw(st.sampled_from([None, 0, 1.5, 1786032100.0, "1"])))
        elif op == "bad-record" and invocations:
            data.draw(st.sampled_from(invocations))["output"] = "x"
    return row


@pytest.fixture(scope="module")
def seeds(generated) -> list[bytes]:
    seeds = _lines((EXAMPLES / "clean.jsonl").read_bytes()) + _lines(PERSISTED.read_bytes())
    for entry in ENTRIES:
        for example in entry.examples:
            seeds += _lines(example.jsonl)
    seeds += _lines(generated[1].read_bytes())
    rows = [raw for raw in seeds if isinstance(_loads(raw), dict) and isinstance(_loads(raw).get(CAPTURE), dict)]
    assert rows
    return rows


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_rows_without_a_stated_trajectory(core, seeds, data):
    """A mutated row without a stated trajectory that the core judges is healthy to Python, with
    Python's judgement."""
    row = _loads(data.draw(st.sampled_from(seeds)))
    raw = json.dumps(_mutate(data, row)).encode()
    event("judged" if _agrees(core, raw, raw.decode()[:2000]) else "not judged")
