"""Hostile input at the limits of the libraries trajlint stands on: rows nested as deep as orjson
reads, rows holding arrays of more items than orjson writes safely. Every row is checked, and
every row `trajlint build` reads is written, never a crash or a stop halfway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import zstandard
from click.testing import CliRunner

from trajlint.check.rules import strict_json
from trajlint.cli import build_job, main
from trajlint.row import values

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "clean.jsonl"


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"0" + b"]" * depth


def test_build_writes_every_row_around_one_nested_1000_deep(tmp_path):
    clean = EXAMPLE.read_bytes().splitlines()[:3]
    deep = clean[0][:-1] + b', "deep": ' + _nested(1000) + b"}"
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join([*clean, deep, *clean]) + b"\n")
    result = CliRunner().invoke(main, ["build", str(path)])
    assert result.exit_code == 0, result.stderr
    rows = result.stdout_bytes.splitlines()
    assert len(rows) == 7
    assert b'"deep":' + _nested(1000) in rows[3]
    assert orjson.loads(rows[3])["_ng_task_index"] == orjson.loads(clean[0])["_ng_task_index"]


def test_a_huge_array_is_written_in_pieces_equal_to_orjson(monkeypatch):
    monkeypatch.setattr(build_job, "WRITE_MAX_ITEMS", 10)
    monkeypatch.setattr(build_job, "small", lambda value: values.small(value, 10))
    document = {"a": list(range(57)), "b": {"c": [[1, 2], *[{"k": i} for i in range(30)]], "d": "x"}, "e": []}
    assert build_job._dumps(document) == orjson.dumps(document)


def test_values_too_large_to_write_get_a_placeholder_key():
    big = [0] * (values.WRITE_MAX_ITEMS + 1)
    assert not values.small(big) and not values.small([[0] * 10] * (values.WRITE_MAX_ITEMS // 5))
    assert values.small([[0] * 10] * 1000)
    assert values.hashable(big) != values.hashable(list(big))  # equal only to itself, never written
    assert values.group_key(big).startswith("<list of")


@pytest.mark.parametrize(
    "row",
    [
        b'{"a": 1, "b": {"c": [1, {"d": 2, "d": 3}]}, "s": "x:y"}',
        b'{"a": 1, "a": 2}',
        b'{"k\\u003a": [{"x": "a\\"b:"}], "e": {}}',
    ],
)
def test_a_row_too_long_to_write_again_has_its_keys_counted(monkeypatch, row):
    """Above the size where a row is no longer re-serialized, repeated keys are told apart by
    counting keys on both sides, with the same answer."""
    value = orjson.loads(row)
    expected = strict_json.may_repeat_keys(row, orjson.dumps(value))
    assert (strict_json.written_keys(row) > strict_json.parsed_keys(value)) == expected


def test_duplicate_keys_are_found_in_rows_too_long_to_write_again(monkeypatch, tmp_path):
    monkeypatch.setattr(strict_json, "SERIALIZE_MAX_BYTES", 10)
    path = tmp_path / "dup.jsonl"
    path.write_bytes(b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "x": {"y": 1, "y": 2}}\n')
    result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", str(path)])
    names = {f["name"] for f in json.loads(result.stdout)["findings"]}
    assert "duplicate-key" in names


def _array_row(path: Path, items: int) -> None:
    """One row `{"_ng_task_index":0,"_ng_rollout_index":0,"a":[0,0,...]}`, zstd-compressed as it
    is made (a few KB on disk, never held whole)."""
    with open(path, "wb") as handle, zstandard.ZstdCompressor(level=3).stream_writer(handle) as out:
        out.write(b'{"_ng_task_index":0,"_ng_rollout_index":0,"a":[0')
        block = b",0" * (1 << 20)
        left = items - 1
        while left >= 1 << 20:
            out.write(block)
            left -= 1 << 20
        out.write(b",0" * left + b"]}\n")


@pytest.mark.slow
def test_a_row_of_131_million_items_is_checked_and_built_without_a_crash(tmp_path):
    """orjson 3.12 and 3.13 crash (SIGSEGV) writing a list of about 120 million items; such a
    row (250 MiB, under the default size cap) is checked and built without writing it whole."""
    path = tmp_path / "items.jsonl.zst"
    _array_row(path, 131_000_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_NO_CACHE": "1"}
    for command in (["check", "--isolated", "--jobs", "1", "-q"], ["build", "-o", str(tmp_path / "built.jsonl")]):
        proc = subprocess.run(
            [sys.executable, "-m", "trajlint", *command, str(path)], env=env, capture_output=True, timeout=600
        )
        assert proc.returncode in (0, 1), (command, proc.returncode, proc.stderr[-2000:])
    with open(tmp_path / "built.jsonl", "rb") as built:
        assert built.read(60).startswith(b'{"_ng_task_index":0,"_ng_rollout_index":0,"a":[0,0,0')
        built.seek(-200, os.SEEK_END)
        assert built.read().endswith(b"\n")


def test_zstd_frames_with_a_2_gib_window_are_read(tmp_path):
    """`zstd --long=31` writes frames that need a 2 GiB window: read, not called corrupt."""
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    path = tmp_path / "long31.jsonl.zst"
    with open(path, "wb") as handle, zstandard.ZstdCompressor(compression_params=params).stream_writer(handle) as out:
        out.write(EXAMPLE.read_bytes())
    assert zstandard.get_frame_parameters(path.read_bytes()).window_size == 1 << 31
    result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", str(path)])
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["summary"]["rows"] == 3, result.stdout


def test_a_zstd_frame_beyond_the_largest_window_says_so(tmp_path):
    path = tmp_path / "win41.jsonl.zst"
    # A frame header asking for a 2 TiB window (window descriptor 0xf8), then one raw block.
    path.write_bytes(b"\x28\xb5\x2f\xfd\x00\xf8" + bytes([0x19, 0, 0]) + b"{}\n")
    result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", str(path)])
    messages = [f["message"] for f in json.loads(result.stdout)["findings"]]
    assert any("needs a larger window" in m for m in messages) and not any("corrupt" in m for m in messages)


def _rows(count: int, tag: str) -> bytes:
    return b"".join(b'{"_ng_task_index": %d, "_ng_rollout_index": 0, "tag": "%s"}\n' % (i, tag.encode()) for i in range(count))


def test_a_file_replaced_between_its_shards_is_reported_not_mixed(tmp_path):
    from trajlint import read

    path = tmp_path / "rows.jsonl"
    path.write_bytes(_rows(400, "old"))
    shards = read.shards(read.Source(str(path)), 4096)
    assert len(shards) > 2
    first = list(shards[0].lines())
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(_rows(400, "new"))
    os.replace(replacement, path)  # as a producer finishing a new version does
    later = [list(shard.lines()) for shard in shards[1:]]
    assert all(b'"old"' in line.raw for line in first)
    for items in later:
        assert len(items) == 1 and isinstance(items[0], read.Unreadable) and "changed while it was read" in items[0].reason


def test_a_check_of_a_file_replaced_mid_run_reports_it(tmp_path, monkeypatch):
    from trajlint.check import engine
    from trajlint.read import units

    path = tmp_path / "rows.jsonl"
    path.write_bytes(_rows(2000, "old"))
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(_rows(2000, "new"))
    visit = engine.RowChecker.visit

    def replace_once(self, subject):
        if replacement.exists():
            os.replace(replacement, path)
        return visit(self, subject)

    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")  # the check must run
    monkeypatch.setattr(units, "SHARD_BYTES", 20_000)
    monkeypatch.setattr(engine.RowChecker, "visit", replace_once)
    result = CliRunner().invoke(main, ["check", "--isolated", "--jobs", "1", "--output-format", "json", str(path)])
    findings = json.loads(result.stdout)["findings"]
    assert result.exit_code == 1
    assert {f["name"] for f in findings} == {"unreadable-file"}
    assert all("changed while it was read" in f["message"] for f in findings)


def _tasks(count: int) -> bytes:
    return b"".join(b'{"responses_create_params": {"input": "question %d"}}\n' % i for i in range(count))


@pytest.mark.parametrize("shard_bytes", [None, 4096])
def test_a_file_replaced_after_its_kind_was_decided_is_reported_not_mixed(tmp_path, monkeypatch, shard_bytes):
    """The head that decides a file's kind and the rows checked come from one file: a task
    dataset replaced by a rollout file between the two is reported, never checked as the other."""
    import trajlint.read
    from trajlint.read import units

    path = tmp_path / "rows.jsonl"
    path.write_bytes(_tasks(400))
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(_rows(400, "new"))
    head = trajlint.read.head
    kinds_read = []

    def head_then_replace(source, *args, **kwargs):
        found = head(source, *args, **kwargs)
        kinds_read.append(source.path)
        os.replace(replacement, path)  # after the head was read, before any row is checked
        return found

    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    monkeypatch.setattr(trajlint.read, "head", head_then_replace)
    if shard_bytes is not None:
        monkeypatch.setattr(units, "SHARD_BYTES", shard_bytes)
    result = CliRunner().invoke(main, ["check", "--isolated", "--jobs", "1", "--output-format", "json", str(path)])
    report = json.loads(result.stdout)
    assert kinds_read == [str(path)] and not replacement.exists()
    assert result.exit_code == 1 and report["summary"]["rows"] == 0, result.output
    # What was decided from the head it read (an info finding), and that the file changed.
    named = {f["name"]: f for f in report["findings"]}
    assert set(named) == {"non-rollout-file", "unreadable-file"}, report["findings"]
    assert "task dataset" in named["non-rollout-file"]["message"]
    assert "changed while it was read" in named["unreadable-file"]["message"]
