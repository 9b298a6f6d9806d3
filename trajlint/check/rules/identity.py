"""TL4xx: identity across rows."""

from __future__ import annotations

from collections.abc import Iterator

from trajlint.check.spec import Subject, Violation, run_rule
from trajlint.findings import Location, Rollout


@run_rule("duplicate-rollout-identity", reads=["row"])
class DuplicateRolloutIdentity:
    """Rows of one run that claim the same (task_id, rollout_id).

    Keeps one small entry per distinct identity (where it was first seen, and any repeats), so
    memory grows with the number of rollouts, never with their size.
    """

    def __init__(self) -> None:
        self._first: dict[Rollout, tuple[str, int]] = {}
        self._repeated: dict[Rollout, list[tuple[str, int]]] = {}

    def observe(self, subject: Subject) -> None:
        rollout = subject.rollout
        if rollout is None:
            return
        place = (subject.path, subject.line)
        first = self._first.setdefault(rollout, place)
        if first is not place:
            self._repeated.setdefault(rollout, [first]).append(place)

    def finish(self) -> Iterator[tuple[Location, Rollout, Violation]]:
        for rollout, places in self._repeated.items():
            for path, line in places:
                others = tuple(Location(p, n) for p, n in places if (p, n) != (path, line))
                yield (
                    Location(path, line),
                    rollout,
                    Violation(
                        "",
                        f"rollout task_id={rollout.task_id!r} rollout_id={rollout.rollout_id!r} "
                        f"is recorded by {len(places)} rows",
                        others,
                    ),
                )
