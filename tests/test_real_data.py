"""The real-data corpus (tests/data/real/: files NeMo Gym's releases ship and rows its own writers
make) passes clean but for the defects listed here, each explained.

A false error on a file NeMo Gym itself wrote is a bug as serious as a crash, so every error
finding on the corpus must be a listed, explained true positive, and every listed one must
still be found.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "real"

PLACEHOLDERS = "v0.2.0/resources_servers__jailbreak_detection__data__example_rollouts.jsonl"
#: (file under tests/data/real, line, rule code) -> why it is a true positive.
TRUE_POSITIVES: dict[tuple[str, int, str], str] = {
    (PLACEHOLDERS, line, "TL002"): "a `<PLACEHOLDER ROW>` line is not JSON; NeMo Gym's health check calls it record_unreadable"
    for line in range(1, 6)
}


@pytest.fixture(scope="module")
def report() -> dict:
    result = CliRunner().invoke(main, ["check", "--isolated", "--exit-zero", "--output-format", "json", str(REAL)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _relative(path: str) -> str:
    return Path(path).resolve().relative_to(REAL).as_posix()


def test_every_error_is_a_listed_true_positive(report):
    errors = {(_relative(f["path"]), f["line"], f["code"]) for f in report["findings"] if f["severity"] == "error"}
    unexplained = sorted(errors - set(TRUE_POSITIVES))
    assert unexplained == [], f"{len(unexplained)} errors on files NeMo Gym wrote: {unexplained[:20]}"
    assert sorted(set(TRUE_POSITIVES) - errors) == [], "a listed true positive is no longer found"


def test_no_internal_error_and_no_unknown_gap_code(report):
    assert report["summary"]["internal_errors"] == 0
    assert not [f for f in report["findings"] if "a code trajlint does not know" in f["message"]]


def test_default_output_is_a_few_lines_per_defective_row():
    result = CliRunner().invoke(main, ["check", "--isolated", "--exit-zero", str(REAL)])
    lines = result.stdout.splitlines()
    findings = [line for line in lines if line and not line.startswith((" ", "Found", "Rollout", "("))]
    per_row = Counter(line.split(":", 2)[:2].__str__() for line in findings if line.count(":") >= 2)
    assert per_row and max(per_row.values()) <= 5, per_row.most_common(3)
    assert len(lines) <= 6 * len(per_row) + 200  # each finding a few lines, plus the per-file notes and summary
