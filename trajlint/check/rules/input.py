"""TL0xx: the input itself — files that cannot be read, lines that are not JSON objects."""

from __future__ import annotations

from collections.abc import Iterator

from trajlint.check.rule import Violation, row_rule
from trajlint.check.subject import Subject
from trajlint.read import OversizedLine, ParseError, Unreadable
from trajlint.row.values import json_type


@row_rule("unreadable-file", reads=["file"])
def unreadable_file(subject: Subject) -> Iterator[Violation]:
    if isinstance(subject.problem, Unreadable):
        yield Violation("", f"cannot read {subject.path}: {subject.problem.reason}")


@row_rule("invalid-json", reads=["line"])
def invalid_json(subject: Subject) -> Iterator[Violation]:
    if isinstance(subject.problem, ParseError):
        yield Violation("", subject.problem.message)


@row_rule("row-not-object", reads=["line"])
def row_not_object(subject: Subject) -> Iterator[Violation]:
    if subject.problem is None and "row" not in subject.evidence:
        yield Violation("", f"a rollout row must be a JSON object, this line holds {json_type(subject.value)}")


@row_rule("row-too-large", reads=["line"])
def row_too_large(subject: Subject) -> Iterator[Violation]:
    if isinstance(subject.problem, OversizedLine):
        yield Violation(
            "",
            f"line is {subject.problem.size:,} bytes, more than max-row-bytes; it was skipped "
            "unread (raise max-row-bytes to check it)",
        )
