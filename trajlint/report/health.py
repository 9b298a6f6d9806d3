"""NeMo Gym's health report of a run, and the health numbers of trajlint's own summary.

`write_report` writes `quality_summary.json` and `rollout_verdicts.jsonl`, the two files of
`gym eval health-check`, through the one writer: both beside their targets, then both renamed
over them under a lock of their directory (`write.write_together`), so the pair always comes
from one run.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from trajlint.health.checks import CHECKS
from trajlint.health.tasks import VERDICTS
from trajlint.health.verdicts import HealthRun
from trajlint.report.write import input_clash, write_together

SUMMARY_FILE = "quality_summary.json"
VERDICTS_FILE = "rollout_verdicts.jsonl"


def report_numbers(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The health numbers of trajlint's own summary, summed over the runs: verdicts, issues by
    check, tasks (counted per run, as NeMo Gym counts them run by run)."""
    verdicts: Counter[str] = Counter()
    issues: Counter[str] = Counter()
    rollouts = tasks = flagged = 0
    ignored: list[str] = []
    for summary in summaries:
        run = summary["run"]
        rollouts += run["artifacts"]["records"]
        verdicts.update(run["verdicts"])
        issues.update(run["issues"])
        tasks += len(summary["tasks"])
        flagged += sum(1 for task in summary["tasks"].values() if task["flags"])
        ignored = run["ignored_checks"]
    keys = summaries[0]["run"] if summaries else None
    return {
        "rollouts": rollouts,
        "verdicts": {v: verdicts.get(v, 0) for v in (keys["verdicts"] if keys else VERDICTS)},
        "issues": {c: issues.get(c, 0) for c in (keys["issues"] if keys else [check.id for check in CHECKS])},
        "tasks": {"total": tasks, "flagged": flagged},
        "ignored_checks": ignored,
        "runs": len(summaries),
    }


def task_grid(runs: Sequence[tuple[str, dict[str, Any]]], max_tasks: int = 60, max_repeats: int = 24) -> dict[str, Any]:
    """Each task's repeats by verdict, for a heat map: at most `max_tasks` tasks (flagged and
    unhealthy ones first) and `max_repeats` repeats each; how many were left out is counted."""
    rows = []
    for run, summary in runs:
        for task, entry in summary["tasks"].items():
            rows.append({
                "run": run,
                "task": task,
                "repeats": entry["repeats"],
                "verdicts": {verdict: entry.get(verdict, 0) for verdict in VERDICTS},
                "flags": list(entry["flags"]),
            })
    rows.sort(key=lambda r: (not r["flags"], -r["verdicts"].get("unhealthy", 0), r["run"], r["task"]))
    return {
        "verdicts": list(VERDICTS),
        "tasks": rows[:max_tasks],
        "tasks_left_out": max(len(rows) - max_tasks, 0),
        "max_repeats": max_repeats,
    }


def report_problem(directory: str, inputs: Iterable[str]) -> str | None:
    """Why the report cannot go into `directory`, or None (checked before anything is read)."""
    if os.path.exists(directory) and not os.path.isdir(directory):
        return f"--health-report {directory} is a file, not a directory"
    inputs = list(inputs)
    for name in (SUMMARY_FILE, VERDICTS_FILE):
        clash = input_clash(os.path.join(directory, name), inputs)
        if clash is not None:
            return f"--health-report {directory} would overwrite the input {clash}; choose another directory"
    return None


def written_files(directory: str) -> list[str]:
    """The rollout files a health report in `directory` writes (or wrote on an earlier run), which a
    search for inputs must not read back as rollouts."""
    import glob

    found = [os.path.join(directory, VERDICTS_FILE)]
    return found + sorted(glob.glob(os.path.join(glob.escape(directory), "*", VERDICTS_FILE)))


def write_reports(directory: str, runs: Sequence[tuple[str, HealthRun]]) -> list[str]:
    """NeMo Gym's report of each run: into `directory` itself when there is one run, else into a
    directory per run beneath it (named after the run), as NeMo Gym writes one report per run.
    Returns the directories written."""
    if len(runs) == 1:
        write_report(directory, runs[0][1])
        return [directory]
    written: list[str] = []
    taken: set[str] = set()
    for name, health in runs:
        target = os.path.join(directory, _unique(run_directory_name(name), taken))
        write_report(target, health)
        written.append(target)
    return written


def run_directory_name(run: str) -> str:
    """A directory name for a run: its path with separators spelled `__` (`runs/a.jsonl` ->
    `runs__a.jsonl`), so that the name says which inputs the report is about."""
    parts = [p for p in run.replace(os.sep, "/").split("/") if p not in ("", ".")]
    name = "__".join(p if p != ".." else "up" for p in parts) or "run"
    return name.replace("*", "_").replace("?", "_")


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


def summary_chunks(summary: dict[str, Any]) -> Iterator[bytes]:
    """`quality_summary.json` as `orjson` with `OPT_INDENT_2` writes it; the tasks of a run too
    large to keep them in memory (not a dict) are written one at a time into it."""
    tasks = summary["tasks"]
    if isinstance(tasks, dict):
        yield orjson.dumps(summary, option=orjson.OPT_INDENT_2)
        return
    text = orjson.dumps({**summary, "tasks": {}}, option=orjson.OPT_INDENT_2)
    head, tail = text.rsplit(b'"tasks": {}', 1)  # the last key of the summary
    yield head + b'"tasks": '
    first = True
    for name, value in tasks.items():
        body = orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
        yield (b"{\n" if first else b",\n") + b"    " + orjson.dumps(name) + b": " + body
        first = False
    yield (b"{}" if first else b"\n  }") + tail


def write_report(directory: str, health: HealthRun) -> tuple[str, str]:
    """Write `quality_summary.json` and `rollout_verdicts.jsonl` into `directory` (created if missing)."""
    assert health.summary is not None, "finish() the run's health first"
    os.makedirs(directory, exist_ok=True)
    summary_path = os.path.join(directory, SUMMARY_FILE)
    verdicts_path = os.path.join(directory, VERDICTS_FILE)
    write_together(
        [(summary_path, summary_chunks(health.summary)), (verdicts_path, health.verdict_rows())],
        binary=True,
        lock=directory,
    )
    return summary_path, verdicts_path
