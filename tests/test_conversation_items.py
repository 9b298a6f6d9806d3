"""Conversation items as NeMo Gym 0.7.0 reads them: the model, the schema and the build.

tests/data/conversation-items.jsonl holds items with NeMo Gym 0.7.0's verdict on each (written by
tools/nemo_gym_items.py, which validates the item with NeMo Gym's own item union). The probes are
the audit's (contract-audit Appendix 1): one conversation item of a row NeMo Gym 0.7.0 wrote,
changed.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from pydantic import TypeAdapter, ValidationError

from trajlint.builder import build
from trajlint.contract import validate as validation
from trajlint.contract.conversation import MODELS, ConversationItem
from trajlint.contract.items import EASY, INPUT, ITEM_TYPES, OUTPUT, reading

from .conftest import ROOT

CASES_FILE = ROOT / "tests" / "data" / "conversation-items.jsonl"
CASES = [orjson.loads(line) for line in CASES_FILE.read_bytes().splitlines() if line.strip()]
REAL_ROW = ROOT / "tests" / "data" / "real" / "nemo-gym-0.7.0-writers" / "legacy_rollouts.jsonl"
GYM_PYTHON = Path(os.environ.get("NEMO_GYM_PYTHON", "/tmp/nemo-gym-0.7-venv/bin/python"))
ITEM = TypeAdapter(ConversationItem)
BACKENDS = ["python"] + (["rust"] if importlib.util.find_spec("jsonschema_rs") else [])

OBSERVED = "/ng_agent_observations/records/0/conversation"
STATED = "/ng_trajectory/invocations/0/conversation"
BUNDLE_DROPPED = "the whole observation bundle (its collector drops the bundle with the gap `agent_observations_invalid`)"
TRAJECTORY_DROPPED = (
    "the whole trajectory (`record_unreadable` in its health check; its collector drops the trajectory"
    " with the gap `producer_trajectory_invalid`)"
)


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


# -- the audit's probes: a row NeMo Gym 0.7.0 wrote, one conversation item changed ------------------


def _real_row() -> dict:
    return orjson.loads(REAL_ROW.read_bytes().splitlines()[0])


def _probe(where: str, index: int, item) -> dict:
    row = _real_row()
    holder = row["ng_agent_observations"]["records"] if where == "observed" else row["ng_trajectory"]["invocations"]
    holder[0]["conversation"][index] = item
    return row


def _function_call_without_arguments() -> dict:
    item = copy.deepcopy(_real_row()["ng_agent_observations"]["records"][0]["conversation"][1])
    assert item["type"] == "function_call"
    del item["arguments"]
    return item


# probe -> (the row, the new finding: code, pointer, message before the consequence, the consequence)
PROBES = {
    "O_conv_function_call_missing_args": (
        lambda: _probe("observed", 1, _function_call_without_arguments()),
        ("TL103", f"{OBSERVED}/1", "a `function_call` item lacks `arguments`", BUNDLE_DROPPED),
    ),
    "O_conv_item_bad_content": (
        lambda: _probe("observed", 0, {"type": "message", "role": "user", "content": 5}),
        ("TL103", f"{OBSERVED}/0", "a `message` item has `content` as an integer 5, not a string or an array", BUNDLE_DROPPED),
    ),
    "O_conv_item_string": (
        lambda: _probe("observed", 0, "What is 17 * 23?"),
        ("TL103", f"{OBSERVED}/0", 'a conversation item must be an object, got a string "What is 17 * 23?"', BUNDLE_DROPPED),
    ),
    "O_conv_item_unknown_type": (
        lambda: _probe("observed", 0, {"type": "bogus"}),
        ("TL103", f"{OBSERVED}/0", 'unknown conversation item type "bogus"', BUNDLE_DROPPED),
    ),
    "O_conv_item_untyped_junk": (lambda: _probe("observed", 0, {"foo": "bar"}), None),
    "T_conv_item_unknown_type": (
        lambda: _probe("stated", 0, {"type": "bogus"}),
        ("TL104", f"{STATED}/0", 'unknown conversation item type "bogus"', TRAJECTORY_DROPPED),
    ),
}


def _keyed(findings) -> set[tuple[str, str, str]]:
    return {(f.code, f.pointer, f.message) for f in findings}


# -- the build ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in PROBES if PROBES[n][1] is not None])
def test_the_build_leaves_out_only_the_bad_item(name):
    row = PROBES[name][0]()
    built = build(row)
    _, pointer, _, _ = PROBES[name][1]
    assert built.evidence.excluded == [pointer]
    trajectory = built.trajectory
    assert [inv["invocation_id"] for inv in trajectory["invocations"]] == ["inv_0-0"]
    # The invocation keeps its claims: its turns are still owned, nothing is left unclaimed.
    assert len(trajectory["turns"]) == 2
    assert all(claim.valid for call in built.ledger.calls for claim in call.claims)
    gap = "producer_trajectory_invalid" if name.startswith("T_") else "agent_observations_invalid"
    assert gap in [g["code"] for g in trajectory["gaps"]]
    built.record()  # what the build keeps is what NeMo Gym can read


def test_an_invocation_read_only_from_observations_keeps_its_good_items():
    row = _probe("observed", 0, {"type": "bogus"})
    del row["ng_trajectory"]
    built = build(row)
    (invocation,) = built.trajectory["invocations"]
    assert [item.get("type") for item in invocation["conversation"]] == ["function_call", "function_call_output", "message"]
    assert built.evidence.excluded == [f"{OBSERVED}/0"]
    # Its claims on the two captured calls stand (the persisted capture holds no payloads, so no turns).
    owners = [(claim.kind, claim.owner, claim.valid) for call in built.ledger.calls for claim in call.claims]
    assert owners == [("agent", "inv_0-0", True)] * 2
    built.record()


def test_an_invocation_bad_beyond_its_conversation_is_left_out_whole():
    row = _probe("observed", 0, {"type": "bogus"})
    del row["ng_trajectory"]
    row["ng_agent_observations"]["records"][0]["status"] = "done"
    built = build(row)
    assert built.evidence.excluded == ["/ng_agent_observations/records/0"]
    assert built.trajectory["invocations"] == []
