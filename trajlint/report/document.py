"""The report of a run: what every output format is given, and the JSON document it makes.

Formatters receive a `Report` as plain data and nothing else (findings, summary, rule metadata,
the files read), so a format can never depend on how a rule works, and every format of one run
describes exactly the same findings and numbers. The JSON shape is described by
`schemas/report.schema.json` (generated from `contract/report.py`) and versioned by
`SCHEMA_VERSION`.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trajlint import __version__
from trajlint.findings import SEVERITIES, Finding, severity_rank
from trajlint.read.remote import is_url

if TYPE_CHECKING:
    from trajlint.check.engine import Result

SCHEMA_VERSION = "1.3"


@dataclass(frozen=True, slots=True)
class RuleInfo:
    """What a report may say about a rule: its identity, its severity in this run, its docs."""

    code: str
    name: str
    severity: str
    default_severity: str
    summary: str
    rationale: str


@dataclass(frozen=True, slots=True)
class Report:
    findings: Sequence[Finding]
    summary: dict[str, Any]
    #: Every rule that ran, in code order.
    rules: tuple[RuleInfo, ...]
    #: Every input in reading order, including paths that could not be opened.
    files: tuple[str, ...] = ()
    #: The directory that relative locations in SARIF and GitHub output are relative to.
    root: str = "."
    #: The least severe severity that fails the run (`--fail-level`): formats that show pass or
    #: fail, like JUnit, fail only on findings at or above it, as the exit status does.
    fail_level: str = "error"
    #: Rows findings point at, read again after the run and built (`check.samples`), for the
    #: formats that let a reader open a row; bounded, and empty unless such a format is written.
    samples: tuple[dict[str, Any], ...] = ()
    #: Rollout health per task and repeat (`health.task_grid`), bounded; None without health.
    task_grid: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # Every format writes text that must encode as UTF-8; a file name that is not UTF-8
        # reaches here holding lone surrogates (Python's `surrogateescape`), so it is shown the
        # way `ls -b` shows it. Fingerprints and baseline keys keep the real name.
        if all(displayable(p) is p for p in self.files) and all(_displayable_finding(f) is f for f in self.findings):
            return
        object.__setattr__(self, "files", tuple(displayable(p) for p in self.files))
        object.__setattr__(self, "findings", [_displayable_finding(f) for f in self.findings])

    def relative(self, path: str) -> str | None:
        """`path` relative to `root` in POSIX form, or None when it lies outside `root`."""
        if path == "-":
            return path
        if is_url(path):
            return None
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return None
        return rel.replace(os.sep, "/")


def displayable(path: str) -> str:
    """`path` itself when it encodes as UTF-8, else with each undecodable byte as `\\xNN`."""
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no file name decodes to
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _displayable_finding(f: Finding) -> Finding:
    if f.path.isascii() and all(loc.path.isascii() for loc in f.related):
        return f
    path = displayable(f.path)
    related = tuple(
        loc if displayable(loc.path) is loc.path else dataclasses.replace(loc, path=displayable(loc.path))
        for loc in f.related
    )
    if path is f.path and all(a is b for a, b in zip(related, f.related)):
        return f
    return dataclasses.replace(f, path=path, related=related)


def rule_infos(specs: Iterable[Any]) -> tuple[RuleInfo, ...]:
    """Plain metadata from the rules of a run (anything with `.code`, `.severity`, `.entry`)."""
    return tuple(
        sorted(
            (
                RuleInfo(
                    code=spec.code,
                    name=spec.name,
                    severity=spec.severity,
                    default_severity=spec.entry.severity,
                    summary=spec.entry.summary,
                    rationale=spec.entry.rationale,
                )
                for spec in specs
            ),
            key=lambda info: info.code,
        )
    )


def summary(
    result: Result,
    findings: Sequence[Finding] | None = None,
    baseline: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    hidden: int = 0,
) -> dict[str, Any]:
    """Counts for `findings` (default: all of the result's), the run's coverage, and rollout health;
    `hidden` availability findings were left out of `findings`."""
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
        "hidden": {"availability": hidden},
        "health": health,
    }


def listed(findings: Sequence[Finding], show_availability: bool) -> tuple[Sequence[Finding], int]:
    """(the findings a report lists, how many availability findings it leaves out)."""
    if show_availability:
        return findings, 0
    kept = [f for f in findings if not f.availability]
    return kept, len(findings) - len(kept)


def build(
    result: Result,
    specs: Iterable[Any],
    *,
    findings: Sequence[Finding] | None = None,
    files: Sequence[str] = (),
    root: str = ".",
    baseline: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    show_availability: bool = False,
    fail_level: str = "error",
    samples: tuple[dict[str, Any], ...] = (),
    task_grid: dict[str, Any] | None = None,
) -> Report:
    """The plain data every format renders: the findings that are reported and their summary.

    Availability findings (`Finding.availability`) are left out unless `show_availability`, and
    counted in `summary["hidden"]`: every format then lists the same findings, and the exit
    status, which is judged on the reported findings, never rests on one the user did not see.
    """
    findings, hidden = listed(result.findings if findings is None else findings, show_availability)
    return Report(
        findings=findings,
        summary=summary(result, findings, baseline, health, hidden),
        rules=rule_infos(specs),
        files=tuple(files),
        root=root,
        fail_level=fail_level,
        samples=samples,
        task_grid=task_grid,
    )


def document(report: Report) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "trajlint", "version": __version__},
        "findings": [f.to_dict() for f in report.findings],
        "summary": report.summary,
    }
