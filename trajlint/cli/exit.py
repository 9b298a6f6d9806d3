"""The exit status of a run, following ruff: 0 clean, 1 findings at or above the fail level,
2 when trajlint itself failed (an internal error), which `--exit-zero` never hides."""

from __future__ import annotations

from collections.abc import Iterable

from trajlint.findings import Finding, severity_rank

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# The shell's statuses for a process ended by SIGINT and SIGTERM (128 + the signal): a run
# stopped before its end is neither clean nor a run with findings.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


def exit_status(
    findings: Iterable[Finding],
    *,
    fail_level: str = "error",
    internal_errors: int = 0,
    exit_zero: bool = False,
    failing: bool | None = None,
) -> int:
    """`failing`, when given, says whether a finding is at or above the fail level (a report's
    summary counts the findings it does not list), instead of `findings`."""
    if internal_errors:
        return EXIT_ERROR
    if failing is None:
        threshold = severity_rank(fail_level)
        failing = any(severity_rank(f.severity) <= threshold for f in findings)
    return EXIT_FINDINGS if failing and not exit_zero else EXIT_CLEAN

