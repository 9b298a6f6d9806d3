"""The HTML report in a real browser: Debian's headless Chromium, driven through chromedriver.

Each page must load without a single console error (a refused script or style counts), show
the verdict and the counts of the JSON report, filter its table, and draw each sampled row's
ledger with one node per owner and per call. A row whose values, keys and file name carry
markup must not run any of it. Screenshots are kept in the test's temporary directory.

The browser is the system's (`/usr/bin/chromium` and `/usr/bin/chromedriver`, from Debian's
`chromium` and `chromium-driver`; `.ci/run` installs them); selenium is told where both are,
so it never downloads a browser or a driver.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from trajlint.builder import build
from trajlint.builder.view import view

from .conftest import EXAMPLES, ROOT
from .rule_rows import JUDGE, call, compaction, invocation, row, trajectory, turn

CHROMIUM = os.environ.get("TRAJLINT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TRAJLINT_CHROMEDRIVER", "/usr/bin/chromedriver")
REAL = ROOT / "tests" / "data" / "real"
XSS = '</script><script>window.__xss=1</script><img src=x onerror="window.__xss=2">'

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="needs Chromium and chromedriver (apt-get install chromium chromium-driver; .ci/run installs them)",
)


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium-manager must never fetch anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _report(paths: list[Path], out: Path, *extra: str) -> tuple[int, dict]:
    """Write the HTML and the JSON report of one run; (exit status, JSON document)."""
    result = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", *extra, "--output-format", f"html:{out}",
         "--output-format", f"json:{out.with_suffix('.json')}", *map(str, paths)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=out.parent,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(out.with_suffix(".json").read_text())


def _open(browser, page: Path):
    browser.get(page.as_uri())
    browser.find_element("id", "verdict-word")
    return browser


def _severe(browser) -> list[dict]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def _shown_rows(browser) -> int:
    """How many findings match the filters; the table holds the first 200 of them until asked."""
    matched = int(browser.find_element("id", "rows").get_attribute("data-matched"))
    drawn = browser.execute_script("return document.querySelectorAll('#rows tr').length")
    assert drawn == min(matched, 200)
    return matched


def _check_page(browser, page: Path, status: int, doc: dict, shots: Path, name: str) -> None:
    _open(browser, page)
    summary = doc["summary"]
    assert browser.find_element("id", "verdict-word").text == ("FAIL" if status == 1 else "PASS")
    for severity, count in summary["by_severity"].items():
        assert browser.find_element("id", f"count-{severity}").text == str(count)
    assert browser.find_element("id", "count-findings").text == str(summary["findings"])
    bars = browser.execute_script(
        "return Array.from(document.querySelectorAll('.rule-bar')).map(b => [b.dataset.code, +b.dataset.count])"
    )
    assert dict(bars) == {code: entry["count"] for code, entry in summary["by_rule"].items()}
    assert _shown_rows(browser) == len(doc["findings"])
    while browser.find_element("id", "rows-more").is_displayed():
        browser.find_element("id", "rows-more").click()
    assert browser.execute_script("return document.querySelectorAll('#rows tr').length") == len(doc["findings"])
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(str(shots / f"{name}.png"))
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(height + 140, 3000))
    browser.save_screenshot(str(shots / f"{name}-full.png"))
    browser.set_window_size(1400, 1000)
    assert _severe(browser) == []


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return tmp_path_factory.mktemp("screenshots")


def test_real_data_report(browser, tmp_path, shots):
    page = tmp_path / "real.html"
    status, doc = _report([REAL], page)
    _check_page(browser, page, status, doc, shots, "real")
    # The rule filter shows exactly that rule's findings; the text filter narrows further.
    from selenium.webdriver.support.ui import Select

    code, entry = max(doc["summary"]["by_rule"].items(), key=lambda kv: kv[1]["count"])
    Select(browser.find_element("id", "f-rule")).select_by_value(code)
    assert _shown_rows(browser) == entry["count"]
    codes = browser.execute_script("return Array.from(document.querySelectorAll('#rows tr')).map(r => r.dataset.code)")
    assert set(codes) == {code}
    Select(browser.find_element("id", "f-rule")).select_by_value("")
    Select(browser.find_element("id", "f-severity")).select_by_value("error")
    assert _shown_rows(browser) == doc["summary"]["by_severity"]["error"]
    Select(browser.find_element("id", "f-severity")).select_by_value("")
    first = doc["findings"][0]
    shown = os.path.relpath(first["path"], page.parent) if not first["path"].startswith(str(REAL)) else first["path"]
    Select(browser.find_element("id", "f-file")).select_by_value(shown)
    assert _shown_rows(browser) == sum(f["path"] == first["path"] for f in doc["findings"])
    Select(browser.find_element("id", "f-file")).select_by_value("")
    browser.find_element("id", "f-text").send_keys(first["message"][:40])
    assert _shown_rows(browser) == sum(first["message"][:40].lower() in " ".join(
        (f["code"], f["name"], f["message"], f["pointer"], f["path"])).lower() for f in doc["findings"])
    assert browser.find_element("id", "heatmap")
    assert _severe(browser) == []


def _conflicts(tmp_path: Path) -> Path:
    """Every kind of ownership conflict: two agents on one call, a session naming another agent,
    a verifier's call claimed by an agent, a compaction helper made a turn, an unmatched and an
    ambiguous reference; the defects of examples/broken.jsonl after them."""
    pair = {"model_ref": {"type": "responses_api_models", "name": "policy"}, "response_id": "resp_x"}
    helper_turn = trajectory([turn("A", 1, "a"), turn("A", 2, "h")], [invocation("A", "a", "h")])
    rows = [
        row([call("a")], [invocation("A", "a"), invocation("B", "a")]),
        row([call("a", client_session_id="B")], [invocation("A", "a"), invocation("B")]),
        row([call("a"), call("j", 1, ref=JUDGE)], [invocation("A", "a", "j")],
            ng_verifier_invocations=[{"invocation_id": "v", "model_calls": [{"model_call_id": "j"}]}]),
        row([call("a"), call("h", 1)], [invocation("A", "a", "h"), compaction("A", "h")], ng_trajectory=helper_turn),
        row([call("a")], [invocation("A", "a", "gone")]),
        row([call("a", response_id="resp_x"), call("b", 1, response_id="resp_x")],
            [dict(invocation("A"), model_calls=[pair])]),
    ]
    for i, r in enumerate(rows):
        r["_ng_task_index"] = 100 + i
        r["ng_model_call_capture"]["rollout_id"] = f"{100 + i}-1"
    path = tmp_path / "conflicts.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows) + (EXAMPLES / "broken.jsonl").read_bytes())
    return path


def test_conflicts_report_draws_every_ledger(browser, tmp_path, shots):
    source = _conflicts(tmp_path)
    page = tmp_path / "conflicts.html"
    status, doc = _report([source], page)
    assert status == 1
    _check_page(browser, page, status, doc, shots, "conflicts")
    samples = browser.execute_script("return JSON.parse(document.getElementById('report-data').textContent).samples")
    lines = source.read_bytes().splitlines()
    assert {s["line"] for s in samples} == {f["line"] for f in doc["findings"] if f["line"]}
    drawn = 0
    for index, sample in enumerate(samples):
        browser.execute_script("window.trajlintOpenSample(arguments[0], null)", index)
        if sample["view"] is None:
            assert browser.find_element("id", "drill-problem").text
            continue
        expected = view(build(orjson.loads(lines[sample["line"] - 1])))["graph"]
        if not expected["calls"] and not expected["owners"]:
            continue
        svg = browser.find_element("css selector", "#drill-graph svg")
        assert int(svg.get_attribute("data-owners")) == len(expected["owners"])
        assert int(svg.get_attribute("data-calls")) == len(expected["calls"])
        nodes = browser.execute_script(
            "return [document.querySelectorAll('#drill-graph .node.owner').length,"
            " document.querySelectorAll('#drill-graph .node.call').length,"
            " document.querySelectorAll('#drill-graph .node.conflict').length,"
            " document.querySelectorAll('#drill-graph path.edge').length]"
        )
        conflicts = sum(1 for c in expected["calls"] if c["conflict"])
        assert nodes == [len(expected["owners"]), len(expected["calls"]), conflicts, len(expected["edges"])]
        drawn += 1
        if sample["line"] == 1:  # two agents on one call
            assert conflicts == 1
    assert drawn >= 6
    # examples/broken.jsonl's line 10 (two agents, a verifier's call, an unmatched reference),
    # opened at its ownership conflict.
    rich = next(i for i, s in enumerate(samples) if s["line"] == 16)
    pointer = next(f["pointer"] for f in samples[rich]["findings"] if f["name"] == "ownership-conflict")
    browser.execute_script("window.trajlintOpenSample(arguments[0], arguments[1])", rich, pointer)
    browser.save_screenshot(str(shots / "drilldown.png"))
    # Opening a row from the table highlights the finding's pointer in the row's JSON.
    target = next(f for f in doc["findings"] if f["line"] == 1 and f["pointer"])
    browser.find_element("id", "drill-close").click()
    row_element = next(
        tr for tr in browser.find_elements("css selector", "#rows tr.openable")
        if tr.find_elements("css selector", "td.ptr") and tr.find_element("css selector", "td.ptr").text == target["pointer"]
    )
    row_element.click()
    highlighted = browser.execute_script("return document.querySelector('#drill-json .hl').dataset.pointer")
    assert target["pointer"].startswith(highlighted) and highlighted
    assert _severe(browser) == []


def test_markup_in_the_data_never_runs(browser, tmp_path, shots):
    r = row([call("a")], [invocation("A", "a"), invocation("B", "a")])
    r["task_id"] = XSS
    r[XSS] = XSS
    r["_ng_task_index"] = XSS
    r["ng_model_call_capture"]["calls"][0]["model_call_id"] = XSS
    r["ng_agent_observations"]["records"][0]["model_calls"][0]["model_call_id"] = XSS
    r["ng_agent_observations"]["records"][0]["invocation_id"] = XSS
    name = '<img src=x onerror="window.__xss=3">.jsonl'
    source = tmp_path / name
    source.write_bytes(orjson.dumps(r) + b"\n")
    page = tmp_path / "xss.html"
    status, doc = _report([source], page, "--file-kind", "rollouts")
    assert doc["findings"]
    _open(browser, page)
    samples = browser.execute_script("return JSON.parse(document.getElementById('report-data').textContent).samples.length")
    assert samples == 1
    browser.execute_script("window.trajlintOpenSample(0, null)")
    browser.find_element("id", "f-text").send_keys("script")
    assert browser.execute_script("return window.__xss") is None
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    assert browser.execute_script("return document.scripts.length") == 2
    # The markup is there, as text.
    assert XSS in browser.find_element("id", "drill-json").text or json.dumps(XSS)[1:-1] in browser.find_element("id", "drill-json").text
    browser.save_screenshot(str(shots / "xss.png"))
    assert _severe(browser) == []


def test_screenshots_are_written(shots):
    # Runs after the others in this module: the README's images come from these.
    kept = sorted(p.name for p in shots.glob("*.png"))
    assert {"real.png", "conflicts.png", "drilldown.png"} <= set(kept)
    if os.environ.get("TRAJLINT_SCREENSHOTS"):
        target = Path(os.environ["TRAJLINT_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        for name in kept:
            shutil.copy(shots / name, target / name)
