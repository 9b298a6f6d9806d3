"""trajlint's rollout health against NeMo Gym 0.7.0's own `gym eval health-check`, on the same rows.

Skips cleanly when NeMo Gym's venv is absent (../shared/tools/nemo-gym-0.7-venv.sh builds it;
$NEMO_GYM_PYTHON points elsewhere). Every difference must be one trajlint makes by design, and
on rows NeMo Gym persisted itself the Responses and Chat rollouts agree check by check.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .conftest import EXAMPLES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import compare_health_with_nemo_gym as compare  # noqa: E402

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
PERSISTED = ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"
GENERATOR = ROOT / "bench" / "generate.py"
pytestmark = pytest.mark.skipif(
    not Path(compare.DEFAULT_GYM_PYTHON).exists(), reason="NeMo Gym 0.7.0 venv not available"
)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Each input compared once; one NeMo Gym process per mode (importing it takes seconds)."""
    tmp = tmp_path_factory.mktemp("health-parity")
    examples = tmp / "examples.jsonl"  # clean and broken examples use different task indices
    examples.write_bytes((EXAMPLES / "clean.jsonl").read_bytes() + (EXAMPLES / "broken.jsonl").read_bytes())
    as_is, persisted = {"fixture": PERSISTED}, {"samples": SAMPLES, "examples": examples}
    if GENERATOR.exists():
        mixed = tmp / "mixed.jsonl"
        subprocess.run(
            [sys.executable, str(GENERATOR), "--rows", "150", "--seed", "11", "-o", str(mixed)],
            check=True, capture_output=True,
        )
        as_is["mixed"] = persisted["mixed-persisted"] = mixed
    with ThreadPoolExecutor(2) as pool:
        runs = [
            (names, pool.submit(compare.compare_files, list(paths), compare.DEFAULT_GYM_PYTHON, persist))
            for names, paths, persist in ((list(as_is), as_is.values(), False), (list(persisted), persisted.values(), True))
        ]
        return {name: result for names, future in runs for name, result in zip(names, future.result())}


def _categories(result) -> set[str]:
    return {d["category"] for d in result["differences"]}


def test_every_difference_is_by_design(results):
    for name, result in results.items():
        unexplained = [d for d in result["differences"] if d["category"] not in compare.BY_DESIGN]
        assert unexplained == [], (name, "\n".join(compare.render(result)))


def test_on_rows_nemo_gym_persisted_only_anthropic_turns_and_compaction_helpers_differ(results):
    for name in ("fixture", "samples"):
        result = results[name]
        assert _categories(result) <= {"anthropic", "compaction-helper", "follows"}, name
        differing = {check for check, (theirs, ours) in result["counts"].items() if theirs != ours}
        assert differing <= {"agent_turn_hollow", "rollout_token_count_mismatch", "task_consistently_unhealthy"}, name
        # Responses and Chat rollouts agree check by check: every hollow turn NeMo Gym sees and
        # trajlint does not is on an Anthropic Messages call.
        hollow = [d for d in result["differences"] if d["check"] == "agent_turn_hollow"]
        assert all(d["category"] == "anthropic" for d in hollow), name


def test_hollow_recorded_turns_are_flagged_as_nemo_gym_flags_them(results):
    # NeMo Gym 0.7.0 persisted these Anthropic Messages turns hollow; training reads the recorded
    # trajectory, so both flag them (trajlint's drift rule adds that the calls said more).
    fixture = results["fixture"]
    theirs, ours = fixture["counts"]["agent_turn_hollow"]
    assert theirs == ours > 0
    assert fixture["verdicts"]["unhealthy"][0] == fixture["verdicts"]["unhealthy"][1] == 3


def test_broken_examples_agree_on_what_both_judge(results):
    counts = results["examples"]["counts"]
    for check in ("record_unreadable", "rollout_duplicate_identity", "trajectory_capture_mismatch"):
        assert counts[check][0] == counts[check][1] > 0, check


@pytest.mark.skipif(not GENERATOR.exists(), reason="bench/generate.py not present")
def test_generated_rows_persisted_by_nemo_gym_agree_but_for_design(results):
    result = results["mixed-persisted"]
    assert _categories(result) <= {"anthropic", "compaction-helper", "damaged", "salvaged", "follows", "not-persisted"}
    for check in ("record_unreadable", "rollout_duplicate_identity", "model_call_missing_token_counts"):
        assert result["counts"][check][0] == result["counts"][check][1], check
