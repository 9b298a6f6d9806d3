"""`--statistics`: how many findings each rule produced, most frequent first (as ruff does)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from trajlint.report.context import Report
from trajlint.report.text import summary_line


def counts(report: Report) -> list[dict[str, Any]]:
    rows = [
        {"code": code, "name": row["name"], "severity": row["severity"], "count": row["count"]}
        for code, row in report.summary["by_rule"].items()
    ]
    return sorted(rows, key=lambda row: (-row["count"], row["code"]))


def render_text(report: Report) -> Iterator[str]:
    rows = counts(report)
    if not rows:
        yield summary_line(report.summary) + "\n"
        return
    width = max(len(f"{row['count']:,}") for row in rows)
    for row in rows:
        yield f"{row['count']:>{width},}  {row['code']}  {row['name']}\n"


def render_json(report: Report) -> Iterator[str]:
    yield orjson.dumps(counts(report), option=orjson.OPT_INDENT_2).decode() + "\n"
