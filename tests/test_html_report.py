"""The HTML report without a browser: bounded whatever the run (the table, the sampled rows, the
strings in them), its verdict at the fail level, its data escaped for a script element, and its
content security policy naming its own script."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys

import orjson

from trajlint.check.engine import Result
from trajlint.check.samples import collect, pick, read_lines, shorten
from trajlint.findings import Finding
from trajlint.report import document, html
from trajlint.report.document import Report

from .conftest import EXAMPLES, ROOT
from .rule_rows import call, invocation, row


def _finding(line: int, code: str = "TL104", severity: str = "error", path: str = "a.jsonl") -> Finding:
    return Finding(code, "rule-" + code, severity, f"message {line}", path, line, "/x")


def _page(findings: list[Finding], **kw) -> str:
    report = Report(findings, document.summary(Result(findings=findings)), (), **kw)
    return "".join(html.render(report))


def _data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S).group(1))


def test_pick_takes_the_first_rows_of_each_rule_up_to_a_cap():
    findings = [_finding(n, "TL104") for n in range(1, 50)] + [_finding(n, "TL201") for n in range(1, 50)]
    findings += [_finding(0, "TL007"), _finding(3, "TL002", path="-")]
    chosen = pick(findings, per_rule=5, max_rows=100)
    assert chosen == [("a.jsonl", n) for n in range(1, 6)] + [("a.jsonl", n) for n in range(6, 11)]
    assert len(pick(findings, per_rule=20, max_rows=7)) == 7


def test_samples_are_read_again_built_and_bounded(tmp_path):
    big = row([call("a")], [invocation("A", "a")])
    big["notes"] = "x" * 100_000
    big["many"] = list(range(1000))
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(orjson.dumps(dict(big, _ng_task_index=i)) + b"\n" for i in range(30)))
    findings = [_finding(n, path=str(path)) for n in range(1, 31)]
    samples = collect(findings)
    assert [s["line"] for s in samples] == list(range(1, 21))  # 20 per rule
    first = samples[0]
    assert first["row"]["_ng_task_index"] == 0
    assert first["row"]["notes"].startswith("x" * 400) and first["row"]["notes"].endswith("[99,600 more characters]")
    assert len(first["row"]["many"]) == 61 and first["row"]["many"][-1] == "… [940 more items]"
    assert first["view"]["counts"]["model_calls"] == 1
    assert [f["message"] for f in first["findings"]] == ["message 1"]
    # A budget leaves out whole rows, never parts of one.
    size = len(orjson.dumps(first))
    assert len(collect(findings, budget=size * 3 + 10)) == 3


def test_read_lines_takes_only_the_lines_asked_for(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"1\n\n3\n4\n")
    assert read_lines(str(path), [1, 3, 9]) == {1: b"1", 3: b"3"}


def test_shorten_keeps_small_values():
    value = {"a": [1, 2, {"b": "c"}], "d": None}
    assert shorten(value) == value


def test_verdict_follows_the_fail_level():
    warnings = [_finding(1, severity="warning")]
    assert ">FAIL<" not in _page(warnings) and ">PASS<" in _page(warnings)
    assert ">FAIL<" in _page(warnings, fail_level="warning")
    assert ">PASS<" in _page([])


def test_table_is_capped_and_says_what_it_left_out():
    findings = [_finding(n) for n in range(1, html.MAX_TABLE + 501)]
    page = _page(findings)
    assert len(_data(page)["findings"]) == html.MAX_TABLE
    assert f"{html.MAX_TABLE} findings; 500 more are counted" in page
    assert f'id="count-findings">{html.MAX_TABLE + 500}<' in page
    assert len(page) < 2_000_000


def test_script_json_cannot_end_its_element():
    text = html.script_json({"a": "</script><!-- \u2028 & >"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- \u2028 & >"}


def test_only_the_page_own_script_may_run():
    page = _page([_finding(1)])
    policy = re.search(r"script-src '(sha256-[^']+)'", page).group(1)
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert policy == "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page


def test_cli_writes_samples_only_for_html(tmp_path):
    out = tmp_path / "r.html"
    result = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", f"html:{out}",
         str(EXAMPLES / "broken.jsonl")],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1, result.stderr
    data = _data(out.read_text())
    assert {s["line"] for s in data["samples"]} == {f["line"] for f in data["findings"]}
    assert all(f["sample"] is not None for f in data["findings"])
    # Standard input cannot be read again: the page is written, with no row to open.
    piped = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "html", "-"],
        input=(EXAMPLES / "broken.jsonl").read_text(), capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert piped.returncode == 1 and _data(piped.stdout)["samples"] == []


def test_heat_map_has_a_cell_per_repeat_and_names_the_run():
    from trajlint.report.health import task_grid

    def summary(tasks):
        return {"tasks": {t: {"repeats": sum(v), "healthy": v[0], "unhealthy": v[1], "unobserved": v[2],
                              "flags": flags} for t, (v, flags) in tasks.items()}}

    grid = task_grid([
        ("runs/a.jsonl", summary({"0": ((2, 1, 0), []), "1": ((0, 3, 0), ["task_consistently_unhealthy"])})),
        ("runs/b.jsonl", summary({"0": ((30, 0, 0), [])})),
    ], max_repeats=24)
    assert [(t["run"], t["task"]) for t in grid["tasks"]] == [("runs/a.jsonl", "1"), ("runs/a.jsonl", "0"), ("runs/b.jsonl", "0")]
    numbers = {"rollouts": 36, "runs": 2, "verdicts": {"healthy": 32, "unhealthy": 4, "unobserved": 0},
               "issues": {}, "tasks": {"total": 3, "flagged": 1}, "ignored_checks": []}
    report = Report([], {**document.summary(Result()), "health": numbers}, (), task_grid=grid)
    page = "".join(html.render(report))
    heat = re.search(r'<svg class="heat".*?</svg>', page, re.S).group(0)
    assert heat.count('class="cell"') == 3 + 3 + 24
    assert "a.jsonl · 1 ⚑" in heat and "b.jsonl · 0" in heat and "+6" in heat
    assert heat.count('fill="#d1242f"') == 4  # unhealthy
