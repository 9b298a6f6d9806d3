"""TL4xx: rollout identity — across rows, and between a row's keys, its trajectory and its capture."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

from trajlint.builder.identity import rollout_id
from trajlint.check.rule import Violation, row_rule, run_rule
from trajlint.check.rules._cite import CITED
from trajlint.check.subject import Subject
from trajlint.findings import Location, Rollout
from trajlint.health.tasks import rollout_index, task_index
from trajlint.pointer import child
from trajlint.row import walk
from trajlint.row.sections import CAPTURE, STATED
from trajlint.row.values import hashable
from trajlint.spill import Sorted, key_bytes


@run_rule("duplicate-rollout-identity", reads=["row"])
class DuplicateRolloutIdentity:
    """Rows of one run that claim the same rollout: the same `_ng_task_index` and
    `_ng_rollout_index` in the same stage, the key NeMo Gym's health check groups by.

    A run is one input file unless the user groups files into runs (`--runs`, `--run-group`):
    separate runs number their tasks from 0 each, so the same indices in two runs are no
    duplicate. A row without `_ng_task_index` is numbered by its position, as NeMo Gym numbers
    it, so it is never a copy. Each row's key and place are sorted by key at the end (on disk
    past a budget, `spill.Sorted`), so memory stays flat however many rollouts a run has.
    """

    def __init__(self) -> None:
        # (sort key, key, path, line, identity as (task_id, rollout_id)), sorted by key; ties in
        # row order. The identity of a row with no copy is never shown, so it is kept as a tuple,
        # which costs less to pickle than a `Rollout`.
        self._rows: Sorted[tuple[bytes, Any, str, int, tuple[str, str] | None]] = Sorted(_first)

    def digest(self, subject: Subject) -> tuple[tuple[Any, Any, Any], Rollout | None] | None:
        row = subject.row
        task = task_index(row)
        if task is None:
            return None
        return (_stage(row.get("stage_index")), task, rollout_index(row)), subject.rollout

    @staticmethod
    def fold(rows: list[tuple[int, tuple[tuple[Any, Any, Any], Rollout | None]]]) -> list[tuple[bytes, Any, int, tuple[str, str] | None]]:
        """The digests of a part's rows with each key's sort bytes, made where the rows are checked."""
        return [
            (key_bytes(key), key, line, None if identity is None else (identity.task_id, identity.rollout_id))
            for line, (key, identity) in rows
        ]

    def absorb(self, location: Location, digest: tuple[tuple[Any, Any, Any], Rollout | None]) -> None:
        self.absorb_folded(location.path, 0, self.fold([(location.line, digest)]))

    def absorb_folded(self, path: str, lines_before: int, folded: list[tuple[bytes, Any, int, tuple[str, str] | None]]) -> None:
        self._rows.extend((sort, key, path, line + lines_before, identity) for sort, key, line, identity in folded)

    def finish(self) -> Iterator[tuple[Location, Rollout | None, Violation]]:
        try:
            for _, group in itertools.groupby(self._rows, key=_first):
                places = list(group)
                if len(places) > 1:
                    yield from self._group(places)
        finally:
            self._rows.close()

    @staticmethod
    def _group(group: list[tuple[bytes, Any, str, int, tuple[str, str] | None]]) -> Iterator[tuple[Location, Rollout | None, Violation]]:
        stage, task, rollout = group[0][1]
        places = [(path, line, None if identity is None else Rollout(*identity)) for _, _, path, line, identity in group]
        in_stage = f" in stage {_stage_text(stage)}" if stage is not None else ""
        cited = f" (the first {CITED} others are cited)" if len(places) > CITED + 1 else ""
        per_file = Counter(path for path, _, _ in places)  # counted once: a group may hold thousands
        files = len(per_file)
        # Every row of a group citing every other is quadratic: thousands of rows with one
        # identity (a producer that never advanced its indices) would exhaust memory. Each row
        # cites the first rows of the group; the rows past them share one tuple, which also
        # pickles once per block of findings.
        first = [Location(p, n) for p, n, _ in places[: CITED + 1]]
        shared = tuple(first[:CITED])
        for index, (path, line, identity) in enumerate(places):
            here = per_file[path]
            where = " in this file" if files == 1 else f" in {files:,} files of this run ({here:,} in this file)"
            if index <= CITED:
                others = tuple(loc for loc in first if (loc.path, loc.line) != (path, line))
            else:
                others = shared
            yield (
                Location(path, line),
                identity,
                Violation(
                    "",
                    f"rollout _ng_task_index={_index_text(task)} _ng_rollout_index={_index_text(rollout)} "
                    f"is recorded by {len(places):,} rows{where}{in_stage}{cited}",
                    others[:CITED],
                ),
            )


@run_rule("shared-capture-key", reads=["row"])
class SharedCaptureKey:
    """Rows of one run that are different rollouts but share one capture key.

    NeMo Gym files a rollout's captured model calls under its capture key: `_ng_rollout_id`, else
    `<task index>-<rollout index>`, with `-a<n>` for a retried attempt. Two rollouts with one key
    get each other's calls. Rows of different stages may share it.
    """

    def __init__(self) -> None:
        # (sort key of (stage, capture key), capture key, path, line, rollout key), sorted by
        # the first; the first row of a group is the one the others are compared with
        self._rows: Sorted[tuple[bytes, str, str, int, Any]] = Sorted(_first)

    def digest(self, subject: Subject) -> tuple[Any, str, Any] | None:
        row = subject.row
        # The subject's identity holds the row's capture key already (`rollout_identity`).
        identity = subject.rollout
        key = identity.rollout_id if identity is not None else rollout_id(row)
        task = task_index(row)
        if key is None or task is None:
            return None
        return _stage(row.get("stage_index")), key, (task, rollout_index(row))

    @staticmethod
    def fold(rows: list[tuple[int, tuple[Any, str, Any]]]) -> list[tuple[bytes, str, int, Any]]:
        """The digests of a part's rows with each key's sort bytes, made where the rows are checked."""
        return [(key_bytes((stage, key)), key, line, rollout) for line, (stage, key, rollout) in rows]

    def absorb(self, location: Location, digest: tuple[Any, str, Any]) -> None:
        self.absorb_folded(location.path, 0, self.fold([(location.line, digest)]))

    def absorb_folded(self, path: str, lines_before: int, folded: list[tuple[bytes, str, int, Any]]) -> None:
        self._rows.extend((sort, key, path, line + lines_before, rollout) for sort, key, line, rollout in folded)

    def finish(self) -> Iterator[tuple[Location, Rollout | None, Violation]]:
        try:
            for _, group in itertools.groupby(self._rows, key=_first):
                first: tuple[bytes, str, str, int, Any] | None = None
                places: list[tuple[str, int]] = []
                for entry in group:
                    if first is None:
                        first = entry
                    elif entry[4] == first[4]:  # the first row's own rollout: no clash
                        continue
                    places.append((entry[2], entry[3]))
                if first is not None and len(places) > 1:
                    yield from self._group(first[1], places)
        finally:
            self._rows.close()

    @staticmethod
    def _group(key: str, places: list[tuple[str, int]]) -> Iterator[tuple[Location, Rollout | None, Violation]]:
        for path, line in places:
            others = tuple(Location(p, n) for p, n in places[: CITED + 1] if (p, n) != (path, line))
            yield (
                Location(path, line),
                None,
                Violation(
                    "",
                    f"capture key {key!r} is shared by {len(places):,} rows that are different rollouts "
                    "(other task or rollout indices): NeMo Gym files each rollout's captured model "
                    "calls under this key, so they get each other's calls",
                    others[:CITED],
                ),
            )


_first = itemgetter(0)


def _index_text(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _stage(value: Any) -> Any:
    """A stage as a grouping key (a stage that is not a number or a string stands for itself)."""
    key = hashable(value)
    if isinstance(key, tuple):
        # Too deep to compare: equal only to itself. The key travels from a worker to the
        # reporting process, where an object's id could name another row's stage.
        import uuid

        return ("too deep to compare", uuid.uuid4().hex)
    return key


def _stage_text(stage: Any) -> str:
    if isinstance(stage, bytes):  # an array or object, as canonical JSON
        text = stage.decode()
        return text if len(text) <= 60 else text[:59] + "…"
    return repr(stage) if not isinstance(stage, tuple) else "(an array or object nested too deep to show)"


def _stated_ids(subject: Subject) -> tuple[Any, Any]:
    stated = subject.row[STATED]
    return (stated.get("task_id"), stated.get("rollout_id")) if isinstance(stated, dict) else (None, None)


@row_rule("turn-identity-mismatch", reads=["row", "trajectory"])
def turn_identity_mismatch(subject: Subject) -> Iterator[Violation]:
    """A stated turn that names another rollout than its own trajectory record."""
    record = dict(zip(("task_id", "rollout_id"), _stated_ids(subject)))
    for base, turn in walk.stated(subject.row, "turns"):
        for name, expected in record.items():
            value = turn.get(name)
            if isinstance(expected, str) and isinstance(value, str) and value != expected:
                yield Violation(
                    child(base, name),
                    f"the turn's {name} is {value!r} but its trajectory record's is {expected!r}; "
                    "a turn of another rollout mixes two rollouts' rewards (NeMo Gym rejects the record)",
                    (subject.location(child("", STATED, name)),),
                )


@row_rule("trajectory-identity-mismatch", reads=["row"])
def trajectory_identity_mismatch(subject: Subject) -> Iterator[Violation]:
    """The stated trajectory or the capture names another rollout than the row's keys derive."""
    identity = subject.rollout
    if identity is None:
        return  # the row keys derive no identity: nothing to compare with
    found = []
    if isinstance(subject.row.get(STATED), dict):
        task_id, rollout_id = _stated_ids(subject)
        found += [(STATED, "task_id", task_id, identity.task_id),
                  (STATED, "rollout_id", rollout_id, identity.rollout_id)]
    capture = subject.row.get(CAPTURE)
    if isinstance(capture, dict):
        found.append((CAPTURE, "rollout_id", capture.get("rollout_id"), identity.rollout_id))
    keys = [child("", k) for k in ("task_id", "problem_id", "instance_id", "_ng_task_index",
                                   "_ng_rollout_index", "_ng_attempt_index", "_ng_rollout_id") if k in subject.row]
    for section, name, value, derived in found:
        if not isinstance(value, str) or value == derived:
            continue
        what = "capture" if section == CAPTURE else "stated trajectory"
        yield Violation(
            child("", section, name),
            f"the {what}'s {name} is {value!r}, but the row's keys make it {derived!r}; the "
            f"{what} belongs to another rollout, or the row's keys were changed after collection",
            tuple(subject.location(k) for k in keys),
        )
