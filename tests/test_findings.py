"""Findings: fingerprints that survive moved rows, identity as NeMo Gym derives it."""

from __future__ import annotations

from trajlint.builder.identity import rollout_identity
from trajlint.findings import Rollout, fingerprint, severity_rank


def test_fingerprint_ignores_line_numbers_and_follows_identity(check, write_jsonl):
    row = '{"_ng_task_index": 3, "_ng_rollout_index": 1, "_ng_rollout_index_typo": 1, "ng_trajectory": {"schema_version": "2.0"}}'
    first = check(write_jsonl(row + "\n", "a.jsonl")).findings
    moved = check(write_jsonl("\n\n" + '{"_ng_task_index": 0, "_ng_rollout_index": 0}\n' + row + "\n", "b.jsonl")).findings
    assert [f.line for f in first] != [f.line for f in moved]
    assert sorted(f.fingerprint for f in first) == sorted(f.fingerprint for f in moved)


def test_fingerprint_without_identity_uses_path_and_content():
    a = fingerprint("TL002", "", None, "x.jsonl", b"{bad")
    assert a == fingerprint("TL002", "", None, "x.jsonl", b"{bad")
    assert a != fingerprint("TL002", "", None, "x.jsonl", b"{worse")
    assert a != fingerprint("TL002", "", None, "y.jsonl", b"{bad")
    with_id = fingerprint("TL104", "/ng_trajectory", Rollout("t", "0-0"), "x.jsonl", b"anything")
    assert with_id == fingerprint("TL104", "/ng_trajectory", Rollout("t", "0-0"), "other.jsonl", b"else")


def test_severity_rank():
    assert severity_rank("error") < severity_rank("warning") < severity_rank("info")


def test_identity_from_indices_and_task_id():
    assert rollout_identity({"_ng_task_index": 4, "_ng_rollout_index": 2}) == Rollout("4", "4-2")
    assert rollout_identity({"_ng_task_index": 4, "_ng_rollout_index": 2, "task_id": "t-9"}) == Rollout("t-9", "4-2")
    assert rollout_identity({"_ng_task_index": 4, "_ng_rollout_index": 2, "problem_id": 17}) == Rollout("17", "4-2")
    # An Environment Server row: NeMo Gym names the trajectory after the dispatched task's id.
    task = {"taskset": "arith:demo", "task_id": "arith-001"}
    assert rollout_identity({"_ng_task_id": task, "_ng_task_index": 0, "_ng_rollout_index": 1}) == Rollout(
        "{'taskset': 'arith:demo', 'task_id': 'arith-001'}", "0-1"
    )
    assert rollout_identity({"_ng_task_index": 4, "_ng_rollout_index": 2, "_ng_attempt_index": 2}) == Rollout("4", "4-2-a2")
    assert rollout_identity({"_ng_task_index": 4, "_ng_rollout_id": "abc", "_ng_attempt_index": 1}) == Rollout("4", "abc-a1")
    assert rollout_identity({"_ng_task_index": 4, "_ng_rollout_index": 0, "_ng_attempt_index": 0}) == Rollout("4", "4-0")


def test_identity_not_derivable():
    assert rollout_identity({"task_id": "t", "_ng_rollout_index": 0}) is None  # NeMo Gym needs the index
    assert rollout_identity({"_ng_task_index": 1}) is None
    assert rollout_identity({"_ng_task_index": 1, "_ng_rollout_id": "-bad"}) is None
    assert rollout_identity({"_ng_task_index": 1, "_ng_rollout_id": 7}) is None
    assert rollout_identity({"_ng_task_index": 1, "_ng_rollout_index": 0, "_ng_attempt_index": "x"}) is None
