"""`trajlint show`: one row's build and ledger as a tree (plain in pipes, coloured on a
terminal, control characters escaped), as JSON for tools, found by line or by rollout; a row it
cannot show is one line on standard error and exit 2."""

from __future__ import annotations

import json

import orjson
import pytest
from click.testing import CliRunner

from trajlint.cli import main

from .conftest import EXAMPLES
from .rule_rows import call, invocation, row

BROKEN = str(EXAMPLES / "broken.jsonl")


def show(*args: str, color: bool = False):
    return CliRunner().invoke(main, ["show", *args], catch_exceptions=False, color=color)


def test_tree_of_a_row_with_conflicts():
    result = show(f"{BROKEN}:10")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "\x1b[" not in out  # not a terminal: no colour
    lines = out.splitlines()
    assert lines[0] == f"{BROKEN}:10  rollout '17-0' of task 'swe-0017'"
    assert "├── invocation 'root'  [agent_invocation completed]" in lines
    assert "│       └── model call 'c9p2'  [turn of 'sub-1']  ✗ claimed by 2 agent invocations" in lines
    ledger = lines[lines.index("Ownership ledger") + 1:]
    assert ledger[0] == "model call 'c9p1'  → turn"
    assert any(line.startswith("├── verifier") and "verifier 'verify-17'" in line for line in ledger)
    assert any("unmatched" in line and "'c9ff'" in line for line in ledger)


def test_colour_only_on_a_terminal():
    assert "\x1b[" in show(f"{BROKEN}:10", color=True).output


def test_json_holds_the_build_and_ledger():
    result = show(f"{BROKEN}:10", "--output-format", "json")
    doc = json.loads(result.output)
    assert doc["line"] == 10 and doc["rollout"] == {"task_id": "swe-0017", "rollout_id": "17-0"}
    assert [c["model_call_id"] for c in doc["ledger"]["calls"]] == ["c9p1", "c9p2", "c9j1"]
    assert doc["trajectory"]["rollout_id"] == "17-0"
    assert len(doc["view"]["graph"]["owners"]) == 3


def test_by_rollout():
    by_line = show(f"{BROKEN}:11").output
    by_id = show(BROKEN, "--rollout", "18-0")
    assert by_id.exit_code == 0 and by_id.output == by_line
    assert show(BROKEN, "--rollout", "swe-0018/18-0").output == by_line


def test_duplicate_rollout_shows_the_first_and_says_so():
    result = show(BROKEN, "--rollout", "14-0")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith(f"{BROKEN}:6 ")
    assert "2 rows of" in result.stderr and "lines 6, 7" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((f"{BROKEN}:99",), "has no line 99"),
        ((f"{BROKEN}:2",), "is not valid JSON"),
        ((f"{BROKEN}:4",), "not a rollout row"),
        ((BROKEN,), "name a row as FILE:LINE"),
        ((f"{BROKEN}:0",), "name a row as FILE:LINE"),
        (("missing.jsonl:1",), "no such file"),
        ((BROKEN, "--rollout", "nope-1"), "holds no row of rollout 'nope-1'"),
    ],
)
def test_errors_are_one_line_exit_2(args, message):
    result = show(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert message in line and "Traceback" not in line


def test_control_characters_in_ids_are_escaped(tmp_path):
    evil = "A\x1b[31m\nfake line\u202e"
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(row([call("a")], [invocation(evil, "a")])) + b"\n")
    out = show(f"{path}:1").output
    assert "\x1b" not in out and "\u202e" not in out and "\nfake line" not in out
    assert "A\\x1b[31m\\nfake line\\u202e" in out
