"""Conversation items as NeMo Gym 0.7.0 reads them: the model, the schema, the findings, the build, health.

tests/data/conversation-items.jsonl holds items with NeMo Gym 0.7.0's verdict on each (written by
tools/nemo_gym_items.py, which validates the item with NeMo Gym's own item union). Each probe is
a row NeMo Gym 0.7.0 wrote with one conversation item changed.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from pydantic import TypeAdapter, ValidationError

from trajlint.builder import build
from trajlint.check.run import run
from trajlint.contract import validate as validation
from trajlint.contract.conversation import MODELS, ConversationItem
from trajlint.contract.items import EASY, INPUT, ITEM_TYPES, OUTPUT, reading
from trajlint.read import iter_sources

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


# -- probes: a row NeMo Gym 0.7.0 wrote, one conversation item changed ------------------


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


# -- findings ----------------------------------------------------------------------------------


def _lint(rows: list[dict], rules, tmp_path, name="rows.jsonl"):
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    result = run(iter_sources([str(path)]), rules, max_row_bytes=1 << 28, health_report=True)
    assert result.internal_errors == 0, [f.message for f in result.findings if f.name == "internal-error"]
    return result


def _bundle_row(index: int, item) -> dict:
    records = [{"kind": "agent_invocation", "invocation_id": "root", "conversation": [{"role": "user", "content": "hi"}, item]}]
    return {"_ng_task_index": index, "_ng_rollout_index": 0, "ng_agent_observations": {"source": "s", "records": records, "gaps": []}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_finding_per_rejected_item_at_the_item(rules, tmp_path, monkeypatch, backend):
    monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", backend)
    validation._backend.cache_clear()
    try:
        result = _lint([_bundle_row(i, case["item"]) for i, case in enumerate(CASES)], rules, tmp_path)
    finally:
        validation._backend.cache_clear()
    found = {f.line: f for f in result.findings if f.code == "TL103"}
    for line, case in enumerate(CASES, start=1):
        if case["nemo_gym"] == "ok" or "schema_lax" in case:
            assert line not in found, (case["note"], found[line].message)
            continue
        finding = found[line]
        assert finding.pointer == f"{OBSERVED}/1", case["note"]
        assert finding.message.endswith(f"NeMo Gym 0.7.0 rejects the item, and with it {BUNDLE_DROPPED}"), finding.message
    assert len(found) == sum(1 for case in CASES if case["nemo_gym"] == "rejected" and "schema_lax" not in case)


def test_messages_do_not_depend_on_the_backend(rules, tmp_path, monkeypatch):
    if len(BACKENDS) < 2:
        pytest.skip("jsonschema-rs not installed")
    rows = [_bundle_row(i, case["item"]) for i, case in enumerate(CASES)]
    messages = {}
    for backend in BACKENDS:
        monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", backend)
        validation._backend.cache_clear()
        try:
            result = _lint(rows, rules, tmp_path, f"{backend}.jsonl")
        finally:
            validation._backend.cache_clear()
        messages[backend] = [(f.line, f.code, f.pointer, f.message) for f in result.findings]
    assert messages["python"] == messages["rust"]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"type": "function_call", "call_id": "c", "name": "bash"}, "a `function_call` item lacks `arguments`"),
        ({"type": "message", "role": "user", "content": 5}, "a `message` item has `content` as an integer 5, not a string or an array"),
        ({"type": "bogus"}, 'unknown conversation item type "bogus"'),
        ("hello", 'a conversation item must be an object, got a string "hello"'),
        ({"type": None}, "a conversation item's `type` must be a string, got null"),
        (
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x", "annotations": []}]},
            "a `message` item (read as an output message) lacks `id`",
        ),
        (
            {"call_id": "c", "name": "bash", "arguments": {"command": "ls"}},
            "an item without `type` (read as a `function_call` item) has `arguments` as an object, not a string",
        ),
        (
            {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}", "prompt_token_ids": [1]},
            "a `function_call` item carries token metadata without `generation_token_ids`, `generation_log_probs`",
        ),
        (
            {"type": "message", "role": {"name": "user"}, "content": "hi"},
            "NeMo Gym cannot tell what kind of item this is: its `role` is an object, where it expects a name",
        ),
        (
            {"type": "function_call", "name": 5, "arguments": "{}", "status": "done"},
            'a `function_call` item has `name` as an integer 5, not a string; has `status` "done", not one of'
            ' "in_progress", "completed", "incomplete", null; lacks `call_id`',
        ),
    ],
)
def test_the_message_says_what_is_wrong_with_the_item(rules, tmp_path, item, message):
    result = _lint([_bundle_row(0, item)], rules, tmp_path)
    (finding,) = [f for f in result.findings if f.code == "TL103"]
    assert finding.message.split("; NeMo Gym 0.7.0 rejects")[0] == message


# -- the probes' findings and health -----------------------------------------------------------


@pytest.mark.parametrize("name", PROBES)
def test_probe_gets_exactly_its_finding(rules, tmp_path, name):
    make, expected = PROBES[name]
    base = _lint([_real_row()], rules, tmp_path, "base.jsonl")
    probe = _lint([make()], rules, tmp_path, "probe.jsonl")
    new = _keyed(probe.findings) - _keyed(base.findings)
    if expected is None:
        assert new == set()
        return
    code, pointer, what, dropped = expected
    assert new == {(code, pointer, f"{what}; NeMo Gym 0.7.0 rejects the item, and with it {dropped}")}


def test_a_trajectory_with_a_bad_item_is_unreadable_as_nemo_gym_says(rules, tmp_path):
    base = _lint([_real_row()], rules, tmp_path, "base.jsonl")
    probe = _lint([PROBES["T_conv_item_unknown_type"][0]()], rules, tmp_path, "probe.jsonl")
    ((_, base_health),) = base.health  # one file, one run
    ((_, probe_health),) = probe.health
    (before,) = [orjson.loads(line) for line in base_health.verdict_rows()]
    (after,) = [orjson.loads(line) for line in probe_health.verdict_rows()]
    assert before["verdict"] == "healthy"
    assert after["verdict"] == "unhealthy"
    assert [f["check"] for f in after["findings"]] == ["record_unreadable"]


@pytest.mark.skipif(not GYM_PYTHON.exists(), reason="NeMo Gym 0.7.0 venv not available")
def test_nemo_gym_health_agrees_on_the_probes(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    import compare_health_with_nemo_gym as compare

    files = []
    for name in ("T_conv_item_unknown_type", "O_conv_item_unknown_type"):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(orjson.dumps(PROBES[name][0]()) + b"\n")
        files.append(path)
    unreadable, observed = compare.compare_files(files, str(GYM_PYTHON), False)
    assert unreadable["counts"]["record_unreadable"] == [1, 1]
    assert unreadable["verdicts"]["unhealthy"] == [1, 1]
    assert observed["counts"]["record_unreadable"] == [0, 0]
    # trajlint still judges what it salvaged, which NeMo Gym leaves unobserved: by design.
    for result in (unreadable, observed):
        assert {d["category"] for d in result["differences"]} <= set(compare.BY_DESIGN), result["differences"]
