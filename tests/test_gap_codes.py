"""`observation-gap`'s table of NeMo Gym gap codes: complete for NeMo Gym 0.7.0, applied as written.

The codes NeMo Gym 0.7.0 and its agent integrations emit are read from its source by
`tools/nemo_gym_gap_codes.py` and committed in `tests/data/nemo-gym-0.7-gap-codes.json`. Without
NeMo Gym's venv (in CI) the table is checked against that list; with it (../shared/tools/
nemo-gym-0.7-venv.sh builds it; $NEMO_GYM_PYTHON points elsewhere) the list is checked against
the source itself.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from trajlint.check import catalog
from trajlint.check.rules.drift import gap_codes
from trajlint.check.select import rule_set

from .conftest import ROOT, check_paths
from .rule_rows import findings, of

sys.path.insert(0, str(ROOT / "tools"))
import nemo_gym_gap_codes as gap_tool  # noqa: E402

COMMITTED = json.loads(gap_tool.COMMITTED.read_text(encoding="utf-8"))
SITE_PACKAGES = gap_tool.site_packages_of(gap_tool.DEFAULT_GYM_PYTHON)
UNKNOWN = "a code trajlint does not know"


def _gap_row(gaps: list[dict]) -> dict:
    return {"_ng_task_index": 0, "_ng_rollout_index": 0,
            "ng_agent_observations": {"source": "test", "records": [], "gaps": gaps}}


# -- the table against NeMo Gym ------------------------------------------------------------------


def test_the_table_holds_every_code_nemo_gym_0_7_emits_and_no_other():
    emitted = set(COMMITTED["codes"])
    assert COMMITTED["nemo_gym"] == "0.7.0"
    assert len(emitted) > 100
    missing = {code: COMMITTED["codes"][code] for code in sorted(emitted - set(gap_codes()))}
    assert missing == {}, "add these to the [[gap]] table of rules/TL503-observation-gap.toml"
    # A code no NeMo Gym emits would be a typo, or a code that was renamed.
    assert set(gap_codes()) - emitted == set()


@pytest.mark.skipif(
    SITE_PACKAGES is None or gap_tool.installed_version(SITE_PACKAGES) != gap_tool.VERSION,
    reason="NeMo Gym 0.7.0 venv not available (../shared/tools/nemo-gym-0.7-venv.sh builds it); "
    "the table is still checked against the committed list",
)
def test_the_committed_list_is_what_nemo_gym_0_7_source_emits():
    result = gap_tool.extract(SITE_PACKAGES)
    assert result.unresolved == [], "read these sites and resolve them in tools/nemo_gym_gap_codes.py BY_HAND"
    extracted = gap_tool.document(result)["codes"]
    assert set(extracted) - set(COMMITTED["codes"]) == set(), "rerun tools/nemo_gym_gap_codes.py --write"
    assert extracted == COMMITTED["codes"], "rerun tools/nemo_gym_gap_codes.py --write"


def test_the_extractor_follows_helpers_branches_and_variables(tmp_path):
    (tmp_path / "nemo_gym-0.7.0.dist-info").mkdir()
    agents = tmp_path / "responses_api_agents" / "agent"
    (agents / "tests").mkdir(parents=True)
    (agents / "obs.py").write_text(textwrap.dedent('''
        from nemo_gym.rollout_observability import ObservationGap
        NAMED = "module_constant"

        def _gap(code, *, detail=None):
            return ObservationGap(code=code, detail=detail)

        class Observer:
            def gap(self, code, detail=None):
                self.gaps.append(_gap(code, detail=detail))

        def collect(gaps, ok):
            def add_gap(code):
                gaps.append(_gap(code))
            gaps.append(ObservationGap(code="literal"))
            gaps.append(ObservationGap("positional"))
            gaps.append(ObservationGap(code="yes" if ok else "no"))
            add_gap("through_two_helpers")
            local = "local_variable"
            gaps.append(ObservationGap(code=local))
            gaps.append(ObservationGap(code=NAMED))
            gaps.append(ObservationGap(code=ok.reason))
            bundle.setdefault("gaps", []).append({"code": "gap_dict"})
            run_tool({"code": "print(1)"})  # a tool's argument, not a gap
            return has_gap(gaps, "only_read")
    '''))
    (agents / "app.py").write_text('def run(observer):\n    observer.gap("method_in_another_module", "x")\n')
    (agents / "tests" / "test_obs.py").write_text('ObservationGap(code="from_a_test")\n')
    result = gap_tool.extract(tmp_path)
    assert set(result.codes) == {
        "literal", "positional", "yes", "no", "through_two_helpers", "local_variable", "module_constant",
        "gap_dict", "method_in_another_module",
    }
    assert result.codes["method_in_another_module"] == {"responses_api_agents/agent/app.py:2"}
    assert result.unresolved == ["responses_api_agents/agent/obs.py:22: ok.reason"]


# -- the table as the rule applies it -------------------------------------------------------------


def test_every_code_is_reported_with_its_severity_availability_and_meaning(rules, tmp_path):
    table = gap_codes()
    found = of(findings([_gap_row([{"code": code} for code in table])], rules, tmp_path), "observation-gap")
    assert len(found) == len(table)
    for finding in found:
        code = finding.message.split("`")[1]
        assert finding.message == f"NeMo Gym gap `{code}`: {table[code].meaning}"
        assert (finding.severity, finding.availability) == (table[code].severity, table[code].availability)


@pytest.mark.parametrize(
    ("code", "severity", "availability"),
    [
        ("turn_model_call_scope_incomplete", "info", True),  # NeMo Gym's health check reads it
        ("model_calls_unavailable", "info", True),  # added by the collector to nearly every row
        ("malformed_transcript_line", "warning", False),
        ("hermes_observer_error", "warning", False),
        ("subagent_hierarchy_incomplete", "warning", False),
        ("model_response_rejected", "info", False),
        ("agent_run_timeout", "info", False),
    ],
)
def test_codes_nemo_gym_agents_emit_are_known(rules, tmp_path, code, severity, availability):
    (finding,) = of(findings([_gap_row([{"code": code, "detail": "d"}])], rules, tmp_path), "observation-gap")
    assert UNKNOWN not in finding.message and "reported by the producer" not in finding.message
    assert (finding.severity, finding.availability) == (severity, availability)


def test_a_code_trajlint_does_not_know_is_a_listed_info(rules, tmp_path):
    gaps = [{"code": "a_code_from_the_future"}, {"code": "future_evidence_unavailable"}]
    found = of(findings([_gap_row(gaps)], rules, tmp_path), "observation-gap")
    assert [(f.message, f.severity, f.availability) for f in found] == [
        (f"NeMo Gym gap `a_code_from_the_future`: {UNKNOWN}", "info", False),
        ("NeMo Gym gap `future_evidence_unavailable`: reported by the producer", "info", False),
    ]


def test_a_severity_set_for_the_rule_keeps_the_availability_mark(rules, tmp_path):
    chosen = rule_set(rules, severity={"observation-gap": "error"})
    (finding,) = of(findings([_gap_row([{"code": "no_sandbox_runtime"}])], chosen, tmp_path), "observation-gap")
    assert (finding.severity, finding.availability) == ("error", True)


def test_the_real_corpus_holds_no_gap_code_trajlint_does_not_know(rules):
    paths = [ROOT / "tests" / "data" / "real", ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"]
    gaps = [f for f in check_paths(paths, rules).findings if f.name == "observation-gap"]
    assert gaps
    assert [f.message for f in gaps if UNKNOWN in f.message or "reported by the producer" in f.message] == []


# -- the catalog's [[gap]] entries ----------------------------------------------------------------

_ENTRY = '''code = "TL503"
name = "observation-gap"
severity = "warning"
summary = "s"
rationale = "r"
'''


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('gap = "x"', "array of tables"),
        ('[[gap]]\ncode = "Bad-Code"\nseverity = "info"\nmeaning = "m"', "bad gap code"),
        ('[[gap]]\ncode = "a"\nseverity = "error"\nmeaning = "m"', "severity must be warning or info"),
        ('[[gap]]\ncode = "a"\nseverity = "info"\nmeaning = " "', "`meaning` must be a non-empty string"),
        ('[[gap]]\ncode = "a"\nseverity = "warning"\navailability = true\nmeaning = "m"', "true only for an info"),
        ('[[gap]]\ncode = "a"\nseverity = "info"\navailability = 1\nmeaning = "m"', "true or false"),
        ('[[gap]]\ncode = "a"\nseverity = "info"\nmeaning = "m"\nsource = "x"', "unknown keys"),
        ('[[gap]]\ncode = "a"\nseverity = "info"\nmeaning = "m"\n[[gap]]\ncode = "a"\nseverity = "info"\nmeaning = "n"',
         "listed twice"),
    ],
)
def test_a_malformed_gap_table_is_rejected(tmp_path, table, message):
    path = tmp_path / "TL503-observation-gap.toml"
    path.write_text(_ENTRY + table + "\n", encoding="utf-8")
    with pytest.raises(catalog.CatalogError, match=message):
        catalog.load_entry(path)


def test_a_gap_table_is_read_in_order(tmp_path):
    path = tmp_path / "TL503-observation-gap.toml"
    path.write_text(
        _ENTRY
        + '[[gap]]\ncode = "b_gap"\nseverity = "info"\navailability = true\nmeaning = """two\n  lines"""\n'
        + '[[gap]]\ncode = "a_gap"\nseverity = "warning"\nmeaning = "one"\n',
        encoding="utf-8",
    )
    entry = catalog.load_entry(path)
    assert entry.gaps == (
        catalog.GapCode("b_gap", "info", "two lines", availability=True),
        catalog.GapCode("a_gap", "warning", "one"),
    )


def test_only_observation_gap_has_a_gap_table():
    assert [e.name for e in catalog.packaged().values() if e.gaps] == ["observation-gap"]


# -- `trajlint rule observation-gap` shows the table ------------------------------------------------


def test_the_rule_doc_shows_every_gap_code_in_its_group():
    from click.testing import CliRunner

    from trajlint.cli import main

    text = CliRunner().invoke(main, ["rule", "observation-gap"], catch_exceptions=False).output
    table = gap_codes()
    assert f"## Gap codes ({len(table)})" in text
    warnings, rest = text.split("### Warning\n", 1)[1].split("### Info\n", 1)
    infos, availability = rest.split("### Info, availability", 1)
    groups = {"warning": warnings, "info": infos, "availability": availability.split("## Fails", 1)[0]}
    for code, gap in table.items():
        group = "availability" if gap.availability else gap.severity
        assert f"- `{code}`: {gap.meaning}\n" in groups[group], code

    doc = json.loads(CliRunner().invoke(main, ["rule", "TL503", "--output-format", "json"]).output)
    assert {g["code"]: (g["severity"], g["availability"], g["meaning"]) for g in doc["gaps"]} == {
        code: (g.severity, g.availability, g.meaning) for code, g in table.items()
    }
    other = json.loads(CliRunner().invoke(main, ["rule", "TL104", "--output-format", "json"]).output)
    assert "gaps" not in other
