"""GitHub Actions workflow commands: one annotation per finding, and a step summary.

GitHub shows at most 10 annotations of each kind per step and silently drops the rest, so each
kind gets at most 9 findings plus one annotation of the same kind that says how many more there
are; the log line therefore never vanishes with the dropped ones. The markdown step summary
(`$GITHUB_STEP_SUMMARY`, at most 1 MiB per step) gives the totals by severity and by rule.

What a command carries from the data is first made `visible` (no control character reaches the
log), then escaped the way the runner unescapes it, so a finding is exactly one annotation.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from trajlint.findings import Finding
from trajlint.report.document import Report
from trajlint.report.escape import visible
from trajlint.report.text import place, summary_line

#: Annotations GitHub keeps per kind and step.
ANNOTATIONS_PER_KIND = 10
#: Bytes GitHub accepts in one step's summary.
STEP_SUMMARY_LIMIT = 1024 * 1024
#: Findings listed in the step summary.
SUMMARY_FINDINGS = 50
COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """The toolkit's escaping of a command's message (the runner's `ActionCommand.UnescapeData`
    undoes it)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """The toolkit's escaping of a property value (`file=`, `title=`; `UnescapeProperty` undoes it)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **properties: str | int) -> str:
    props = ",".join(f"{key}={escape_property(visible(str(value)))}" for key, value in properties.items())
    data = escape_data(visible(message))
    return f"::{kind} {props}::{data}" if props else f"::{kind}::{data}"


def _annotation(report: Report, f: Finding) -> str:
    properties: dict[str, str | int] = {"file": report.relative(f.path) or f.path}
    if f.line:
        properties["line"] = f.line
    properties["title"] = f"trajlint {f.code} {f.name}"
    message = f"{f.message} [{f.pointer}]" if f.pointer else f.message
    return command(COMMANDS[f.severity], message, **properties)


def render(report: Report) -> Iterator[str]:
    # Only the first of each kind are annotated: the rest are counted, never kept.
    by_kind: dict[str, list[Finding]] = defaultdict(list)
    counts: Counter[str] = Counter()
    for f in report.findings:
        counts[f.severity] += 1
        if len(by_kind[f.severity]) < ANNOTATIONS_PER_KIND:
            by_kind[f.severity].append(f)
    for severity, kind in COMMANDS.items():
        findings = by_kind.get(severity, [])
        overflow = counts[severity] > ANNOTATIONS_PER_KIND
        shown = findings[: ANNOTATIONS_PER_KIND - 1] if overflow else findings
        for f in shown:
            yield _annotation(report, f) + "\n"
        if overflow:
            more = counts[severity] - len(shown)
            yield command(
                kind,
                f"{more:,} more {severity} findings are not annotated (GitHub shows at most "
                f"{ANNOTATIONS_PER_KIND} per kind); see the full report (e.g. --output-format "
                "sarif:trajlint.sarif or json) or the step summary.",
                title=f"trajlint: {more:,} more {severity} findings",
            ) + "\n"
    yield summary_line(report.summary) + "\n"


def _cell(text: str, limit: int = 200) -> str:
    text = visible(" ".join(text.split()))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def step_summary(report: Report, limit: int = STEP_SUMMARY_LIMIT) -> str:
    """A markdown summary for `$GITHUB_STEP_SUMMARY`, never longer than `limit` bytes."""
    summary: dict[str, Any] = report.summary
    head = ["## trajlint", "", summary_line(summary), ""]
    head += ["| Severity | Findings |", "| --- | ---: |"]
    head += [f"| {severity} | {summary['by_severity'][severity]:,} |" for severity in COMMANDS]
    if summary["by_rule"]:
        head += ["", "| Rule | Name | Severity | Findings |", "| --- | --- | --- | ---: |"]
        head += [
            f"| {code} | {row['name']} | {row['severity']} | {row['count']:,} |"
            for code, row in summary["by_rule"].items()
        ]
    rows = [
        f"| {_cell(place(report.relative(f.path) or f.path, f.line))} | {f.code} {f.name} | "
        f"{_cell(f.message + (f' [{f.pointer}]' if f.pointer else ''))} |"
        for f in itertools.islice(report.findings, SUMMARY_FINDINGS)
    ]
    while True:
        lines = list(head)
        if rows:
            lines += ["", f"### First {len(rows):,} of {len(report.findings):,} findings", ""]
            lines += ["| Location | Rule | Message |", "| --- | --- | --- |", *rows]
        text = "\n".join(lines) + "\n\n"
        if len(text.encode()) <= limit or not rows:
            break
        rows.pop()
    return text
