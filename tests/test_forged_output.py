"""A row (and a file name) holding newlines, carriage returns, NUL, ANSI escape sequences and
GitHub Actions workflow commands, through the real command line in every output format: the
text and annotation formats print none of it raw and no line a CI runner would run as a
command, the GitHub format prints exactly one well-formed annotation per finding, and the JSON
formats give the original values back exactly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from trajlint.report.escape import text_line, visible
from trajlint.report.formats import FORMATS

from .conftest import EXAMPLES, ROOT

# A new-line-started command, the older `##[` command, CR, an SGR sequence, NUL, the 8-bit CSI,
# a bidi override and a tab: each of them can forge or hide output when printed raw.
EVIL = "x\n::error file=forged.py,line=1::forged\r\x1b[31mred\x00nul\x9bcsi\u202e##[error]old\tend"
# A file name may hold (nearly) anything too, and starts a line in `concise` and `full`.
EVIL_FILE = "::warning file=x,line=2::file\n::error::named\x1b[1m.jsonl"

TEXT_FORMATS = {"full", "concise", "github", "junit"}
JSON_FORMATS = {"json", "jsonl", "sarif", "gitlab"}
HTML_FORMATS = {"html"}
# What no line of a text format may hold (the line's own "\n" aside).
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
ANNOTATION = re.compile(r"::(error|warning|notice) ([^:]*)::(.*)")


def _row() -> str:
    row = json.loads((EXAMPLES / "clean.jsonl").read_text().splitlines()[0])
    row["_ng_task_index"] = EVIL  # quoted in the message and the rollout's id
    row["agent_ref"]["type"] = EVIL
    line = json.dumps(row)
    key = json.dumps(EVIL)
    # Duplicate keys: the key itself lands in the message and in the pointer.
    return line[:-1] + f", {key}: 1, {key}: 2, \"meta\": {{{key}: 1, {key}: 2}}}}\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("forged")
    (root / EVIL_FILE).write_text(_row())
    return root


def _run(corpus: Path, fmt: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--file-kind", "rollouts", "--output-format", fmt, EVIL_FILE],
        cwd=corpus,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    assert result.returncode == 1, result.stderr
    assert b"Traceback" not in result.stderr
    return result.stdout.decode("utf-8")


@pytest.fixture(scope="module")
def report(corpus) -> dict:
    return json.loads(_run(corpus, "json"))


def test_every_format_is_covered():
    assert set(FORMATS) == TEXT_FORMATS | JSON_FORMATS | HTML_FORMATS
    assert not TEXT_FORMATS & JSON_FORMATS


def test_the_row_reaches_messages_and_pointers(report):
    findings = report["findings"]
    assert {f["path"] for f in findings} == {EVIL_FILE}
    pointers = {f["pointer"] for f in findings}
    assert f"/{EVIL}" in pointers and f"/meta/{EVIL}" in pointers
    assert any(repr(EVIL) in f["message"] for f in findings)
    assert any(f["rollout"] and EVIL in f["rollout"]["rollout_id"] for f in findings)


@pytest.mark.parametrize("fmt", sorted(TEXT_FORMATS))
def test_text_formats_print_no_control_character_and_no_command(corpus, report, fmt, tmp_path):
    summary = tmp_path / "step-summary.md"
    out = _run(corpus, fmt, env={"GITHUB_STEP_SUMMARY": str(summary)})
    outputs = [out] + ([summary.read_text(encoding="utf-8")] if fmt == "github" else [])
    for text in outputs:
        assert text.endswith("\n")
        for line in text[:-1].split("\n"):
            assert not RAW.search(line), (fmt, line)
            assert "##[" not in line, (fmt, line)
            if fmt != "github" or not line.startswith("::"):
                assert not line.lstrip().startswith("::"), (fmt, line)
    # What the data said is still there to read, escaped.
    assert "::forged\\r\\x1b[31mred\\x00nul\\x9bcsi\\u202e##\\x5berror]old\\tend" in out


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_prints_one_well_formed_annotation_per_finding(corpus, report):
    out = _run(corpus, "github")
    commands = [line for line in out.splitlines() if line.lstrip().startswith("::")]
    kinds = {"error": "error", "warning": "warning", "info": "notice"}
    assert len(commands) == len(report["findings"])  # a few findings: no overflow line
    for line, f in zip(commands, sorted(report["findings"], key=lambda f: list(kinds).index(f["severity"])), strict=True):
        match = ANNOTATION.fullmatch(line)
        assert match, line
        kind, props, data = match.groups()
        assert kind == kinds[f["severity"]]
        properties = dict(p.split("=", 1) for p in props.split(","))  # as the runner splits them
        assert set(properties) == {"file", "line", "title"}
        assert _unescape_property(properties["file"]) == visible(EVIL_FILE)
        assert properties["line"] == str(f["line"])
        assert _unescape_property(properties["title"]) == f"trajlint {f['code']} {f['name']}"
        message = f"{f['message']} [{f['pointer']}]" if f["pointer"] else f["message"]
        assert _unescape_data(data) == visible(message)


def test_junit_stays_well_formed_xml(corpus):
    root = ET.fromstring(_run(corpus, "junit").encode())
    (suite,) = root.iter("testsuite")
    assert suite.get("name") == visible(EVIL_FILE)
    texts = [failure.text for failure in root.iter("failure")]
    assert texts and all(not RAW.search(text.replace("\n", "")) for text in texts)


def test_json_formats_give_the_values_back_exactly(corpus, report):
    for fmt in sorted(JSON_FORMATS):
        out = _run(corpus, fmt)
        assert not re.search("[\x00-\x09\x0b-\x1f]", out), fmt  # JSON escapes every C0 control
    lines = [json.loads(line) for line in _run(corpus, "jsonl").splitlines()]
    assert lines == report["findings"]
    sarif = json.loads(_run(corpus, "sarif"))
    results = sarif["runs"][0]["results"]
    assert sorted(r["message"]["text"] for r in results) == sorted(f["message"] for f in report["findings"])
    assert {r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in results} == {
        f["pointer"] for f in report["findings"]
    }
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert {urllib.parse.unquote(uri) for uri in uris} == {EVIL_FILE}
    issues = json.loads(_run(corpus, "gitlab"))
    assert len(issues) == len(report["findings"])
    assert all(any(f["message"] in i["description"] for i in issues) for f in report["findings"])


def test_a_line_never_starts_a_command():
    assert text_line("::error::x") == "\\x3a:error::x"
    assert text_line(" \u3000::error::x").lstrip().startswith("\\x3a")
    assert "##[" not in text_line("see ##[error]x")
    assert text_line("a: b :: c") == "a: b :: c"
    assert visible("tab\there\x1b[0m\x00\u2028") == "tab\\there\\x1b[0m\\x00\\u2028"
    assert visible("plain ünïcode ✓") == "plain ünïcode ✓"


def test_html_holds_the_data_only_escaped(corpus, report):
    out = _run(corpus, "html")
    # The page's own two script elements (its data and its code) and no other.
    assert out.count("<script") == 2
    assert EVIL not in out and EVIL_FILE not in out
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', out, re.S).group(1)
    assert "<" not in data
    table = json.loads(data)["findings"]
    assert [f["message"] for f in table] == [visible(f["message"]) for f in report["findings"]]
    assert {f["path"] for f in table} == {visible(EVIL_FILE)}
