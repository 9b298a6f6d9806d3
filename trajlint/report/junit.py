"""JUnit XML, for CI dashboards: a suite per input file, a test case per rule.

Every rule that ran appears in every file's suite, so a clean rule shows up as a passing test
and a dashboard tracks each rule over time. Only findings at or above the run's fail level fail
a case, as only they fail the exit status: a failing case holds one `<failure>` (Jenkins keeps
only one) whose message counts those findings and whose text lists the first of them. Findings
below the fail level are listed in the case's `<system-out>`, so a run that exits 0 shows no red
test yet loses nothing. The output validates against Jenkins' `junit-10.xsd`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator

from trajlint.findings import Finding, severity_rank
from trajlint.report.document import Report
from trajlint.report.escape import visible
from trajlint.report.text import finding_line

#: Findings listed in a failure's text; the rest are counted.
LISTED = 100

# Characters XML 1.0 cannot carry at all, not even escaped. `visible` (and so every line of a
# text format) already writes the controls among them as escapes; two non-characters remain.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_only(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _xml(text: str) -> str:
    """A name from the data as XML carries it: controls escaped as in every text format."""
    return _xml_only(visible(text))


def _noun(findings: list[Finding]) -> str:
    return f"{len(findings):,} {'finding' if len(findings) == 1 else 'findings'}"


def _listing(findings: list[Finding]) -> str:
    lines = [finding_line(f) for f in findings[:LISTED]]
    if len(findings) > LISTED:
        lines.append(f"{len(findings) - LISTED:,} more")
    return _xml_only("\n".join(lines) + "\n")  # each line escaped by finding_line


def _case(case: ET.Element, findings: list[Finding], fail_level: str) -> bool:
    """Fill a rule's case with its findings in one file; whether the case failed."""
    threshold = severity_rank(fail_level)
    failing = [f for f in findings if severity_rank(f.severity) <= threshold]
    below = [f for f in findings if severity_rank(f.severity) > threshold]
    if failing:
        worst = min((f.severity for f in failing), key=severity_rank)
        failure = ET.SubElement(case, "failure", message=_noun(failing), type=worst)
        failure.text = _listing(failing)
    if below:
        out = ET.SubElement(case, "system-out")
        out.text = f"{_noun(below)} below the fail level ({fail_level}):\n" + _listing(below)
    return bool(failing)


def tree(report: Report) -> ET.Element:
    by_file: dict[str, dict[str, list[Finding]]] = defaultdict(lambda: defaultdict(list))
    for f in report.findings:
        by_file[f.path][f.code].append(f)
    names = {info.code: info.name for info in report.rules}
    for f in report.findings:
        names.setdefault(f.code, f.name)
    evaluated = [
        code
        for code, coverage in report.summary.get("rules", {}).items()
        if coverage.get("evaluated", 0)
    ]
    files = list(dict.fromkeys([*report.files, *by_file]))
    root = ET.Element("testsuites", name="trajlint")
    total_tests = total_failures = 0
    for path in files:
        found = by_file.get(path, {})
        codes = sorted({*evaluated, *found})
        suite = ET.SubElement(root, "testsuite", name=_xml(path))
        failures = 0
        for code in codes:
            case = ET.SubElement(suite, "testcase", classname=f"trajlint.{code}", name=_xml(names.get(code, code)))
            if code in found and _case(case, found[code], report.fail_level):
                failures += 1
        suite.set("tests", str(len(codes)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total_tests += len(codes)
        total_failures += failures
    # No `skipped` here: Jenkins' schema allows it on a suite, not on `testsuites`.
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", "0")
    return root


def render(report: Report) -> Iterator[str]:
    root = tree(report)
    ET.indent(root)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    yield ET.tostring(root, encoding="unicode") + "\n"
