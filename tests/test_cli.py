"""`trajlint check` end to end: exit codes, both output formats, in-process and as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from trajlint import __version__
from trajlint.cli import main

from .conftest import EXAMPLES, ROOT


def invoke(*args: str, input: bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def test_clean_example_passes():
    result = invoke("check", str(EXAMPLES / "clean.jsonl"))
    assert result.exit_code == 0, result.output
    assert result.output == "All checks passed: 3 rows in 1 file.\n"


def test_broken_example_fails_with_findings():
    result = invoke("check", "--output-format", "concise", str(EXAMPLES / "broken.jsonl"))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[-1].startswith("Found ")
    codes = {line.split(": ", 1)[1].split()[0] for line in lines[:-1]}
    assert {"TL002", "TL003", "TL102", "TL104", "TL401"} <= codes
    assert all(line.startswith(str(EXAMPLES / "broken.jsonl") + ":") for line in lines[:-1])


def test_json_output_follows_the_report_schema():
    from trajlint import schemas

    result = invoke("check", "--output-format", "json", str(EXAMPLES))
    assert result.exit_code == 1
    doc = json.loads(result.output)
    errors = list(schemas.validator("report").iter_errors(doc))
    assert errors == []
    assert doc["schema_version"] == "1.0"
    assert doc["summary"]["files"] == 2
    assert doc["summary"]["findings"] == len(doc["findings"])
    keys = [(f["path"], f["line"], f["pointer"], f["code"]) for f in doc["findings"]]
    assert keys == sorted(keys)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": NaN}', "NaN"),
        (b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_trajectory": {"turns": [', "truncated"),
        (b'[{"_ng_task_index": 0}]', "array"),
        (b'{"_ng_task_index": 0, "note": "caf\xe9"}', "UTF-8"),
    ],
    ids=["nan", "truncated", "array", "undecodable"],
)
def test_each_broken_line_is_one_finding_at_its_line(tmp_path, line, needle):
    path = tmp_path / "rows.jsonl"
    clean = b'{"_ng_task_index": 1, "_ng_rollout_index": 0}'
    path.write_bytes(clean + b"\n\n" + line + b"\n" + clean.replace(b"1", b"2") + b"\n")
    result = invoke("check", "--output-format", "json", str(path))
    assert result.exit_code == 1
    findings = json.loads(result.output)["findings"]
    assert len(findings) == 1, findings
    assert findings[0]["line"] == 3
    assert needle.lower() in findings[0]["message"].lower()
    assert "Traceback" not in result.output


def test_missing_path_is_a_finding_not_a_crash(tmp_path):
    result = invoke("check", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 1
    assert "TL001 unreadable-file" in result.output


def test_stdin(tmp_path):
    data = (EXAMPLES / "clean.jsonl").read_bytes()
    result = invoke("check", "-", input=data)
    assert result.exit_code == 0, result.output


def test_version_and_help():
    assert invoke("--version").output.strip().endswith(__version__)
    help_text = invoke("check", "--help").output
    assert "--output-format" in help_text and "standard input" in help_text


def test_unknown_format_is_a_usage_error():
    result = CliRunner().invoke(main, ["check", "--output-format", "xml", "."])
    assert result.exit_code == 2


def test_schema_command_prints_packaged_schemas():
    out = json.loads(invoke("schema", "trajectory").output)
    assert out["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    listed = invoke("schema", "--list").output.split()
    assert {"rollout-row", "trajectory", "report"} <= set(listed)
    assert CliRunner().invoke(main, ["schema", "nope"]).exit_code == 2


def test_rules_and_rule_commands():
    table = invoke("rules").output
    assert "TL104  trajectory-schema" in table
    explained = invoke("rule", "trajectory-schema").output
    assert explained.startswith("# trajectory-schema (TL104)")
    assert "## Fails" in explained and "## Passes" in explained
    as_json = json.loads(invoke("rules", "--output-format", "json").output)
    assert {r["code"] for r in as_json} >= {"TL001", "TL104", "TL901"}
    assert CliRunner().invoke(main, ["rule", "TL999"]).exit_code == 2


@pytest.mark.slow
def test_real_process_exit_codes_and_module_entry(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    clean = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", str(EXAMPLES / "clean.jsonl")],
        capture_output=True, env=env, cwd=tmp_path,
    )
    assert clean.returncode == 0, clean.stderr
    broken = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--output-format", "json", str(EXAMPLES / "broken.jsonl")],
        capture_output=True, env=env, cwd=tmp_path,
    )
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["summary"]["by_severity"]["error"] > 0
    assert b"Traceback" not in broken.stderr


@pytest.mark.slow
def test_internal_error_exits_2_without_traceback(tmp_path):
    # A rule that raises must not stop the run: exit 2, one finding per row, no traceback.
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        "from trajlint.check.rules import schema\n"
        "from trajlint.check import spec\n"
        "def boom(subject):\n    raise RuntimeError('injected')\n"
        "spec.IMPLEMENTATIONS['row-schema'] = spec.Implementation('row-schema', frozenset({'row'}), check=boom)\n"
        "from trajlint.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script), "check", str(EXAMPLES / "clean.jsonl")],
        capture_output=True, env=env, cwd=tmp_path, text=True,
    )
    assert proc.returncode == 2
    assert proc.stdout.count("TL901 internal-error") == 3
    assert "Traceback" not in proc.stdout + proc.stderr


def test_no_rollout_files_warns_and_passes(tmp_path):
    (tmp_path / "notes.txt").write_text("not a rollout")
    result = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert result.exit_code == 0
    assert "no rollout files found" in result.stderr
