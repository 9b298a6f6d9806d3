"""The `trajlint build` job: every parseable row with its built trajectory and ownership ledger.

It reuses the read stage and the input rules of the check stage, so a line it cannot build is
reported exactly as `trajlint check` reports it (on standard error), and left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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
from trajlint.row.values import WRITE_MAX_ITEMS, small


def _dumps(document: dict) -> bytes:
    """The row as one JSON line. orjson writes it when it is small enough for orjson to write
    safely (see `values.small`); a row holding millions of items is written piece by piece, and
    one nested deeper than orjson writes (254) by the standard library."""
    if not small(document):
        return b"".join(_pieces(document))
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError:
        return _deep_dumps(document)


def _pieces(value: object) -> Iterator[bytes]:
    """`value` as JSON text in pieces, each container of millions of items cut into slices
    that orjson writes one at a time."""
    if small(value):
        try:
            yield orjson.dumps(value)
        except orjson.JSONEncodeError:
            yield _deep_dumps(value)
        return
    if isinstance(value, dict):
        yield b"{"
        for i, (key, item) in enumerate(value.items()):
            yield (b"," if i else b"") + orjson.dumps(key) + b":"
            yield from _pieces(item)
        yield b"}"
        return
    assert isinstance(value, list)
    yield b"["
    step = WRITE_MAX_ITEMS // 2
    for start in range(0, len(value), step):
        part = value[start : start + step]
        if start:
            yield b","
        if small(part):
            yield orjson.dumps(part)[1:-1]
        else:
            for i, item in enumerate(part):
                if i:
                    yield b","
                yield from _pieces(item)
    yield b"]"


# orjson reads rows nested up to 1,024 levels, and Python's writer recurses once per level: the
# limit is raised while such a row is written, so a row that was read is also written.
_DEEP_RECURSION_LIMIT = 20_000


def _deep_dumps(value: object) -> bytes:
    import json
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _DEEP_RECURSION_LIMIT))
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    finally:
        sys.setrecursionlimit(limit)


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
