"""trajlint's build against NeMo Gym 0.7.0's own, on the samples, the examples and adversarial variants.

Skips cleanly when NeMo Gym's venv is absent (../shared/tools/nemo-gym-0.7-venv.sh builds it;
$NEMO_GYM_PYTHON points elsewhere). Every difference must be one trajlint makes by design.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import orjson
import pytest

from .conftest import EXAMPLES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import compare_with_nemo_gym as compare  # noqa: E402

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
pytestmark = pytest.mark.skipif(
    not Path(compare.DEFAULT_GYM_PYTHON).exists(), reason="NeMo Gym 0.7.0 venv not available"
)
BY_DESIGN = {"anthropic", "item-defaults", "compaction-helper", "verifier", "salvaged"}


def _rows() -> list[dict]:
    lines = SAMPLES.read_bytes().splitlines() + (EXAMPLES / "clean.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def _invocations(row: dict) -> list[dict]:
    bundle = row.get("ng_agent_observations") or {}
    return [r for r in bundle.get("records", []) if r.get("kind") == "agent_invocation"]


def variants(row: dict) -> list[dict]:
    """Well-typed but adversarial changes to the ownership evidence of a raw harness row."""
    out = []
    calls = (row.get("ng_model_call_capture") or {}).get("calls", [])
    invocations = _invocations(row)
    if "ng_trajectory" in row or not invocations or not calls:
        return out
    # Another invocation also claims the first call: by id (it takes the turn) and by pair (it does not).
    call = calls[0]
    for by_id in (True, False) if call.get("response_id") and call.get("model_ref") else (True,):
        v = copy.deepcopy(row)
        ref = (
            {"model_call_id": call["model_call_id"], "model_ref": None, "response_id": None}
            if by_id
            else {"model_call_id": None, "model_ref": call["model_ref"], "response_id": call["response_id"]}
        )
        v["ng_agent_observations"]["records"].append(
            {"kind": "agent_invocation", "invocation_id": "intruder", "status": "completed", "model_calls": [ref], "conversation": []}
        )
        out.append(v)
    # The first invocation forgets its last claim; the row states its resolution.
    v = copy.deepcopy(row)
    _invocations(v)[0]["model_calls"] = _invocations(v)[0]["model_calls"][:-1]
    v["resolved"] = False
    out.append(v)
    # A call that returned nothing; verifier evidence removed altogether.
    v = copy.deepcopy(row)
    v["ng_model_call_capture"]["calls"][0]["response"] = None
    v.pop("ng_verifier_invocations", None)
    for call in v["ng_model_call_capture"]["calls"]:
        call.pop("verifier_invocation_id", None)
    out.append(v)
    return out


def _corpus() -> list[dict]:
    rows = _rows()
    return rows + [v for row in rows for v in variants(row)]


def test_builds_match_nemo_gym_or_differ_by_design():
    corpus = _corpus()
    data = b"".join(orjson.dumps(row) + b"\n" for row in corpus)
    gyms = compare.gym_builds(compare.DEFAULT_GYM_PYTHON, data)
    assert len(gyms) == len(corpus)
    unexplained = []
    categories = set()
    for index, (row, gym) in enumerate(zip(corpus, gyms)):
        for category, text in compare.compare_row(row, gym):
            categories.add(category)
            if category not in BY_DESIGN:
                unexplained.append(f"row {index}: {category}: {text}")
    assert not unexplained, "\n".join(unexplained[:20])
    assert len(corpus) > 60 and "anthropic" in categories
