"""A proved row's health judgement stands in for its row in the health report.

When the health report is on, a row the core proves clean hands back its judgement (the row
health checks it leaves unobserved, and its digest) instead of its row. These tests drive the
fast path with a judge written in Python from the Python path's own view of each line (the
reference), so they check the wiring — the report, the verdict lines, the coverage, check mode —
whatever the core proves today.
"""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from trajlint import api
from trajlint.check import fast
from trajlint.check.subject import row_subject
from trajlint.cli import main
from trajlint.health.checks import ROW_CHECKS
from trajlint.health.view import view_of
from trajlint.read import native

from .conftest import EXAMPLES, ROOT

REST = 1 << 20  # a family bit of this test's own: every rule the reference judge proves besides
REAL = ROOT / "tests" / "data" / "real"
FILES = [
    EXAMPLES / "clean.jsonl",
    EXAMPLES / "broken.jsonl",
    *sorted((REAL / "nemo-gym-0.7.0-writers").glob("*_rollouts*.jsonl")),
    REAL / "v0.6.0" / "environments__claude_code_math__data__example_rollouts.jsonl",
    REAL / "v0.6.0" / "environments__codex_math__data__example_rollouts.jsonl",
]


def _reference_proof(raw: bytes, extracts: int):
    """The proof the core would give of `raw` were it to prove every rule: from the Python path."""
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(row, dict):
        return None
    found = api.check_rows([raw], isolated=True, show_availability=True).findings
    if any(f.code not in fast.REDUCED | fast.RUN_LEVEL for f in found):
        return None
    subject = row_subject("-", 1, raw)
    view = view_of(subject)
    unobserved = sum(1 << i for i, check in enumerate(ROW_CHECKS) if view.findings(check) is None)
    digest = view.digest()
    bits = sum(1 << i for i, name in enumerate(fast.EVIDENCE) if name in subject.evidence)
    pairs = [(key, orjson.dumps(row[key]).decode()) for key in fast.IDENTITY_KEYS if key in row]
    parts = []
    for section, key in fast.EXTRACTS:
        asked = fast.STATED_ID if key == "rollout_id" else fast.GAPS
        if extracts & asked and isinstance(row.get(section), dict) and key in row[section]:
            parts.append((section, key, orjson.dumps(row[section][key]).decode()))
    fields = tuple(digest)
    unowned = [_unowned(subject, f.pointer) for f in found if f.code == "TL209"]
    return bits, pairs, parts, (unobserved, fields), unowned


def _unowned(subject, pointer: str) -> tuple:
    """The core's account of the unowned call TL209 points at, from the Python build's ledger."""
    entry = next(e for e in subject.build.ledger.calls if e.locations[0] == pointer)

    def position(prefix: str) -> int | None:
        return next((int(loc[len(prefix):]) for loc in entry.locations if loc.startswith(prefix)), None)

    return position("/ng_trajectory/model_calls/"), position("/ng_model_call_capture/calls/"), entry.model_call_id, entry.response_id


@pytest.fixture
def reference_core(monkeypatch):
    """The fast path with the reference judge; returns the lines it proved."""
    proofs = {}
    for path in FILES:
        for raw in path.read_bytes().splitlines():
            proofs[raw] = None
    with monkeypatch.context() as m:
        m.setattr(native, "mode", lambda: "off")
        for raw in proofs:
            proofs[raw] = [_reference_proof(raw, extracts) for extracts in range(4)]
    proved = []

    def check_row(raw, wanted, extracts=0, judges=False, partial=False):
        proof = proofs[raw][extracts] if raw in proofs else None
        if proof is not None:
            proved.append(raw)
        return proof

    written = frozenset().union(*fast.FAMILIES.values(), fast.STRICT, fast.RUN_LEVEL, fast.REDUCED, fast.JUDGED)
    rest = frozenset(entry.code for entry in api.rules()) - written
    families = {**fast.FAMILIES, REST: rest}
    monkeypatch.setattr(fast, "FAMILIES", families)
    monkeypatch.setattr(fast, "prover", lambda: None if native.mode() == "off" else (check_row, sum(families)))
    return proved


def _run(tmp_path, name: str, mode: str, monkeypatch) -> tuple[bytes, dict[str, bytes]]:
    out = tmp_path / name
    monkeypatch.setattr(native, "mode", lambda: mode)
    result = CliRunner().invoke(
        main, ["check", "--isolated", "--no-cache", "--jobs", "1", "--output-format", "json", "--statistics",
               "--health-report", str(out), *map(str, FILES)],
    )
    assert result.exit_code in (0, 1), result.output
    return result.stdout_bytes, {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_proved_rows_report_as_the_python_path(tmp_path, reference_core, monkeypatch):
    off = _run(tmp_path, "off", "off", monkeypatch)
    assert not reference_core
    on = _run(tmp_path, "on", "on", monkeypatch)
    assert len(set(reference_core)) >= 8, "the reference judge proved too few rows to test the wiring"
    assert on == off
    del reference_core[:]
    assert _run(tmp_path, "check", "check", monkeypatch) == off
    assert reference_core


def _checked_with(monkeypatch, change_judgement):
    """Check mode on the fast path with the reference judge, its judgements changed."""
    monkeypatch.setattr(native, "mode", lambda: "check")
    check_row = fast.prover()[0]

    def wrong(raw, wanted, extracts=0, judges=False, partial=False):
        proof = check_row(raw, wanted, extracts, judges, partial)
        if proof is None or type(proof) is int:
            return proof
        return (*proof[:3], change_judgement(*proof[3]), proof[4])

    monkeypatch.setattr(fast, "prover", lambda: (wrong, sum(fast.FAMILIES)))


def test_a_wrong_judgement_stops_a_checked_run(tmp_path, reference_core, monkeypatch):
    _checked_with(monkeypatch, lambda unobserved, fields: (unobserved, (fields[0] + 1, *fields[1:])))
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--jobs", "1", "--health-report", str(tmp_path / "h"), str(FILES[0])])
    assert result.exit_code == 2
    assert "the core judges the row's health as" in result.output


def test_a_wrong_unobserved_set_stops_a_checked_run(tmp_path, reference_core, monkeypatch):
    _checked_with(monkeypatch, lambda unobserved, fields: (unobserved ^ 0b111111111, fields))
    result = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--jobs", "1", str(FILES[0])])
    assert result.exit_code == 2
    assert "disagree" in result.output


def test_a_row_the_core_does_not_judge_is_not_proved_when_a_judgement_is_asked(core):
    """A row whose observations NeMo Gym does not accept whole (a record with a key its schema
    does not know) is one the health family does not judge: a run with the health report takes it
    the Python way, a run without proves it."""
    rows = [orjson.loads(raw) for raw in (EXAMPLES / "clean.jsonl").read_bytes().splitlines()]
    row = next(row for row in rows if isinstance(row.get("ng_agent_observations"), dict))
    assert core.check_row(orjson.dumps(row), 0, 0, True) is not None
    row["ng_agent_observations"]["records"][0]["output"] = "x"
    raw = orjson.dumps(row)
    assert core.check_row(raw, 0) is not None
    assert core.check_row(raw, 0, 0, True) is None
