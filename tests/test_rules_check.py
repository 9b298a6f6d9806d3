"""The rule catalog on whole files: clean rows stay clean, broken rows are found, pointers resolve."""

from __future__ import annotations

import copy

import orjson
import pytest

from trajlint.check import catalog
from trajlint.check.run import run
from trajlint.check.select import rule_set
from trajlint.read import iter_sources

from .conftest import EXAMPLES, ROOT, check_paths
from .rule_rows import assert_pointers_resolve, findings, of, value_paths

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
GYM_ROWS = ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"
FIXTURES = [SAMPLES, EXAMPLES / "broken.jsonl", GYM_ROWS]  # the clean example has no finding at all


def _rows(path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@pytest.mark.parametrize("path", [SAMPLES, EXAMPLES / "clean.jsonl"], ids=["samples", "examples"])
def test_clean_rows_raise_no_error(rules, path):
    result = check_paths([path], rules)
    assert result.rows == len(_rows(path))
    assert [(f.line, f.name, f.pointer) for f in result.findings if f.severity == "error"] == []
    # ... and nothing that would fail `--fail-level warning` either
    assert [(f.line, f.name, f.pointer) for f in result.findings if f.severity == "warning"] == []


def test_the_clean_example_has_no_finding_at_all(rules):
    assert check_paths([EXAMPLES / "clean.jsonl"], rules).findings == []


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_pointer_resolves_in_its_row(rules, path):
    result = check_paths([path], rules)
    assert result.findings
    assert_pointers_resolve(path, result.findings)


def test_every_catalog_example_pointer_resolves(rules, tmp_path):
    for entry in catalog.packaged().values():
        for i, example in enumerate(entry.examples):
            if example.missing:
                continue
            path = tmp_path / f"{entry.code}-{i}.jsonl"
            path.write_text(example.jsonl, encoding="utf-8")
            result = run(iter_sources([str(path)]), rules, max_row_bytes=example.max_row_bytes or 1 << 28)
            assert_pointers_resolve(path, result.findings)


# -- a file mixing clean and broken rows -------------------------------------------------------


def _reidentify(row: dict, rollout_index: int) -> dict:
    """The same rollout evidence under another rollout id, so copies are not duplicates."""
    row = copy.deepcopy(row)
    row["_ng_rollout_index"] = rollout_index
    rollout_id = f"{row['_ng_task_index']}-{rollout_index}"
    if "ng_model_call_capture" in row:
        row["ng_model_call_capture"]["rollout_id"] = rollout_id
    if "ng_trajectory" in row:
        row["ng_trajectory"]["rollout_id"] = rollout_id
        for turn in row["ng_trajectory"]["turns"]:
            turn["rollout_id"] = rollout_id
    return row


def _broken(clean: list[dict]) -> list[tuple[dict, str]]:
    """(row, the rule that must find it), one defect each, built from the clean rows."""
    judged, harness, producer = (_reidentify(r, 90 + i) for i, r in enumerate(clean))
    judged["ng_verifier_invocations"].append({"invocation_id": "verify-9", "model_calls": judged["ng_verifier_invocations"][0]["model_calls"]})
    first = harness["ng_model_call_capture"]["calls"][0]["model_call_id"]
    harness["ng_agent_observations"]["records"].append(
        {"kind": "agent_invocation", "invocation_id": "intruder", "status": "completed",
         "model_calls": [{"model_call_id": first}], "conversation": []})
    producer["ng_model_call_capture"]["calls"][0]["tokens_out"] = -3
    return [(judged, "verifier-claim-conflict"), (harness, "ownership-conflict"), (producer, "negative-count")]


def test_a_mixed_file_reports_only_its_broken_rows(rules, tmp_path):
    clean = _rows(EXAMPLES / "clean.jsonl")
    broken = _broken(clean)
    rows, expected = [], {}
    for good, (bad, rule) in zip(clean, broken):
        rows.append(good)
        rows.append(bad)
        expected[len(rows)] = rule
    found = findings(rows, rules, tmp_path)
    assert {f.line for f in found} == set(expected)
    for line, rule in expected.items():
        assert rule in {f.name for f in found if f.line == line}


# -- severities ---------------------------------------------------------------------------------


def _gap_rows() -> list[dict]:
    gaps = [{"code": "model_call_reference_conflict", "invocation_id": "root", "detail": "x"},
            {"code": "no_sandbox_runtime"}, {"code": "a_code_from_the_future"}]
    return [{"_ng_task_index": 0, "_ng_rollout_index": 0,
             "ng_agent_observations": {"source": "test", "records": [], "gaps": gaps}}]


def test_findings_keep_their_own_severity_under_the_catalog_default(rules, tmp_path):
    found = of(findings(_gap_rows(), rules, tmp_path), "observation-gap")
    assert [(f.pointer, f.severity) for f in found] == [
        ("/ng_agent_observations/gaps/0", "warning"),
        ("/ng_agent_observations/gaps/1", "info"),
        ("/ng_agent_observations/gaps/2", "info"),
    ]


def test_a_severity_set_for_the_rule_overrides_its_findings_own(rules, tmp_path):
    chosen = rule_set(rules, severity={"observation-gap": "error"})
    found = of(findings(_gap_rows(), chosen, tmp_path), "observation-gap")
    assert {f.severity for f in found} == {"error"}


# -- robustness ---------------------------------------------------------------------------------

JUNK = [None, "x", "", -1, 0, [], {}, True, 1.5, [1], {"a": 1}, "7"]


@pytest.mark.parametrize("value", [None, "string", 5, [1, 2], {"records": "x"}, {"calls": [1, None, "x"]}])
def test_rules_never_raise_on_malformed_sections(rules, tmp_path, value):
    r = {"_ng_task_index": 0, "_ng_rollout_index": 0}
    for key in ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory", "ng_verifier_invocations"):
        r[key] = value
    findings([r], rules, tmp_path)  # asserts no internal error



def _replace(node, path, value) -> None:
    """Put `value` at `path`, unless an earlier replacement already removed the place."""
    try:
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


def test_rules_never_raise_on_mutated_rows():
    """Seeded random damage to real rows: a rule may find anything, but never raise."""
    import random

    from trajlint.check.rule import IMPLEMENTATIONS, UNOBSERVED
    from trajlint.check.subject import row_subject

    rnd = random.Random(20260)
    rows = _rows(SAMPLES) + _rows(GYM_ROWS)
    sections = ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory", "ng_verifier_invocations")
    checked = 0
    for _ in range(120):
        r = copy.deepcopy(rnd.choice(rows))
        places = [p for p in value_paths(r) if p and p[0] in sections and len(p) <= 6]
        for path in rnd.sample(places, 2):
            _replace(r, path, copy.deepcopy(rnd.choice(JUNK)))  # JUNK is shared: never edited in place
        subject = row_subject("mutated.jsonl", 1, orjson.dumps(r))
        try:
            subject.build
        except Exception:  # noqa: BLE001 - the build's own robustness is tested with the build
            continue
        for impl in IMPLEMENTATIONS.values():
            if impl.check is not None and impl.reads <= subject.evidence:
                result = impl.check(subject)
                if result is not UNOBSERVED:
                    list(result)
        checked += 1
    assert checked > 90


def test_a_finding_with_an_unknown_severity_is_an_internal_error(rules, tmp_path):
    import dataclasses

    from trajlint.check.rule import Implementation, Violation

    def weighs_wrong(subject):
        yield Violation("", "x", severity="fatal")

    spec = next(s for s in rules.values() if s.name == "observation-gap")
    broken = dataclasses.replace(spec, impl=Implementation("observation-gap", frozenset({"row"}), check=weighs_wrong))
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"_ng_task_index": 0, "_ng_rollout_index": 0}\n')
    result = run(iter_sources([str(path)]), {**rules, spec.code: broken}, max_row_bytes=1 << 20)
    assert result.internal_errors == 1
    assert [f.name for f in result.findings] == ["internal-error"]
    assert "unknown severity 'fatal'" in result.findings[0].message
