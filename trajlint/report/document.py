"""The report as one JSON-ready document: `schema_version`, `findings`, `summary`.

Every machine format is derived from this document, so they cannot disagree on the numbers.
The shape is described by `schemas/report.schema.json` and versioned by `SCHEMA_VERSION`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from trajlint import __version__
from trajlint.check.engine import Result
from trajlint.findings import SEVERITIES

SCHEMA_VERSION = "1.0"


def summary(result: Result) -> dict[str, Any]:
    by_severity = Counter(f.severity for f in result.findings)
    by_rule: dict[str, dict[str, Any]] = {}
    for finding in result.findings:
        entry = by_rule.setdefault(
            finding.code, {"name": finding.name, "severity": finding.severity, "count": 0}
        )
        entry["count"] += 1
    return {
        "files": result.files,
        "lines": result.lines,
        "rows": result.rows,
        "findings": len(result.findings),
        "by_severity": {s: by_severity.get(s, 0) for s in SEVERITIES},
        "by_rule": dict(sorted(by_rule.items())),
        "rules": {
            code: {"name": c.name, "evaluated": c.evaluated, "unobserved": c.unobserved}
            for code, c in sorted(result.coverage.items())
        },
        "internal_errors": result.internal_errors,
    }


def document(result: Result) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "trajlint", "version": __version__},
        "findings": [f.to_dict() for f in result.findings],
        "summary": summary(result),
    }
