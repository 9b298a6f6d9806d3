"""TL0xx: the input itself — files that cannot be read, lines that are not JSON objects."""

from __future__ import annotations

from collections.abc import Iterator

from trajlint.check.kinds import ROLLOUTS
from trajlint.check.rule import EVERY_FILE, Violation, row_rule
from trajlint.check.subject import Subject
from trajlint.read import OversizedLine, ParseError, Unreadable
from trajlint.row.values import json_type


@row_rule("unreadable-file", reads=["file"], kinds=EVERY_FILE)
def unreadable_file(subject: Subject) -> Iterator[Violation]:
    if isinstance(subject.problem, Unreadable):
        yield Violation("", f"cannot read {subject.path}: {subject.problem.reason}")


@row_rule("invalid-json", reads=["line"], kinds=EVERY_FILE)
def invalid_json(subject: Subject) -> Iterator[Violation]:
    if isinstance(subject.problem, ParseError):
        yield Violation("", subject.problem.message)


@row_rule("row-not-object", reads=["line"], kinds=EVERY_FILE)
def row_not_object(subject: Subject) -> Iterator[Violation]:
    if subject.problem is None and "row" not in subject.evidence:
        row = "a rollout row" if subject.kind.kind == ROLLOUTS else "a row"
        yield Violation("", f"{row} must be a JSON object, this line holds {json_type(subject.value)}")


@row_rule("row-too-large", reads=["line"], kinds=EVERY_FILE)
def row_too_large(subject: Subject) -> Iterator[Violation]:
    if isinstance(subject.problem, OversizedLine):
        yield Violation(
            "",
            f"line is {subject.problem.size:,} bytes, more than max-row-bytes; it was skipped "
            "unread (raise max-row-bytes to check it)",
        )
