"""Human output: one line per finding, then a one-line summary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint.findings import Finding


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def finding_line(f: Finding) -> str:
    place = f"{f.path}:{f.line}" if f.line else f.path
    tail = f" [{f.pointer}]" if f.pointer else ""
    return f"{place}: {f.code} {f.name} {f.message}{tail}"


def summary_line(summary: dict[str, Any]) -> str:
    rows, files = _plural(summary["rows"], "row"), _plural(summary["files"], "file")
    if not summary["findings"]:
        return f"All checks passed: {rows} in {files}."
    sev = summary["by_severity"]
    counts = ", ".join(_plural(sev[s], s) for s in ("error", "warning", "info"))
    return f"Found {_plural(summary['findings'], 'finding')} in {rows} of {files}: {counts}."


def render(findings: list[Finding], summary: dict[str, Any]) -> Iterator[str]:
    for f in findings:
        yield finding_line(f) + "\n"
    yield summary_line(summary) + "\n"
