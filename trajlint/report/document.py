"""The report as one JSON-ready document: `schema_version`, `findings`, `summary`.

Every machine format is derived from the same findings and summary, so they cannot disagree on
the numbers. The shape is described by `schemas/report.schema.json` (generated from
`contract/report.py`) and versioned by `SCHEMA_VERSION`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from trajlint import __version__
from trajlint.check.engine import Result
from trajlint.findings import SEVERITIES, Finding, severity_rank
from trajlint.report.context import Report, rule_infos

SCHEMA_VERSION = "1.2"


def summary(
    result: Result,
    findings: Sequence[Finding] | None = None,
    baseline: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Counts for `findings` (default: all of the result's), the run's coverage, and rollout health."""
    findings = result.findings if findings is None else findings
    by_severity = Counter(f.severity for f in findings)
    by_rule: dict[str, dict[str, Any]] = {}
    for finding in findings:
        entry = by_rule.setdefault(
            finding.code, {"name": finding.name, "severity": finding.severity, "count": 0}
        )
        entry["count"] += 1
        # A rule may weigh its findings differently; the rule's row shows the most severe.
        if severity_rank(finding.severity) < severity_rank(entry["severity"]):
            entry["severity"] = finding.severity
    return {
        "files": result.files,
        "lines": result.lines,
        "rows": result.rows,
        "findings": len(findings),
        "by_severity": {s: by_severity.get(s, 0) for s in SEVERITIES},
        "by_rule": dict(sorted(by_rule.items())),
        "rules": {
            code: {"name": c.name, "evaluated": c.evaluated, "unobserved": c.unobserved}
            for code, c in sorted(result.coverage.items())
        },
        "internal_errors": result.internal_errors,
        "baseline": baseline,
        "health": health,
    }


def build(
    result: Result,
    specs: Iterable[Any],
    *,
    findings: Sequence[Finding] | None = None,
    files: Sequence[str] = (),
    root: str = ".",
    baseline: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
) -> Report:
    """The plain data every format renders: the findings that are reported and their summary."""
    findings = result.findings if findings is None else findings
    return Report(
        findings=findings,
        summary=summary(result, findings, baseline, health),
        rules=rule_infos(specs),
        files=tuple(files),
        root=root,
    )


def document(report: Report) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "trajlint", "version": __version__},
        "findings": [f.to_dict() for f in report.findings],
        "summary": report.summary,
    }
