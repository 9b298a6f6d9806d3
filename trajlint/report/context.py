"""What every output format is given: findings, summary, rule metadata and the files read.

Formatters receive this as plain data and nothing else, so a format can never depend on how a
rule works, and every format of one run describes exactly the same findings and numbers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from trajlint.findings import Finding


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

    def relative(self, path: str) -> str | None:
        """`path` relative to `root` in POSIX form, or None when it lies outside `root`."""
        if path == "-":
            return path
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return None
        return rel.replace(os.sep, "/")


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
