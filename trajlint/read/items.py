"""What the read stage yields: lines, oversized lines, unreadable paths and broken streams, parse
errors; the tally of the lines a source held; and the default cap on a row's size."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_ROW_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank physical line; ``raw`` lacks the b"\\n" (a trailing b"\\r" may stay)."""

    path: str
    number: int
    raw: bytes


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line longer than ``max_row_bytes``; it was skipped, never held whole. ``size`` excludes the b"\\n"."""

    path: str
    number: int
    size: int


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A path that cannot be read (``line`` 0), or a stream that broke before line ``line`` was complete."""

    path: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ParseError:
    """Why a line is not strict JSON; ``kind`` is utf8, bom, non-finite, truncated or syntax."""

    kind: str
    message: str
    offset: int | None


@dataclass(slots=True)
class LineTally:
    lines: int = 0
