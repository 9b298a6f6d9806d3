"""Rollout health (TL6xx): the checks on trajlint's build, verdicts, task reductions and the report."""

from __future__ import annotations

import copy
import json

import orjson
import pytest
from click.testing import CliRunner

from trajlint.check import catalog
from trajlint.check.run import run
from trajlint.cli import main
from trajlint.read import iter_sources

from .conftest import EXAMPLES, ROOT
from .rule_rows import call, findings, invocation, of, row

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
PERSISTED = ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"


def usage(r: dict, prompt: int | None = None, completion: int | None = None) -> dict:
    """The row with a transcript whose usage is the sum over its captured calls (or the given counts)."""
    calls = r["ng_model_call_capture"]["calls"]
    prompt = sum(c["tokens_in"] or 0 for c in calls) if prompt is None else prompt
    completion = sum(c["tokens_out"] or 0 for c in calls) if completion is None else completion
    r["response"] = {"id": "resp_final", "status": "completed", "output": [], "usage": {"input_tokens": prompt, "output_tokens": completion}}
    return r


def harness(*calls: dict, task: int = 3, rollout: int = 1, **keys) -> dict:
    r = usage(row(list(calls), [invocation("root", *(c["model_call_id"] for c in calls))]))
    r.update({"_ng_task_index": task, "_ng_rollout_index": rollout, **keys})
    r["ng_model_call_capture"]["rollout_id"] = f"{task}-{rollout}"
    return r


def anthropic_call(call_id: str, index: int, blocks: list, stop: str = "end_turn") -> dict:
    c = call(call_id, index, dialect="messages", response_id=f"msg_{call_id}", finish_reason=stop)
    c["request"] = {"model": "policy", "max_tokens": 1024, "messages": [{"role": "user", "content": "17*3?"}]}
    c["response"] = {"id": f"msg_{call_id}", "type": "message", "role": "assistant", "content": blocks, "stop_reason": stop}
    return c


def health(rows: list[dict], tmp_path, *, select=None):
    """(findings, the health summary) of linting the rows, with the health observer attached."""
    from trajlint.check.registry import load_rules

    rules = load_rules()
    if select is not None:
        rules = {code: spec for code, spec in rules.items() if select(spec)}
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    result = run(iter_sources([str(path)]), rules, max_row_bytes=1 << 28, health_report=True)
    assert result.internal_errors == 0, [f.message for f in result.findings if f.name == "internal-error"]
    ((_, health),) = result.health  # one file, one run
    summary = health.summary
    verdicts = [orjson.loads(line) for line in health.verdict_rows()]
    return result.findings, summary, verdicts


# -- the checks --------------------------------------------------------------------------------


CLEAN_ANTHROPIC = [
    anthropic_call("m1", 0, [{"type": "thinking", "thinking": "Multiply.", "signature": "s"}, {"type": "tool_use", "id": "t1", "name": "calc", "input": {}}], "tool_use"),
    anthropic_call("m2", 1, [{"type": "text", "text": "51"}]),
]


def test_a_clean_anthropic_rollout_is_healthy(tmp_path):
    found, summary, verdicts = health([harness(*CLEAN_ANTHROPIC)], tmp_path)
    assert [f.name for f in found if f.code.startswith("TL6")] == []
    assert verdicts[0]["verdict"] == "healthy" and verdicts[0]["unobserved"] == []


def test_a_thinking_only_or_redacted_turn_is_not_hollow(rules, tmp_path):
    thinking = anthropic_call("m1", 0, [{"type": "thinking", "thinking": "Hmm.", "signature": "s"}])
    redacted = anthropic_call("m2", 1, [{"type": "redacted_thinking", "data": "EuYBCkQYAiJA"}])
    empty = anthropic_call("m3", 2, [{"type": "text", "text": "  "}])
    hollow = of(findings([harness(thinking, redacted, empty)], rules, tmp_path), "agent-turn-hollow")
    assert [f.pointer for f in hollow] == ["/ng_model_call_capture/calls/2"]


def test_recorded_hollow_turns_are_hollow_though_their_calls_say_more(rules):
    # NeMo Gym 0.7.0 persisted these Messages turns hollow; their calls' responses say plenty.
    # Training reads the recorded turns, so they are hollow (as NeMo Gym says), and the finding
    # says the evidence holds more; trajectory-drift reports the difference too.
    from trajlint.check.subject import row_subject
    from trajlint.health.checks import CHECKS
    from trajlint.health.view import view_of

    hollow = next(check for check in CHECKS if check.id == "agent_turn_hollow")
    found = []
    for number, line in enumerate(PERSISTED.read_bytes().splitlines(), 1):
        found += view_of(row_subject(str(PERSISTED), number, line)).findings(hollow) or []
    assert found and all("in the recorded trajectory, which training reads" in f.message for f in found)
    result = CliRunner().invoke(main, ["check", "--isolated", "--exit-zero", "--output-format", "json", str(PERSISTED)])
    assert "TL501" in {f["code"] for f in json.loads(result.stdout)["findings"]}


def test_ended_on_failed_call_is_judged_per_model_and_in_time(rules, tmp_path):
    failed = call("b2", 1, status_code=503, error_category="server_error", response=None, response_id=None)
    judge = call("j1", 2, ref={"type": "responses_api_models", "name": "judge"})
    r = harness(call("a1", 0), failed, judge)
    r["ng_agent_observations"]["records"][0]["model_calls"] = [{"model_call_id": "a1"}, {"model_call_id": "b2"}]
    ended = of(findings([r], rules, tmp_path), "rollout-ended-on-failed-model-call")
    assert [f.pointer for f in ended] == ["/ng_model_call_capture/calls/1"]  # the judge after it hides nothing
    retried = copy.deepcopy(r)
    retried["ng_model_call_capture"]["calls"][0]["started_at"] = 200.0  # a1 now came after the failure
    assert of(findings([retried], rules, tmp_path), "rollout-ended-on-failed-model-call") == []
    untimed = copy.deepcopy(r)
    untimed["ng_model_call_capture"]["calls"][0]["started_at"] = None  # a mixed chain that cannot be ordered
    assert of(findings([untimed], rules, tmp_path), "rollout-ended-on-failed-model-call") == []


def test_call_checks_point_at_the_value_they_judge(rules, tmp_path):
    r = harness(call("a1", 0, tokens_out=0, tokens_total=10), call("b2", 1, finish_reason="length"))
    r["ng_model_call_capture"]["calls"][1]["response"]["output"] = []
    found = findings([r], rules, tmp_path)
    assert [f.pointer for f in of(found, "model-call-zero-completion-tokens")] == ["/ng_model_call_capture/calls/0/tokens_out"]
    assert [f.pointer for f in of(found, "model-call-runaway-generation")] == ["/ng_model_call_capture/calls/1/finish_reason"]


def test_a_chat_message_that_is_a_string_is_read_not_raised_on(rules, tmp_path):
    # NeMo Gym's runaway check raises AttributeError here (check_execution_error).
    c = call("a1", 0, dialect="chat", finish_reason="length")
    c["response"] = {"id": "resp_a1", "choices": [{"index": 0, "finish_reason": "length", "message": "partial answer"}]}
    assert of(findings([harness(c)], rules, tmp_path), "model-call-runaway-generation") == []


def test_capture_mismatch_points_at_the_reference(rules, tmp_path):
    r = harness(call("a1", 0))
    r["ng_agent_observations"]["records"][0]["model_calls"].append({"model_call_id": "f00d"})
    mismatch = of(findings([r], rules, tmp_path), "trajectory-capture-mismatch")
    assert [f.pointer for f in mismatch] == ["/ng_agent_observations/records/0/model_calls/1"]
    assert "'f00d'" in mismatch[0].message


def test_token_count_includes_compaction_helpers(rules, tmp_path):
    from .rule_rows import compaction

    helper = call("h1", 1, tokens_in=100, tokens_out=20, tokens_total=120)
    r = row([call("a1", 0), helper, call("b2", 2)], [invocation("root", "a1", "h1", "b2"), compaction("root", "h1")])
    usage(r)  # the harness's usage counts the helper it called
    assert of(findings([r], rules, tmp_path), "rollout-token-count-mismatch") == []
    usage(r, prompt=20, completion=10)  # only the turns: the helper's tokens are missing from it
    assert of(findings([r], rules, tmp_path), "rollout-token-count-mismatch") != []


def test_unobserved_when_the_evidence_is_absent_not_when_it_is_damaged(tmp_path):
    capture_only = dict(row([call("a1", 0)]), _ng_rollout_index=0)  # no agent owns a call: no turns
    no_usage = harness(call("a1", 0), rollout=1)
    del no_usage["response"]  # no transcript: its token counts cannot be compared
    damaged = harness(call("a1", 0), rollout=2)
    damaged["ng_model_call_capture"] = orjson.dumps(damaged["ng_model_call_capture"]).decode()  # encoded twice
    _, _, verdicts = health([capture_only, no_usage, damaged], tmp_path)
    assert [v["verdict"] for v in verdicts] == ["unobserved", "unobserved", "unhealthy"]
    assert "agent_turn_hollow" in verdicts[0]["unobserved"]
    assert verdicts[1]["unobserved"] == ["rollout_token_count_mismatch"]
    # The damaged capture holds no usable call, yet the invocation's references are judged against it.
    assert "trajectory_capture_mismatch" not in verdicts[2]["unobserved"]
    assert {f["check"] for f in verdicts[2]["findings"]} == {"trajectory_capture_mismatch"}


# -- verdicts and tasks ----------------------------------------------------------------------


def test_verdicts_follow_nemo_gym(tmp_path):
    healthy = harness(call("a1", 0), rollout=0)
    unhealthy = harness(call("a1", 0, tokens_out=0, tokens_total=10), rollout=1)
    unobserved = harness(call("a1", 0), rollout=2)
    del unobserved["response"]
    _, summary, verdicts = health([healthy, unhealthy, unobserved], tmp_path)
    assert [v["verdict"] for v in verdicts] == ["healthy", "unhealthy", "unobserved"]
    assert verdicts[1]["findings"] == [
        {"check": "model_call_zero_completion_tokens", "locator": {"call_id": "a1"}, "detail": {"completion_tokens": 0}}
    ]
    assert summary["run"]["verdicts"] == {"healthy": 1, "unhealthy": 1, "unobserved": 1}
    assert summary["tasks"]["3"] == {"repeats": 3, "healthy": 1, "unhealthy": 1, "unobserved": 1, "flags": []}


def test_task_repeats_dedupe_copies_and_count_mixed_ones_unobserved(tmp_path):
    zero = call("a1", 0, tokens_out=0, tokens_total=10)
    rows = [
        harness(zero, rollout=0),
        harness(zero, rollout=1, stage_index=0),
        harness(zero, rollout=1, stage_index=1),  # another stage: another copy of repeat 1, not a duplicate
    ]
    found, summary, _ = health(rows, tmp_path)
    assert summary["tasks"]["3"]["repeats"] == 2 and summary["tasks"]["3"]["flags"] == ["task_consistently_unhealthy"]
    flagged = of(found, "task-consistently-unhealthy")
    assert [(f.line, f.pointer) for f in flagged] == [(1, "")]  # the task's first row
    mixed = rows[:2] + [harness(call("a1", 0), rollout=1, stage_index=1)]
    found, summary, _ = health(mixed, tmp_path)
    assert summary["tasks"]["3"] == {"repeats": 2, "healthy": 0, "unhealthy": 1, "unobserved": 1, "flags": []}
    assert of(found, "task-consistently-unhealthy") == []


def test_a_retry_left_beside_its_rollout_is_a_duplicate(tmp_path):
    """NeMo Gym keeps a rollout's last attempt in its rollouts file (failed ones go to the failures
    sidecar), and its health check groups copies by task and rollout index alone."""
    rows = [harness(call("a1", 0), rollout=0), harness(call("a1", 0), rollout=0, _ng_attempt_index=1)]
    found, _, verdicts = health(rows, tmp_path)
    assert [f.line for f in of(found, "duplicate-rollout-identity")] == [1, 2]
    assert [v["verdict"] for v in verdicts] == ["unhealthy", "unhealthy"]


def test_duplicates_are_unhealthy_per_stage(tmp_path):
    r = harness(call("a1", 0), rollout=0)
    staged = [dict(r, stage_index=0), dict(r, stage_index=1)]
    _, summary, verdicts = health(staged, tmp_path)
    assert [v["verdict"] for v in verdicts] == ["healthy", "healthy"] and [v["stage_index"] for v in verdicts] == [0, 1]
    found, summary, verdicts = health([r, r], tmp_path)
    assert [v["verdict"] for v in verdicts] == ["unhealthy", "unhealthy"]
    assert verdicts[0]["findings"] == [{"check": "rollout_duplicate_identity", "detail": {"duplicate_count": 2}}]
    assert summary["run"]["issues"]["rollout_duplicate_identity"] == 2
    assert len(of(found, "duplicate-rollout-identity")) == 2


def test_no_successful_model_calls(tmp_path):
    def failing(rollout: int) -> dict:
        c = call(f"a{rollout}", 0, status_code=500, error_category="server_error")
        c["response"] = {"id": f"resp_a{rollout}", "status": "failed", "output": []}
        return harness(c, rollout=rollout)

    found, summary, _ = health([failing(0), failing(1)], tmp_path)
    assert summary["tasks"]["3"]["flags"] == ["task_consistently_unhealthy", "task_no_successful_model_calls"]
    assert len(of(found, "task-no-successful-model-calls")) == 1
    found, summary, _ = health([failing(0), harness(call("b1", 0), rollout=1)], tmp_path)
    assert of(found, "task-no-successful-model-calls") == []


def test_unreadable_lines_and_rows_without_a_task_index(tmp_path):
    path = tmp_path / "rows.jsonl"
    no_task = harness(call("a1", 0))
    del no_task["_ng_task_index"]
    path.write_bytes(b"{not json\n\n[1, 2]\n" + orjson.dumps(no_task) + b"\n")
    result = CliRunner().invoke(main, ["check", "--isolated", "--health-report", str(tmp_path / "out"), str(path)])
    assert result.exit_code == 1, result.output
    verdicts = [json.loads(line) for line in (tmp_path / "out" / "rollout_verdicts.jsonl").read_text().splitlines()]
    assert [v["_ng_task_index"] for v in verdicts] == [
        2,  # the row's position among non-blank lines, as NeMo Gym numbers it
        "__unreadable_record__:input-0:line-1",
        "__unreadable_record__:input-0:line-3",
    ]
    assert verdicts[1]["findings"][0]["detail"] == {"reason": "rollout record is unreadable", "error": "JSONDecodeError"}
    assert verdicts[2]["findings"][0]["detail"]["error"] == "ValueError"
    assert verdicts[0]["rollout_id"] == "2-1"


# -- the report ----------------------------------------------------------------------------------


def test_health_report_is_written_where_asked_and_only_there(tmp_path):
    runs = tmp_path / "run"
    runs.mkdir()
    rollouts = runs / "rollouts.jsonl"
    rollouts.write_bytes(SAMPLES.read_bytes())
    plain = CliRunner().invoke(main, ["check", "--isolated", str(rollouts)])
    assert plain.exit_code == 0 and sorted(p.name for p in runs.iterdir()) == ["rollouts.jsonl"]
    out = tmp_path / "reports" / "health"
    result = CliRunner().invoke(main, ["check", "--isolated", "--health-report", str(out), str(rollouts)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "quality_summary.json").read_text())
    assert summary["run"]["verdicts"] == {"healthy": 19, "unhealthy": 0, "unobserved": 5}
    assert list(summary["run"]["issues"]) == [
        "check_execution_error", "record_unreadable", "rollout_duplicate_identity", "rollout_missing_agent_turns",
        "rollout_ended_on_failed_model_call", "agent_turn_hollow", "model_call_zero_completion_tokens",
        "model_call_missing_token_counts", "trajectory_capture_mismatch", "model_call_failed",
        "rollout_token_count_mismatch", "model_call_runaway_generation", "task_consistently_unhealthy",
        "task_no_successful_model_calls",
    ]
    assert len((out / "rollout_verdicts.jsonl").read_text().splitlines()) == 24
    assert sorted(p.name for p in runs.iterdir()) == ["rollouts.jsonl"]


@pytest.mark.parametrize("name", ["quality_summary.json", "rollout_verdicts.jsonl"])
def test_health_report_never_overwrites_an_input(tmp_path, name):
    victim = tmp_path / name
    victim.write_bytes((EXAMPLES / "clean.jsonl").read_bytes())
    result = CliRunner().invoke(main, ["check", "--isolated", "--health-report", str(tmp_path), str(victim)])
    assert result.exit_code == 2 and "overwrite the input" in result.output
    assert victim.read_bytes() == (EXAMPLES / "clean.jsonl").read_bytes()
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    result = CliRunner().invoke(main, ["check", "--isolated", "--health-report", str(a_file), str(EXAMPLES / "clean.jsonl")])
    assert result.exit_code == 2 and "not a directory" in result.output


def test_json_summary_and_statistics_carry_the_health_numbers(tmp_path):
    doc = json.loads(CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", str(EXAMPLES)]).output)
    numbers = doc["summary"]["health"]
    assert numbers["verdicts"] == {"healthy": 0, "unhealthy": 7, "unobserved": 6}
    assert numbers["issues"]["record_unreadable"] == 4 and numbers["tasks"] == {"total": 12, "flagged": 0}
    off = json.loads(
        CliRunner().invoke(main, ["check", "--isolated", "--ignore", "TL6", "--output-format", "json", str(EXAMPLES)]).output
    )
    assert off["summary"]["health"] is None
    text = CliRunner().invoke(main, ["check", "--isolated", "--statistics", str(EXAMPLES)]).output
    assert "Rollout health: 13 rollouts, 0 healthy, 7 unhealthy, 6 unobserved; 12 tasks, 0 flagged" in text


def test_ignored_rules_are_ignored_checks(tmp_path):
    hollow = harness(call("a1", 0, output=[]))
    hollow["ng_model_call_capture"]["calls"][0]["response"]["output"] = []
    _, summary, verdicts = health([hollow], tmp_path, select=lambda spec: spec.name != "agent-turn-hollow")
    assert summary["run"]["ignored_checks"] == ["agent_turn_hollow"]
    assert summary["run"]["artifacts"]["coverage"]["agent_turn_hollow"] == {"evaluated": 0, "unobserved": 0, "ignored": 1}
    assert verdicts[0]["verdict"] == "healthy"


def test_a_health_rule_that_raises_is_a_check_execution_error(tmp_path, monkeypatch):
    from trajlint.health.view import HealthView

    # The failure is injected into the Python path: the native core would judge the row itself.
    # (`native.mode` reads TRAJLINT_CORE once a process: the mode is set on it directly.)
    from trajlint.read import native

    monkeypatch.setattr(native, "mode", lambda: "off")

    findings = HealthView.findings

    def boom(view, check):
        if check.id == "model_call_failed":
            raise ZeroDivisionError("injected")
        return findings(view, check)

    monkeypatch.setattr(HealthView, "findings", boom)
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(harness(call("a1", 0))) + b"\n")
    from trajlint.check.registry import load_rules

    rules = load_rules()
    result = run(iter_sources([str(path)]), rules, max_row_bytes=1 << 28, health_report=True)
    assert result.internal_errors == 1  # the rule that raised; the task rules take it as a finding
    verdict = orjson.loads(next(result.health[0][1].verdict_rows()))
    assert verdict["verdict"] == "unhealthy" and "model_call_failed" in verdict["unobserved"]
    assert verdict["findings"] == [
        {"check": "check_execution_error", "detail": {"reason": "check raised an unexpected exception", "failed_check": "model_call_failed", "error": "ZeroDivisionError"}}
    ]


def test_hostile_files_get_a_health_report(tmp_path):
    hostile = sorted((ROOT / "tests" / "data" / "hostile").glob("*.jsonl"))
    result = CliRunner().invoke(main, ["check", "--isolated", "--exit-zero", "--health-report", str(tmp_path / "h"), *map(str, hostile)])
    assert result.exit_code == 0, result.output
    runs = sorted(p.parent for p in (tmp_path / "h").rglob("quality_summary.json"))
    assert [p.name.rsplit("__", 1)[-1] for p in runs] == sorted(p.name for p in hostile)  # one report per file
    records = 0
    for directory in runs:
        summary = json.loads((directory / "quality_summary.json").read_text())
        verdicts = (directory / "rollout_verdicts.jsonl").read_text().splitlines()
        assert summary["run"]["artifacts"]["records"] == len(verdicts)
        records += len(verdicts)
    assert records > 0


def test_every_file_is_a_run_unless_grouped(tmp_path):
    """NeMo Gym's health check takes one file per run, and separate runs number their tasks from
    0 each: the same task and rollout index in two files is no duplicate, and two reports are
    written. Grouped as one run (shards of one collection), they are duplicates."""
    row = harness(call("a1", 0))
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_bytes(orjson.dumps(row) + b"\n")
    files = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    per_file = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", "--health-report", str(tmp_path / "h1"), *files])
    report = json.loads(per_file.stdout)
    assert not [f for f in report["findings"] if f["code"] == "TL401"]
    assert report["summary"]["health"]["runs"] == 2 and report["summary"]["health"]["tasks"]["total"] == 2
    assert len(list((tmp_path / "h1").rglob("quality_summary.json"))) == 2
    assert "2 health reports" in per_file.stderr
    grouped = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", "--runs", "all", "--health-report", str(tmp_path / "h2"), *files])
    report = json.loads(grouped.stdout)
    duplicates = [f for f in report["findings"] if f["code"] == "TL401"]
    assert len(duplicates) == 2 and "in 2 files of this run (1 in this file)" in duplicates[0]["message"]
    assert report["summary"]["health"]["runs"] == 1
    assert (tmp_path / "h2" / "quality_summary.json").is_file()
    glob = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", "--run-group", str(tmp_path / "*.jsonl"), *files])
    assert len([f for f in json.loads(glob.stdout)["findings"] if f["code"] == "TL401"]) == 2


def test_every_nemo_gym_check_has_its_rule():
    from trajlint.health.checks import CHECKS

    names = {entry.name for entry in catalog.packaged().values()}
    assert len(CHECKS) == 14
    for check in CHECKS:
        assert set(check.rules) <= names, check.id
    health_rules = [e for e in catalog.packaged().values() if e.family == "health"]
    assert len(health_rules) == 11 and all(e.severity == "warning" for e in health_rules)


@pytest.mark.parametrize("inputs", [["examples"], ["tests/data/hostile"]])
def test_rule_coverage_and_health_coverage_agree(tmp_path, inputs):
    """Unobserved means one thing: a TL6xx rule's coverage in the report is its check's coverage
    in quality_summary.json, which also counts the lines that never became rows (NeMo Gym's
    unreadable records, unobserved for every other check)."""
    from trajlint.health.checks import ROW_CHECKS

    args = ["check", "--isolated", "--exit-zero", "--runs", "all", "--output-format", "json", "--health-report", str(tmp_path / "h")]
    result = CliRunner().invoke(main, [*args, *(str(ROOT / p) for p in inputs)])
    assert result.exit_code == 0, result.output
    rules = {v["name"]: v for v in json.loads(result.stdout)["summary"]["rules"].values()}
    summary = json.loads((tmp_path / "h" / "quality_summary.json").read_text())
    unreadable = summary["run"]["issues"]["record_unreadable"] - sum(
        1 for line in (tmp_path / "h" / "rollout_verdicts.jsonl").read_text().splitlines()
        if '"check":"record_unreadable"' in line and "__unreadable_record__" not in line
    )
    coverage = summary["run"]["artifacts"]["coverage"]
    for check in ROW_CHECKS:
        rule = rules[check.rules[0]]
        assert rule["evaluated"] == coverage[check.id]["evaluated"], check.id
        assert rule["unobserved"] + unreadable == coverage[check.id]["unobserved"], check.id
