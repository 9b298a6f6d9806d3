"""The `trajlint build` job: every parseable row with its built trajectory and ownership ledger.

It reuses the read stage and the input rules of the check stage, so a line it cannot build is
reported exactly as `trajlint check` reports it (on standard error), and left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO

import orjson

from trajlint.builder import build
from trajlint.check.engine import Engine
from trajlint.check.registry import RuleSpec
from trajlint.check.subject import subjects
from trajlint.findings import Finding
from trajlint.read import Source, Unreadable
from trajlint.row.sections import STATED


def _dumps(document: dict) -> bytes:
    """orjson, or the standard library for the rare row nested deeper than orjson writes (254)."""
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        import json

        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(slots=True)
class BuildResult:
    rows: int = 0
    failures: list[Finding] = field(default_factory=list)
    internal_errors: int = 0


def write_builds(
    sources: Iterable[Source | Unreadable],
    input_rules: Sequence[RuleSpec],
    out: IO[bytes],
    internal_error: RuleSpec | None = None,
    *,
    max_row_bytes: int,
    trajectory_only: bool = False,
) -> BuildResult:
    """Write one JSONL line per buildable row to `out`; return what could not be built."""
    result = BuildResult()
    engine = Engine(list(input_rules), internal_error)
    for subject in subjects(sources, max_row_bytes):
        if "row" in subject.evidence:
            built = build(subject.value)
            if trajectory_only:
                document = built.trajectory
            else:
                document = dict(subject.value)
                document[STATED] = built.trajectory
                document["trajlint"] = built.trajlint_section()
            out.write(_dumps(document) + b"\n")
            result.rows += 1
        else:
            engine.visit(subject)
    finished = engine.finish()
    result.failures = finished.findings
    result.internal_errors = finished.internal_errors
    return result
