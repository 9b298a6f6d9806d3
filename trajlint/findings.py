"""The finding: what every stage after reading produces and every report format consumes.

Kept free of rule and format knowledge so that read, build, check and report can all depend on
it without depending on each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Ranked from most to least severe; the index is the rank.
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


def severity_rank(severity: str) -> int:
    """Lower is more severe, so `rank(s) <= rank(fail_level)` means "at or above the level"."""
    return _RANK[severity]


@dataclass(frozen=True, slots=True)
class Location:
    """A place in the input: a row of a file and a JSON pointer into it ("" = the whole row).

    Line 0 stands for the file as a whole (a file that could not be opened has no line).
    """

    path: str
    line: int
    pointer: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "pointer": self.pointer}

    def __reduce__(self) -> tuple[Any, ...]:
        # Findings cross processes and spill to disk by pickle; a frozen slots dataclass pickles
        # through Python-level state functions, many times slower than this tuple.
        return (Location, (self.path, self.line, self.pointer))


@dataclass(frozen=True, slots=True)
class Rollout:
    """The identity of the rollout a row records, as NeMo Gym derives it."""

    task_id: str
    rollout_id: str

    def to_dict(self) -> dict[str, str]:
        return {"task_id": self.task_id, "rollout_id": self.rollout_id}

    def __reduce__(self) -> tuple[Any, ...]:
        return (Rollout, (self.task_id, self.rollout_id))


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    name: str
    severity: str
    message: str
    path: str
    line: int
    pointer: str
    related: tuple[Location, ...] = ()
    rollout: Rollout | None = None
    fingerprint: str = field(default="", compare=False)
    #: The finding only restates which evidence the producer cannot observe (an observation gap
    #: its harness always records, say): nothing a user can act on, on nearly every row of such
    #: data. Reports count it and list it only when asked (`--show-availability`).
    availability: bool = False

    def sort_key(self) -> tuple[str, int, str, str, str]:
        return (self.path, self.line, self.pointer, self.code, self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            Finding,
            (
                self.code,
                self.name,
                self.severity,
                self.message,
                self.path,
                self.line,
                self.pointer,
                self.related,
                self.rollout,
                self.fingerprint,
                self.availability,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "pointer": self.pointer,
            "related": [loc.to_dict() for loc in self.related],
            "rollout": self.rollout.to_dict() if self.rollout else None,
            "fingerprint": self.fingerprint,
            "availability": self.availability,
        }


def sha256_hex(*chunks: bytes) -> str:
    """hashlib's SHA-256 of the chunks one after another, in hex: the reference for the native
    core's `sha256_hex`, which a run uses when the core is on (hashlib loads OpenSSL)."""
    # Imported here: the command line reads `SEVERITIES` for its options, and `--version` or
    # `trajlint rule` never make a finding.
    import hashlib

    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def fingerprint(
    code: str,
    pointer: str,
    rollout: Rollout | None,
    path: str,
    content: bytes | None,
    hash_hex: Callable[..., str] = sha256_hex,
) -> str:
    """A key that survives rows being moved, appended or re-sharded.

    It never includes the line number: keyed on the rollout identity when the row has one, else on
    the file and the line's own bytes, so the same defect keeps its fingerprint across runs.
    `hash_hex` is SHA-256 of its chunks in hex (`sha256_hex`, or the native core's).
    """
    head = b"trajlint-fingerprint/v1\0%b\0%b\0" % (code.encode(), pointer.encode("utf-8", "surrogatepass"))
    if rollout is not None:
        key = b"rollout\0%b\0%b" % (
            rollout.task_id.encode("utf-8", "surrogatepass"),
            rollout.rollout_id.encode("utf-8", "surrogatepass"),
        )
        return hash_hex(head, key)[:32]
    # The line is hashed as a chunk of its own: never copied into one more bytes.
    return hash_hex(head, b"content\0", path.encode("utf-8", "surrogateescape"), b"\0", content or b"")[:32]
