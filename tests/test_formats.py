"""Every output format on the shipped examples, checked against what its consumer expects:
SARIF against the official 2.1.0 schema, JUnit through an XML parser and junitparser, GitHub
workflow commands with the toolkit's escaping and GitHub's annotation cap."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest
from click.testing import CliRunner

from trajlint.check.engine import Result
from trajlint.cli import main
from trajlint.findings import Finding, Location, Rollout
from trajlint.report import document, github, gitlab, junit, sarif
from trajlint.report.document import Report, RuleInfo
from trajlint.report.formats import NAMES, Output

from .conftest import EXAMPLES, ROOT

SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
FORMATS = ("full", "concise", "json", "jsonl", "sarif", "github", "junit", "gitlab", "html")


# A path through a file: not a missing input (it cannot even be looked for), an unreadable-file
# finding with no line. A missing input would end the run instead.
UNREADABLE = "examples/clean.jsonl/inside.jsonl"


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["check", *args], env=env, catch_exceptions=False)


def as_json(*args: str) -> dict:
    """The JSON report of the same run: what the other formats are checked against, so the
    tests follow the rules as they grow instead of pinning today's counts."""
    return json.loads(invoke("--output-format", "json", *args).output)


@pytest.fixture
def in_root(monkeypatch):
    """Run from the checkout, so examples/ paths are relative as they would be in CI."""
    monkeypatch.chdir(ROOT)


def _finding(n: int, severity: str = "error", message: str = "bad value", **kw) -> Finding:
    fields = {
        "code": "TL104",
        "name": "trajectory-schema",
        "severity": severity,
        "message": message,
        "path": "runs/a.jsonl",
        "line": n,
        "pointer": f"/ng_trajectory/turns/{n}/turn_no",
        "fingerprint": f"{n:032x}",
    }
    return Finding(**(fields | kw))


def _report(findings: list[Finding], files: tuple[str, ...] = ("runs/a.jsonl",)) -> Report:
    rules = (RuleInfo("TL104", "trajectory-schema", "error", "error", "Summary.", "Rationale."),)
    return Report(findings, document.summary(Result(findings=findings)), rules, files, root=".")


# -- every format -------------------------------------------------------------------------


def test_format_names():
    assert set(FORMATS) | {"text"} == set(NAMES)
    assert Output.parse("text") == Output("full")
    assert Output.parse("sarif:out/x.sarif") == Output("sarif", "out/x.sarif")
    for bad in ("xml", "sarif:"):
        with pytest.raises(ValueError):
            Output.parse(bad)


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_exit_codes_and_determinism(in_root, fmt):
    clean = invoke("--output-format", fmt, "examples/clean.jsonl")
    assert clean.exit_code == 0, clean.output
    first = invoke("--output-format", fmt, "examples/")
    second = invoke("--output-format", fmt, "examples/")
    assert first.exit_code == second.exit_code == 1
    assert first.stdout_bytes == second.stdout_bytes
    assert first.stdout_bytes


def test_full_is_the_default_and_shows_details(in_root):
    result = invoke("examples/broken.jsonl")
    assert result.output == invoke("--output-format", "text", "examples/broken.jsonl").output
    doc = as_json("examples/broken.jsonl")
    blocks = result.output.split("\n\n")
    assert len(blocks) == len(doc["findings"]) + 1
    for block, f in zip(blocks, doc["findings"], strict=False):
        lines = block.splitlines()
        assert lines[0] == f"examples/broken.jsonl:{f['line']}: {f['code']} {f['name']} {f['message']}"
        assert f"  severity: {f['severity']}" in lines
        assert (f"  pointer: {f['pointer']}" in lines) == bool(f["pointer"])
        if f["rollout"]:
            rollout = f["rollout"]
            assert f"  rollout: task_id={rollout['task_id']!r} rollout_id={rollout['rollout_id']!r}" in lines
    duplicate = next(b for b in blocks if "TL401" in b and ":6: " in b)
    assert "  related: examples/broken.jsonl:7" in duplicate.splitlines()
    assert blocks[-1].startswith(f"Found {len(doc['findings'])} findings")


def test_concise_is_one_line_per_finding(in_root):
    lines = invoke("--output-format", "concise", "examples/broken.jsonl").output.splitlines()
    doc = as_json("examples/broken.jsonl")
    assert len(lines) == len(doc["findings"]) + 1
    for line, f in zip(lines, doc["findings"], strict=False):
        tail = f" [{f['pointer']}]" if f["pointer"] else ""
        assert line == f"examples/broken.jsonl:{f['line']}: {f['severity']} {f['code']} {f['name']} {f['message']}{tail}"
    assert any(line.startswith("examples/broken.jsonl:4: error TL003 row-not-object a rollout row") for line in lines)


def test_jsonl_is_one_finding_per_line_without_summary(in_root):
    from trajlint.contract import schemas

    report_schema = schemas.load("report")
    finding_schema = {"$ref": "#/$defs/Finding", "$defs": report_schema["$defs"]}
    out = invoke("--output-format", "jsonl", "examples/").output
    rows = [json.loads(line) for line in out.splitlines()]
    doc = json.loads(invoke("--output-format", "json", "examples/").output)
    assert rows == doc["findings"]
    for row in rows:
        jsonschema.validate(row, finding_schema)
    assert invoke("--output-format", "jsonl", "examples/clean.jsonl").output == ""


# -- SARIF --------------------------------------------------------------------------------


def test_sarif_validates_against_the_official_schema(in_root):
    result = invoke("--output-format", "sarif", "examples/", UNREADABLE)
    log = json.loads(result.output)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "trajlint" and driver["version"]
    assert "informationUri" not in driver  # no public page exists to point at
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == sorted(rule_ids) and "TL104" in rule_ids
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        assert rule["properties"]["severity"] in ("error", "warning", "info")
    doc = json.loads(invoke("--output-format", "json", "examples/", UNREADABLE).output)
    assert len(run["results"]) == len(doc["findings"])
    assert any(f["line"] == 0 for f in doc["findings"])  # the unreadable input
    for res, finding in zip(run["results"], doc["findings"], strict=True):
        assert rule_ids[res["ruleIndex"]] == res["ruleId"] == finding["code"]
        assert res["level"] == sarif.LEVELS[finding["severity"]]
        assert res["partialFingerprints"] == {"trajlintFingerprint/v1": finding["fingerprint"]}
        physical = res["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": finding["path"], "uriBaseId": "%SRCROOT%"}
        # The file as a whole (line 0) is shown at its first line: GitHub needs a start line.
        assert physical["region"] == {"startLine": finding["line"] or 1}
        if finding["pointer"]:
            assert res["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == finding["pointer"]
        assert res["properties"].get("rollout") == finding["rollout"]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": ROOT.as_uri() + "/"}}
    for rule in driver["rules"]:
        assert len(rule["fullDescription"]["text"]) <= sarif.MAX_DESCRIPTION
        assert rule["help"]["text"].startswith(rule["fullDescription"]["text"].removesuffix(" …"))
        assert "helpUri" not in rule  # the project has no published URL for its rule docs yet
    assert any(rule["fullDescription"]["text"].endswith(" …") for rule in driver["rules"])
    duplicate = next(r for r in run["results"] if r["ruleId"] == "TL401")
    assert duplicate["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 7


def test_sarif_uri_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r 1.jsonl").write_bytes(b"[1]\n")
    monkeypatch.chdir(tmp_path / "runs")
    log = json.loads(invoke("--output-format", "sarif", str(tmp_path / "runs" / "r 1.jsonl")).output)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "r%201.jsonl", "uriBaseId": "%SRCROOT%"}
    monkeypatch.chdir(tmp_path / "runs" / "..")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    log = json.loads(invoke("--output-format", "sarif", "../runs/r 1.jsonl").output)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": (tmp_path / "runs" / "r 1.jsonl").as_uri()}


def test_sarif_levels_and_the_result_cap():
    findings = [_finding(1, "info"), _finding(2, "warning"), _finding(3, "error"), _finding(4, "info")]
    log = sarif.sarif_log(_report(findings), limit=2)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    run = log["runs"][0]
    assert [(r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]] == [
        ("warning", 2),
        ("error", 3),
    ]
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("2 of 4 findings were left out")
    assert run["properties"] == {"findings": 4, "leftOut": 2, "relatedLocationsLeftOut": 0, "availabilityNotShown": 0}
    full = sarif.sarif_log(_report(findings))["runs"][0]
    assert [r["level"] for r in full["results"]] == ["note", "warning", "error", "note"]
    assert "toolExecutionNotifications" not in full["invocations"][0]
    assert sarif.MAX_RESULTS == 25_000


def test_sarif_descriptions_are_cut_at_a_sentence_or_a_word():
    assert sarif.shortened("Short. Text.") == "Short. Text."
    text = "First sentence is here. " + "Second one goes on and on " * 60
    cut = sarif.shortened(text, 100)  # its only sentence end is in the first half: cut at a word
    assert len(cut) <= 100 and cut.startswith("First sentence is here. Second") and cut.endswith(" on …")
    cut = sarif.shortened("word " * 300, 100)
    assert len(cut) <= 100 and cut.endswith("word …") and "wor …" not in cut
    long = ("A sentence of some length. " * 60).strip()
    cut = sarif.shortened(long)
    assert len(cut) <= 1024 and cut.endswith("length. …")
    assert sarif.shortened("x" * 2000, 50) == "x" * 48 + " …"


def _duplicates(n: int, related: int = 100) -> list[Finding]:
    """`n` copies of one rollout, each citing the first `related` others, as TL401 reports them."""
    path = "runs/dup.jsonl"
    return [
        Finding(
            code="TL401",
            name="duplicate-rollout-identity",
            severity="error",
            message=f"rollout _ng_task_index=4 _ng_rollout_index=1 is recorded by {n:,} rows in this file",
            path=path,
            line=line,
            pointer="",
            rollout=Rollout(task_id="4", rollout_id="4-1"),
            fingerprint="6e5c45d73db4f763cb9ed207bfb66623",
            related=tuple(Location(path, other, "") for other in range(1, related + 2) if other != line)[:related],
        )
        for line in range(1, n + 1)
    ]


def _check_github_limits(log: dict) -> None:
    """GitHub code scanning's documented limits (docs.github.com, "SARIF results exceed limit"
    and "SARIF file is too large")."""
    assert len(log["runs"]) <= 20
    for run in log["runs"]:
        assert len(run["results"]) <= 25_000
        assert len(run["tool"]["driver"]["rules"]) <= 25_000
        for result in run["results"]:
            assert len(result["locations"]) + len(result.get("relatedLocations", ())) <= 1_000
            assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
        for rule in run["tool"]["driver"]["rules"]:
            assert len(rule["fullDescription"]["text"]) <= 1024
            assert len(rule["shortDescription"]["text"]) <= 1024


def test_sarif_of_thirty_thousand_copies_of_one_rollout_fits_github(in_root):
    import gzip
    import resource
    import time

    rules = (RuleInfo("TL401", "duplicate-rollout-identity", "error", "error", "Summary.", "Rationale."),)
    findings = _duplicates(30_000)
    report = Report(findings, document.summary(Result(findings=findings)), rules, ("runs/dup.jsonl",), root=".")
    started = time.perf_counter()
    text = "".join(sarif.render(report))
    elapsed = time.perf_counter() - started
    data = text.encode()
    log = json.loads(data)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    _check_github_limits(log)
    assert len(data) < sarif.MAX_BYTES and len(gzip.compress(data)) < 10_000_000
    (run,) = log["runs"]
    results = run["results"]
    related = sum(len(r.get("relatedLocations", ())) for r in results)
    assert related == sarif.MAX_RELATED
    assert all(len(r.get("relatedLocations", ())) <= sarif.MAX_RELATED_PER_RESULT for r in results)
    left_out = 30_000 - len(results)
    assert left_out >= 5_000  # the 25,000 cap at least
    assert run["properties"]["leftOut"] == left_out
    assert run["properties"]["relatedLocationsLeftOut"] == 30_000 * 100 - related - 100 * left_out
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith(f"{left_out:,} of 30,000 findings were left out")
    assert f"{run['properties']['relatedLocationsLeftOut']:,} related locations were left out" in note["message"]["text"]
    cut = [r for r in results if "relatedLocationsLeftOut" in r["properties"]]
    assert all(r["properties"]["relatedLocationsLeftOut"] == 100 - len(r.get("relatedLocations", ())) for r in cut)
    print(
        f"\n30,000 copies: {len(results):,} results, {len(data):,} bytes, {len(gzip.compress(data)):,} gzipped, "
        f"{elapsed:.2f} s, max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB"
    )


def test_sarif_byte_budget_keeps_the_most_severe(monkeypatch):
    findings = [_finding(n, "info" if n % 2 else "error") for n in range(1, 201)]
    full = "".join(sarif.render(_report(findings)))
    monkeypatch.setattr(sarif, "MAX_BYTES", len(full) * 3 // 4)
    text = "".join(sarif.render(_report(findings)))
    assert len(text.encode()) <= sarif.MAX_BYTES
    run = json.loads(text)["runs"][0]
    levels = [r["level"] for r in run["results"]]
    assert levels.count("error") == 100 and 0 < levels.count("note") < 100
    lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in run["results"]]
    assert lines == sorted(lines)  # report order
    assert run["properties"]["leftOut"] == 200 - len(levels)


def test_sarif_file_level_finding_has_a_region():
    finding = _finding(0, pointer="", related=(Location("runs/b.jsonl", 0, ""),))
    log = sarif.sarif_log(_report([finding]))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert result["relatedLocations"][0]["physicalLocation"]["region"] == {"startLine": 1}


# -- GitHub -------------------------------------------------------------------------------


def test_github_escaping_follows_the_toolkit():
    assert github.escape_data("100% a:b,c\r\nd") == "100%25 a:b,c%0D%0Ad"
    assert github.escape_property("100% a:b,c\r\nd") == "100%25 a%3Ab%2Cc%0D%0Ad"
    finding = _finding(3, message="50% of: a, b\nnext", path="dir/we,ird:name.jsonl", pointer="")
    (line, summary) = list(github.render(_report([finding])))
    assert line == (  # a newline in a message is shown as an escape, as in every text format
        "::error file=dir/we%2Cird%3Aname.jsonl,line=3,title=trajlint TL104 trajectory-schema"
        "::50%25 of: a, b\\nnext\n"
    )
    assert summary.startswith("Found 1 finding")


def test_github_command_kinds_and_whole_file_findings():
    lines = list(github.render(_report([_finding(0, "error"), _finding(1, "warning"), _finding(2, "info")])))
    assert lines[0].startswith("::error file=runs/a.jsonl,title=")  # line 0: no line property
    assert lines[1].startswith("::warning file=runs/a.jsonl,line=1,")
    assert lines[2].startswith("::notice file=runs/a.jsonl,line=2,")


def test_github_caps_annotations_per_kind_with_an_overflow_line():
    findings = [_finding(n, "error") for n in range(1, 26)] + [_finding(n, "warning") for n in range(30, 33)]
    lines = list(github.render(_report(findings)))
    errors = [line for line in lines if line.startswith("::error")]
    warnings = [line for line in lines if line.startswith("::warning")]
    assert len(errors) == 10 and len(warnings) == 3
    assert errors[-1].startswith("::error title=trajlint%3A 16 more error findings::16 more error findings")
    assert "see the full report" in errors[-1]
    assert lines[-1].startswith("Found 28 findings")


def test_github_step_summary_is_appended(in_root, tmp_path):
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("earlier step\n")
    result = invoke("--output-format", "github", "examples/", env={"GITHUB_STEP_SUMMARY": str(summary_file)})
    assert result.exit_code == 1
    doc = as_json("examples/")
    text = summary_file.read_text()
    assert text.startswith("earlier step\n## trajlint\n")
    assert f"| error | {doc['summary']['by_severity']['error']} |" in text
    count = doc["summary"]["by_rule"]["TL401"]["count"]
    assert f"| TL401 | duplicate-rollout-identity | error | {count} |" in text
    first = doc["findings"][0]
    assert f"| examples/broken.jsonl:{first['line']} | {first['code']} {first['name']} |" in text
    # Other formats leave the step summary alone.
    invoke("--output-format", "concise", "examples/", env={"GITHUB_STEP_SUMMARY": str(summary_file)})
    assert summary_file.read_text() == text


def test_github_step_summary_stays_under_its_limit():
    findings = [_finding(n, message="x|" * 500) for n in range(1, 200)]
    text = github.step_summary(_report(findings))
    assert "x\\|x" in text and text.count("\n| runs/a.jsonl:") == github.SUMMARY_FINDINGS
    small = github.step_summary(_report(findings), limit=2000)
    assert len(small.encode()) <= 2000 and "| TL104 | trajectory-schema |" in small


# -- JUnit --------------------------------------------------------------------------------


def test_junit_suite_per_file_case_per_rule(in_root):
    out = invoke("--output-format", "junit", "--fail-level", "info", "examples/").output
    doc = as_json("examples/")
    failing = sorted({f["code"] for f in doc["findings"]})
    passing = sorted(c for c, cov in doc["summary"]["rules"].items() if cov["evaluated"] and c not in failing)
    root = ET.fromstring(out.encode())
    assert root.tag == "testsuites" and root.get("errors") == "0"
    suites = {suite.get("name"): suite for suite in root}
    assert set(suites) == {"examples/broken.jsonl", "examples/clean.jsonl"}
    clean = suites["examples/clean.jsonl"]
    assert clean.get("failures") == "0" and int(clean.get("tests")) == len(failing) + len(passing)
    assert all(len(case) == 0 for case in clean)  # every rule passed
    broken = {case.get("classname"): case for case in suites["examples/broken.jsonl"]}
    assert sorted(broken) == sorted(f"trajlint.{c}" for c in [*failing, *passing])
    failure = broken["trajlint.TL002"].find("failure")
    assert broken["trajlint.TL002"].get("name") == "invalid-json"
    assert failure.get("message") == "2 findings" and failure.get("type") == "error"
    assert failure.text.splitlines()[0].startswith("examples/broken.jsonl:2: error TL002 invalid-json")
    assert all(broken[f"trajlint.{code}"].find("failure") is None for code in passing)
    assert root.get("failures") == str(len(failing))
    assert root.find(".//error") is None


def test_junit_parses_with_junitparser(in_root, tmp_path):
    junitparser = pytest.importorskip("junitparser")
    path = tmp_path / "junit.xml"
    assert invoke("--output-format", f"junit:{path}", "examples/").exit_code == 1
    doc = as_json("examples/")
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = {suite.name: suite for suite in xml}
    broken = suites["examples/broken.jsonl"]
    assert broken.failures == len({f["code"] for f in doc["findings"] if f["severity"] == "error"})
    cases = {case.classname: case for case in broken}
    assert all(not case.result for case in suites["examples/clean.jsonl"])
    (failure,) = cases["trajlint.TL002"].result
    assert failure.message == "2 findings"


def test_junit_lists_the_first_hundred_and_keeps_xml_well_formed():
    findings = [_finding(n, message=f"bad \x00\x1b value {n} <&>") for n in range(1, 131)]
    root = ET.fromstring("".join(junit.render(_report(findings))).encode())
    (failure,) = root.iter("failure")
    assert failure.get("message") == "130 findings"
    lines = failure.text.splitlines()
    assert len(lines) == 101 and lines[-1] == "30 more"
    assert "bad \\x00\\x1b value 1 <&>" in lines[0]


def _junit_schema():
    etree = pytest.importorskip("lxml.etree")
    return etree, etree.XMLSchema(etree.parse(str(ROOT / "tests" / "data" / "junit-10.xsd")))


@pytest.mark.parametrize("fail_level", ["error", "warning", "info"])
def test_junit_validates_against_jenkins_schema(in_root, tmp_path, fail_level):
    etree, schema = _junit_schema()
    path = tmp_path / "junit.xml"
    invoke("--output-format", f"junit:{path}", "--fail-level", fail_level, "examples/", UNREADABLE)
    schema.assertValid(etree.parse(str(path)))
    findings = [_finding(1, "error"), _finding(2, "info", message="bad \x00 <&>")]
    for level in ("error", "info"):
        report = dataclasses.replace(_report(findings), fail_level=level)
        schema.assertValid(etree.fromstring("".join(junit.render(report)).encode()))


def test_junit_fails_only_at_or_above_the_fail_level(in_root):
    doc = as_json("examples/")
    severities: dict[str, set[str]] = {}
    for f in doc["findings"]:
        severities.setdefault(f["code"], set()).add(f["severity"])
    below = sorted(code for code, seen in severities.items() if "error" not in seen)
    assert below, "examples/ should hold a rule with only warning or info findings"
    result = invoke("--output-format", "junit", "examples/")
    assert result.exit_code == 1
    root = ET.fromstring(result.output.encode())
    cases = {case.get("classname"): case for case in root.find("testsuite[@name='examples/broken.jsonl']")}
    for code, seen in severities.items():
        case = cases[f"trajlint.{code}"]
        assert (case.find("failure") is not None) == ("error" in seen), code
        out = case.find("system-out")
        assert (out is not None) == bool(seen - {"error"}), code
        if out is not None:
            assert "below the fail level (error)" in out.text
    assert root.get("failures") == str(len(severities) - len(below))
    # A run that exits 0 shows no failed test, and still lists what it found.
    quiet = invoke("--output-format", "junit", "--select", ",".join(below), "examples/")
    assert quiet.exit_code == 0
    root = ET.fromstring(quiet.output.encode())
    assert root.get("failures") == "0" and root.find(".//failure") is None
    assert len(root.findall(".//system-out")) == len(below)


def test_junit_report_default_fail_level_is_error():
    findings = [_finding(1, "warning"), _finding(2, "info")]
    root = ET.fromstring("".join(junit.render(_report(findings))).encode())
    assert root.find(".//failure") is None
    (out,) = root.iter("system-out")
    assert out.text.startswith("2 findings below the fail level (error):")
    root = ET.fromstring("".join(junit.render(dataclasses.replace(_report(findings), fail_level="warning"))).encode())
    (failure,) = root.iter("failure")
    assert failure.get("message") == "1 finding" and failure.get("type") == "warning"
    assert root.find(".//system-out").text.startswith("1 finding below the fail level (warning):")


# -- GitLab Code Quality ------------------------------------------------------------------

GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def test_gitlab_code_quality_issue_per_finding(in_root):
    result = invoke("--output-format", "gitlab", "examples/", UNREADABLE)
    assert result.exit_code == 1
    issues = json.loads(result.stdout)
    doc = as_json("examples/", UNREADABLE)
    assert isinstance(issues, list) and len(issues) == len(doc["findings"])
    for issue, finding in zip(issues, doc["findings"], strict=True):
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["check_name"] == finding["code"]
        assert issue["description"].startswith(f"{finding['code']} {finding['name']}: {finding['message']}")
        assert issue["severity"] in GITLAB_SEVERITIES
        assert issue["severity"] == {"error": "major", "warning": "minor", "info": "info"}[finding["severity"]]
        assert issue["location"] == {"path": finding["path"], "lines": {"begin": finding["line"] or 1}}
        assert len(issue["fingerprint"]) == 32
    # GitLab shows one issue per fingerprint: they must not repeat.
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    assert invoke("--output-format", "gitlab", "examples/", UNREADABLE).stdout == result.stdout


def test_gitlab_fingerprints_are_unique_and_stable_when_rows_move(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    copies = [_finding(line, fingerprint="f" * 32) for line in (3, 9, 12)]
    other = _finding(5, fingerprint="e" * 32)
    unfingerprinted = [_finding(7, fingerprint=""), _finding(8, fingerprint="")]
    issues = gitlab.issues(_report([*copies, other, *unfingerprinted]))
    prints = [issue["fingerprint"] for issue in issues]
    assert len(set(prints)) == len(prints)
    moved = [dataclasses.replace(f, line=f.line + 100) for f in [*copies, other]]
    assert [i["fingerprint"] for i in gitlab.issues(_report(moved))] == prints[:4]
    assert all(issue["location"]["lines"]["begin"] >= 1 for issue in issues)
    whole_file = gitlab.issues(_report([_finding(0, pointer="")]))
    assert whole_file[0]["location"]["lines"] == {"begin": 1}


def test_gitlab_paths_are_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r.jsonl").write_bytes(b"[1]\n")
    monkeypatch.chdir(tmp_path)
    issues = json.loads(invoke("--output-format", "gitlab", str(tmp_path / "runs" / "r.jsonl")).output)
    assert issues and all(issue["location"]["path"] == "runs/r.jsonl" for issue in issues)


# -- several outputs ----------------------------------------------------------------------


def test_several_outputs_in_one_run(in_root, tmp_path):
    sarif_path, junit_path, json_path = tmp_path / "t.sarif", tmp_path / "t.xml", tmp_path / "t.json"
    result = invoke(
        "--output-format", "concise",
        "--output-format", f"sarif:{sarif_path}",
        "--output-format", f"junit:{junit_path}",
        "--output-format", f"json:{json_path}",
        "examples/",
    )
    assert result.exit_code == 1
    assert result.stdout == invoke("--output-format", "concise", "examples/").stdout
    assert sarif_path.read_text() == invoke("--output-format", "sarif", "examples/").stdout
    assert junit_path.read_text() == invoke("--output-format", "junit", "examples/").stdout
    assert json.loads(json_path.read_text()) == as_json("examples/")


def test_output_file_option_and_files_only(in_root, tmp_path):
    out = tmp_path / "report.json"
    result = invoke("--output-format", "json", "-o", str(out), "examples/")
    assert result.exit_code == 1 and result.stdout == ""
    doc = json.loads(out.read_text())
    assert doc == as_json("examples/")
    # With every report in a file, the summary still reaches the terminal (on stderr).
    assert result.stderr.startswith(f"Found {doc['summary']['findings']} findings")


@pytest.mark.parametrize(
    "args",
    [
        ("--output-format", "json", "--output-format", "sarif"),
        ("--output-format", "json:{out}", "--output-format", "sarif:{out}"),
        ("--output-format", "jsonl:{input}",),
        ("--output-format", "jsonl", "-o", "{input}"),
    ],
    ids=["two-to-stdout", "same-file-twice", "output-is-input", "output-file-is-input"],
)
def test_output_conflicts_are_usage_errors(tmp_path, args):
    data = (EXAMPLES / "broken.jsonl").read_bytes()
    target = tmp_path / "rows.jsonl"
    target.write_bytes(data)
    filled = [a.format(out=tmp_path / "o.txt", input=target) for a in args]
    result = CliRunner().invoke(main, ["check", *filled, str(tmp_path)])
    assert result.exit_code == 2
    assert target.read_bytes() == data
    assert not (tmp_path / "o.txt").exists()


def test_unwritable_output_is_reported_without_traceback(in_root, tmp_path):
    result = CliRunner().invoke(
        main, ["check", "--output-format", f"json:{tmp_path / 'no' / 'dir' / 'r.json'}", "examples/clean.jsonl"]
    )
    assert result.exit_code == 2
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr


def test_report_relative_paths(tmp_path):
    report = Report([], {}, (), root=str(tmp_path))
    assert report.relative(str(tmp_path / "a" / "b.jsonl")) == "a/b.jsonl"
    assert report.relative("-") == "-"
    assert report.relative(str(tmp_path.parent / "x.jsonl")) is None


def test_related_locations_in_every_format():
    finding = _finding(
        5,
        related=(Location("runs/b.jsonl", 9, "/ng_trajectory"),),
        rollout=Rollout("t-1", "r-1"),
    )
    report = _report([finding])
    full = "".join(document_renderer("full")(report))
    assert "  related: runs/b.jsonl:9 /ng_trajectory" in full
    assert "  rollout: task_id='t-1' rollout_id='r-1'" in full
    log = sarif.sarif_log(report)
    related = log["runs"][0]["results"][0]["relatedLocations"][0]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "runs/b.jsonl"
    assert related["logicalLocations"][0]["fullyQualifiedName"] == "/ng_trajectory"


def document_renderer(name: str):
    from trajlint.report.formats import renderer

    return renderer(name)


def test_sarif_for_stdin():
    report = _report([_finding(1, path="-")], files=("-",))
    log = sarif.sarif_log(report)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "-"


# -- writing report files -----------------------------------------------------------------------


def _write(path, chunks):
    import io

    from trajlint.report import write as outputs

    def render(report):
        for chunk in chunks:
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk

    outputs.write(None, Output("json", str(path)), io.StringIO(), render)


def test_a_report_file_is_replaced_whole_keeping_its_mode_and_its_link(tmp_path):
    import os

    report = tmp_path / "out" / "trajlint.json"
    report.parent.mkdir()
    report.write_text("old")
    os.chmod(report, 0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(report)
    _write(link, ["new ", "report"])
    assert link.is_symlink() and report.read_text() == "new report"
    assert os.stat(report).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in report.parent.iterdir()) == ["trajlint.json"]  # no temporary left
    _write(tmp_path / "fresh.json", ["x"])
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / "fresh.json").st_mode & 0o777 == 0o666 & ~umask


def test_a_report_cut_short_leaves_the_previous_one_whole(tmp_path):
    report = tmp_path / "trajlint.sarif"
    report.write_text("previous")
    with pytest.raises(KeyboardInterrupt):
        _write(report, ["half of a", KeyboardInterrupt()])
    assert report.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["trajlint.sarif"]


def test_a_report_to_a_device_is_written_in_place(tmp_path):
    import os

    _write("/dev/null", ["anything"])
    assert not os.path.isfile("/dev/null")
