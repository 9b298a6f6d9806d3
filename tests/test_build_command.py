"""The build job: rows out with their built trajectory and ledger; inputs untouched."""

from __future__ import annotations

import io
import os

import orjson

from trajlint.cli.build_job import write_builds
from trajlint.contract import schemas
from trajlint.read import iter_sources
from trajlint.report.write import same_file

from .conftest import EXAMPLES


def _input_rules(rules):
    return [r for r in rules.values() if r.entry.family == "input"]


def test_examples_build_to_valid_trajectories_and_stay_untouched(rules):
    paths = sorted(EXAMPLES.glob("*.jsonl"))
    before = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in paths}
    out = io.BytesIO()
    result = write_builds(iter_sources([str(EXAMPLES)]), _input_rules(rules), out, max_row_bytes=1 << 28)
    lines = out.getvalue().splitlines()
    assert result.rows == len(lines) == 10
    for line in lines:
        row = orjson.loads(line)
        assert schemas.validator("trajectory").is_valid(row["ng_trajectory"])
        assert set(row["trajlint"]) == {"ledger", "excluded"}
    assert [(f.line, f.name) for f in result.failures] == [(2, "invalid-json"), (4, "row-not-object"), (8, "invalid-json")]
    assert {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in paths} == before


def test_trajectory_only(rules):
    out = io.BytesIO()
    write_builds(iter_sources([str(EXAMPLES / "clean.jsonl")]), _input_rules(rules), out, max_row_bytes=1 << 28, trajectory_only=True)
    first = orjson.loads(out.getvalue().splitlines()[0])
    assert first["schema_version"] == "1.0" and first["task_id"] == "math-0017"


def test_same_file(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("{}\n")
    os.symlink(a, tmp_path / "link.jsonl")
    assert same_file(str(a), str(tmp_path / "link.jsonl"))
    assert same_file(str(a), str(tmp_path / "." / "a.jsonl"))
    assert not same_file(str(a), str(tmp_path / "b.jsonl"))
