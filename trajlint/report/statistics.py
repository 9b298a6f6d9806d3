"""`--statistics`: how many findings each rule produced, most frequent first (as ruff does).

Text (`full`, `concise`): `count  code  severity  name` lines and the summary line; `json`: a
JSON list of `{code, name, severity, count}` (ruff's shape); `jsonl`: one such object a line.

The text lines name only rules and health checks, never the data, but go through
`escape.text_line` all the same, as every text format's lines do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from trajlint.report.document import Report
from trajlint.report.escape import text_line
from trajlint.report.text import summary_line


def counts(report: Report) -> list[dict[str, Any]]:
    rows = [
        {"code": code, "name": row["name"], "severity": row["severity"], "count": row["count"]}
        for code, row in report.summary["by_rule"].items()
    ]
    return sorted(rows, key=lambda row: (-row["count"], row["code"]))


def render_text(report: Report, *, summary: bool = True, color: bool = False) -> Iterator[str]:
    rows = counts(report)
    if not rows:
        if summary:
            yield summary_line(report.summary, color=color) + "\n"
    else:
        width = max(len(f"{row['count']:,}") for row in rows)
        severity = max(len(row["severity"]) for row in rows)
        for row in rows:
            yield text_line(f"{row['count']:>{width},}  {row['code']}  {row['severity']:<{severity}}  {row['name']}") + "\n"
        if summary:  # the totals by severity, and what the counts leave out
            yield summary_line(report.summary, color=color) + "\n"
    health = report.summary.get("health")
    if health:
        yield "\n"
        yield from _health_text(health)


def _health_text(health: dict[str, Any]) -> Iterator[str]:
    """Rollout health as NeMo Gym counts it: verdicts, tasks, and issues by check."""
    verdicts, tasks = health["verdicts"], health["tasks"]
    yield (
        f"Rollout health: {health['rollouts']:,} rollouts, {verdicts['healthy']:,} healthy, "
        f"{verdicts['unhealthy']:,} unhealthy, {verdicts['unobserved']:,} unobserved; "
        f"{tasks['total']:,} tasks, {tasks['flagged']:,} flagged"
        + (f"; {health['runs']:,} runs" if health.get("runs", 1) != 1 else "")
        + "\n"
    )
    issues = sorted(((n, check) for check, n in health["issues"].items() if n), key=lambda item: (-item[0], item[1]))
    width = max((len(f"{n:,}") for n, _ in issues), default=0)
    for n, check in issues:
        yield text_line(f"{n:>{width},}  {check}") + "\n"


def render_json(report: Report) -> Iterator[str]:
    yield orjson.dumps(counts(report), option=orjson.OPT_INDENT_2).decode() + "\n"


def render_jsonl(report: Report) -> Iterator[str]:
    for row in counts(report):
        yield orjson.dumps(row).decode() + "\n"
