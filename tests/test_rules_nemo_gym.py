"""Rows as NeMo Gym 0.7.0's collector writes them raise no error, except a compaction helper as a turn,
and no warning but the hollow turns NeMo Gym's own health check flags.

The fixture `tests/data/nemo-gym-0.7-persisted.jsonl` holds sample rows after NeMo Gym 0.7.0
itself joined their observations, built their trajectory and stripped their capture payloads
(two harness rows with a compaction helper are first turned back into the raw rows their agent
returned, so that 0.7.0 synthesizes their turns). CI reads the fixture; where NeMo Gym's venv
exists, a test rebuilds it and checks it is still what NeMo Gym writes. Regenerate it with
`python -m tests.test_rules_nemo_gym` (needs the venv, see tools/compare_with_nemo_gym.py).
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import orjson
import pytest

from trajlint.check.select import rule_set

from .conftest import ROOT, check_paths

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
FIXTURE = ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"
PICKED = (0, 4, 5, 13, 14, 16, 18, 21)  # dialects, subagents, verifiers, a producer, capture only, helpers
UNPERSIST = (13, 21)  # persisted samples whose compaction helper 0.7.0 would make a turn
PAYLOAD = ("request", "response", "request_raw", "response_raw")
HELPER_TURNS = {4: "/ng_trajectory/turns/1/model_calls/0", 8: "/ng_trajectory/turns/1/model_calls/0"}  # line: pointer
# The Anthropic Messages turns 0.7.0 recorded hollow: its own health check flags them, and so does
# trajlint, since training reads the recorded turns (line: turn pointers).
HOLLOW_TURNS = {1: ("/ng_trajectory/turns/0", "/ng_trajectory/turns/1", "/ng_trajectory/turns/2"),
                5: ("/ng_trajectory/turns/0",), 6: ("/ng_trajectory/turns/0",)}
HOLLOW = {(line, "agent-turn-hollow", ptr) for line, ptrs in HOLLOW_TURNS.items() for ptr in ptrs}

sys.path.insert(0, str(ROOT / "tools"))
import compare_with_nemo_gym as compare  # noqa: E402


def _unpersist(row: dict) -> dict:
    """The row as its agent returned it: no trajectory yet, payloads still on the captured calls."""
    row = copy.deepcopy(row)
    by_id = {c["model_call_id"]: c for c in row.pop("ng_trajectory")["model_calls"]}
    for call in row["ng_model_call_capture"]["calls"]:
        if call["model_call_id"] in by_id:
            call["request"] = by_id[call["model_call_id"]]["request"]
            call["response"] = by_id[call["model_call_id"]]["response"]
    return row


def persisted_by_nemo_gym(gym_python: str) -> list[dict]:
    samples = [orjson.loads(line) for line in SAMPLES.read_bytes().splitlines() if line.strip()]
    raw = [_unpersist(samples[i]) if i in UNPERSIST else samples[i] for i in PICKED]
    built = compare.gym_builds(gym_python, b"".join(orjson.dumps(r) + b"\n" for r in raw))
    rows = []
    for row, gym in zip(raw, built):
        assert gym.get("ng_trajectory") is not None, gym
        out = copy.deepcopy(row)
        out["ng_trajectory"] = gym["ng_trajectory"]
        if "ng_agent_observations" in out:
            out["ng_agent_observations"] = gym["ng_agent_observations"]
        for call in out["ng_model_call_capture"]["calls"]:
            for key in PAYLOAD:
                call.pop(key, None)
        rows.append(out)
    return rows


def _fixture_rows() -> list[dict]:
    return [orjson.loads(line) for line in FIXTURE.read_bytes().splitlines()]


@pytest.mark.skipif(not Path(compare.DEFAULT_GYM_PYTHON).exists(), reason="NeMo Gym 0.7.0 venv not available")
def test_fixture_is_what_nemo_gym_writes():
    assert persisted_by_nemo_gym(compare.DEFAULT_GYM_PYTHON) == _fixture_rows()


def test_fixture_holds_helper_turns_and_hollow_anthropic_turns():
    rows = _fixture_rows()
    assert len(rows) == len(PICKED)
    assert all("request" not in c for r in rows for c in r["ng_model_call_capture"]["calls"])
    hollow = [t for r in rows for t in r["ng_trajectory"]["turns"] if t["answer"] is None]
    assert hollow, "0.7.0 builds Anthropic turns hollow"


def _by_severity(result) -> dict[str, set[tuple[int, str, str]]]:
    out: dict[str, set[tuple[int, str, str]]] = {}
    for f in result.findings:
        out.setdefault(f.severity, set()).add((f.line, f.name, f.pointer))
    return out


def test_latest_profile_reports_only_the_helper_turns_as_errors(rules):
    result = check_paths([FIXTURE], rule_set(rules))
    found = _by_severity(result)
    expected = {(line, "compaction-call-as-turn", ptr) for line, ptr in HELPER_TURNS.items()}
    assert found.get("error", set()) == expected
    assert found.get("warning", set()) == HOLLOW
    # What remains is information: 0.7.0's hollow Anthropic turns, its own gaps, unowned judge calls.
    assert {name for _, name, _ in found["info"]} <= {"trajectory-drift", "observation-gap", "unowned-model-call"}
    assert any(name == "trajectory-drift" for _, name, _ in found["info"])


def test_nemo_gym_profile_lowers_the_helper_turns_to_warnings(rules):
    result = check_paths([FIXTURE], rule_set(rules, profile="nemo-gym-0.7"))
    found = _by_severity(result)
    assert "error" not in found
    assert found["warning"] == {(line, "compaction-call-as-turn", ptr) for line, ptr in HELPER_TURNS.items()} | HOLLOW


if __name__ == "__main__":
    gym = sys.argv[1] if len(sys.argv) > 1 else compare.DEFAULT_GYM_PYTHON
    FIXTURE.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in persisted_by_nemo_gym(gym)))
    print(f"wrote {FIXTURE}")


def test_nemo_gym_profile_lowers_what_it_cannot_know_about_verifiers(rules, tmp_path):
    from .rule_rows import JUDGE, call, findings, invocation, row, trajectory, turn

    stated = trajectory([turn("A", 1, "a"), turn("A", 2, "j")], [invocation("A", "a", "j")])
    r = row([call("a"), call("j", 1, ref=JUDGE, verifier_invocation_id="v")], [invocation("A", "a", "j")],
            ng_trajectory=stated)
    # The rows' recorded turns are hollow too (TL603): not what this test is about.
    latest = {(f.name, f.severity) for f in findings([r], rule_set(rules), tmp_path) if f.severity != "info" and f.code != "TL603"}
    assert latest == {("verifier-call-as-turn", "error"), ("verifier-call-claimed-by-agent", "error")}
    lowered = findings([r], rule_set(rules, profile="nemo-gym-0.7"), tmp_path)
    assert {(f.name, f.severity) for f in lowered if f.severity != "info" and f.code != "TL603"} == {
        ("verifier-call-as-turn", "warning"), ("verifier-call-claimed-by-agent", "warning")
    }
