"""The `html` format: one self-contained page a person opens to see a run.

Everything is inline (style, script, charts drawn as SVG here), so the page opens offline and
from an artifact store. Its size is bounded whatever the run: counts cover every finding, the
findings table holds at most `MAX_TABLE` of them (the rest are counted), and the rows one can
open are the report's bounded `samples`. Text from the data reaches the page only through
Jinja's autoescaping or as JSON in a `<script type="application/json">` block with `<`, `>`
and `&` escaped, and the page's script puts it into the document as text, never as markup.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from typing import Any

import orjson

from trajlint import __version__
from trajlint.findings import SEVERITIES, severity_rank
from trajlint.report.document import Report
from trajlint.report.escape import visible

MAX_TABLE = 2000
MAX_FILES = 25
SEVERITY_COLOURS = {"error": "#d1242f", "warning": "#bf8700", "info": "#0969da"}
VERDICT_COLOURS = {"healthy": "#2da44e", "unhealthy": "#d1242f", "unobserved": "#8c959f"}
CLAIM_COLOURS = {
    "agent": "#0969da",
    "session": "#54aeff",
    "compaction": "#8250df",
    "compaction-before": "#c297ff",
    "compaction-after": "#c297ff",
    "verifier": "#bf3989",
    "turn": "#1a7f37",
}


def script_json(value: Any) -> str:
    """JSON that can stand inside a `<script>` element: no `<`, `>` or `&` can end it or open a
    comment, and the line separators JavaScript once rejected are escaped too."""
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def _asset(name: str) -> str:
    return resources.files("trajlint.report").joinpath("html_assets", name).read_text(encoding="utf-8")


def failed(report: Report) -> bool:
    rank = severity_rank(report.fail_level)
    return any(severity_rank(f.severity) <= rank for f in report.findings)


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def context(report: Report) -> dict[str, Any]:
    summary = report.summary
    sample_of = {(s["path"], s["line"]): i for i, s in enumerate(report.samples)}

    def shown(path: str) -> str:
        # Relative to the directory trajlint ran in, as a reader named the inputs.
        return visible(report.relative(path) or path)

    grid = report.task_grid
    if grid is not None:
        several = len({t["run"] for t in grid["tasks"]}) > 1 or grid["tasks_left_out"] > 0

        def label(t: dict[str, Any]) -> str:
            # Task ids repeat from run to run (NeMo Gym numbers each run's tasks from 0).
            text = f"{os.path.basename(t['run'])} · {t['task']}" if several else str(t["task"])
            return visible(text if len(text) <= 40 else "…" + text[-39:])

        grid = {
            **grid,
            "tasks": [{**t, "label": label(t), "task": visible(t["task"]), "run": visible(t["run"])} for t in grid["tasks"]],
        }
    table = [
        {
            "code": f.code,
            "name": f.name,
            "severity": f.severity,
            # As the text formats show them: a control or reordering character as an escape.
            "message": visible(f.message),
            "path": shown(f.path),
            "line": f.line,
            "pointer": visible(f.pointer),
            "sample": sample_of.get((f.path, f.line)),
        }
        for f in report.findings[:MAX_TABLE]
    ]
    per_file = Counter(f.path for f in report.findings)
    by_rule = summary["by_rule"]
    top = max((entry["count"] for entry in by_rule.values()), default=0)
    rules = [
        {"code": code, "name": entry["name"], "severity": entry["severity"], "count": entry["count"],
         "width": 0 if not top else max(1.0, 100.0 * entry["count"] / top)}
        for code, entry in sorted(by_rule.items(), key=lambda kv: (-kv[1]["count"], kv[0]))
    ]
    script = _asset("report.js")
    health = summary.get("health")
    verdict_total = sum(health["verdicts"].values()) if health else 0
    return {
        "version": __version__,
        "plural": plural,
        "summary": summary,
        "failed": failed(report),
        "fail_level": report.fail_level,
        "severities": SEVERITIES,
        "severity_colours": SEVERITY_COLOURS,
        "verdict_colours": VERDICT_COLOURS,
        "claim_colours": CLAIM_COLOURS,
        "rules": rules,
        "files": [{"path": shown(p), "count": n} for p, n in per_file.most_common(MAX_FILES)],
        "files_with_findings": len(per_file),
        "health": health,
        "verdict_total": verdict_total,
        "grid": grid,
        "table_size": len(table),
        "table_left_out": max(len(report.findings) - MAX_TABLE, 0),
        "samples_count": len(report.samples),
        "data": script_json({
            "findings": table,
            "samples": [{**sample, "path": shown(sample["path"])} for sample in report.samples],
            "claimColours": CLAIM_COLOURS,
            "severityColours": SEVERITY_COLOURS,
        }),
        "style": _asset("report.css"),
        "script": script,
        # Only this script may run: were a value from the data ever to reach the page as markup,
        # a script it held would still be refused.
        "script_hash": "sha256-" + base64.b64encode(hashlib.sha256(("\n" + script + "\n").encode()).digest()).decode(),
    }


def render(report: Report) -> Iterator[str]:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("trajlint.report", "html_assets"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    template = env.get_template("report.html.j2")
    yield from template.generate(**context(report))
