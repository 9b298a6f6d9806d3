"""GitLab Code Quality: the JSON array a merge request shows inline and in its widget.

GitLab reads `description`, `check_name`, `fingerprint`, `severity` (info, minor, major,
critical, blocker) and `location` (`path` relative to the repository, `lines.begin`) of each
issue. It shows only the first issue of a fingerprint, and compares the fingerprints of the
merge request's report with the target branch's to say which issues are new or resolved. So the
fingerprint is trajlint's (rollout identity, rule, JSON pointer: stable when rows move) with the
number of its earlier repeats in the report, unique in the file yet the same from run to run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from trajlint.findings import Finding
from trajlint.report.document import Report
from trajlint.spill import Sorted

#: trajlint's severities on GitLab's scale; a finding that fails a run by default is `major`.
SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def _identity(f: Finding) -> str:
    # A finding without trajlint's fingerprint is named by where it is and what it says.
    return f.fingerprint or "\0".join((f.code, f.path, str(f.line), f.pointer, f.message))


def _fingerprint(identity: str, repeat: int) -> str:
    raw = f"{identity}\0{repeat}".encode("utf-8", "surrogatepass")
    return hashlib.md5(raw, usedforsecurity=False).hexdigest()


def issues(report: Report) -> list[dict[str, Any]]:
    return list(_issues(report))


def _issues(report: Report) -> Iterator[dict[str, Any]]:
    """The issues one at a time (`render` never holds them all)."""
    for f, repeat in zip(report.findings, _repeats(report.findings)):
        pointer = f" [{f.pointer}]" if f.pointer else ""
        yield {
            "description": f"{f.code} {f.name}: {f.message}{pointer}",
            "check_name": f.code,
            "fingerprint": _fingerprint(_identity(f), repeat),
            "severity": SEVERITIES[f.severity],
            "location": {
                "path": report.relative(f.path) or f.path,
                # Line 0 is the file as a whole: GitLab needs a line, so its first.
                "lines": {"begin": f.line or 1},
            },
        }


def _repeats(findings: Iterable[Finding]) -> Iterator[int]:
    """For each finding in order, how many before it share its identity. Found by sorting the
    identities (on disk past a budget) rather than counting them in memory: a report of
    millions of findings has millions of identities."""
    by_identity: Sorted[tuple[str, int]] = Sorted(lambda entry: entry[0])
    for index, f in enumerate(findings):
        by_identity.append((_identity(f), index))
    by_index: Sorted[tuple[int, int]] = Sorted(lambda entry: entry[0])
    previous, repeat = None, 0
    for identity, index in by_identity:
        repeat = repeat + 1 if identity == previous else 0
        previous = identity
        by_index.append((index, repeat))
    by_identity.close()
    for _, repeat in by_index:
        yield repeat
    by_index.close()


def render(report: Report) -> Iterator[str]:
    from trajlint.report.json import indented_array

    yield from indented_array(_issues(report), 0)
    yield "\n"
