"""trajlint's health numbers against NeMo Gym 0.7.0's, file by file, on the real-data corpus.

NeMo Gym's numbers are committed (tests/data/real/nemo-gym-0.7-health.json, written by
tools/nemo_gym_real_health.py: `gym eval health-check` on each rollout file alone), so the
comparison runs without NeMo Gym; only the test that regenerates them needs its venv.
trajlint treats each input file as one run by default, so its per-run `quality_summary.json`
is the report of one file, as NeMo Gym's is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from trajlint.cli import main
from trajlint.report.health import SUMMARY_FILE, run_directory_name

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import nemo_gym_real_health as real_health  # noqa: E402
from compare_health_with_nemo_gym import DEFAULT_GYM_PYTHON  # noqa: E402

COMMITTED = real_health.DEFAULT_OUTPUT
COUNTS = ("records", "healthy", "unhealthy", "unobserved", "tasks")

# Files (relative to tests/data/real) whose health numbers differ from NeMo Gym's, each with why.
# Every difference must be listed, and every listed file must still differ.
KNOWN_DIFFERENCES: dict[str, str] = {}


def differences(theirs: dict[str, dict], ours: dict[str, dict]) -> dict[str, str]:
    """File -> how trajlint's numbers differ from NeMo Gym's, for every file where they do."""
    found = {}
    for path in sorted(theirs.keys() | ours.keys()):
        if path not in ours:
            found[path] = "NeMo Gym checked it as rollouts; trajlint wrote no report for it"
        elif path not in theirs:
            found[path] = "trajlint judged it as rollouts; NeMo Gym's numbers have no entry for it"
        elif theirs[path] != ours[path]:
            keys = [key for key in (*COUNTS, "issues") if theirs[path][key] != ours[path][key]]
            found[path] = "; ".join(f"{key}: NeMo Gym {theirs[path][key]}, trajlint {ours[path][key]}" for key in keys)
    return found


def unaccounted(found: dict[str, str], known: dict[str, str]) -> list[str]:
    """What the known differences fail to account for: unlisted differences, stale entries."""
    return [f"{path} differs: {how}" for path, how in found.items() if path not in known] + [
        f"{path} is listed as a known difference ({why}) but no longer differs"
        for path, why in known.items()
        if path not in found
    ]


@pytest.fixture(scope="module")
def trajlint_run(tmp_path_factory):
    """trajlint on the whole corpus: its JSON report and each rollout file's health numbers."""
    tmp = tmp_path_factory.mktemp("real-health")
    report_path, health_dir = tmp / "report.json", tmp / "health"
    result = CliRunner().invoke(
        main,
        ["check", "--isolated", "--exit-zero", "--output-format", f"json:{report_path}",
         "--health-report", str(health_dir), str(real_health.CORPUS)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    by_directory = {
        run_directory_name(str(path)): path.relative_to(real_health.CORPUS).as_posix()
        for path in real_health.corpus_files()
    }
    per_file = {}
    for directory in sorted(health_dir.iterdir()):
        assert directory.name in by_directory, f"a health report for no corpus file: {directory.name}"
        summary = orjson.loads((directory / SUMMARY_FILE).read_bytes())
        per_file[by_directory[directory.name]] = real_health.numbers(summary)
    return orjson.loads(report_path.read_bytes()), per_file


@pytest.fixture(scope="module")
def nemo_gym():
    return orjson.loads(COMMITTED.read_bytes())


def test_every_file_agrees_with_nemo_gym_or_is_a_known_difference(trajlint_run, nemo_gym):
    _, ours = trajlint_run
    assert unaccounted(differences(nemo_gym, ours), KNOWN_DIFFERENCES) == []


def test_the_summed_health_of_the_report_is_nemo_gyms(trajlint_run, nemo_gym):
    report, ours = trajlint_run
    # A known difference is trajlint's on purpose: its own numbers count for that file.
    files = [ours[path] if path in KNOWN_DIFFERENCES else numbers for path, numbers in nemo_gym.items()]
    issues: Counter[str] = Counter()
    for numbers in files:
        issues.update(numbers["issues"])
    health = report["summary"]["health"]
    assert health["runs"] == len(nemo_gym)
    assert health["rollouts"] == sum(numbers["records"] for numbers in files)
    assert health["verdicts"] == {v: sum(numbers[v] for numbers in files) for v in real_health.VERDICTS}
    assert health["tasks"]["total"] == sum(numbers["tasks"] for numbers in files)
    assert {check: n for check, n in health["issues"].items() if n} == dict(issues)


def test_the_corpus_exercises_every_verdict_and_an_issue(nemo_gym):
    # The comparison means something only if NeMo Gym's numbers are not all one verdict.
    totals = Counter()
    for numbers in nemo_gym.values():
        totals.update({key: numbers[key] for key in COUNTS})
        totals.update(numbers["issues"])
    assert all(totals[verdict] for verdict in real_health.VERDICTS)
    assert totals["record_unreadable"] > 0
    assert totals["tasks"] < totals["records"]  # some task has several rollouts


def test_an_unlisted_difference_and_a_stale_entry_both_fail():
    theirs = {
        "a.jsonl": {"records": 2, "healthy": 1, "unhealthy": 0, "unobserved": 1, "tasks": 1, "issues": {}},
        "b.jsonl": {"records": 1, "healthy": 1, "unhealthy": 0, "unobserved": 0, "tasks": 1, "issues": {}},
    }
    ours = {
        "a.jsonl": {**theirs["a.jsonl"], "healthy": 0, "unhealthy": 1, "issues": {"agent_turn_hollow": 1}},
        "b.jsonl": theirs["b.jsonl"],
        "c.jsonl": theirs["b.jsonl"],
    }
    found = differences(theirs, ours)
    assert found == {
        "a.jsonl": "healthy: NeMo Gym 1, trajlint 0; unhealthy: NeMo Gym 0, trajlint 1; "
        "issues: NeMo Gym {}, trajlint {'agent_turn_hollow': 1}",
        "c.jsonl": "trajlint judged it as rollouts; NeMo Gym's numbers have no entry for it",
    }
    assert unaccounted(found, {"a.jsonl": "why", "c.jsonl": "why"}) == []
    assert unaccounted(found, {"a.jsonl": "why"}) == [f"c.jsonl differs: {found['c.jsonl']}"]
    assert unaccounted(found, {"a.jsonl": "why", "b.jsonl": "why", "c.jsonl": "why"}) == [
        "b.jsonl is listed as a known difference (why) but no longer differs"
    ]


@pytest.mark.skipif(not Path(DEFAULT_GYM_PYTHON).exists(), reason="NeMo Gym 0.7.0 venv not available")
def test_the_committed_numbers_are_what_nemo_gym_says_today(tmp_path):
    output = tmp_path / "health.json"
    subprocess.run(
        [DEFAULT_GYM_PYTHON, str(ROOT / "tools" / "nemo_gym_real_health.py"),
         "--trajlint-python", sys.executable, "-o", str(output)],
        check=True, capture_output=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ""},
    )
    assert output.read_bytes() == COMMITTED.read_bytes()
