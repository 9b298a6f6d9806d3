"""Availability findings: counted in every report's summary, listed only with --show-availability.

An observation gap that only says which evidence the producer cannot observe (NeMo Gym's
collector adds `turns_unavailable` and its kin to nearly every row) is a finding a user cannot
act on. Every format leaves it out by default and says how many it left out; the exit status
never rests on a finding that was not listed; `--show-availability` (or `show-availability =
true`) lists them in every format alike.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import orjson
import pytest
from click.testing import CliRunner

from trajlint.cli import main

FORMATS = ("full", "concise", "json", "jsonl", "sarif", "github", "junit", "gitlab")
AVAILABILITY = ("turns_unavailable", "no_sandbox_runtime")
NOTE = "2 availability notes not shown; --show-availability shows them"


def _row(task: int, *gaps: dict) -> dict:
    return {"_ng_task_index": task, "_ng_rollout_index": 0,
            "ng_agent_observations": {"source": "test", "records": [], "gaps": list(gaps)}}


ROWS = [
    _row(0, *({"code": code} for code in AVAILABILITY)),
    _row(1, {"code": "model_response_rejected", "detail": "resp_1"}),
    _row(2, {"code": "malformed_transcript_line", "detail": "s.jsonl:3"}),
]


@pytest.fixture
def rows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ROWS))
    (tmp_path / "quiet.jsonl").write_bytes(orjson.dumps(ROWS[0]) + b"\n")
    return tmp_path


def check(*args: str):
    return CliRunner().invoke(main, ["check", "--isolated", *args], catch_exceptions=False)


def test_the_default_lists_what_can_be_acted_on_and_counts_the_rest(rows):
    result = check("--output-format", "concise", "rows.jsonl")
    lines = result.output.splitlines()
    assert [line.split("`")[1] for line in lines[:-1]] == ["model_response_rejected", "malformed_transcript_line"]
    assert lines[-1] == f"Found 2 findings in 3 rows of 1 file: 0 errors, 1 warning, 1 info ({NOTE})."
    assert result.exit_code == 0

    shown = check("--output-format", "concise", "--show-availability", "rows.jsonl")
    assert [line.split("`")[1] for line in shown.output.splitlines()[:-1]] == [*AVAILABILITY, "model_response_rejected",
                                                                             "malformed_transcript_line"]
    assert shown.output.splitlines()[-1] == "Found 4 findings in 3 rows of 1 file: 0 errors, 1 warning, 3 infos."


def test_a_finding_not_listed_never_sets_the_exit_status(rows):
    quiet = check("--fail-level", "info", "quiet.jsonl")
    assert quiet.exit_code == 0
    assert quiet.output == f"All checks passed: 1 row in 1 file ({NOTE}).\n"
    assert check("--fail-level", "info", "--show-availability", "quiet.jsonl").exit_code == 1
    assert check("--fail-level", "info", "rows.jsonl").exit_code == 1  # a listed info


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_leaves_them_out_alike_and_lists_them_on_request(rows, fmt):
    hidden = check("--output-format", fmt, "rows.jsonl").output
    shown = check("--output-format", fmt, "--show-availability", "rows.jsonl").output
    if fmt == "sarif":  # the rules' descriptions name gap codes too: look at the results
        hidden, shown = (
            "\n".join(r["message"]["text"] for r in json.loads(out)["runs"][0]["results"]) for out in (hidden, shown)
        )
    for code in AVAILABILITY:
        assert code not in hidden
        assert code in shown
    assert "model_response_rejected" in hidden and "malformed_transcript_line" in hidden
    if fmt in ("full", "concise", "github"):  # the formats that end with the summary line
        assert NOTE in hidden and "availability" not in shown.splitlines()[-1]


def test_json_marks_and_counts_them(rows):
    from trajlint.contract import schemas

    hidden = json.loads(check("--output-format", "json", "rows.jsonl").output)
    shown = json.loads(check("--output-format", "json", "--show-availability", "rows.jsonl").output)
    for doc in (hidden, shown):
        assert list(schemas.validator("report").iter_errors(doc)) == []
        assert doc["summary"]["findings"] == len(doc["findings"])
    assert hidden["summary"]["hidden"] == {"availability": 2}
    assert hidden["summary"]["by_severity"] == {"error": 0, "warning": 1, "info": 1}
    assert hidden["summary"]["by_rule"]["TL503"]["count"] == 2
    assert [f["availability"] for f in hidden["findings"]] == [False, False]
    assert shown["summary"]["hidden"] == {"availability": 0}
    assert [f["availability"] for f in shown["findings"]] == [True, True, False, False]

    lines = check("--output-format", "jsonl", "--show-availability", "rows.jsonl").output.splitlines()
    assert [json.loads(line)["availability"] for line in lines] == [True, True, False, False]


def test_sarif_and_junit_count_only_what_they_list(rows):
    hidden = json.loads(check("--output-format", "sarif", "rows.jsonl").output)["runs"][0]
    assert hidden["properties"] == {
        "findings": 2, "leftOut": 0, "relatedLocationsLeftOut": 0, "availabilityNotShown": 2
    }
    assert all("availability" not in r["properties"] for r in hidden["results"])
    shown = json.loads(check("--output-format", "sarif", "--show-availability", "rows.jsonl").output)["runs"][0]
    assert [r["properties"].get("availability", False) for r in shown["results"]] == [True, True, False, False]

    def failure(*args: str) -> str:
        root = ET.fromstring(check("--output-format", "junit", "--fail-level", "info", *args, "rows.jsonl").output)
        (case,) = [c for c in root.iter("testcase") if c.get("classname") == "trajlint.TL503"]
        return case.find("failure").get("message")

    assert failure() == "2 findings"
    assert failure("--show-availability") == "4 findings"


def test_statistics_say_what_they_leave_out(rows):
    by_rule, health = check("--statistics", "rows.jsonl").output.split("\n\n")
    counts, summary = by_rule.splitlines()
    assert counts.split()[:2] == ["2", "TL503"] and counts.endswith("  observation-gap")
    assert summary.startswith("Found 2 findings in 3 rows of 1 file: ") and summary.endswith(f"({NOTE}).")
    assert health.startswith("Rollout health: 3 rollouts")
    assert check("--statistics", "--show-availability", "rows.jsonl").output.split("\n")[0].split()[:2] == ["4", "TL503"]


def test_the_configuration_can_show_them(rows):
    (rows / "trajlint.toml").write_text("show-availability = true\n")
    run = CliRunner().invoke(main, ["check", "--output-format", "concise", "rows.jsonl"], catch_exceptions=False)
    assert "turns_unavailable" in run.output
    settings = CliRunner().invoke(main, ["check", "--show-settings"]).output
    assert f"show-availability = true  # {rows / 'trajlint.toml'}" in settings
    assert "show-availability = false  # default" in check("--show-settings").output

    (rows / "trajlint.toml").write_text('show-availability = "yes"\n')
    bad = CliRunner().invoke(main, ["check", "rows.jsonl"])
    assert bad.exit_code == 2
    assert "show-availability: must be true or false, not 'yes'" in bad.stderr


def test_a_baseline_holds_what_check_lists(rows):
    recorded = CliRunner().invoke(main, ["baseline", "--isolated", "rows.jsonl", "-o", "known.json"])
    assert "recorded 2 findings" in recorded.stderr
    entries = json.loads((rows / "known.json").read_text())["entries"]
    assert sorted(e["rollout"]["task_id"] for e in entries) == ["1", "2"]

    again = check("--fail-level", "info", "--baseline", "known.json", "rows.jsonl")
    assert again.exit_code == 0
    assert again.output == f"All checks passed: 3 rows in 1 file (2 more in the baseline; {NOTE}).\n"
    # Asked for, they are listed: the baseline never suppressed them.
    asked = check("--fail-level", "info", "--baseline", "known.json", "--show-availability", "--output-format", "json",
                  "rows.jsonl")
    doc = json.loads(asked.output)
    assert asked.exit_code == 1
    assert [f["message"].split("`")[1] for f in doc["findings"]] == list(AVAILABILITY)
    assert doc["summary"]["baseline"] == {"path": "known.json", "suppressed": 2, "stale": 0}
