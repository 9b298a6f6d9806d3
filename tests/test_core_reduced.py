"""Rules run on a proved row's reduced row (`trajlint.check.fast.REDUCED`): the core hands back
the parts they read, and they find there exactly what they find on the whole row.

observation-gap (TL503) lists every gap a row carries, so a row with gaps is never clean of it;
the fast path still takes such a row: the core proves it clean of everything else and hands back
its gap lists.
"""

from __future__ import annotations

import json

import pytest

from trajlint import api
from trajlint.check import fast
from trajlint.check import subject as subject_module
from trajlint.read import native

from .conftest import EXAMPLES

ALL_FAMILIES = sum(fast.FAMILIES)
SELECT = sorted(fast.STRICT | fast.RUN_LEVEL | fast.REDUCED)


def _gap(code: str, invocation: str | None = None, detail: str | None = None) -> dict:
    return {"code": code, "invocation_id": invocation, "detail": detail}


def _rows_with_gaps() -> list[dict]:
    """Clean rows given gaps in each section NeMo Gym writes them to, repeated as it repeats them."""
    rows = []
    for raw in (EXAMPLES / "clean.jsonl").read_bytes().splitlines():
        if raw.strip():
            rows.append(json.loads(raw))
    observed = [_gap("no_sandbox_runtime"), _gap("tool_results_unavailable", "root", "the harness kept none")]
    captured = [_gap("model_call_usage_unavailable", None, "resp_1")]
    made = []
    for i, row in enumerate(rows):
        row = json.loads(json.dumps(row))
        for key, gaps in (("ng_agent_observations", observed), ("ng_model_call_capture", captured), ("ng_trajectory", observed + captured)):
            # Odd rows carry gaps in their trajectory alone.
            if isinstance(row.get(key), dict) and (i % 2 == 0 or key == "ng_trajectory"):
                row[key]["gaps"] = gaps
        made.append(row)
    return made


@pytest.fixture
def gaps_file(tmp_path):
    path = tmp_path / "gaps.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _rows_with_gaps()))
    return path


def _findings(path, monkeypatch, mode: str):
    monkeypatch.setattr(native, "mode", lambda: mode)
    result = api.check_paths([str(path)], select=SELECT, isolated=True)
    return [(f.code, f.line, f.pointer, f.message, f.related) for f in result.findings]


def test_rows_with_gaps_take_the_fast_path(core, gaps_file, monkeypatch):
    parsed = []
    real_parse = subject_module.parse
    monkeypatch.setattr(subject_module, "parse", lambda raw: parsed.append(raw) or real_parse(raw))
    on = _findings(gaps_file, monkeypatch, "on")
    assert not parsed, "a row with gaps went the Python way"
    assert {code for code, *_ in on} == {"TL503"}
    assert on == _findings(gaps_file, monkeypatch, "off")
    assert on == _findings(gaps_file, monkeypatch, "check")


def test_the_core_hands_back_each_gap_list_as_written(core):
    row = {"_ng_task_index": 1, "ng_agent_observations": {"gaps": [_gap("a", "x", "é\u2028\"")]}, "ng_model_call_capture": {"gaps": "not a list"},
           "ng_trajectory": [], "other": {"gaps": [1]}}
    raw = json.dumps(row, ensure_ascii=False).encode()
    bits, pairs, parts, judged, unowned = core.check_row(raw, 0, core.GAPS)
    assert judged is None and unowned == []
    assert pairs == [("_ng_task_index", "1")]
    assert [(section, key, json.loads(text)) for section, key, text in parts] == [
        ("ng_agent_observations", "gaps", row["ng_agent_observations"]["gaps"]),
        ("ng_model_call_capture", "gaps", "not a list"),
    ]
    assert fast.reduced_row(pairs, parts) == {"_ng_task_index": 1, **{k: row[k] for k in ("ng_agent_observations", "ng_model_call_capture")}}
    assert core.check_row(raw, 0)[2] == []  # not asked for


def test_a_gap_holding_negative_zero_is_handed_back_as_written(core):
    """serde_json reads `-0` as -0.0 where orjson reads 0: the part's text is the line's own, so
    orjson reads it as it reads the whole line."""
    raw = b'{"_ng_task_index": 1, "ng_trajectory": {"gaps": [{"code": "x", "detail": -0}]}}'
    assert core.check_row(raw, 0, core.GAPS)[2] == [("ng_trajectory", "gaps", '[{"code": "x", "detail": -0}]')]
    assert core.check_row(raw, 0)[2] == []


def test_a_wrong_gap_list_stops_a_checked_run(core, gaps_file, monkeypatch):
    monkeypatch.setattr(native, "mode", lambda: "check")
    real = fast.prover()

    def lying(raw, wanted, extracts, judges, partial=False):
        proof = real[0](raw, wanted, extracts, judges, partial)
        if proof is None or type(proof) is int:
            return proof
        bits, pairs, parts, judged, unowned = proof
        return bits, pairs, [(section, key, "[]") for section, key, _ in parts], judged, unowned

    monkeypatch.setattr(fast, "prover", lambda: (lying, real[1]))
    monkeypatch.setattr(native, "mode", lambda: "check")
    with pytest.raises(api.SettingsError, match=r"the core reads /ng_\w+/gaps as \[\]"):
        api.check_paths([str(gaps_file)], select=SELECT, isolated=True)


def test_a_reduced_rule_that_finds_otherwise_stops_a_checked_run(core, gaps_file, monkeypatch):
    """The comparison itself: were the reduced row to lose what TL503 reads, check mode says so."""
    real_reduced = fast.reduced_row
    monkeypatch.setattr(fast, "reduced_row", lambda pairs, parts=(): real_reduced(pairs, ()))
    monkeypatch.setattr(native, "mode", lambda: "check")
    with pytest.raises(api.SettingsError, match="TL503 finds otherwise on the reduced row"):
        api.check_paths([str(gaps_file)], select=SELECT, isolated=True)


def test_only_a_run_with_the_reduced_rules_asks_for_the_parts():
    assert fast.wanted_extracts(["TL503", "TL101"]) == fast.GAPS
    assert fast.wanted_extracts(["TL101", "TL401"]) == 0
    assert fast.wanted_families(["TL503", "TL002", "TL401"], ALL_FAMILIES) == 0
