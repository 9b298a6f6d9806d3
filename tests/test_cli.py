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
    codes = {line.split(": ", 1)[1].split()[1] for line in lines[:-1]}
    assert {"TL002", "TL003", "TL104", "TL401"} <= codes
    assert all(line.startswith(str(EXAMPLES / "broken.jsonl") + ":") for line in lines[:-1])


def test_json_output_follows_the_report_schema():
    from trajlint.contract import schemas

    result = invoke("check", "--output-format", "json", str(EXAMPLES))
    assert result.exit_code == 1
    doc = json.loads(result.output)
    errors = list(schemas.validator("report").iter_errors(doc))
    assert errors == []
    assert doc["schema_version"] == "1.5"
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


@pytest.mark.parametrize("select", [(), ("--select", "TL104")], ids=["all-rules", "without-TL001"])
@pytest.mark.parametrize("name", ["nope.jsonl", "nope-*.jsonl"], ids=["path", "glob"])
def test_a_missing_input_is_a_usage_error_whatever_rules_run(tmp_path, name, select):
    result = invoke("check", *select, str(tmp_path / name))
    assert result.exit_code == 2
    assert result.stdout == ""
    missing = "glob matched no files" if "*" in name else "no such file or directory"
    assert result.stderr == f"Error: {tmp_path / name}: {missing}\n"


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


@pytest.mark.parametrize(
    ("status", "code", "stderr"),
    [(None, 0, ""), (0, 0, ""), (1, 1, ""), (2, 2, ""), (256 + 3, 3, ""), ("bad input", 1, "bad input")],
)
def test_the_quick_exit_keeps_the_status_the_output_and_the_exit_handlers(tmp_path, status, code, stderr):
    """The command ends without the interpreter's teardown, and nothing else of an exit is lost:
    the status as `sys.exit` reads it, what is buffered on standard output, `atexit` handlers."""
    marker = tmp_path / "handler-ran"
    script = (
        "import atexit, sys\n"
        "from trajlint.cli.entry import quick_exit\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').close())\n"
        "sys.stdout.write('x' * 100000)\n"  # more than a pipe's buffer: flushed before the exit
        f"quick_exit({status!r})\n"
        "print('after the exit')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, cwd=tmp_path, text=True)
    assert done.returncode == code
    assert done.stdout == "x" * 100000
    assert done.stderr.strip() == stderr
    assert marker.exists()


def test_the_quick_exit_waits_for_a_thread_the_interpreter_would_wait_for(tmp_path):
    script = (
        "import threading, time\n"
        "from trajlint.cli.entry import quick_exit\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True))).start()\n"
        "quick_exit(1)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, cwd=tmp_path, text=True)
    assert done.returncode == 1
    assert done.stdout == "thread done\n"


@pytest.mark.slow
def test_internal_error_exits_2_without_traceback(tmp_path):
    # A rule that raises must not stop the run: exit 2, one finding per row, no traceback.
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        "from trajlint.check.rules import schema\n"
        "from trajlint.check import rule as spec\n"
        "def boom(subject):\n    raise RuntimeError('injected')\n"
        "spec.IMPLEMENTATIONS['row-schema'] = spec.Implementation('row-schema', frozenset({'row'}), check=boom)\n"
        "from trajlint.cli import main\n"
        "main()\n"
    )
    # The Python path: a row the native core proves clean is one no Python rule looks at.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_CORE": "off"}
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


# -- thresholds -----------------------------------------------------------------------------


def test_exit_status_policy():
    from trajlint.cli.exit import exit_status
    from trajlint.findings import Finding

    def f(severity):
        return Finding("TL104", "trajectory-schema", severity, "m", "a.jsonl", 1, "")

    assert exit_status([]) == 0
    assert exit_status([f("warning"), f("info")]) == 0
    assert exit_status([f("warning")], fail_level="warning") == 1
    assert exit_status([f("info")], fail_level="warning") == 0
    assert exit_status([f("info")], fail_level="info") == 1
    assert exit_status([f("error")], exit_zero=True) == 0
    assert exit_status([], internal_errors=1, exit_zero=True) == 2


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ((), 1),
        (("--fail-level", "error"), 1),
        (("--fail-level", "warning"), 1),
        (("--fail-level", "info"), 1),
        (("--exit-zero",), 0),
        (("--quiet",), 1),
        (("--statistics",), 1),
        (("--fail-level", "nope"), 2),
    ],
)
def test_threshold_flags_on_the_broken_example(args, code):
    result = CliRunner().invoke(main, ["check", *args, str(EXAMPLES / "broken.jsonl")])
    assert result.exit_code == code, result.output


@pytest.mark.parametrize("args", [(), ("--fail-level", "info"), ("--exit-zero",), ("--quiet",)])
def test_threshold_flags_on_the_clean_example(args):
    assert invoke("check", *args, str(EXAMPLES / "clean.jsonl")).exit_code == 0


def test_quiet_prints_findings_without_the_summary_and_files_are_complete(tmp_path):
    out = tmp_path / "r.jsonl"
    result = invoke("check", "--quiet", "--output-format", "concise", "--output-format", f"jsonl:{out}", str(EXAMPLES))
    assert result.exit_code == 1
    full = invoke("check", "--output-format", "concise", str(EXAMPLES)).output.splitlines()
    assert full[-1].startswith("Found ")
    assert result.stdout.splitlines() == full[:-1]
    assert result.stderr == ""
    assert len(out.read_text().splitlines()) == len(full) - 1


@pytest.mark.parametrize("fmt", ["json", "sarif", "gitlab", "junit", "jsonl"])
def test_quiet_keeps_machine_formats_whole(fmt):
    plain = invoke("check", "--output-format", fmt, str(EXAMPLES))
    quiet = invoke("check", "-q", "--output-format", fmt, str(EXAMPLES))
    assert quiet.exit_code == plain.exit_code == 1
    assert quiet.stdout == plain.stdout and quiet.stdout.strip()


def test_quiet_with_every_report_in_a_file_prints_nothing(tmp_path):
    result = invoke("check", "-q", "--output-format", f"json:{tmp_path / 'r.json'}", str(EXAMPLES))
    assert result.exit_code == 1 and result.output == ""
    assert json.loads((tmp_path / "r.json").read_text())["findings"]
    (tmp_path / "empty").mkdir()
    assert invoke("check", "-q", str(tmp_path / "empty")).output == ""  # no warning either, as ruff -q
    assert "no rollout files found" in invoke("check", str(tmp_path / "empty")).stderr


@pytest.mark.parametrize("fmt", ["full", "concise", "json"])
def test_silent_prints_nothing_and_exits_by_the_findings(tmp_path, fmt):
    out = tmp_path / "r.sarif"
    result = invoke("check", "-s", "--output-format", fmt, "--output-format", f"sarif:{out}", str(EXAMPLES))
    assert result.exit_code == 1 and result.output == ""
    assert json.loads(out.read_text())["runs"][0]["results"]
    clean = invoke("check", "--silent", str(EXAMPLES / "clean.jsonl"))
    assert clean.exit_code == 0 and clean.output == ""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("check", "-s", str(empty)).output == ""
    # A failure is still said, in one line.
    missing = invoke("check", "-s", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1


def test_statistics_text_and_json():
    doc = json.loads(invoke("check", "--output-format", "json", str(EXAMPLES)).output)
    expected = sorted(
        ({"code": code, **row} for code, row in doc["summary"]["by_rule"].items()),
        key=lambda row: (-row["count"], row["code"]),
    )
    by_rule, health = invoke("check", "--statistics", str(EXAMPLES)).output.split("\n\n")
    *text, summary = by_rule.splitlines()
    expected_rows = [[str(r["count"]), r["code"], r["severity"], r["name"]] for r in expected]
    assert [line.split() for line in text] == expected_rows
    # The totals follow, with what the counts leave out, as the summary line says it.
    assert doc["summary"]["hidden"] == {"availability": 1}
    assert summary.startswith(f"Found {len(doc['findings'])} findings in ")
    assert summary.endswith("(1 availability note not shown; --show-availability shows them).")
    assert health.startswith("Rollout health: 13 rollouts, ")
    assert "2  TL002  error    invalid-json" in text
    rows = json.loads(invoke("check", "--statistics", "--output-format", "json", str(EXAMPLES)).output)
    assert rows == [{"code": r["code"], "name": r["name"], "severity": r["severity"], "count": r["count"]} for r in expected]
    assert sum(r["count"] for r in rows) == len(doc["findings"])
    lines = invoke("check", "--statistics", "--output-format", "jsonl", str(EXAMPLES)).output.splitlines()
    assert [json.loads(line) for line in lines] == rows
    clean = invoke("check", "--statistics", str(EXAMPLES / "clean.jsonl"))
    assert clean.output.startswith("All checks passed")


@pytest.mark.parametrize("fmt", ["sarif", "github", "junit", "gitlab"])
def test_statistics_in_a_format_without_a_table_is_refused_in_one_line(fmt):
    result = invoke("check", "--statistics", "--output-format", fmt, str(EXAMPLES))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"Error: --statistics has no {fmt} form; use it with full, concise, json, jsonl "
        "(reports written to files stay whole)\n"
    )


def test_show_files_lists_and_exits_zero(tmp_path):
    (tmp_path / "b.jsonl").write_text("[]\n")
    (tmp_path / "a.jsonl.gz").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    result = CliRunner().invoke(main, ["check", "--show-files", str(tmp_path), "/dev/null"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [str(tmp_path / "a.jsonl.gz"), str(tmp_path / "b.jsonl")]
    assert "/dev/null: is a device" in result.stderr


@pytest.mark.slow
def test_real_process_threshold_flags(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def status(*args):
        return subprocess.run(
            [sys.executable, "-m", "trajlint", "check", *args, str(EXAMPLES / "broken.jsonl")],
            capture_output=True, env=env, cwd=tmp_path,
        ).returncode

    assert status("--output-format", "concise") == 1
    assert status("--exit-zero") == 0
    assert status("--fail-level", "warning", "--quiet") == 1
    assert status("--select", "TL006") == 0
    assert status("--select", "TL9") == 2  # only internal-error: nothing would be checked
    assert status("--select", "TL9x") == 2
    assert status("--output-format", "json", "--output-format", "sarif") == 2


def test_ci_recipes_in_the_docs_work(tmp_path, monkeypatch):
    """The documented GitHub and GitLab jobs parse, and their trajlint commands do what the docs say."""
    import re
    import shlex
    import shutil

    yaml = pytest.importorskip("yaml")
    docs = (ROOT / "docs" / "ci.md").read_text()
    github, gitlab, precommit = (yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", docs, re.S))
    steps = github["jobs"]["trajlint"]["steps"]
    command = next(step["run"] for step in steps if "trajlint check" in step.get("run", ""))
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert command in (ROOT / "README.md").read_text()
    assert github["permissions"]["security-events"] == "write"
    assert precommit["repos"][0]["hooks"][0]["id"] == "trajlint"

    (tmp_path / "runs").mkdir()
    shutil.copy(EXAMPLES / "broken.jsonl", tmp_path / "runs" / "broken.jsonl")
    monkeypatch.chdir(tmp_path)
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(main, shlex.split(command)[1:], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    assert result.stdout.startswith("::error file=runs/broken.jsonl,line=1,title=trajlint TL")
    sarif = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text())
    assert sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "runs/broken.jsonl"
    )
    assert summary.read_text().startswith("## trajlint")

    (gitlab_command,) = [line for line in gitlab["trajlint"]["script"] if line.startswith("trajlint check")]
    result = CliRunner().invoke(main, shlex.split(gitlab_command)[1:])
    assert result.exit_code == 1
    assert (tmp_path / gitlab["trajlint"]["artifacts"]["reports"]["junit"]).read_text().startswith("<?xml")
    quality = json.loads((tmp_path / gitlab["trajlint"]["artifacts"]["reports"]["codequality"]).read_text())
    assert quality and all(issue["location"]["path"] == "runs/broken.jsonl" for issue in quality)


def test_build_command_writes_rows_and_reports_what_it_cannot_build(tmp_path):
    out = tmp_path / "built.jsonl"
    result = CliRunner().invoke(main, ["build", str(EXAMPLES / "clean.jsonl"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and all("ng_trajectory" in row and "trajlint" in row for row in rows)

    broken = CliRunner().invoke(main, ["build", "--trajectory-only", str(EXAMPLES / "broken.jsonl")])
    assert broken.exit_code == 1
    assert "TL002 invalid-json" in broken.stderr and "TL003 row-not-object" in broken.stderr
    assert all("turns" in json.loads(line) for line in broken.stdout.splitlines())

    target = tmp_path / "rows.jsonl"
    target.write_bytes((EXAMPLES / "clean.jsonl").read_bytes())
    refused = CliRunner().invoke(main, ["build", str(target), "-o", str(target)])
    assert refused.exit_code == 2 and target.read_bytes() == (EXAMPLES / "clean.jsonl").read_bytes()
