"""Rollout health the way NeMo Gym 0.7.0's `gym eval health-check` reports it, from trajlint's findings.

Each row gets a verdict — *unhealthy* when a health check found something, else *unobserved*
when a check could not run for lack of evidence, else *healthy* — and each task is reduced
over its repeats (copies of one rollout index with mixed verdicts count as unobserved). The
numbers go into the report's summary, the task checks' flags become the findings of the task
rules, and `report.health` writes `quality_summary.json` and `rollout_verdicts.jsonl` in NeMo
Gym's format. A run has one `HealthRun`: one verdict per row, one `TaskRepeats`.

Memory stays small per row: the run keeps, per task and rollout index, one small integer per
copy; the verdict rows of the report are spooled to a temporary file and only their sort keys
and offsets stay in memory.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, ClassVar, NamedTuple

import orjson

from trajlint.builder.identity import python_str
from trajlint.findings import Finding, Location, Rollout
from trajlint.health.checks import (
    CHECK_EXECUTION_ERROR,
    CHECKS,
    DUPLICATE_IDENTITY,
    RECORD_UNREADABLE,
    ROLLOUT_CHECKS,
    ROW_CHECKS,
    TASK_CHECKS,
    HealthCheck,
)
from trajlint.health.tasks import (
    UNHEALTHY,
    VERDICTS,
    TaskRepeats,
    copy_of,
    flag_message,
    rollout_index,
    stage_index,
    task_index,
    verdict,
)
from trajlint.health.view import Digest, HealthFinding, Subject, view_of
from trajlint.row.sections import STATED
from trajlint.row.values import group_key, small
from trajlint.spill import Sorted


def _sort_part(value: Any) -> tuple[int, Any]:
    """NeMo Gym orders integer keys before every other key, those by their text."""
    return (0, value) if isinstance(value, int) else (1, python_str(value))


# -- the run, as the health report sees it ------------------------------------------------------


@dataclass(slots=True)
class _Stats:
    records: int = 0
    captures: int = 0
    errors: int = 0
    errors_by_status: Counter = field(default_factory=Counter)
    rollouts_with_errors: int = 0
    ended_on_error: int = 0
    replayed: int = 0
    replaying_rollouts: int = 0
    prompt: int = 0
    completion: int = 0
    capture_prompt: int = 0
    capture_completion: int = 0

    def add(self, digest: Digest) -> None:
        self.captures += digest.calls > 0
        if digest.failed_by_status:
            self.errors += digest.failed_calls
            self.errors_by_status.update(dict(digest.failed_by_status))
            self.rollouts_with_errors += 1
        self.ended_on_error += digest.ended_on_error
        self.replayed += digest.duplicated_calls
        self.replaying_rollouts += digest.duplicated_calls > 0
        self.prompt += digest.transcript_prompt
        self.completion += digest.transcript_completion
        self.capture_prompt += digest.capture_prompt
        self.capture_completion += digest.capture_completion

    def add_all(self, digests: list[Digest]) -> None:
        """`add` each of `digests`, in order: their numbers summed a column at a time."""
        if not digests:
            return
        calls, _, _, failed, ended, duplicated, prompt, completion, capture_prompt, capture_completion, _ = zip(*digests)
        self.captures += sum(n > 0 for n in calls)
        for by_status in failed:
            if by_status:
                self.errors += sum(n for _, n in by_status)
                self.errors_by_status.update(dict(by_status))
                self.rollouts_with_errors += 1
        self.ended_on_error += sum(ended)
        self.replayed += sum(duplicated)
        self.replaying_rollouts += sum(n > 0 for n in duplicated)
        self.prompt += sum(prompt)
        self.completion += sum(completion)
        self.capture_prompt += sum(capture_prompt)
        self.capture_completion += sum(capture_completion)

    def merge(self, other: _Stats) -> None:
        self.records += other.records
        self.captures += other.captures
        self.errors += other.errors
        self.errors_by_status.update(other.errors_by_status)
        self.rollouts_with_errors += other.rollouts_with_errors
        self.ended_on_error += other.ended_on_error
        self.replayed += other.replayed
        self.replaying_rollouts += other.replaying_rollouts
        self.prompt += other.prompt
        self.completion += other.completion
        self.capture_prompt += other.capture_prompt
        self.capture_completion += other.capture_completion


class Judged(NamedTuple):
    """What the health report keeps of one row: its keys, verdict, checks, and the numbers.

    A tuple, not a dataclass: one is made for every row, and a frozen dataclass costs several
    times as much to make."""

    task: Any  # None: the row has no task index, and its position names it
    index: Any
    stage: Any
    rollout: Any
    verdict: str
    found_checks: tuple[str, ...]
    missing: tuple[str, ...]
    digest: Digest | None
    record: bytes | None  # the row's verdict line for the report, when one is written


#: A row without `_ng_task_index` stands in a fold's tasks as (`_POSITION`, its number there),
#: which no task index is (`task_index` gives a number or a string).
_POSITION = "row named by its position"


@dataclass(slots=True)
class JudgedRows:
    """What the health report keeps of consecutive rows of one unit, folded where they were
    judged (`fold_judged`), so that the run takes them in one step (`HealthRun.absorb_folded`):
    the sums, each task's copies and the verdict lines. Lines count from the unit's first."""

    rows: int
    stats: _Stats
    issues: Counter
    unobserved: Counter
    #: task -> [first line, first rollout, {rollout index: [copy, ...]}, policy calls observed,
    #: successful], in the order first seen; a row without a task index is (`_POSITION`, n).
    tasks: dict[Any, list[Any]]
    #: (n, line) of each row without a task index, the n-th row here.
    positions: list[tuple[int, int]]
    #: The verdict lines, one after the other, when the report is written.
    records: bytes
    #: Per verdict line: (sort key, or None for a row named by its position; task; rollout
    #: index; stage; offset in `records`; length; position among its rollout's copies here).
    index: list[tuple[Any, ...]]


def fold_judged(rows: list[tuple[int, Judged]]) -> JudgedRows:
    """What the health report keeps of the judged rows (line, `Judged`) of a part of a unit."""
    stats = _Stats()
    issues: Counter[str] = Counter()
    unobserved: Counter[str] = Counter()
    tasks: dict[Any, list[Any]] = {}
    positions: list[tuple[int, int]] = []
    records: list[bytes] = []
    index: list[tuple[Any, ...]] = []
    offset = 0
    digests: list[Digest] = []
    # Rows share a few combinations of found and unobserved checks: each is counted once.
    found_rows: dict[tuple[str, ...], int] = {}
    missing_rows: dict[tuple[str, ...], int] = {}
    for n, (line, judged) in enumerate(rows):
        task = judged.task
        if task is None:
            task = (_POSITION, n)
            positions.append((n, line))
        digest = judged.digest
        if digest is not None:
            digests.append(digest)
        if judged.found_checks:
            found_rows[judged.found_checks] = found_rows.get(judged.found_checks, 0) + 1
        if judged.missing:
            missing_rows[judged.missing] = missing_rows.get(judged.missing, 0) + 1
        entry = tasks.get(task)
        if entry is None:
            entry = tasks[task] = [line, judged.rollout, {}, True, False]
        copies = entry[2].get(judged.index)
        if copies is None:
            copies = entry[2][judged.index] = []
        position = len(copies)
        copies.append(copy_of(judged.verdict, judged.stage))
        if digest is None or not digest.policy_calls_observed:
            entry[3] = False
        if digest is not None and digest.successful_turn_calls > 0:
            entry[4] = True
        record = judged.record
        if record is not None:
            sort = None if judged.task is None else _sort_key(task, judged.index, judged.stage)
            index.append((sort, task, judged.index, judged.stage, offset, len(record), position))
            records.append(record)
            offset += len(record)
    stats.records = len(rows)
    stats.add_all(digests)
    # Counted in the order the rows came: each check first counted where it first appears.
    for checks, count in found_rows.items():
        for check in checks:
            issues[check] += count
    for checks, count in missing_rows.items():
        for check in checks:
            unobserved[check] += count
    return JudgedRows(len(rows), stats, issues, unobserved, tasks, positions, b"".join(records), index)


@dataclass(frozen=True, slots=True)
class RowJudge:
    """Judges each row where it is checked (a `RowDigester`): the rules of the run, no state."""

    codes: dict[str, str]
    checks: tuple[HealthCheck, ...]
    selected: frozenset[str]
    stated_checked: bool
    keep_records: bool
    #: A row the native core proved healthy comes with its judgement (`subject.judgement`: the
    #: checks it leaves unobserved, and its digest) instead of its row.
    takes_judgement: ClassVar[bool] = True
    fold = staticmethod(fold_judged)
    #: The code of each check's rule: a row's unobserved rules come as codes.
    rule_codes: dict[str, str] = field(init=False, repr=False, compare=False)
    #: A proved row's (NeMo Gym findings, unobserved check ids, verdict, found checks, unobserved
    #: checks) per (rules it left unobserved, digest says the stated trajectory is unreadable):
    #: nothing else of the row decides them, and a few combinations serve every proved row of a run.
    _proved: dict[tuple[tuple[str, ...], bool], tuple[list[dict[str, Any]], list[str], str, tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        names = {name: code for code, name in self.codes.items()}
        object.__setattr__(self, "rule_codes", {check.rules[0]: names[check.rules[0]] for check in self.checks})

    def digest(self, subject: Subject, findings: list[Finding], unobserved: list[str], raised: dict[str, str]) -> Judged:
        row = subject.row
        judgement = getattr(subject, "judgement", None)
        if judgement is not None and not raised:
            digest = judgement.digest
            key = (tuple(unobserved), digest is not None and digest.stated_invalid)
            known = self._proved.get(key)
            if known is None:
                found, missing, _ = self._evaluate(subject, unobserved, raised)
                result = verdict(bool(found), bool(missing))
                known = self._proved[key] = (found, missing, result, tuple(item["check"] for item in found), tuple(missing))
            found, missing, result, found_checks, missing_checks = known  # shared: read, never changed
        else:
            found, missing, digest = self._evaluate(subject, unobserved, raised)
            result = verdict(bool(found), bool(missing))
            found_checks, missing_checks = tuple(item["check"] for item in found), tuple(missing)
        return Judged(
            task_index(row),
            rollout_index(row),
            stage_index(row),
            subject.rollout,
            result,
            found_checks,
            missing_checks,
            digest,
            self._record(row, result, found, missing) if self.keep_records else None,
        )

    def _evaluate(
        self, subject: Subject, unobserved: list[str], raised: dict[str, str]
    ) -> tuple[list[dict[str, Any]], list[str], Digest | None]:
        """(NeMo Gym findings, unobserved check ids, digest) of one row, from what its rules found."""
        unobserved_codes = set(unobserved)
        rule_codes = self.rule_codes
        found: list[dict[str, Any]] = []
        missing: list[str] = []
        judgement = getattr(subject, "judgement", None)
        view = None
        try:
            if judgement is not None:  # proved: no check finds anything; the unobserved are in `unobserved`
                digest = judgement.digest
            else:
                view = view_of(subject)
                digest = view.digest()
        except Exception as exc:  # noqa: BLE001 - the rules report it as internal-error
            raised = {**raised, **{check.rules[0]: type(exc).__name__ for check in self.checks}}
            view = digest = judgement = None
        if digest is not None and digest.stated_invalid and self.stated_checked:
            found.append(
                {"check": RECORD_UNREADABLE, "detail": {"reason": "canonical trajectory is unreadable", "error": "ValidationError"}}
            )
        for check in self.checks:
            rule = check.rules[0]
            if rule in raised:
                missing.append(check.id)
                if CHECK_EXECUTION_ERROR in self.selected:
                    found.append(
                        {
                            "check": CHECK_EXECUTION_ERROR,
                            "detail": {"reason": "check raised an unexpected exception", "failed_check": check.id, "error": raised[rule]},
                        }
                    )
            elif rule_codes[rule] in unobserved_codes or (view is None and judgement is None):
                missing.append(check.id)
            elif view is not None:
                found.extend(_ng_finding(check.id, item) for item in view.findings(check) or ())
        return found, missing, digest  # in NeMo Gym's order: its registry's, a failed check's error in its place

    def _record(self, row: dict[str, Any], result: str, found: list, missing: list) -> bytes:
        stage = row.get("stage_index")
        stated = row.get(STATED)
        stated_id = stated.get("rollout_id") if isinstance(stated, dict) else None
        explicit = row.get("_ng_rollout_id") or stated_id
        record = {
            "_ng_task_index": row.get("_ng_task_index"),
            "_ng_rollout_index": row.get("_ng_rollout_index", 0),
            "rollout_id": python_str(group_key(explicit)) if explicit else None,
            "verdict": result,
            "findings": found,
            "unobserved": missing,
        }
        if stage is not None:
            record["stage_index"] = stage
        keys = [key for key in ("_ng_task_index", "_ng_rollout_index", "stage_index") if key in record]
        if all(small(record[key]) for key in keys):  # an index of millions of items is not written whole
            try:
                return orjson.dumps(record)
            except (TypeError, ValueError):  # an index nested deeper than JSON writers go
                pass
        for key in keys:
            record[key] = group_key(record[key])
        return orjson.dumps(record)


class _Ordinal:
    """A row without `_ng_task_index`: NeMo Gym uses its position among all non-blank lines.

    Known only at the end (unreadable lines before it count too); until then its identity is
    the task key.
    """

    __slots__ = ("position", "value")

    def __init__(self, rows_before: int, position: tuple[int, int]):
        self.value = rows_before  # rows before it; lines that never became rows are added at the end
        self.position = position  # (input index, line)


def _spool_file() -> Any:
    import tempfile  # only a run that writes the health report spools

    return tempfile.TemporaryFile()


class HealthRun:
    """Sees each row's findings (a `RowObserver`) and reduces them to NeMo Gym's health report.

    `rules` are the rules of the run: a NeMo Gym check none of whose rules runs is *ignored*, as
    with `gym eval health-check --ignore-checks`. `inputs` are the input paths in reading order
    (unreadable lines are named after their input's position). With `spool`, the verdict rows
    are kept (on disk) for `write_report`.
    """

    def __init__(self, rules: Iterable[Any], inputs: Sequence[str] = (), *, spool: Any = None):
        names = {spec.name for spec in rules}
        self.codes = {spec.code: spec.name for spec in rules}
        self.checks = tuple(check for check in ROW_CHECKS if check.rules[0] in names)
        self.selected = frozenset(check.id for check in CHECKS if names & set(check.rules))
        self.task_rules = {check.id: check.rules[0] for check in CHECKS if check.id in TASK_CHECKS}
        self.stated_checked = "trajectory-schema" in names
        self.inputs = {path: i for i, path in enumerate(inputs)}
        self.repeats = TaskRepeats(duplicates=DUPLICATE_IDENTITY in self.selected, order=_task_order)
        self.stats = _Stats()
        self.issues: Counter[str] = Counter()
        self.unobserved: Counter[str] = Counter()  # per rollout check, records it could not judge
        self.task_coverage = {check: Counter() for check in TASK_CHECKS}
        self.rows = 0
        self._ordinals: list[_Ordinal] = []
        self._spool = spool  # shared by the runs of one invocation
        # The verdict rows' places in the spool, by their order in the report (`verdict_rows`):
        # sorted on disk past a budget; rows named by their position wait in memory, as their
        # task is known only at the end.
        self._index: Sorted[tuple[Any, ...]] = Sorted(_index_order)
        self._ordinal_index: list[tuple[Any, ...]] = []
        self._entries = 0
        self.summary: dict[str, Any] | None = None

    # -- per row --------------------------------------------------------------------------------

    def digester(self) -> RowJudge:
        return RowJudge(self.codes, self.checks, self.selected, self.stated_checked, self._spool is not None)

    def absorb(self, location: Location, judged: Judged) -> None:
        self.absorb_folded(location.path, 0, fold_judged([(location.line, judged)]))

    def absorb_folded(self, path: str, lines_before: int, folded: JudgedRows) -> None:
        """Take the judged rows of a part of a unit of `path`, whose lines follow `lines_before`
        others of the file."""
        named: dict[Any, _Ordinal] = {}
        if folded.positions:
            k = self.inputs.get(path, len(self.inputs))
            for n, line in folded.positions:
                ordinal = _Ordinal(self.rows + n, (k, line + lines_before))
                self._ordinals.append(ordinal)
                named[(_POSITION, n)] = ordinal
        self.rows += folded.rows
        self.stats.merge(folded.stats)
        self.issues.update(folded.issues)
        self.unobserved.update(folded.unobserved)  # evaluated and ignored are counted at the end
        shifts: dict[tuple[Any, Any], int] = {}
        for task, (line, rollout, buckets, observed, successful) in folded.tasks.items():
            moved = self.repeats.merge(
                named[task] if isinstance(task, tuple) else task,
                buckets,
                first=Location(path, line + lines_before),
                rollout=rollout,
                policy_calls_observed=observed,
                successful=successful,
            )
            for index, shift in moved.items():
                shifts[task, index] = shift
        if self._spool is None or not folded.index:
            return
        base = self._spool.tell()
        self._spool.write(folded.records)
        entries = self._entries
        ordered = []
        for sort, task, index, stage, offset, length, position in folded.index:
            if shifts:
                position += shifts.get((task, index), 0)
            if sort is None:
                self._ordinal_index.append((None, entries, named[task], index, stage, base + offset, length, position))
            else:
                ordered.append((sort, entries, task, index, stage, base + offset, length, position))
            entries += 1
        self._entries = entries
        self._index.extend(ordered)

    def _add_index(self, task: Any, index: Any, stage: Any, offset: int, length: int, position: int) -> None:
        entry = (None, self._entries, task, index, stage, offset, length, position)
        self._entries += 1
        if isinstance(task, _Ordinal):
            self._ordinal_index.append(entry)
        else:
            self._index.append((_sort_key(task, index, stage), *entry[1:]))

    # -- at the end ----------------------------------------------------------------------------

    def run_findings(self) -> Iterator[tuple[str, Location, Rollout | None, str, str]]:
        """The task checks' flags, as findings of their rules at each task's first row."""
        for _, entry in self.repeats.tasks.items():
            outcome = self.repeats.outcome_of(entry)
            for check in outcome.flags:
                yield self.task_rules[check], entry.first, entry.rollout, "", flag_message(check, outcome)

    def finish(self, lines: Iterable[Finding | tuple[str, int, str]]) -> dict[str, Any]:
        """Fold in the lines that never became rows (findings, or their (path, line, rule
        name)) and reduce the tasks; returns the summary."""
        places = ((f.path, f.line, f.name) if isinstance(f, Finding) else f for f in lines)
        unreadable: Sorted[tuple[int, int, str, str]] = Sorted(
            lambda item: (item[0], item[1]),
            (
                (self.inputs[path], line, path, name)
                for path, line, name in places
                if name in _UNREADABLE and path in self.inputs
            ),
        )
        self._resolve_ordinals((k, line) for k, line, _, _ in unreadable)
        for k, line, path, name in unreadable:
            self._unreadable(k, line, path, name)
        unreadable.close()
        tasks: Any = {} if not self.repeats.tasks.spilled else TaskSummaries()
        task_issues: Counter[str] = Counter()
        verdicts: Counter[str] = Counter()
        # NeMo Gym lists tasks by their text, numbers first (so "10" comes before "2").
        for task, entry in self.repeats.tasks.ordered():
            outcome = self.repeats.outcome_of(entry)
            if any(type(bucket) is list for bucket in entry.buckets.values()):
                for rollout in entry.buckets:
                    for final, copies in self.repeats.copies_of(entry, rollout):
                        verdicts[final] += 1
                        self.issues[DUPLICATE_IDENTITY] += copies > 0
            else:  # one copy of each rollout: the outcome has counted their verdicts
                for final, count in outcome.counts.items():
                    verdicts[final] += count
            flags = [check for check in outcome.flags if check in self.selected]
            for check in flags:
                task_issues[check] += 1
            for check, evaluated in outcome.coverage.items():
                kind = "ignored" if check not in self.selected else "evaluated" if evaluated else "unobserved"
                self.task_coverage[check][kind] += 1
            tasks[python_str(_task_value(task))] = {"repeats": outcome.repeats, **outcome.counts, "flags": flags}
        self.issues.update(task_issues)
        stats = self.stats
        self.summary = {
            "run": {
                "ignored_checks": sorted(check.id for check in CHECKS if check.id not in self.selected),
                "artifacts": {
                    "records": stats.records,
                    "captures": stats.captures,
                    "coverage": self._coverage(),
                },
                "verdicts": {v: verdicts.get(v, 0) for v in VERDICTS},
                "issues": {check.id: self.issues.get(check.id, 0) for check in CHECKS},
                "stats": {
                    "model_call_errors": {
                        "total": stats.errors,
                        "by_status": dict(sorted(stats.errors_by_status.items())),
                        "rollouts_affected": stats.rollouts_with_errors,
                        "ended_on_error": stats.ended_on_error,
                    },
                    "duplicated_calls": {"replayed": stats.replayed, "rollouts": stats.replaying_rollouts},
                    "tokens": {
                        "prompt": stats.prompt,
                        "completion": stats.completion,
                        "capture_prompt": stats.capture_prompt,
                        "capture_completion": stats.capture_completion,
                    },
                },
            },
            "tasks": tasks,
        }
        return self.summary

    def _coverage(self) -> dict[str, dict[str, int]]:
        """Per check: records (or tasks) it judged, could not judge, or did not run on."""
        records = self.stats.records
        coverage = {}
        for check in ROLLOUT_CHECKS:
            if check not in self.selected:
                coverage[check] = {"evaluated": 0, "unobserved": 0, "ignored": records}
            else:
                unobserved = self.unobserved[check]
                coverage[check] = {"evaluated": records - unobserved, "unobserved": unobserved, "ignored": 0}
        for check, counts in self.task_coverage.items():
            coverage[check] = {k: counts.get(k, 0) for k in ("evaluated", "unobserved", "ignored")}
        return coverage

    def _resolve_ordinals(self, unreadable: Iterable[tuple[int, int]]) -> None:
        """Add to each row named by its position the unreadable lines before it (`unreadable`
        in input order)."""
        lines = iter(unreadable)
        before, pending = 0, next(lines, None)
        for ordinal in sorted(self._ordinals, key=lambda o: o.position):
            while pending is not None and pending < ordinal.position:
                before += 1
                pending = next(lines, None)
            ordinal.value += before

    def _unreadable(self, k: int, line: int, path: str, name: str) -> None:
        task = f"__unreadable_record__:input-{k}:line-{line}"
        self.stats.records += 1
        error = "JSONDecodeError" if name == "invalid-json" else "RowTooLarge" if name == "row-too-large" else "ValueError"
        found = [
            {
                "check": RECORD_UNREADABLE,
                "locator": {"source_file": path, "line": line},
                "detail": {"reason": "rollout record is unreadable", "error": error},
            }
        ]
        missing = [check for check in ROLLOUT_CHECKS if check != RECORD_UNREADABLE and check in self.selected]
        self.issues[RECORD_UNREADABLE] += 1
        self.unobserved.update(missing)
        position = self.repeats.add(
            task, 0, UNHEALTHY, first=Location(path, line), rollout=None,
            policy_calls_observed=False, successful=False,
        )
        if self._spool is not None:
            record = {"_ng_task_index": task, "_ng_rollout_index": 0, "rollout_id": f"{task}-0",
                      "verdict": UNHEALTHY, "findings": found, "unobserved": missing}
            data = orjson.dumps(record)
            offset = self._spool.tell()
            self._spool.write(data)
            self._add_index(task, 0, None, offset, len(data), position)

    def verdict_rows(self) -> Iterator[bytes]:
        """The verdict rows in NeMo Gym's order (task, rollout, stage), one JSON line each."""
        assert self._spool is not None, "the observer was made without spool"
        ordinals = sorted(
            ((_sort_key(task, index, stage), n, task, index, stage, *rest) for _, n, task, index, stage, *rest in self._ordinal_index),
            key=_index_order,
        )
        for _, _, task, index, _, offset, length, position in heapq.merge(self._index, ordinals, key=_index_order):
            self._spool.seek(offset)
            record = orjson.loads(self._spool.read(length))
            final, copies = self.repeats.copies(task, index)[position]
            if isinstance(task, _Ordinal):
                record["_ng_task_index"] = task.value
            if record["rollout_id"] is None:
                record["rollout_id"] = f"{python_str(record['_ng_task_index'])}-{python_str(record['_ng_rollout_index'])}"
            if copies:
                record["verdict"] = final
                record["findings"].append({"check": DUPLICATE_IDENTITY, "detail": {"duplicate_count": copies}})
            yield orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


_UNREADABLE = frozenset({"invalid-json", "row-not-object", "row-too-large"})


def _sort_key(task: Any, index: Any, stage: Any) -> tuple[tuple[int, Any], ...]:
    """A verdict row's place in NeMo Gym's order: task, rollout index, stage."""
    return tuple(_sort_part(v) for v in (_task_value(task), index, stage))


_index_order = itemgetter(0, 1)  # (sort key, entry number): ties in the order the rows came


def _task_order(task: Any) -> bytes:
    """NeMo Gym's order of tasks as bytes: numbers first, then by their text (UTF-8 orders as
    the text does)."""
    value = _task_value(task)
    return (b"1" if isinstance(value, str) else b"0") + python_str(value).encode("utf-8", "surrogatepass")


class TaskSummaries(Mapping):
    """The summary's tasks of a run too large to keep them in memory: name -> counts, in the
    order first written, a name written again keeping its place and taking the new value (as a
    dict does). Kept in a private temporary SQLite database."""

    def __init__(self) -> None:
        import sqlite3

        self._db = sqlite3.connect("")
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute("CREATE TABLE tasks (name TEXT PRIMARY KEY, seq INTEGER, value BLOB)")
        self._seq = 0

    def __setitem__(self, name: str, value: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO tasks VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            (name, self._seq, orjson.dumps(value)),
        )
        self._seq += 1

    def __getitem__(self, name: str) -> dict[str, Any]:
        row = self._db.execute("SELECT value FROM tasks WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        return orjson.loads(row[0])

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM tasks").fetchone()[0]

    def __iter__(self) -> Iterator[str]:
        for name, _ in self.items():
            yield name

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:  # type: ignore[override]
        for name, value in self._db.execute("SELECT name, value FROM tasks ORDER BY seq"):
            yield name, orjson.loads(value)

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        for _, value in self.items():
            yield value


def _task_value(task: Any) -> Any:
    return task.value if isinstance(task, _Ordinal) else task


def _ng_finding(check: str, item: HealthFinding) -> dict[str, Any]:
    out: dict[str, Any] = {"check": check}
    if item.locator is not None:
        out["locator"] = item.locator
    out["detail"] = item.detail
    return out


class HealthRuns:
    """The health of each run of an invocation: one `HealthRun` per run, one digester for all
    (it holds no state), and one spool file that every run's verdict rows share."""

    def __init__(self, rules: Iterable[Any], *, spool: bool):
        self.rules = list(rules)
        self._spool = _spool_file() if spool else None
        self._digester = HealthRun(self.rules, spool=self._spool).digester()

    def digester(self) -> RowJudge:
        return self._digester

    def for_run(self, inputs: Sequence[str]) -> HealthRun:
        return HealthRun(self.rules, inputs, spool=self._spool)


def health_runs(rules: Iterable[Any], *, report: bool) -> HealthRuns | None:
    """The runs' health: when a health rule runs, or a health report is wanted."""
    rules = list(rules)
    if not report and not any(spec.entry.family == "health" for spec in rules):
        return None
    return HealthRuns(rules, spool=report)
