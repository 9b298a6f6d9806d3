"""Human output: `full` (each finding with its details) and `concise` (one line per finding).

Both end with the same one-line summary, so a reader of either knows the totals. Every line goes
through `escape.text_line`: what a finding quotes from the data can neither break a line nor
print a CI command or a terminal escape sequence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint.findings import Finding, Location
from trajlint.report.document import Report
from trajlint.report.escape import text_line

_INDENT = "  "


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def place(path: str, line: int) -> str:
    return f"{path}:{line}" if line else path


def finding_line(f: Finding) -> str:
    tail = f" [{f.pointer}]" if f.pointer else ""
    return text_line(f"{place(f.path, f.line)}: {f.code} {f.name} {f.message}{tail}")


def not_listed(summary: dict[str, Any]) -> list[str]:
    """What the summary counts but the report does not list: baseline and availability findings."""
    notes = []
    baseline = summary.get("baseline") or {}
    if baseline.get("suppressed"):
        notes.append(f"{baseline['suppressed']:,} more in the baseline")
    hidden = (summary.get("hidden") or {}).get("availability", 0)
    if hidden:
        notes.append(f"{_plural(hidden, 'availability note')} not shown; --show-availability shows them")
    truncated = summary.get("truncated")
    if truncated:
        runs = len(truncated["runs"])
        notes.append(
            f"{truncated['findings']:,} not listed: {_plural(runs, 'run')} passed max-findings-per-run "
            f"{truncated['max_findings_per_run']:,}; --max-findings-per-run 0 lists them all"
        )
    return notes


def summary_line(summary: dict[str, Any]) -> str:
    return text_line(_summary_line(summary))


def _summary_line(summary: dict[str, Any]) -> str:
    rows, files = _plural(summary["rows"], "row"), _plural(summary["files"], "file")
    notes = not_listed(summary)
    known = f" ({'; '.join(notes)})" if notes else ""
    if not summary["findings"]:
        return f"All checks passed: {rows} in {files}{known}."
    sev = summary["by_severity"]
    counts = ", ".join(_plural(sev[s], s) for s in ("error", "warning", "info"))
    return f"Found {_plural(summary['findings'], 'finding')} in {rows} of {files}: {counts}{known}."


def _related(loc: Location) -> str:
    return place(loc.path, loc.line) + (f" {loc.pointer}" if loc.pointer else "")


def _details(f: Finding) -> Iterator[str]:
    yield f"severity: {f.severity}"
    if f.pointer:
        yield f"pointer: {f.pointer}"
    if f.rollout is not None:
        yield f"rollout: task_id={f.rollout.task_id!r} rollout_id={f.rollout.rollout_id!r}"
    for loc in f.related:
        yield f"related: {_related(loc)}"


def render_full(report: Report) -> Iterator[str]:
    for f in report.findings:
        yield text_line(f"{place(f.path, f.line)}: {f.code} {f.name} {f.message}") + "\n"
        for detail in _details(f):
            yield text_line(f"{_INDENT}{detail}") + "\n"
        yield "\n"
    yield summary_line(report.summary) + "\n"


def render_concise(report: Report) -> Iterator[str]:
    for f in report.findings:
        yield finding_line(f) + "\n"
    yield summary_line(report.summary) + "\n"
