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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trajlint import __version__
from trajlint.findings import SEVERITIES, Finding, severity_rank
from trajlint.read.remote import is_url
from trajlint.spill import Packed

if TYPE_CHECKING:
    from trajlint.check.engine import Result

SCHEMA_VERSION = "1.5"


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
    #: The configuration file in force (found walking up from the working directory, or named
    #: with --config), or None: what decided the rules, severities and ignores of this report.
    configuration: str | None = None
    #: Rows findings point at, read again after the run and built (`check.samples`), for the
    #: formats that let a reader open a row; bounded, and empty unless such a format is written.
    samples: tuple[dict[str, Any], ...] = ()
    #: Rollout health per task and repeat (`health.task_grid`), bounded; None without health.
    task_grid: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # Every format writes text that must encode as UTF-8; a file name that is not UTF-8
        # reaches here holding lone surrogates (Python's `surrogateescape`), so it is shown the
        # way `ls -b` shows it. Fingerprints and baseline keys keep the real name. (`build`
        # hands over findings made displayable already, packed: they are not read twice.)
        if any(displayable(p) is not p for p in self.files):
            object.__setattr__(self, "files", tuple(displayable(p) for p in self.files))
        if isinstance(self.findings, (list, tuple)) and any(_displayable_finding(f) is not f for f in self.findings):
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
    findings: Iterable[Finding] | None = None,
    baseline: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    hidden: int = 0,
    truncated: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Counts for `findings` (default: all of the result's), the run's coverage, and rollout health;
    `hidden` availability findings were left out of `findings`; `truncated` says how many of
    the counted findings the report does not list (`max-findings-per-run`)."""
    counts = _Counts()
    for finding in result.findings if findings is None else findings:
        counts.add(finding)
    return counts.summary(result, baseline, health, hidden, truncated)


class _Counts:
    """The summary's counts of findings, taken one finding at a time."""

    def __init__(self) -> None:
        self.total = 0
        self.by_severity: Counter[str] = Counter()
        self.by_rule: dict[str, dict[str, Any]] = {}

    def add(self, finding: Finding) -> None:
        self.total += 1
        self.by_severity[finding.severity] += 1
        entry = self.by_rule.get(finding.code)
        if entry is None:
            entry = self.by_rule[finding.code] = {"name": finding.name, "severity": finding.severity, "count": 0}
        entry["count"] += 1
        # A rule may weigh its findings differently; the rule's row shows the most severe.
        if severity_rank(finding.severity) < severity_rank(entry["severity"]):
            entry["severity"] = finding.severity

    def summary(
        self,
        result: Result,
        baseline: dict[str, Any] | None,
        health: dict[str, Any] | None,
        hidden: int,
        truncated: dict[str, Any] | None,
    ) -> dict[str, Any]:
        return {
            "files": result.files,
            "lines": result.lines,
            "rows": result.rows,
            "findings": self.total,
            "by_severity": {s: self.by_severity.get(s, 0) for s in SEVERITIES},
            "by_rule": dict(sorted(self.by_rule.items())),
            "rules": {
                code: {"name": c.name, "evaluated": c.evaluated, "unobserved": c.unobserved}
                for code, c in sorted(result.coverage.items())
            },
            "internal_errors": result.internal_errors,
            "baseline": baseline,
            "hidden": {"availability": hidden},
            "truncated": truncated,
            "health": health,
        }


def listed(findings: Iterable[Finding], show_availability: bool) -> tuple[Sequence[Finding], int]:
    """(the findings a report lists, how many availability findings it leaves out)."""
    if show_availability:
        return findings, 0  # type: ignore[return-value]
    kept: Packed[Finding] = Packed()
    total = 0
    for f in findings:
        total += 1
        if not f.availability:
            kept.append(f)
    return kept, total - len(kept)


#: Findings of one run a report lists in detail; past it they are counted in the summary only.
#: No real run comes near it: it bounds the size of a report of a run that is broken throughout
#: (every line of a corrupt file), not memory, which spilling bounds whatever the count.
MAX_FINDINGS_PER_RUN = 1_000_000


def build(
    result: Result,
    specs: Iterable[Any],
    *,
    findings: Iterable[Finding] | None = None,
    files: Sequence[str] = (),
    root: str = ".",
    baseline: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    show_availability: bool = False,
    fail_level: str = "error",
    configuration: str | None = None,
    max_per_run: int = 0,
    run_of: Callable[[str], str] | None = None,
    samples: tuple[dict[str, Any], ...] = (),
    task_grid: dict[str, Any] | None = None,
) -> Report:
    """The plain data every format renders: the findings that are reported and their summary.

    Availability findings (`Finding.availability`) are left out unless `show_availability`, and
    counted in `summary["hidden"]`: every format then lists the same findings, and the exit
    status, which is judged on the reported findings, never rests on one the user did not see.
    With `max_per_run` (0: no limit), each run (`run_of(path)`; default: each file) lists its
    first `max_per_run` findings in report order; the rest are counted in the summary (its
    totals, and `summary["truncated"]`), and the exit status still counts them.
    """
    run_of = run_of or (lambda path: path)
    counts = _Counts()
    kept: Packed[Finding] = Packed()
    per_run: Counter[str] = Counter()
    cut: Counter[str] = Counter()
    hidden = 0
    for f in result.findings if findings is None else findings:
        if f.availability and not show_availability:
            hidden += 1
            continue
        counts.add(f)
        if max_per_run:
            run = run_of(f.path)
            if per_run[run] >= max_per_run:
                cut[run] += 1
                continue
            per_run[run] += 1
        kept.append(_displayable_finding(f))
    truncated = None
    if cut:
        truncated = {
            "max_findings_per_run": max_per_run,
            "findings": sum(cut.values()),
            "runs": {displayable(run): n for run, n in sorted(cut.items())},
        }
    return Report(
        findings=kept,
        summary=counts.summary(result, baseline, health, hidden, truncated),
        rules=rule_infos(specs),
        files=tuple(files),
        root=root,
        fail_level=fail_level,
        configuration=configuration,
        samples=samples,
        task_grid=task_grid,
    )


def document(report: Report) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "trajlint", "version": __version__},
        "configuration": report.configuration,
        "findings": [f.to_dict() for f in report.findings],
        "summary": report.summary,
    }


def failing(report: Report, fail_level: str) -> bool:
    """Whether the run has a reported finding at or above `fail_level`, listed or not."""
    threshold = severity_rank(fail_level)
    return any(n and severity_rank(s) <= threshold for s, n in report.summary["by_severity"].items())
