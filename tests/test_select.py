"""Rule selection with ruff's semantics: select, extend-select, ignore, specificity, layers,
severities, profiles and per-file ignores."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from trajlint.check import select
from trajlint.check.select import FileIgnore, Layer, SelectorError
from trajlint.cli import main
from trajlint.findings import Finding

from .conftest import EXAMPLES


def codes(rules, *layers):
    return sorted(select.selected_codes(rules, layers))


def test_no_selection_runs_every_rule(rules):
    assert codes(rules) == sorted(rules)
    assert codes(rules, Layer(select=["ALL"])) == sorted(rules)


def _family(rules, *prefixes):
    return {code for code in rules if code.startswith(prefixes)}


@pytest.mark.parametrize(
    ("layer", "expected"),
    [
        (Layer(select=["TL104"]), lambda r: {"TL104"}),
        (Layer(select=["trajectory-schema"]), lambda r: {"TL104"}),
        (Layer(select=["TL1"]), lambda r: _family(r, "TL1")),
        (Layer(select=["TL10"]), lambda r: _family(r, "TL10")),
        (Layer(select=["TL0", "TL401"]), lambda r: _family(r, "TL0") | {"TL401"}),
        (Layer(select=["TL1"], ignore=["TL104"]), lambda r: _family(r, "TL1") - {"TL104"}),
        # The more specific selector wins, whichever list it is in.
        (Layer(select=["TL104"], ignore=["TL1"]), lambda r: {"TL104"}),
        (Layer(select=["trajectory-schema"], ignore=["ALL"]), lambda r: {"TL104"}),
        (Layer(select=["TL10"], ignore=["TL1"]), lambda r: _family(r, "TL10")),
        (Layer(select=["TL1"], ignore=["TL10"]), lambda r: _family(r, "TL1") - _family(r, "TL10")),
        # At equal specificity the ignore wins.
        (Layer(select=["TL104"], ignore=["trajectory-schema"]), lambda r: set()),
        (Layer(ignore=["TL1", "TL0"]), lambda r: set(r) - _family(r, "TL0", "TL1")),
        (Layer(extend_select=["TL104"]), lambda r: set(r)),
        (Layer(select=["TL0"], extend_select=["TL104"]), lambda r: _family(r, "TL0") | {"TL104"}),
    ],
)
def test_one_layer(rules, layer, expected):
    assert set(codes(rules, layer)) == expected(rules) | {"TL901"}


def test_later_layers_override_earlier_ones(rules):
    config = Layer(select=["TL1"], ignore=["TL104"])
    assert set(codes(rules, config, Layer(ignore=["TL105"]))) == _family(rules, "TL1") - {"TL104", "TL105"} | {"TL901"}
    assert set(codes(rules, config, Layer(extend_select=["TL104"]))) >= {"TL104"}
    assert set(codes(rules, config, Layer(select=["TL401"]))) == {"TL401", "TL901"}


def test_internal_error_cannot_be_deselected(rules):
    assert codes(rules, Layer(ignore=["ALL"])) == ["TL901"]
    assert codes(rules, Layer(select=["TL104"], ignore=["TL9", "internal-error"])) == ["TL104", "TL901"]


@pytest.mark.parametrize(
    ("selector", "hint"),
    [("TL10x", "'TL10'"), ("tl104", "'TL104'"), ("trajectory-schem", "'trajectory-schema'"), ("TL7", None), ("", None)],
)
def test_unknown_selectors_name_the_place_and_suggest(rules, selector, hint):
    with pytest.raises(SelectorError) as caught:
        select.selected_codes(rules, [Layer(select=[selector], origin={"select": "trajlint.toml: select"})])
    message = str(caught.value)
    assert f"unknown rule selector {selector!r} in trajlint.toml: select" in message
    if hint:
        assert f"(did you mean {hint}?)" in message


def test_split_takes_commas_and_repeats():
    assert select.split(["TL1,TL401", " trajectory-schema ", ""]) == ["TL1", "TL401", "trajectory-schema"]


def test_severities_profile_then_user_table_most_specific_last(rules, monkeypatch):
    levels = select.severities(rules, overrides={"TL104": "info", "TL1": "warning"})
    assert levels["TL104"] == "info" and levels["TL101"] == "warning" and levels["TL002"] == "error"
    monkeypatch.setitem(select.PROFILES, "nemo-gym-0.7", {"duplicate-rollout-identity": "warning"})
    levels = select.severities(rules, "nemo-gym-0.7", {"TL4": "info"})
    assert levels["TL401"] == "info"
    assert select.severities(rules, "nemo-gym-0.7")["TL401"] == "warning"
    with pytest.raises(SelectorError, match="must be one of error, warning, info"):
        select.severities(rules, overrides={"TL104": "fatal"})


def test_profiles_name_known_rules(rules):
    assert set(select.PROFILES) == {"latest", "nemo-gym-0.7"}
    names = {spec.name for spec in rules.values()}
    for profile, table in select.PROFILES.items():
        assert set(table) <= names, profile
        assert set(table.values()) <= {"error", "warning", "info"}


def test_rule_set_changes_only_the_severity(rules):
    chosen = select.rule_set(rules, [Layer(select=["TL104", "TL401"])], severity={"TL401": "warning"})
    assert sorted(chosen) == ["TL104", "TL401", "TL901"]
    assert chosen["TL401"].severity == "warning" and chosen["TL401"].entry is rules["TL401"].entry
    assert chosen["TL104"] is rules["TL104"]


def _finding(path, code="TL104", name="trajectory-schema"):
    return Finding(code, name, "error", "m", path, 1, "")


@pytest.mark.parametrize(
    ("pattern", "path", "applies"),
    [
        ("runs/old/*.jsonl", "runs/old/a.jsonl", True),
        ("runs/old/*.jsonl", "runs/new/a.jsonl", False),
        ("runs/**/*.jsonl", "runs/x/y/a.jsonl", True),
        ("**/legacy.jsonl", "legacy.jsonl", True),
        ("**/legacy.jsonl", "deep/er/legacy.jsonl", True),
        ("legacy.jsonl", "deep/er/legacy.jsonl", True),  # a bare name matches anywhere
        ("!runs/new/*", "runs/old/a.jsonl", True),
        ("!runs/new/*", "runs/new/a.jsonl", False),
        ("*.jsonl", "-", False),
        ("*.jsonl", "../outside/a.jsonl", False),
    ],
)
def test_file_ignore_globs(rules, tmp_path, monkeypatch, pattern, path, applies):
    base = tmp_path / "project"
    (base / "deep").mkdir(parents=True)
    monkeypatch.chdir(base)
    ignore = FileIgnore.parse(pattern, ["TL1"], rules, str(base))
    assert ignore.applies(path) is applies


def test_file_ignore_base_is_the_config_directory(rules, tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    ignore = FileIgnore.parse("sub/*.jsonl", ["TL104"], rules, str(tmp_path))
    assert ignore.applies("a.jsonl")  # ./a.jsonl is sub/a.jsonl from the config's directory


def test_drop_ignored_keeps_other_rules_and_internal_errors(rules, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ignores = [FileIgnore.parse("old/*", ["ALL"], rules, str(tmp_path))]
    findings = [
        _finding("old/a.jsonl"),
        _finding("old/a.jsonl", "TL901", "internal-error"),
        _finding("new/a.jsonl"),
    ]
    kept = select.drop_ignored(findings, ignores)
    assert [(f.path, f.code) for f in kept] == [("old/a.jsonl", "TL901"), ("new/a.jsonl", "TL104")]


# -- on the command line --------------------------------------------------------------------


def run_json(*args):
    result = CliRunner().invoke(main, ["check", "--output-format", "json", *args, str(EXAMPLES)])
    return result, (json.loads(result.output) if result.exit_code in (0, 1) else None)


def test_cli_selection_runs_only_the_selected_rules(rules):
    result, doc = run_json("--select", "TL1,TL401", "--ignore", "TL102")
    assert result.exit_code == 1
    assert set(doc["summary"]["rules"]) == {c for c in rules if c.startswith("TL1")} - {"TL102"} | {"TL401", "TL901"}
    assert {f["code"] for f in doc["findings"]} == {"TL104", "TL401"}


def test_cli_selection_repeatable_and_by_name():
    _, doc = run_json("--select", "invalid-json", "--extend-select", "TL003", "--extend-select", "TL401")
    assert {f["code"] for f in doc["findings"]} == {"TL002", "TL003", "TL401"}


def test_cli_selection_that_leaves_only_clean_rules_passes():
    result, doc = run_json("--select", "TL006")
    assert result.exit_code == 0 and doc["findings"] == []


def test_cli_unknown_selector_is_a_usage_error():
    result = CliRunner().invoke(main, ["check", "--ignore", "TL10x", str(EXAMPLES)])
    assert result.exit_code == 2
    assert "unknown rule selector 'TL10x' in --ignore (did you mean 'TL10'?)" in result.stderr
    assert "Traceback" not in result.stderr
