"""How big the HTML report of a large run is, what writing it costs, and how fast it opens.

    python bench/html_report.py --size 1GB                 # generates bench/out/html-1GB.jsonl once
    python bench/html_report.py --file runs/rollouts.jsonl --repeat 3

Runs `trajlint check` on the file twice side by side, round-robin over `--repeat` rounds: with
the JSON report only, and with the JSON and the HTML report, so the ratio is what the HTML
report adds (re-reading and building the sampled rows, rendering). Then opens the page in
headless Chromium (`/usr/bin/chromium` through `/usr/bin/chromedriver`) `--repeat` times and
prints the page's size, its load time (navigation start to the load event, from the browser's
own timing) and the time to open the first sampled row. It asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# These timings measure checking: a hit in the result cache would time a lookup instead.
os.environ["TRAJLINT_NO_CACHE"] = "1"

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _file(args: argparse.Namespace) -> Path:
    if args.file:
        return Path(args.file)
    out = BENCH / "out" / f"html-{args.size}.jsonl"
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        subprocess.run([sys.executable, str(BENCH / "generate.py"), "--size", args.size, "-o", str(out)], check=True)
    return out


def _check(path: Path, outputs: list[str], trajlint: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "-q", *(a for o in outputs for a in ("--output-format", o)), str(path)],
        env={**os.environ, "PYTHONPATH": str(trajlint)}, capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        sys.exit(f"trajlint failed: {result.stderr.strip()}")
    return elapsed


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", help="an existing rollout file")
    parser.add_argument("--size", default="1GB", help="generate a file of this size (default 1GB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trajlint", type=Path, default=ROOT, help="the source tree to run")
    args = parser.parse_args()
    path = _file(args)
    work = Path(tempfile.mkdtemp(prefix="trajlint-html-bench-"))
    page, doc = work / "report.html", work / "report.json"
    plain, with_html = [], []
    for _ in range(args.repeat):
        plain.append(_check(path, [f"json:{doc}"], args.trajlint))
        with_html.append(_check(path, [f"json:{doc}", f"html:{page}"], args.trajlint))
    size = page.stat().st_size
    driver = _browser()
    loads, opens, walls = [], [], []
    try:
        for _ in range(args.repeat):
            start = time.perf_counter()
            driver.get(page.as_uri())
            walls.append(time.perf_counter() - start)
            loads.append(driver.execute_script(
                "const t = performance.getEntriesByType('navigation')[0]; return t.loadEventEnd - t.startTime;") / 1000)
            opens.append(driver.execute_script(
                "const s = performance.now(); if (document.querySelector('#rows tr.openable'))"
                " window.trajlintOpenSample(0, null); return performance.now() - s;") / 1000)
        rows = int(driver.execute_script("return document.getElementById('rows').dataset.matched"))
        samples = driver.execute_script("return JSON.parse(document.getElementById('report-data').textContent).samples.length")
    finally:
        driver.quit()
    median = statistics.median
    print(f"input: {path} ({path.stat().st_size / 1e9:.2f} GB)")
    print(f"check, JSON report only:      {median(plain):7.1f} s  [{min(plain):.1f}-{max(plain):.1f}]")
    print(f"check, JSON and HTML reports: {median(with_html):7.1f} s  [{min(with_html):.1f}-{max(with_html):.1f}]"
          f"  ratio {median(with_html) / median(plain):.2f}")
    print(f"HTML report: {size / 1e6:.2f} MB, {rows:,} findings in its table (200 drawn until asked), {samples} sampled rows")
    print(f"opens in Chromium: load event after {median(loads):.2f} s [{min(loads):.2f}-{max(loads):.2f}]"
          f" (driver.get {median(walls):.2f} s); first drill-down {median(opens) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
