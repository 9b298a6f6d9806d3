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
from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson

from trajlint.findings import Finding
from trajlint.report.document import Report

#: trajlint's severities on GitLab's scale; a finding that fails a run by default is `major`.
SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def _identity(f: Finding) -> str:
    # A finding without trajlint's fingerprint is named by where it is and what it says.
    return f.fingerprint or "\0".join((f.code, f.path, str(f.line), f.pointer, f.message))


def _fingerprint(identity: str, repeat: int) -> str:
    raw = f"{identity}\0{repeat}".encode("utf-8", "surrogatepass")
    return hashlib.md5(raw, usedforsecurity=False).hexdigest()


def issues(report: Report) -> list[dict[str, Any]]:
    seen: Counter[str] = Counter()
    out = []
    for f in report.findings:
        identity = _identity(f)
        repeat = seen[identity]
        seen[identity] += 1
        pointer = f" [{f.pointer}]" if f.pointer else ""
        out.append(
            {
                "description": f"{f.code} {f.name}: {f.message}{pointer}",
                "check_name": f.code,
                "fingerprint": _fingerprint(identity, repeat),
                "severity": SEVERITIES[f.severity],
                "location": {
                    "path": report.relative(f.path) or f.path,
                    # Line 0 is the file as a whole: GitLab needs a line, so its first.
                    "lines": {"begin": f.line or 1},
                },
            }
        )
    return out


def render(report: Report) -> Iterator[str]:
    yield orjson.dumps(issues(report), option=orjson.OPT_INDENT_2).decode() + "\n"
