"""One root cause, one finding: rules that read a section a schema error already rejected add
nothing that would misstate what NeMo Gym reports (probe rows: a valid row with one field changed)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from trajlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
PERSISTED = ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl"


def _row(number: int) -> dict:
    return orjson.loads(PERSISTED.read_bytes().splitlines()[number - 1])


def _codes(row: dict, tmp_path: Path) -> list[str]:
    path = tmp_path / "row.jsonl"
    path.write_bytes(orjson.dumps(row) + b"\n")
    result = CliRunner().invoke(main, ["check", "--isolated", "--exit-zero", "--output-format", "json", str(path)])
    assert result.exit_code == 0, result.output
    # Health findings judge the rollout, not the file's shape (this row's recorded turns are hollow).
    return sorted(f["code"] for f in json.loads(result.stdout)["findings"] if f["severity"] != "info" and not f["code"].startswith("TL6"))


def test_the_base_row_is_clean(tmp_path):
    assert _codes(_row(1), tmp_path) == []


def test_a_damaged_trajectory_call_is_one_schema_finding_not_unmatched_references(tmp_path):
    # T_metadata_extra_key: NeMo Gym rejects the whole trajectory (record_unreadable); the
    # references to the damaged call do not "match no call".
    row = copy.deepcopy(_row(1))
    row["ng_trajectory"]["model_calls"][0]["response_metadata"]["bogus"] = 1
    codes = _codes(row, tmp_path)
    assert "TL104" in codes and "TL207" not in codes


def test_a_damaged_invocation_record_is_one_schema_finding_not_unknown_names(tmp_path):
    # O_invocation_id_int, O_record_without_kind, O_record_unknown_kind: NeMo Gym drops the bundle.
    base = _row(1)
    index = next(i for i, r in enumerate(base["ng_agent_observations"]["records"]) if r["kind"] == "agent_invocation")
    for damage in (
        lambda r: r.update(invocation_id=1),
        lambda r: r.pop("kind"),
        lambda r: r.update(kind="bogus"),
    ):
        row = copy.deepcopy(base)
        damage(row["ng_agent_observations"]["records"][index])
        codes = _codes(row, tmp_path)
        assert "TL103" in codes and "TL409" not in codes, codes


def test_an_unknown_invocation_name_is_still_found_when_nothing_is_damaged(tmp_path):
    row = copy.deepcopy(_row(1))
    tool = next(r for r in row["ng_agent_observations"]["records"] if r["kind"] == "tool_call")
    tool["invocation_id"] = "nobody"
    assert "TL409" in _codes(row, tmp_path)
