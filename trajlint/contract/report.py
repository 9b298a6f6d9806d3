"""The typed shape of the JSON report, from which `schemas/report.schema.json` is generated.

The report itself is written from plain dicts (it is on the hot path of big runs); these models
only document and version the shape, and a test keeps real output and schema in agreement.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "info"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Location(_Strict):
    """Another place a finding involves: a conflicting claim, a duplicate row."""

    path: str = Field(description="The file, as given on the command line or found under it.")
    line: int = Field(ge=0, description="1-based physical line in the decompressed file; 0 = the file as a whole.")
    pointer: str = Field(description="RFC 6901 JSON pointer into the row; empty for the whole row.")


class RolloutIdentity(_Strict):
    task_id: str
    rollout_id: str


class Finding(_Strict):
    """One problem, at one place."""

    code: str = Field(pattern=r"^TL[0-9]{3}$", description="Stable rule code.")
    name: str = Field(description="The rule's kebab-case name; one name per code.")
    severity: Severity
    message: str
    path: str
    line: int = Field(ge=0, description="1-based physical line in the decompressed file; 0 = the file as a whole.")
    pointer: str = Field(description="RFC 6901 JSON pointer into the row; empty for the whole row.")
    related: list[Location] = Field(description="The other claims or evidence involved.")
    rollout: RolloutIdentity | None = Field(description="The row's rollout identity, when derivable.")
    fingerprint: str = Field(
        description="Stable across runs: a hash of rollout identity, code and pointer (never the line number)."
    )
    availability: bool = Field(
        description="The finding only says which evidence the producer cannot observe (an observation gap "
        "its harness always records, say). Such findings are listed only with --show-availability."
    )


class RuleCount(_Strict):
    name: str
    severity: Severity
    count: int = Field(ge=0)


class RuleCoverage(_Strict):
    """How often a rule ran, and how often a row lacked the evidence it reads."""

    name: str
    evaluated: int = Field(ge=0)
    unobserved: int = Field(ge=0)


class BySeverity(_Strict):
    error: int = Field(ge=0)
    warning: int = Field(ge=0)
    info: int = Field(ge=0)


class BaselineUse(_Strict):
    """What a baseline file did to this report."""

    path: str = Field(description="The baseline file.")
    suppressed: int = Field(ge=0, description="Findings the baseline covers, left out of `findings`.")
    stale: int = Field(
        ge=0, description="Recorded findings that no longer occur: the baseline can shrink by this many."
    )


class Hidden(_Strict):
    """Findings the run found but this report does not list (nor count in `findings`, `by_severity`, `by_rule`)."""

    availability: int = Field(
        ge=0,
        description="Availability findings (`availability` true) left out; --show-availability lists them.",
    )


class Truncated(_Strict):
    """Findings counted in `findings`, `by_severity` and `by_rule` but not listed: a run had more
    than `max-findings-per-run` (its first ones in report order are listed)."""

    max_findings_per_run: int = Field(ge=1, description="The limit in force (--max-findings-per-run).")
    findings: int = Field(ge=1, description="Findings counted but not listed.")
    runs: dict[str, int] = Field(description="Findings not listed, by run (a file, unless --runs groups files).")


class HealthVerdicts(_Strict):
    healthy: int = Field(ge=0)
    unhealthy: int = Field(ge=0)
    unobserved: int = Field(ge=0)


class HealthTasks(_Strict):
    total: int = Field(ge=0, description="Tasks: rows grouped by `_ng_task_index`.")
    flagged: int = Field(ge=0, description="Tasks a task-level health check flagged.")


class HealthSummary(_Strict):
    """Rollout health as NeMo Gym 0.7.0's health check counts it (`quality_summary.json`)."""

    rollouts: int = Field(ge=0, description="Physical records judged: rows and lines that never became rows.")
    verdicts: HealthVerdicts = Field(
        description="Each rollout's verdict: unhealthy (a health check found something), else unobserved "
        "(a check lacked its evidence), else healthy."
    )
    issues: dict[str, int] = Field(description="Findings by NeMo Gym check id, every check listed.")
    tasks: HealthTasks
    ignored_checks: list[str] = Field(description="NeMo Gym checks none of whose trajlint rules ran.")
    runs: int = Field(
        ge=0,
        description="Runs judged, each as NeMo Gym's health check judges one run (by default one per "
        "input file); the numbers above are their sums, and tasks are counted per run.",
    )


class Summary(_Strict):
    files: int = Field(ge=0, description="Files opened and read.")
    lines: int = Field(ge=0, description="Non-blank lines read.")
    rows: int = Field(ge=0, description="Lines that parsed to a JSON object.")
    findings: int = Field(ge=0)
    by_severity: BySeverity
    by_rule: dict[str, RuleCount] = Field(description="Finding counts keyed by rule code.")
    rules: dict[str, RuleCoverage] = Field(description="Coverage of every rule that was run, keyed by code.")
    internal_errors: int = Field(ge=0, description="Rule failures (bugs in trajlint); any makes the exit status 2.")
    baseline: BaselineUse | None = Field(description="The baseline applied (`--baseline`), or null.")
    hidden: Hidden
    truncated: Truncated | None = Field(
        description="Findings past `max-findings-per-run`, counted but not listed; null when every one is listed."
    )
    health: HealthSummary | None = Field(description="Rollout health (the TL6xx rules), or null when no health rule ran.")


class Tool(_Strict):
    name: Literal["trajlint"]
    version: str


class ReportDocument(_Strict):
    """The report `trajlint check --output-format json` prints."""

    schema_version: Literal["1.5"]
    tool: Tool
    configuration: str | None = Field(
        description="The configuration file in force: found walking up from the working directory "
        "(trajlint.toml, or pyproject.toml with [tool.trajlint]) or named with --config; null when none was read."
    )
    findings: list[Finding] = Field(description="Sorted by path, line, pointer, code.")
    summary: Summary
