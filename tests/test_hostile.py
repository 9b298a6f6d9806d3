"""Hostile input through the real command line: every case exits 0 or 1 as stated, with the
findings stated (a subset: other rules may add theirs), never 2, never a traceback, never an
`internal-error`. The files are in tests/data/hostile/ (see its README); big and
filesystem-special cases are made here."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from trajlint.check.run import run
from trajlint.cli import main
from trajlint.pointer import resolve
from trajlint.read import Source, iter_sources

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "data" / "hostile"
CLEAN_ROWS = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
EXAMPLE = ROOT / "examples" / "clean.jsonl"


def lint(*args: str) -> tuple[int, dict, str]:
    """`trajlint check --output-format json ARGS` in process: (exit code, report, stderr)."""
    result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", "json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output + result.stderr
    assert result.exit_code in (0, 1), result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["internal_errors"] == 0
    assert not [f for f in report["findings"] if f["name"] == "internal-error"]
    return result.exit_code, report, result.stderr


def named(report: dict) -> set[tuple[str, int]]:
    return {(f["name"], f["line"]) for f in report["findings"]}


# -- the committed corpus ----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    file: str
    exit: int
    found: frozenset[tuple[str, int]] = frozenset()  # (rule name, line) that must be reported
    absent: frozenset[tuple[str, int]] = frozenset()  # ... that must not be
    rows: int | None = None  # rows parsed, when it matters
    clean: bool = False  # no finding at all


def case(file: str, exit: int, found=(), absent=(), rows=None, clean=False) -> Case:
    return Case(file, exit, frozenset(found), frozenset(absent), rows, clean)


def lines(name: str, *numbers: int) -> list[tuple[str, int]]:
    return [(name, n) for n in numbers]


CASES = [
    case("empty.jsonl", 0, rows=0, clean=True),
    case("blank-lines.jsonl", 0, rows=0, clean=True),
    case("bom.jsonl", 1, lines("invalid-json", 1), rows=1),
    case("crlf.jsonl", 0, rows=3, clean=True),
    case("no-final-newline.jsonl", 0, rows=2, clean=True),
    case("invalid-utf8.jsonl", 1, lines("invalid-json", 2, 3, 4), rows=2),
    case("truncated-last-line.jsonl", 1, lines("invalid-json", 2), rows=1),
    case("nan-infinity.jsonl", 1, lines("invalid-json", 1, 2, 3, 5), lines("invalid-json", 4), rows=1),
    case("duplicate-keys.jsonl", 0, lines("duplicate-key", 1, 2, 3), lines("duplicate-key", 4), rows=4),
    case(
        "big-integers.jsonl",
        1,
        [*lines("integer-out-of-range", 1, 2, 4), ("non-integer-count", 2), ("invalid-json", 5)],
        lines("integer-out-of-range", 3),
        rows=4,
    ),
    case(
        "string-sections.jsonl",
        1,
        [*lines("capture-schema", 1, 2), *lines("observations-schema", 1, 3),
         *lines("trajectory-schema", 1, 4), *lines("verifier-schema", 1, 5)],
        rows=5,
    ),
    case(
        "string-items.jsonl",
        1,
        [*lines("capture-schema", 1, 2, 3, 16), *lines("observations-schema", 4, 5, 6, 7, 8, 9),
         *lines("verifier-schema", 10, 11), *lines("trajectory-schema", 12, 13, 14, 15)],
        rows=20,
    ),
    case("nulls.jsonl", 1, [("row-not-object", 1), *lines("row-schema", 2, 3, 4, 5, 7)], rows=6),
    case("not-an-object.jsonl", 1, lines("row-not-object", 1, 2, 3, 4), rows=0),
    case("truncated.jsonl.gz", 1, lines("unreadable-file", 2), rows=1),
    case("plain-text.jsonl.gz", 1, lines("unreadable-file", 0), rows=0),
    case("plain-text.jsonl.zst", 1, lines("unreadable-file", 0), rows=0),
]


def test_every_committed_file_has_a_case():
    committed = {p.name for p in HOSTILE.iterdir() if p.name != "README.md"}
    assert committed == {c.file for c in CASES}


@pytest.mark.parametrize("expected", CASES, ids=lambda c: c.file)
def test_hostile_file(expected: Case):
    code, report, _ = lint(str(HOSTILE / expected.file))
    found = named(report)
    assert code == expected.exit
    assert expected.found <= found, sorted(expected.found - found)
    assert not expected.absent & found
    if expected.clean:
        assert report["findings"] == []
    if expected.rows is not None:
        assert report["summary"]["rows"] == expected.rows


def test_the_whole_corpus_in_a_real_process():
    proc = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "concise", str(HOSTILE)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "internal" not in proc.stdout + proc.stderr
    for expected in CASES:
        for name, line in expected.found:
            where = f"{expected.file}:{line}:" if line else f"{expected.file}:"
            assert any(where in out and f" {name} " in out for out in proc.stdout.splitlines()), (name, where)


# -- generated inputs --------------------------------------------------------------------------


def test_a_100k_deep_array_is_invalid_json_not_a_stack_overflow(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n" + EXAMPLE.read_bytes().splitlines()[0] + b"\n")
    code, report, _ = lint(str(path))
    assert code == 1
    assert ("invalid-json", 1) in named(report)
    assert report["summary"]["rows"] == 1


def test_arrays_nested_to_the_parser_limit_are_checked(tmp_path):
    # orjson reads 1,024 levels; every stage after it must cope with as many.
    row = b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "payload": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    path = tmp_path / "deep.jsonl"
    path.write_bytes(row + b"\n")
    code, report, _ = lint(str(path))
    assert code == 0 and report["summary"]["rows"] == 1


def test_a_repeated_key_deep_in_nested_objects_is_found():
    from trajlint.check.rules.strict_json import scan

    raw = b'{"a":' * 1000 + b'{"k":1,"k":2}' + b"}" * 1000
    assert scan(raw).repeated == (("/a" * 1000, "k", 2),)


DEEP_OBJECTS = b'{"a":' * 300 + b"1" + b"}" * 300


@pytest.mark.parametrize(
    "row",
    [
        DEEP_OBJECTS,
        b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_model_call_capture": {"rollout_id": "0-0", '
        b'"calls": [{"model_call_id": "m", "request": ' + DEEP_OBJECTS + b"}]}}",
    ],
    ids=["row", "request-payload"],
)
def test_objects_nested_300_deep_are_checked(tmp_path, row):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(row + b"\n")
    lint(str(path))


def test_build_writes_or_reports_a_row_nested_300_deep(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(
        b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_agent_observations": {"source": "s", "records": '
        b'[{"kind": "agent_invocation", "invocation_id": "i", "model_calls": [], "conversation": ['
        + DEEP_OBJECTS + b"]}]}}\n"
    )
    result = CliRunner().invoke(main, ["build", str(path)])
    assert result.exit_code in (0, 1), result.stderr


def _write_big_row(path: Path, size: int) -> None:
    """A valid row with a `size`-byte string, written in pieces, never held whole."""
    piece = b"x" * (1 << 20)
    with open(path, "wb") as handle:
        handle.write(b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "note": "')
        for _ in range(size // len(piece)):
            handle.write(piece)
        handle.write(b'"}\n')
        handle.write(EXAMPLE.read_bytes().splitlines()[1] + b"\n")


@pytest.fixture(scope="module")
def fifty_megabyte_line(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    _write_big_row(path, 50 << 20)
    return path


def test_a_50mb_line_above_max_row_bytes_is_skipped_in_bounded_memory(fifty_megabyte_line, rules):
    code, report, _ = lint("--max-row-bytes", str(1 << 20), str(fifty_megabyte_line))
    assert code == 1
    assert ("row-too-large", 1) in named(report)
    assert report["summary"]["rows"] == 1  # the row after it is still checked
    tracemalloc.start()
    try:
        result = run(iter_sources([str(fifty_megabyte_line)]), rules, max_row_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [f.name for f in result.findings] == ["row-too-large"]
    assert peak < 12 << 20, f"peak {peak:,} bytes while skipping a 50 MB line"


def test_a_50mb_line_below_max_row_bytes_is_checked(fifty_megabyte_line):
    code, report, _ = lint(str(fifty_megabyte_line))
    assert code == 0
    assert report["summary"]["rows"] == 2
    assert "row-too-large" not in {f["name"] for f in report["findings"]}


def test_missing_path_ends_the_run_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["check", "--isolated", str(tmp_path / "nowhere.jsonl")])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {tmp_path / 'nowhere.jsonl'}: no such file or directory\n"


def test_symlinks_that_lead_nowhere(tmp_path):
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    for named_path in ("dangling.jsonl", "loop.jsonl"):
        code, report, _ = lint(str(tmp_path / named_path))
        assert code == 1 and named(report) == {("unreadable-file", 0)}
    code, report, _ = lint(str(tmp_path))  # found while searching: reported the same way
    messages = sorted(f["message"] for f in report["findings"])
    assert code == 1 and len(messages) == 2
    assert "symbolic link loop" in messages[1] and "missing file" in messages[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_found_while_searching_is_skipped_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it for reading would block until a writer came
    (tmp_path / "rows.jsonl").write_bytes(EXAMPLE.read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "json", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["findings"] == [] and report["summary"]["rows"] == 3
    # Named explicitly, it is a finding instead (still without opening it).
    code, report, _ = lint(str(tmp_path / "pipe.jsonl"))
    assert code == 1 and named(report) == {("unreadable-file", 0)}


# -- wrong types everywhere --------------------------------------------------------------------

WRONG = (None, "", -1, 1.5, True, [], {}, "7")
MISSING = object()


def _places(node, path=()):
    """Every leaf and container path; of a list only its first item (the others have its
    shape), so that one real row stays a few thousand runs."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:1]):
            yield from _places(value, (*path, index))


def _cut(node):
    """Lists cut to two items: the row keeps every shape (and a neighbour for each item) at a
    quarter of its size, which is what each of the few thousand runs costs."""
    if isinstance(node, dict):
        return {key: _cut(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_cut(value) for value in node[:2]]
    return node


def _richest_row() -> dict:
    """The real row holding the most evidence sections and record kinds, cut to size."""
    rows = [orjson.loads(line) for line in CLEAN_ROWS.read_bytes().splitlines()]

    def richness(row):
        kinds = {r.get("kind") for r in (row.get("ng_agent_observations") or {}).get("records", [])}
        sections = sum(key in row for key in ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory", "ng_verifier_invocations"))
        return sections, len(kinds), -len(orjson.dumps(row))

    return _cut(max(rows, key=richness))


def test_every_path_of_a_real_row_with_every_wrong_type(rules):
    """A whole run per mutated row: no internal error, and every pointer resolves in its row."""
    row = _richest_row()
    places = [p for p in _places(row) if p]
    assert len(places) > 250
    runs = 0
    for path in places:
        parent = row
        for key in path[:-1]:
            parent = parent[key]
        original = parent[path[-1]]
        for value in WRONG:
            parent[path[-1]] = value  # in place, and put back: a deep copy per run costs more than the run
            raw = orjson.dumps(row)
            result = run([Source("mutated.jsonl", stream=io.BytesIO(raw))], rules, max_row_bytes=1 << 28)
            assert result.internal_errors == 0, (path, value, [f.message for f in result.findings if f.name == "internal-error"])
            unresolved = [(f.name, f.pointer) for f in result.findings if resolve(row, f.pointer, MISSING) is MISSING]
            assert not unresolved, (path, value, unresolved)
            runs += 1
        parent[path[-1]] = original
    assert runs == len(places) * len(WRONG)


# -- regressions: ids of the wrong type --------------------------------------------------------


def test_time_reversed_with_an_array_for_a_tool_call_id(rules, tmp_path):
    """time-reversed keyed tool calls by their ids, and an array id cannot be a dict key."""
    row = {
        "_ng_task_index": 0, "_ng_rollout_index": 0,
        "ng_agent_observations": {"source": "t", "records": [
            {"kind": "tool_call", "invocation_id": "a", "tool_call_id": ["x"], "started_at": 5.0, "completed_at": 1.0}]},
        "ng_trajectory": {"schema_version": "1.0", "task_id": "0", "rollout_id": "0-0", "tool_calls": [
            {"invocation_id": {}, "tool_call_id": ["x"], "started_at": 5.0, "completed_at": 1.0}]},
    }
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(row) + b"\n")
    code, report, _ = lint(str(path))
    assert code == 1
    assert {f["pointer"] for f in report["findings"] if f["name"] == "time-reversed"} == {
        "/ng_agent_observations/records/0/completed_at", "/ng_trajectory/tool_calls/0/completed_at"}


DEEP_ARRAY = "[" * 1010 + "]" * 1010  # deeper than repr() and orjson.dumps() go


def test_ids_and_gap_details_nested_too_deep_for_repr(tmp_path):
    """Rules keyed and named items by repr(), which raises RecursionError past ~1,000 levels."""
    stated = orjson.loads(EXAMPLE.read_bytes().splitlines()[2])
    stated["ng_trajectory"]["turns"][0].update(invocation_id="@deep@", step_count=5)
    rows = [
        '{"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_agent_observations": {"source": "s", "records": [], '
        '"gaps": [{"code": "x", "detail": %s}, {"code": "x", "detail": %s}]}}' % (DEEP_ARRAY, DEEP_ARRAY),
        '{"_ng_task_index": 0, "_ng_rollout_index": 1, "ng_agent_observations": {"source": "s", "records": ['
        '{"kind": "tool_call", "invocation_id": "a", "tool_call_id": %s, "started_at": 5, "completed_at": 1}]}}' % DEEP_ARRAY,
        orjson.dumps(stated).decode().replace('"@deep@"', DEEP_ARRAY),
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(rows) + "\n")
    code, report, _ = lint("--select", "observation-gap,time-reversed,trajectory-drift", str(path))
    assert code == 1
    assert {("observation-gap", 1), ("time-reversed", 2), ("trajectory-drift", 3)} <= named(report)


def test_a_task_index_nested_too_deep_for_str(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"_ng_task_index": %s, "_ng_rollout_index": 0}\n' % DEEP_ARRAY)
    lint(str(path))


# -- regressions: file names that are not UTF-8, symlink loops ---------------------------------


def _undecodable_name(tmp_path: Path) -> Path:
    directory = tmp_path / "runs"
    directory.mkdir()
    name = os.fsdecode(b"bad-\xff.jsonl")
    row = b"\xef\xbb\xbf" + EXAMPLE.read_bytes().splitlines()[0] + b"\n"  # a finding to report: invalid-json
    try:
        (directory / name).write_bytes(row)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this filesystem refuses file names that are not UTF-8")
    return directory


@pytest.mark.parametrize("fmt", ["full", "concise", "json", "jsonl", "sarif", "github", "junit", "gitlab"])
def test_a_file_name_that_is_not_utf8_in_every_format(tmp_path, fmt):
    """Such a name reaches the reports holding lone surrogates, which no UTF-8 writer accepts."""
    directory = _undecodable_name(tmp_path)
    result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", fmt, str(directory)])
    assert result.exit_code == 1, result.stderr
    result.stdout.encode("utf-8")
    if fmt in ("full", "concise", "github", "junit"):
        assert "bad-\\xff.jsonl" in result.stdout
    elif fmt == "sarif":
        assert "bad-%5Cxff.jsonl" in result.stdout
    else:
        assert "bad-\\\\xff.jsonl" in result.stdout  # JSON escapes the backslash


def test_a_file_name_that_is_not_utf8_in_a_real_process_with_strict_output(tmp_path):
    directory = _undecodable_name(tmp_path)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    for args in (["check", "--output-format", "concise"], ["check", "--show-files"]):
        proc = subprocess.run(
            [sys.executable, "-m", "trajlint", *args, "--isolated", str(directory)],
            capture_output=True, timeout=60, cwd=ROOT, env=env,
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert b"bad-\\xff.jsonl" in proc.stdout


def test_a_file_name_that_is_not_utf8_round_trips_through_a_baseline(tmp_path):
    directory = _undecodable_name(tmp_path)
    baseline = tmp_path / "baseline.json"
    runner = CliRunner()
    recorded = runner.invoke(main, ["baseline", "--isolated", str(directory), "-o", str(baseline)])
    assert recorded.exit_code == 0, recorded.stderr
    baseline.read_text(encoding="utf-8")
    checked = runner.invoke(main, ["check", "--isolated", "--baseline", str(baseline), str(directory)])
    assert checked.exit_code == 0, checked.output


def test_symlink_loop_in_every_format(tmp_path):
    """SARIF resolved the path of a finding outside the working directory, which raises on a loop."""
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    for fmt in ("full", "concise", "json", "jsonl", "sarif", "github", "junit"):
        result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", fmt, str(tmp_path)])
        assert result.exit_code == 1, (fmt, result.output, result.stderr)


# -- hostile configuration and baseline files: usage errors (exit 2, one line), never a crash ---


@pytest.mark.parametrize(
    "text",
    [
        "profile = []\n",  # `in` a dict of profiles hashed the list
        "select = " + "[" * 2000 + "]" * 2000 + "\n",  # tomllib recursion
        "severity = {TL104 = {}}\n",
        b"select = [\"\xff\"]\n",
    ],
    ids=["profile-list", "deep-array", "severity-table", "invalid-utf8"],
)
def test_a_hostile_configuration_is_a_usage_error(tmp_path, monkeypatch, text):
    (tmp_path / "trajlint.toml").write_bytes(text if isinstance(text, bytes) else text.encode())
    (tmp_path / "rows.jsonl").write_bytes(EXAMPLE.read_bytes())
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "rows.jsonl"])
    assert result.exit_code == 2
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "trajlint.toml" in result.stderr


@pytest.mark.parametrize(
    "text",
    [
        '{"schema_version": 1, "entries": 5}',
        '{"schema_version": 1, "entries": null}',
        '{"schema_version": 1, "entries": ' + "[" * 5000 + "]" * 5000 + "}",  # json recursion
    ],
    ids=["entries-number", "entries-null", "deep"],
)
def test_a_hostile_baseline_is_a_usage_error(tmp_path, text):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(text)
    result = CliRunner().invoke(main, ["check", "--isolated", "--baseline", str(baseline), str(EXAMPLE)])
    assert result.exit_code == 2
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "baseline" in result.stderr


# -- regressions: odd path arguments -----------------------------------------------------------


@pytest.mark.parametrize("argument", ["a\0b.jsonl", "runs/\0/*.jsonl"])
def test_a_path_with_a_nul_byte_is_a_finding(argument):
    """os.stat raises ValueError (not OSError) on one; reachable through the API and globs."""
    code, report, _ = lint(argument)
    assert code == 1 and named(report) == {("unreadable-file", 0)}
    assert "NUL byte" in report["findings"][0]["message"]


def test_an_empty_path_is_an_error_not_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_bytes(b"[]\n")
    result = CliRunner().invoke(main, ["check", "--isolated", ""])
    assert result.exit_code == 2
    assert result.stderr == "Error: an empty path names no file\n"


# -- regressions: the health rules -------------------------------------------------------------


def test_health_rules_on_an_item_whose_type_is_an_object():
    """agent-turn-hollow looked an item's `type` up in a set, and an object cannot be hashed (the
    whole row is fuzz/crashes/crash-c775d37ed814efaf79654b3727e5da6a5003f866)."""
    from trajlint.health.checks import has_tool_call, says_something

    assert not has_tool_call([{"type": {"model_call_id": "x"}}, [{"type": ["tool_use"]}]])
    assert has_tool_call([[{"type": {}}, {"type": "tool_use"}]])
    assert says_something([{"type": {}, "text": " ok "}]) and not says_something([{"type": {}}])


def test_health_rules_on_payloads_nested_deeper_than_the_recursion_limit(tmp_path):
    """The health rules looked for text and tool calls recursively, two frames a level."""
    rows = []
    for place in ("answer", "reasoning_content"):
        row = orjson.loads(EXAMPLE.read_bytes().splitlines()[2])
        row["ng_trajectory"]["turns"][0][place] = "@deep@"
        rows.append(orjson.dumps(row).decode().replace('"@deep@"', "[" * 600 + "]" * 600))
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(rows) + "\n")
    code, report, _ = lint("--select", "TL6", str(path))
    assert code in (0, 1)

def test_rollout_missing_agent_turns_points_at_a_place_the_row_has():
    """It pointed at /ng_trajectory/turns whenever the row stated a trajectory, with turns or
    not (found by tests/test_properties.py)."""
    row = {"_ng_task_index": 0, "_ng_rollout_index": 0,
           "ng_model_call_capture": {"rollout_id": "0-0", "calls": []},
           "ng_trajectory": {"schema_version": "1.0", "task_id": "0", "rollout_id": "0-0"}}
    raw = orjson.dumps(row) + b"\n"
    from trajlint.check.registry import load_rules

    result = run([Source("rows.jsonl", stream=io.BytesIO(raw))], load_rules(), max_row_bytes=1 << 20)
    pointers = {f.pointer for f in result.findings if f.name == "rollout-missing-agent-turns"}
    assert pointers == {"/ng_trajectory"}


# -- regressions: many rows with one identity --------------------------------------------------


def test_thousands_of_rows_with_one_identity_cite_a_bounded_number(rules, tmp_path):
    """Each duplicate-rollout-identity finding cited every other row of its group: quadratic, so
    3,000 copies of one row took 25 s and 660 MB. A producer that never advances its indices
    writes exactly that."""
    from trajlint.check.rules.identity import CITED

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "stage_index": [[0]]}\n' * 3000)
    selected = {code: spec for code, spec in rules.items() if spec.name == "duplicate-rollout-identity"}
    result = run(iter_sources([str(path)]), selected, max_row_bytes=1 << 20)
    found = [f for f in result.findings if f.name == "duplicate-rollout-identity"]
    assert len(found) == 3000
    assert all(len(f.related) == CITED for f in found)
    assert f"recorded by 3,000 rows in this file in stage [[0]] (the first {CITED} others are cited)" in found[0].message


def test_thousands_of_claims_on_one_call_cite_a_bounded_number(rules):
    """Ownership, structure and drift findings each cited every other claim: quadratic, so a row
    with 3,000 invocations claiming one call took 30 s and 700 MB; trajectory-capture-mismatch
    searched the row once per join gap, quadratic in time."""
    from trajlint.check.rules._cite import CITED

    n = 300
    call = {"model_call_id": "m", "response_id": "r", "model_ref": {"type": "responses_api_models", "name": "p"},
            "response": {"output": []}}
    rows = [
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "ng_model_call_capture": {"rollout_id": "1-0", "calls": [call]},
         "ng_agent_observations": {"source": "s", "records": [
             {"kind": "agent_invocation", "invocation_id": f"i{k}", "model_calls": [{"model_call_id": "m"}]} for k in range(n)]}},
        {"_ng_task_index": 2, "_ng_rollout_index": 0, "ng_model_call_capture": {"rollout_id": "2-0", "calls": [call] * n},
         "ng_agent_observations": {"source": "s", "records": [
             {"kind": "tool_call", "invocation_id": "a", "tool_call_id": "t"}] * n}},
        {"_ng_task_index": 3, "_ng_rollout_index": 0, "ng_model_call_capture": {"rollout_id": "3-0", "calls": [call]},
         "ng_trajectory": {"schema_version": "1.0", "task_id": "3", "rollout_id": "3-0", "turns": [
             {"invocation_id": "a", "task_id": "3", "rollout_id": "3-0", "turn_no": k + 1, "timestamp": 1.0,
              "model_calls": [{"model_call_id": "m"}]} for k in range(n)]}},
    ]
    raw = b"\n".join(orjson.dumps(row) for row in rows) + b"\n"
    result = run([Source("rows.jsonl", stream=io.BytesIO(raw))], rules, max_row_bytes=1 << 28)
    assert result.internal_errors == 0
    by_rule = {f.name for f in result.findings if len(f.related) == CITED}
    assert {"ownership-conflict", "duplicate-model-call-id", "duplicate-tool-call", "trajectory-drift"} <= by_rule
    assert max(len(f.related) for f in result.findings) <= CITED
    assert max(len(f.message) for f in result.findings) < 2000


# -- regressions: output that cannot be written ------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize(
    "args", [["check", "--isolated"], ["check", "--isolated", "--output-format", "json"], ["build"]], ids=["check", "json", "build"]
)
def test_standard_output_on_a_full_disk_is_named_not_an_internal_error(args):
    """check said "cannot write None", and build reported the OSError as a bug in trajlint."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "trajlint", *args, str(EXAMPLE)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert "cannot write standard output: No space left on device" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
