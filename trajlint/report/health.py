"""NeMo Gym's health report of a run, and the health numbers of trajlint's own summary.

`write_report` writes `quality_summary.json` and `rollout_verdicts.jsonl`, the two files of
`gym eval health-check`, through the one writer: beside each target, then renamed over it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import orjson

from trajlint.health.verdicts import HealthRun
from trajlint.report.write import input_clash, write_file

SUMMARY_FILE = "quality_summary.json"
VERDICTS_FILE = "rollout_verdicts.jsonl"


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


def write_report(directory: str, health: HealthRun) -> tuple[str, str]:
    """Write `quality_summary.json` and `rollout_verdicts.jsonl` into `directory` (created if missing)."""
    assert health.summary is not None, "finish() the run's health first"
    os.makedirs(directory, exist_ok=True)
    summary_path = os.path.join(directory, SUMMARY_FILE)
    verdicts_path = os.path.join(directory, VERDICTS_FILE)
    write_file(summary_path, [orjson.dumps(health.summary, option=orjson.OPT_INDENT_2)], binary=True)
    write_file(verdicts_path, health.verdict_rows(), binary=True)
    health.close()
    return summary_path, verdicts_path
