"""The other places a finding cites (`related`), at most `CITED` of them.

`trajlint.check.claims` cites every claim and copy involved. When thousands of items share one
id or one call (a producer that never advanced a counter), each of thousands of findings citing
all the others is quadratic: 3,000 such items in one row took 30 s and 700 MB. Every message
still counts them all; a finding cites the first `CITED`, which is every place in any real
conflict.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from trajlint.builder.ledger import CallEntry
from trajlint.check.subject import Subject
from trajlint.findings import Location

CITED = 100


def places(subject: Subject, pointers: Iterable[str], *, leave_out: str = "") -> tuple[Location, ...]:
    """Distinct pointers in order, without `leave_out`, stopping at `CITED`."""
    seen: set[str] = set()
    out: list[Location] = []
    for pointer in pointers:
        if pointer == leave_out or pointer in seen:
            continue
        seen.add(pointer)
        out.append(subject.location(pointer))
        if len(out) == CITED:
            break
    return tuple(out)


def cite(subject: Subject, entry: CallEntry, *, leave_out: str) -> tuple[Location, ...]:
    """The call's places and every claim on it, except the one the finding points at, stopping at `CITED`."""
    return places(subject, chain(entry.locations, (claim.pointer for claim in entry.claims)), leave_out=leave_out)


def some(names: list[str], shown: int = 10) -> str:
    """The first `shown` of `names`, comma-separated, and how many in all when there are more."""
    if len(names) <= shown:
        return ", ".join(names)
    return ", ".join(names[:shown]) + f", … ({len(names):,} in all)"
