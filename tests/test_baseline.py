"""Baselines: record today's findings, then report only new ones and count the stale."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from trajlint.cli import main
from trajlint.contract import schemas
from trajlint.findings import Finding, Rollout
from trajlint.report import baseline

from .conftest import EXAMPLES


@pytest.fixture
def dirty(tmp_path, monkeypatch):
    """The broken example in a fresh directory that is also the working directory."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "broken.jsonl", tmp_path / "rollouts.jsonl")
    return tmp_path / "rollouts.jsonl"


def cli(*args):
    return CliRunner().invoke(main, list(args))


def check_json(*args):
    result = cli("check", "--output-format", "json", *args)
    assert result.exit_code in (0, 1), result.output
    return result, json.loads(result.stdout)


def test_baseline_then_new_defect_then_fixed_defect(dirty):
    _, before = check_json("rollouts.jsonl")
    total = len(before["findings"])
    recorded = cli("baseline", "rollouts.jsonl", "-o", "known.json")
    assert recorded.exit_code == 0, recorded.output
    assert f"recorded {total} findings in " in recorded.stderr

    result, doc = check_json("--baseline", "known.json", "rollouts.jsonl")
    assert result.exit_code == 0
    assert doc["findings"] == []
    assert doc["summary"]["baseline"] == {"path": "known.json", "suppressed": total, "stale": 0}
    assert list(schemas.validator("report").iter_errors(doc)) == []

    # A new defect in a new row is reported, alone.
    lines = dirty.read_text().splitlines(keepends=True)
    new_row = '[{"_ng_task_index": 99, "_ng_rollout_index": 0}]\n'
    dirty.write_text("".join([new_row, *lines]))  # also moves every baselined row down a line
    result, doc = check_json("--baseline", "known.json", "rollouts.jsonl")
    assert result.exit_code == 1
    assert [(f["code"], f["line"]) for f in doc["findings"]] == [("TL003", 1)]
    assert doc["summary"]["baseline"]["stale"] == 0

    # Fixing a baselined defect (the NaN row) leaves one stale entry.
    dirty.write_text("".join(line for line in lines if "NaN" not in line))
    result, doc = check_json("--baseline", "known.json", "rollouts.jsonl")
    assert result.exit_code == 0 and doc["findings"] == []
    assert doc["summary"]["baseline"] == {"path": "known.json", "suppressed": total - 1, "stale": 1}
    assert "1 stale baseline entry in known.json" in result.stderr


def test_counts_two_recorded_three_found_one_reported(dirty):
    row = '{"_ng_task_index": 7, "_ng_rollout_index": 0, "reward": NaN}\n'
    dirty.write_text(row * 2)
    assert cli("baseline", "-o", "b.json", "rollouts.jsonl").exit_code == 0
    (entry,) = json.loads((dirty.parent / "b.json").read_text())["entries"]
    assert entry["count"] == 2 and entry["path"] == "rollouts.jsonl"
    dirty.write_text(row * 3)
    result, doc = check_json("--baseline", "b.json", "rollouts.jsonl")
    assert result.exit_code == 1
    assert [f["line"] for f in doc["findings"]] == [3]
    assert doc["summary"]["baseline"]["suppressed"] == 2


def test_apply_is_count_aware_and_keeps_internal_errors():
    rollout = Rollout("t", "r")
    same = [Finding("TL104", "trajectory-schema", "error", "m", "a.jsonl", n, "/x", rollout=rollout) for n in (1, 2, 3)]
    crash = Finding("TL901", "internal-error", "error", "m", "a.jsonl", 4, "", rollout=rollout)
    document = baseline.record([*same[:2], crash])
    assert [e["count"] for e in document["entries"]] == [2]
    known = baseline.Baseline("b.json", _counts(document))
    kept, use = known.apply([*same, crash])
    assert [f.line for f in kept] == [3, 4]
    assert use == {"path": "b.json", "suppressed": 2, "stale": 0}
    kept, use = known.apply(same[:1])
    assert kept == [] and use["stale"] == 1


def _counts(document):
    from collections import Counter

    counts = Counter()
    for raw in document["entries"]:
        key, count = baseline._parse_entry(raw)
        counts[key] += count
    return counts


def test_keys_never_hold_line_numbers():
    a = Finding("TL002", "invalid-json", "error", "m", "a.jsonl", 3, "", fingerprint="f" * 32)
    b = Finding("TL002", "invalid-json", "error", "m", "a.jsonl", 9, "", fingerprint="f" * 32)
    assert baseline.key(a) == baseline.key(b)
    (entry,) = baseline.record([a, b])["entries"]
    assert entry == {
        "code": "TL002", "name": "invalid-json", "path": "a.jsonl", "fingerprint": "f" * 32, "pointer": "", "count": 2,
    }


def test_file_is_sorted_deterministic_and_free_of_run_data(dirty):
    cli("baseline", "rollouts.jsonl", "-o", "one.json")
    lines = dirty.read_text().splitlines(keepends=True)
    dirty.write_text("".join(reversed(lines)))  # same defects, other lines
    cli("baseline", "-o", "two.json", "rollouts.jsonl")
    one, two = (dirty.parent / "one.json").read_text(), (dirty.parent / "two.json").read_text()
    # Reversing the file changes only the fingerprints of the line-keyed entries (the truncated
    # last line now ends in a newline), never the order or the rollout-keyed entries.
    doc = json.loads(one)
    assert doc["schema_version"] == 1 and one.endswith("}\n")
    keys = [baseline._parse_entry(e)[0] for e in doc["entries"]]
    assert keys == sorted(keys)
    assert '"line"' not in one and "version" not in one.replace("schema_version", "")
    rollout_entries = [e for e in doc["entries"] if "rollout" in e]
    assert rollout_entries == [e for e in json.loads(two)["entries"] if "rollout" in e]
    cli("baseline", "rollouts.jsonl", "-o", "three.json")
    assert (dirty.parent / "three.json").read_text() == two


def test_paths_in_normal_form_match_however_named(dirty):
    cli("baseline", ".", "-o", "known.json")
    assert '"path": "rollouts.jsonl"' in (dirty.parent / "known.json").read_text()
    assert cli("check", "--baseline", "known.json", "./rollouts.jsonl").exit_code == 0
    (dirty.parent / "sub").mkdir()
    assert cli("check", "--baseline", "known.json", "sub/../rollouts.jsonl").exit_code == 0


def test_config_names_the_baseline(dirty):
    (dirty.parent / "trajlint.toml").write_text('baseline = "data/known.json"\n')
    (dirty.parent / "data").mkdir()
    missing = cli("check", "rollouts.jsonl")
    assert missing.exit_code == 2 and "does not exist; create it with `trajlint baseline" in missing.stderr
    assert cli("baseline", "rollouts.jsonl").exit_code == 0  # writes where the configuration says
    assert (dirty.parent / "data" / "known.json").is_file()
    result, doc = check_json("rollouts.jsonl")
    assert result.exit_code == 0 and doc["summary"]["baseline"]["suppressed"] > 0
    # --baseline on the command line wins; --isolated drops the configuration's.
    assert cli("check", "--isolated", "rollouts.jsonl").exit_code == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not valid JSON"),
        ('{"schema_version": 2, "entries": []}', "is not a trajlint baseline"),
        ('{"schema_version": 1, "entries": [{"code": "TL104"}]}', "needs a string code and pointer"),
        ('{"schema_version": 1, "entries": [{"code": "TL104", "pointer": "", "count": 0}]}', "bad count"),
        ('{"schema_version": 1, "entries": [{"code": "TL104", "pointer": ""}]}', "needs a rollout or a path"),
    ],
)
def test_bad_baseline_files_exit_2(dirty, content, message):
    (dirty.parent / "b.json").write_text(content)
    result = cli("check", "--baseline", "b.json", "rollouts.jsonl")
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_baseline_never_overwrites_an_input(dirty):
    before = dirty.read_bytes()
    result = cli("baseline", "rollouts.jsonl", "-o", "rollouts.jsonl")
    assert result.exit_code == 2 and dirty.read_bytes() == before


def test_text_summary_mentions_the_baseline(dirty):
    total = len(check_json("rollouts.jsonl")[1]["findings"])
    cli("baseline", "rollouts.jsonl", "-o", "known.json")
    result = cli("check", "--baseline", "known.json", "rollouts.jsonl")
    # The baseline holds what `check` listed; the availability note it did not list stays counted.
    assert result.stdout == (
        f"All checks passed: 7 rows in 1 file ({total} more in the baseline; "
        "1 availability note not shown; --show-availability shows them).\n"
    )
