"""Conversation items as NeMo Gym 0.7.0 reads them: the model and the schema against NeMo Gym's own verdicts.

tests/data/conversation-items.jsonl holds items with NeMo Gym 0.7.0's verdict on each (written by
tools/nemo_gym_items.py, which validates the item with NeMo Gym's own item union).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from pydantic import TypeAdapter, ValidationError

from trajlint.contract import validate as validation
from trajlint.contract.conversation import MODELS, ConversationItem
from trajlint.contract.items import EASY, INPUT, ITEM_TYPES, OUTPUT, reading

from .conftest import ROOT

CASES_FILE = ROOT / "tests" / "data" / "conversation-items.jsonl"
CASES = [orjson.loads(line) for line in CASES_FILE.read_bytes().splitlines() if line.strip()]
GYM_PYTHON = Path(os.environ.get("NEMO_GYM_PYTHON", "/tmp/nemo-gym-0.7-venv/bin/python"))
ITEM = TypeAdapter(ConversationItem)
BACKENDS = ["python"] + (["rust"] if importlib.util.find_spec("jsonschema_rs") else [])


def _ids(case: dict) -> str:
    return case["note"]


def _schema_accepts(item, backend: str) -> bool:
    return validation._checker("conversation-item", backend).is_valid(item)


def _model_accepts(item) -> bool:
    try:
        ITEM.validate_python(item)
    except ValidationError:
        return False
    return True


# -- the model and the schema against NeMo Gym's verdicts ------------------------------------------


def test_every_type_and_reading_has_its_model():
    assert set(MODELS) == {*ITEM_TYPES, EASY, INPUT, OUTPUT} - {"message"}


def test_cases_cover_every_item_type_and_reading():
    accepted = {reading(case["item"]) for case in CASES if case["nemo_gym"] == "ok"}
    assert set(MODELS) <= accepted
    typed = {case["item"]["type"] for case in CASES if isinstance(case["item"], dict) and "type" in case["item"]}
    assert set(ITEM_TYPES) <= typed
    assert len([c for c in CASES if c["nemo_gym"] == "rejected"]) > 100


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_the_model_reads_items_as_nemo_gym_does(case):
    assert _model_accepts(case["item"]) == (case["nemo_gym"] == "ok"), case.get("nemo_gym_error")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_the_schema_reads_items_as_nemo_gym_does(case, backend):
    expected = case["nemo_gym"] == "ok" or "schema_lax" in case
    assert _schema_accepts(case["item"], backend) == expected, case.get("nemo_gym_error")


def test_the_schema_is_lax_only_where_it_says():
    lax = [case for case in CASES if "schema_lax" in case]
    assert [case["nemo_gym"] for case in lax] == ["rejected"] * len(lax)
    assert all(_schema_accepts(case["item"], "python") for case in lax)


@pytest.mark.skipif(not GYM_PYTHON.exists(), reason="NeMo Gym 0.7.0 venv not available")
def test_the_recorded_verdicts_are_nemo_gyms():
    stripped = b"".join(orjson.dumps({"note": c["note"], "item": c["item"]}) + b"\n" for c in CASES)
    judged = subprocess.run(
        [str(GYM_PYTHON), str(ROOT / "tools" / "nemo_gym_items.py")],
        input=stripped, capture_output=True, check=True, cwd="/",
    ).stdout
    verdicts = [orjson.loads(line)["nemo_gym"] for line in judged.splitlines()]
    assert verdicts == [case["nemo_gym"] for case in CASES]
