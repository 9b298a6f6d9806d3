"""Human output: `full` (each finding with its details) and `concise` (one line per finding).

Both end with the same one-line summary, so a reader of either knows the totals (`--quiet`
leaves it out, as ruff's does). Every line goes through `escape.text_line`: what a finding quotes
from the data can neither break a line nor print a CI command or a terminal escape sequence.
Colour, on a terminal only, is added after that, around parts trajlint itself wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint.findings import Finding, Location
from trajlint.report.document import Report
from trajlint.report.escape import text_line

_INDENT = "  "

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
#: Severity colours as compilers and ruff use them: red errors, yellow warnings, cyan notes.
_SEVERITY_COLOURS = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;36m"}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def place(path: str, line: int) -> str:
    return f"{path}:{line}" if line else path


def finding_line(f: Finding, *, color: bool = False) -> str:
    """`path:line: severity CODE name message [pointer]`, the compilers' `file:line: severity`
    shape that editors' problem matchers read."""
    tail = f" [{f.pointer}]" if f.pointer else ""
    line = text_line(f"{place(f.path, f.line)}: {f.severity} {f.code} {f.name} {f.message}{tail}")
    return _paint(line, f, severity=True) if color else line


def _paint(line: str, f: Finding, *, severity: bool) -> str:
    """`line` (escaped already) with its place bold and its code in the severity's colour.

    The parts painted are found by what trajlint wrote after the place (severity, code and name
    are its own words), so that no byte of the data is ever taken for a colour code.
    """
    marker = f": {f.severity} {f.code} {f.name} " if severity else f": {f.code} {f.name} "
    at = line.find(marker)
    if at < 0:
        return line
    colour = _SEVERITY_COLOURS.get(f.severity, _BOLD)
    head = f"{_BOLD}{line[:at]}{_RESET}: "
    if severity:
        head += f"{colour}{f.severity}{_RESET} {_BOLD}{f.code}{_RESET} "
    else:
        head += f"{colour}{f.code}{_RESET} "
    return head + line[at + len(marker) - len(f.name) - 1 :]


def not_listed(summary: dict[str, Any]) -> list[str]:
    """What the summary counts but the report does not list: baseline and availability findings."""
    notes = []
    baseline = summary.get("baseline") or {}
    if baseline.get("suppressed"):
        notes.append(f"{baseline['suppressed']:,} more in the baseline")
    hidden = (summary.get("hidden") or {}).get("availability", 0)
    if hidden:
        notes.append(f"{_plural(hidden, 'availability note')} not shown; --show-availability shows them")
    return notes


def summary_line(summary: dict[str, Any], *, color: bool = False) -> str:
    line = text_line(_summary_line(summary))
    return f"{_BOLD}{line}{_RESET}" if color else line


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


def render_full(report: Report, *, summary: bool = True, color: bool = False) -> Iterator[str]:
    for f in report.findings:
        first = text_line(f"{place(f.path, f.line)}: {f.code} {f.name} {f.message}")
        yield (_paint(first, f, severity=False) if color else first) + "\n"
        for detail in _details(f):
            yield text_line(f"{_INDENT}{detail}") + "\n"
        yield "\n"
    if summary:
        yield summary_line(report.summary, color=color) + "\n"


def render_concise(report: Report, *, summary: bool = True, color: bool = False) -> Iterator[str]:
    for f in report.findings:
        yield finding_line(f, color=color) + "\n"
    if summary:
        yield summary_line(report.summary, color=color) + "\n"
