"""The rule catalog: well-formed, one implementation per entry, every example does what it says."""

from __future__ import annotations

import pytest

from trajlint.check import catalog
from trajlint.check.registry import INTERNAL_ERROR, RuleSpec
from trajlint.check.rule import IMPLEMENTATIONS, Implementation
from trajlint.check.run import run
from trajlint.read import iter_sources, native

ENTRIES = list(catalog.packaged().values())
EXAMPLES = [
    pytest.param(entry, example, id=f"{entry.code}-{entry.name}-{example.expect}-{i}")
    for entry in ENTRIES
    for i, example in enumerate(entry.examples)
]


def test_catalog_and_implementations_match(rules):
    assert {spec.name for spec in rules.values()} == set(IMPLEMENTATIONS)
    assert len(rules) == len(ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.code)
def test_every_rule_has_a_failing_and_a_passing_example(entry):
    expects = {example.expect for example in entry.examples}
    assert "pass" in expects
    # internal-error cannot fail on data; test_internal_error_fires covers it.
    assert "fail" in expects or entry.name == INTERNAL_ERROR


def test_codes_follow_families():
    for entry in ENTRIES:
        assert entry.family in catalog.FAMILIES.values()
    assert catalog.packaged()["TL901"].family == "internal"


def _run_example(tmp_path, rules, example):
    path = tmp_path / example.filename
    if not example.missing:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(example.jsonl, encoding="utf-8")
    limit = example.max_row_bytes or 256 * 1024 * 1024
    return run(iter_sources([str(path)]), rules, max_row_bytes=limit)


@pytest.mark.parametrize(("entry", "example"), EXAMPLES)
def test_example(tmp_path, rules, entry, example):
    result = _run_example(tmp_path, rules, example)
    fired = [f for f in result.findings if f.code == entry.code]
    assert result.internal_errors == 0, [f.message for f in result.findings if f.name == INTERNAL_ERROR]
    if example.expect == "fail":
        assert fired, f"{entry.code} {entry.name} did not fire on: {example.description}"
    else:
        assert not fired, [f.message for f in fired]
        # A passing example is a clean row: no rule at all reports an error on it.
        assert [f for f in result.findings if f.severity == "error"] == []


def test_internal_error_fires(tmp_path, rules, monkeypatch):
    # The Python path: a row the native core proves clean is one no Python rule looks at (the
    # mode is cached: never set it for the session).
    monkeypatch.setattr(native, "mode", lambda: "off")

    def boom(subject):
        raise ZeroDivisionError("injected")

    broken = RuleSpec(
        catalog.packaged()["TL101"], Implementation("row-schema", frozenset({"row"}), check=boom), "error"
    )
    path = tmp_path / "rows.jsonl"
    path.write_text('{"_ng_task_index": 0, "_ng_rollout_index": 0}\n{"_ng_task_index": 1, "_ng_rollout_index": 0}\n')
    result = run(iter_sources([str(path)]), {**rules, "TL101": broken}, max_row_bytes=1 << 20)
    internal = [f for f in result.findings if f.name == INTERNAL_ERROR]
    assert result.internal_errors == 2
    assert [f.line for f in internal] == [1, 2]
    assert "TL101 row-schema raised ZeroDivisionError" in internal[0].message
    # The other rules still ran on both rows.
    assert result.coverage["TL104"].unobserved == 2


def test_malformed_entry_is_rejected(tmp_path):
    bad = tmp_path / "TL101-row-schema.toml"
    bad.write_text('code = "TL101"\nname = "row-schema"\nseverity = "fatal"\nsummary = "x"\nrationale = "y"\n')
    with pytest.raises(catalog.CatalogError, match="severity"):
        catalog.load(tmp_path)
    bad.write_text('code = "TL101"\nname = "other-name"\nseverity = "error"\nsummary = "x"\nrationale = "y"\n')
    with pytest.raises(catalog.CatalogError, match="must be named"):
        catalog.load(tmp_path)
