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


def _noun(count: int) -> str:
    return f"{count:,} {'finding' if count == 1 else 'findings'}"


class _Group:
    """Findings of one rule in one file on one side of the fail level: counted, and the first
    `LISTED` kept as lines."""

    __slots__ = ("count", "lines", "worst")

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[str] = []
        self.worst: str | None = None

    def add(self, f: Finding) -> None:
        self.count += 1
        if len(self.lines) < LISTED:
            self.lines.append(finding_line(f))
        if self.worst is None or severity_rank(f.severity) < severity_rank(self.worst):
            self.worst = f.severity

    def listing(self) -> str:
        lines = list(self.lines)
        if self.count > LISTED:
            lines.append(f"{self.count - LISTED:,} more")
        return _xml_only("\n".join(lines) + "\n")  # each line escaped by finding_line


def _case(case: ET.Element, failing: _Group | None, below: _Group | None, fail_level: str) -> bool:
    """Fill a rule's case with its findings in one file; whether the case failed."""
    if failing is not None:
        failure = ET.SubElement(case, "failure", message=_noun(failing.count), type=failing.worst or "error")
        failure.text = failing.listing()
    if below is not None:
        out = ET.SubElement(case, "system-out")
        out.text = f"{_noun(below.count)} below the fail level ({fail_level}):\n" + below.listing()
    return failing is not None


def tree(report: Report) -> ET.Element:
    threshold = severity_rank(report.fail_level)
    # (path, code) -> [failing, below]
    by_file: dict[str, dict[str, list[_Group | None]]] = defaultdict(dict)
    names = {info.code: info.name for info in report.rules}
    for f in report.findings:
        names.setdefault(f.code, f.name)
        groups = by_file[f.path].setdefault(f.code, [None, None])
        side = 0 if severity_rank(f.severity) <= threshold else 1
        group = groups[side]
        if group is None:
            group = groups[side] = _Group()
        group.add(f)
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
            if code in found and _case(case, *found[code], report.fail_level):
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
