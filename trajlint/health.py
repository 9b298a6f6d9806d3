"""Rollout health the way NeMo Gym 0.7.0's `gym eval health-check` reports it, from trajlint's findings.

Each row gets a verdict — *unhealthy* when a health check found something, else *unobserved*
when a check could not run for lack of evidence, else *healthy* — and each task is reduced
over its repeats (copies of one rollout index with mixed verdicts count as unobserved). The
numbers go into the report's summary, and `trajlint check --health-report DIR` writes
`quality_summary.json` and `rollout_verdicts.jsonl` in NeMo Gym's format.

Memory stays small per row: the run keeps, per task and rollout index, one small integer per
copy; the verdict rows of the report are spooled to a temporary file and only their sort keys
and offsets stay in memory.
"""

from __future__ import annotations

import bisect
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from trajlint.builder.identity import python_str
from trajlint.check import health_view as hv
from trajlint.check.subject import Subject
from trajlint.findings import Finding, Location
from trajlint.read import same_file
from trajlint.repeats import (
    TASK_NO_SUCCESS,
    TASK_UNHEALTHY,
    UNHEALTHY,
    VERDICTS,
    TaskRepeats,
    hashable,
    rollout_index,
    stage_index,
    task_index,
    verdict,
)

SUMMARY_FILE = "quality_summary.json"
VERDICTS_FILE = "rollout_verdicts.jsonl"

CHECK_EXECUTION_ERROR = "check_execution_error"
RECORD_UNREADABLE = "record_unreadable"
DUPLICATE_IDENTITY = "rollout_duplicate_identity"

#: Every NeMo Gym 0.7.0 check id, in its registry order, with the trajlint rules that cover it.
CHECKS: dict[str, tuple[str, ...]] = {
    CHECK_EXECUTION_ERROR: ("internal-error",),
    RECORD_UNREADABLE: ("invalid-json", "row-not-object", "trajectory-schema"),
    DUPLICATE_IDENTITY: ("duplicate-rollout-identity",),
    **{name.replace("-", "_"): (name,) for name in hv.ROLLOUT_RULES},
    TASK_UNHEALTHY: ("task-consistently-unhealthy",),
    TASK_NO_SUCCESS: ("task-no-successful-model-calls",),
}
ROLLOUT_CHECKS = tuple(check for check in CHECKS if not check.startswith("task_"))
TASK_CHECKS = (TASK_UNHEALTHY, TASK_NO_SUCCESS)
_INTERNAL = re.compile(r"rule (TL6\d\d) (\S+) raised (\w+)")


def check_of(rule: str) -> str:
    """The NeMo Gym check id a TL6xx rule implements."""
    return rule.replace("-", "_")


def _sort_part(value: Any) -> tuple[int, Any]:
    """NeMo Gym orders integer keys before every other key, those by their text."""
    return (0, value) if isinstance(value, int) else (1, python_str(value))


# -- a row's verdict ---------------------------------------------------------------------------


def view_verdict(subject: Subject) -> tuple[str, hv.Digest]:
    """A row's verdict over every rollout health check (what the task rules reduce).

    A check that raises is NeMo Gym's check_execution_error: a finding (the rule that raised
    reports the internal error).
    """
    view = hv.view_of(subject)
    digest = view.digest()
    found, unobserved = digest.stated_invalid, False
    for rule in hv.ROLLOUT_RULES:
        try:
            results = view.findings(rule)
        except Exception:  # noqa: BLE001
            found = True
            continue
        found = found or bool(results)
        unobserved = unobserved or results is None
    return verdict(found, unobserved), digest


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

    def add(self, digest: hv.Digest) -> None:
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


@dataclass(frozen=True, slots=True)
class Judged:
    """What the health report keeps of one row: its keys, verdict, checks, and the numbers."""

    task: Any  # None: the row has no task index, and its position names it
    index: Any
    stage: Any
    rollout: Any
    verdict: str
    found_checks: tuple[str, ...]
    missing: tuple[str, ...]
    digest: hv.Digest | None
    record: bytes | None  # the row's verdict line for the report, when one is written


@dataclass(frozen=True, slots=True)
class RowJudge:
    """Judges each row where it is checked (a `RowDigester`): the rules of the run, no state."""

    codes: dict[str, str]
    rollout_rules: list[str]
    selected: set[str]
    stated_checked: bool
    keep_records: bool

    def digest(self, subject: Subject, findings: list[Finding], unobserved: list[str]) -> Judged:
        row = subject.row
        found, missing, digest = self._evaluate(subject, findings, unobserved)
        result = verdict(bool(found), bool(missing))
        stage = stage_index(row)
        return Judged(
            task=task_index(row),
            index=rollout_index(row),
            stage=stage,
            rollout=subject.rollout,
            verdict=result,
            found_checks=tuple(item["check"] for item in found),
            missing=tuple(missing),
            digest=digest,
            record=self._record(row, result, found, missing) if self.keep_records else None,
        )

    def _evaluate(
        self, subject: Subject, findings: list[Finding], unobserved: list[str]
    ) -> tuple[list[dict[str, Any]], list[str], hv.Digest | None]:
        """(NeMo Gym findings, unobserved check ids, digest) of one row."""
        present = {f.name for f in findings}
        failed: dict[str, str] = {}
        for f in findings:
            match = _INTERNAL.match(f.message) if f.name == "internal-error" else None
            if match:
                failed[match.group(2)] = match.group(3)
        static = {self.codes.get(code) for code in unobserved}
        found: list[dict[str, Any]] = []
        missing: list[str] = []
        try:
            view = hv.view_of(subject)
            digest = view.digest()
        except Exception as exc:  # noqa: BLE001 - the rules report it as internal-error
            failed.update((rule, type(exc).__name__) for rule in self.rollout_rules)
            view = digest = None
        if digest is not None and digest.stated_invalid and self.stated_checked:
            found.append(
                {"check": RECORD_UNREADABLE, "detail": {"reason": "canonical trajectory is unreadable", "error": "ValidationError"}}
            )
        for rule in self.rollout_rules:
            check = check_of(rule)
            if rule in failed:
                missing.append(check)
                if CHECK_EXECUTION_ERROR in self.selected:
                    found.append(
                        {
                            "check": CHECK_EXECUTION_ERROR,
                            "detail": {"reason": "check raised an unexpected exception", "failed_check": check, "error": failed[rule]},
                        }
                    )
            elif rule in static or view is None or view.findings(rule) is None:
                missing.append(check)
            elif rule in present:
                found.extend(_ng_finding(item) for item in view.findings(rule))
        return found, missing, digest  # in NeMo Gym's order: its registry's, a failed check's error in its place

    def _record(self, row: dict[str, Any], result: str, found: list, missing: list) -> bytes:
        stage = row.get("stage_index")
        stated = row.get("ng_trajectory")
        stated_id = stated.get("rollout_id") if isinstance(stated, dict) else None
        explicit = row.get("_ng_rollout_id") or stated_id
        record = {
            "_ng_task_index": row.get("_ng_task_index"),
            "_ng_rollout_index": row.get("_ng_rollout_index", 0),
            "rollout_id": python_str(hashable(explicit)) if explicit else None,
            "verdict": result,
            "findings": found,
            "unobserved": missing,
        }
        if stage is not None:
            record["stage_index"] = stage
        try:
            return orjson.dumps(record)
        except (TypeError, ValueError):  # an index nested deeper than JSON writers go
            for key in ("_ng_task_index", "_ng_rollout_index", "stage_index"):
                if key in record:
                    record[key] = hashable(record[key])
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


class HealthObserver:
    """Sees each row's findings (a `RowObserver`) and reduces them to NeMo Gym's health report.

    `rules` are the rules of the run: a NeMo Gym check none of whose rules runs is *ignored*, as
    with `gym eval health-check --ignore-checks`. `inputs` are the input paths in reading order
    (unreadable lines are named after their input's position). With `spool`, the verdict rows
    are kept (on disk) for `write_report`.
    """

    def __init__(self, rules: Iterable[Any], inputs: Sequence[str] = (), *, spool: bool = False):
        names = {spec.name for spec in rules}
        self.codes = {spec.code: spec.name for spec in rules}
        self.rollout_rules = [r for r in hv.ROLLOUT_RULES if r in names]
        self.selected = {check for check, covering in CHECKS.items() if names & set(covering)}
        self.stated_checked = "trajectory-schema" in names
        self.inputs = {path: i for i, path in enumerate(inputs)}
        self.repeats = TaskRepeats(duplicates=DUPLICATE_IDENTITY in self.selected)
        self.stats = _Stats()
        self.issues: Counter[str] = Counter()
        self.unobserved: Counter[str] = Counter()  # per rollout check, records it could not judge
        self.task_coverage = {check: Counter() for check in TASK_CHECKS}
        self.rows = 0
        self._ordinals: list[_Ordinal] = []
        self._spool = _spool_file() if spool else None
        self._index: list[tuple[Any, ...]] = []
        self.summary: dict[str, Any] | None = None

    # -- per row --------------------------------------------------------------------------------

    def digester(self) -> RowJudge:
        return RowJudge(self.codes, self.rollout_rules, self.selected, self.stated_checked, self._spool is not None)

    def absorb(self, location: Location, judged: Judged) -> None:
        task = judged.task
        if task is None:
            task = _Ordinal(self.rows, (self.inputs.get(location.path, len(self.inputs)), location.line))
            self._ordinals.append(task)
        self.rows += 1
        digest = judged.digest
        self.stats.records += 1
        if digest is not None:
            self.stats.add(digest)
        self.issues.update(judged.found_checks)
        self.unobserved.update(judged.missing)  # evaluated and ignored are counted at the end
        position = self.repeats.add(
            task,
            judged.index,
            judged.verdict,
            stage=judged.stage,
            first=location,
            rollout=judged.rollout,
            policy_calls_observed=digest is not None and digest.policy_calls_observed,
            successful=digest is not None and digest.successful_turn_calls > 0,
        )
        if self._spool is not None and judged.record is not None:
            offset = self._spool.tell()
            self._spool.write(judged.record)
            self._index.append((task, judged.index, judged.stage, offset, len(judged.record), position))

    # -- at the end ----------------------------------------------------------------------------

    def finish(self, findings: Iterable[Finding]) -> dict[str, Any]:
        """Fold in the lines that never became rows and reduce the tasks; returns the summary."""
        hv.forget()
        unreadable = sorted(
            ((self.inputs.get(f.path, len(self.inputs)), f.line, f.path, f.name) for f in findings if f.name in _UNREADABLE),
        )
        self._resolve_ordinals([(k, line) for k, line, _, _ in unreadable])
        for k, line, path, name in unreadable:
            self._unreadable(k, line, path, name)
        tasks: dict[str, Any] = {}
        task_issues: Counter[str] = Counter()
        verdicts: Counter[str] = Counter()
        # NeMo Gym lists tasks by their text, numbers first (so "10" comes before "2").
        for task in sorted(self.repeats.tasks, key=lambda t: (isinstance(_task_value(t), str), python_str(_task_value(t)))):
            outcome = self.repeats.outcome(task)
            for rollout in self.repeats.tasks[task].buckets:
                for final, copies in self.repeats.copies(task, rollout):
                    verdicts[final] += 1
                    self.issues[DUPLICATE_IDENTITY] += copies > 0
            flags = [check for check in outcome.flags if check in self.selected]
            task_issues.update(flags)
            for check, evaluated in outcome.coverage.items():
                kind = "ignored" if check not in self.selected else "evaluated" if evaluated else "unobserved"
                self.task_coverage[check][kind] += 1
            tasks[python_str(_task_value(task))] = {"repeats": outcome.repeats, **outcome.counts, "flags": flags}
        self.issues.update(task_issues)
        stats = self.stats
        self.summary = {
            "run": {
                "ignored_checks": sorted(check for check in CHECKS if check not in self.selected),
                "artifacts": {
                    "records": stats.records,
                    "captures": stats.captures,
                    "coverage": self._coverage(),
                },
                "verdicts": {v: verdicts.get(v, 0) for v in VERDICTS},
                "issues": {check: self.issues.get(check, 0) for check in CHECKS},
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

    def _resolve_ordinals(self, unreadable: list[tuple[int, int]]) -> None:
        for ordinal in self._ordinals:
            ordinal.value += bisect.bisect_left(unreadable, ordinal.position)

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
            self._index.append((task, 0, None, offset, len(data), position))

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def verdict_rows(self) -> Iterator[bytes]:
        """The verdict rows in NeMo Gym's order (task, rollout, stage), one JSON line each."""
        assert self._spool is not None, "the observer was made without spool"
        order = sorted(
            range(len(self._index)),
            key=lambda i: tuple(_sort_part(v) for v in (_task_value(self._index[i][0]), self._index[i][1], self._index[i][2])),
        )
        for i in order:
            task, index, _, offset, length, position = self._index[i]
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


def _task_value(task: Any) -> Any:
    return task.value if isinstance(task, _Ordinal) else task


def _ng_finding(item: hv.HealthFinding) -> dict[str, Any]:
    out: dict[str, Any] = {"check": check_of(item.rule)}
    if item.locator is not None:
        out["locator"] = item.locator
    out["detail"] = item.detail
    return out


# -- what the trajlint report says about health --------------------------------------------------


def report_numbers(summary: dict[str, Any]) -> dict[str, Any]:
    """The health numbers of trajlint's own summary: verdicts, issues by check, tasks."""
    run = summary["run"]
    tasks = summary["tasks"].values()
    return {
        "rollouts": run["artifacts"]["records"],
        "verdicts": run["verdicts"],
        "issues": run["issues"],
        "tasks": {
            "total": len(summary["tasks"]),
            "flagged": sum(1 for task in tasks if task["flags"]),
        },
        "ignored_checks": run["ignored_checks"],
    }


# -- writing the report -------------------------------------------------------------------------


def report_problem(directory: str, inputs: Iterable[str]) -> str | None:
    """Why the report cannot go into `directory`, or None (checked before anything is read)."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        return f"--health-report {directory} is a file, not a directory"
    for name in (SUMMARY_FILE, VERDICTS_FILE):
        target = os.path.join(directory, name)
        for path in inputs:
            if path != "-" and same_file(target, path):
                return f"--health-report {directory} would overwrite the input {path}; choose another directory"
    return None


def write_report(directory: str, observer: HealthObserver) -> tuple[str, str]:
    """Write `quality_summary.json` and `rollout_verdicts.jsonl` into `directory` (created if missing)."""
    assert observer.summary is not None, "finish() the observer first"
    os.makedirs(directory, exist_ok=True)
    summary_path = os.path.join(directory, SUMMARY_FILE)
    verdicts_path = os.path.join(directory, VERDICTS_FILE)
    with open(summary_path, "wb") as handle:
        handle.write(orjson.dumps(observer.summary, option=orjson.OPT_INDENT_2))
    with open(verdicts_path, "wb") as handle:
        for line in observer.verdict_rows():
            handle.write(line)
    observer.close()
    return summary_path, verdicts_path


def observer_for(rules: Iterable[Any], inputs: Sequence[str], *, report: bool) -> HealthObserver | None:
    """The run's health observer: when a health rule runs, or a health report is wanted."""
    rules = list(rules)
    if not report and not any(spec.entry.family == "health" for spec in rules):
        return None
    return HealthObserver(rules, inputs, spool=report)
