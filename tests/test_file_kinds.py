"""Files that are not rollouts: each file's kind, decided once from its name and first lines, and
what is checked on it (`trajlint.check.kinds`, TL007 non-rollout-file, TL106 task-input-schema)."""

from __future__ import annotations

import collections
import gzip
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from trajlint import read
from trajlint.check import engine, kinds, parallel
from trajlint.check.run import run
from trajlint.cli import main
from trajlint.read import iter_sources, units

from .conftest import EXAMPLES, ROOT

REAL = ROOT / "tests" / "data" / "real"
# provenance.json's kinds (as the corpus generator classified each file) -> trajlint's.
EXPECTED = {
    "rollouts": kinds.ROLLOUTS,
    "failures": kinds.ROLLOUTS,  # the failures sidecar holds the records of failed attempts
    "materialized_inputs": kinds.MATERIALIZED_INPUTS,
    "task_dataset": kinds.TASK_DATASET,
    "reward_profiling": kinds.REWARD_PROFILING,
    "other": kinds.OTHER,
}
# Corpus files whose kind nothing in them shows: an empty dataset split (no row at all) and a
# file none of whose lines is JSON (the input rules report every line). Both are rollouts to
# trajlint, which lints what it cannot tell apart as rollouts.
NOTHING_TO_TELL = {
    "v0.2.0/resources_servers__math_formal_lean__data__minif2f_valid.jsonl",
    "v0.2.0/resources_servers__jailbreak_detection__data__example_rollouts.jsonl",
}


def _corpus() -> dict[str, str]:
    """Each committed corpus file (relative to REAL) with its kind in provenance.json."""
    entries = json.loads((REAL / "provenance.json").read_text())
    return {
        str(Path(e["file"]).relative_to("tests/data/real")): e["kind"]
        for e in entries
        if e["file"] and (ROOT / e["file"]).is_file()
    }


def _kind_of(path: Path, given: kinds.Given | None = None) -> kinds.FileKind:
    [(_, kind)] = kinds.plan([read.Source(str(path))], read.DEFAULT_MAX_ROW_BYTES, given)
    return kind


def _rows(path: Path) -> list[tuple[int, dict]]:
    out = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append((number, value))
    return out


# -- every kind of the corpus is recognised --------------------------------------------------------


def test_the_corpus_holds_every_kind():
    assert set(_corpus().values()) == set(EXPECTED)


@pytest.mark.parametrize(("name", "kind"), sorted(_corpus().items()))
def test_each_corpus_file_is_recognised(name, kind):
    expected = kinds.ROLLOUTS if name in NOTHING_TO_TELL else EXPECTED[kind]
    assert _kind_of(REAL / name).kind == expected


def test_a_name_that_says_nothing_is_judged_by_the_first_row():
    named_rollouts = REAL / "v0.2.0" / "resources_servers__genrm_compare__data__example_rollouts.jsonl"
    assert _corpus()[str(named_rollouts.relative_to(REAL))] == "task_dataset"
    found = _kind_of(named_rollouts)
    assert found.kind == kinds.TASK_DATASET
    assert found.why.startswith("its first row (line 1) holds `responses_create_params`")


# -- a rollout is never taken for anything else ----------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("generated")
    paths = []
    for seed in (0, 1):
        path = root / f"g{seed}.jsonl"
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "50", "--seed", str(seed), "-o", str(path)],
            check=True, capture_output=True,
        )
        paths.append(path)
    return paths


def _rollout_files(generated: list[Path]) -> list[Path]:
    corpus = [REAL / name for name, kind in _corpus().items() if kind in ("rollouts", "failures")]
    return [
        *corpus,
        *sorted(EXAMPLES.glob("*.jsonl")),
        *sorted((ROOT / "tests" / "data" / "contract").glob("*.jsonl")),
        ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl",
        *generated,
    ]


def test_no_rollout_file_is_taken_for_another_kind(generated):
    files = _rollout_files(generated)
    assert len(files) > 150
    assert [str(p) for p in files if _kind_of(p).kind != kinds.ROLLOUTS] == []


def test_no_rollout_row_looks_like_another_kind(generated):
    """Not only the first row: any row of a rollout file, were it first, keeps the file rollouts."""
    taken = [
        (str(path), number, found.kind)
        for path in _rollout_files(generated)
        for number, row in _rows(path)
        if (found := kinds.by_content(row, number)) is not None
    ]
    assert taken == []


def test_the_failures_sidecar_is_rollouts_whatever_it_holds(tmp_path):
    path = tmp_path / "rollouts_failures.jsonl"
    path.write_text('{"responses_create_params": {"input": "2 + 2?"}, "_ng_task_index": 0, "_ng_rollout_index": 0}\n')
    assert _kind_of(path) == kinds.ROLLOUT_FILE


# -- by name ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("run_materialized_inputs.jsonl", kinds.MATERIALIZED_INPUTS),
        ("run_materialized_inputs.jsonl.gz", kinds.MATERIALIZED_INPUTS),
        ("run_materialized_inputs.JSONL.ZST", kinds.MATERIALIZED_INPUTS),
        ("run_reward_profiling.jsonl", kinds.REWARD_PROFILING),
        ("run_failures.jsonl", None),
        ("run_materialized_inputs_v2.jsonl", None),  # only a stem that ends so, as NeMo Gym tests it
        ("run.jsonl", None),
        ("-", None),
    ],
)
def test_names(name, kind):
    found = kinds.by_name(name)
    if name == "run_failures.jsonl":
        assert found == kinds.FileKind(kinds.ROLLOUTS, "its name ends in `_failures`")
    else:
        assert (found.kind if found else None) == kind


# -- by content ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "kind"),
    [
        ({"responses_create_params": {"input": "hi"}, "expected_answer": "4"}, kinds.TASK_DATASET),
        ({"task_id": {"taskset": "t", "task_id": "1"}, "task_input": {}}, kinds.TASK_DATASET),
        ({"responses_create_params": {}, "_ng_task_index": 0, "_ng_rollout_index": 0}, kinds.MATERIALIZED_INPUTS),
        ({"task_id": {"taskset": "t", "task_id": "1"}, "task_input": {}, "_ng_task_index": 0, "_ng_rollout_index": 1},
         kinds.MATERIALIZED_INPUTS),
        ({"sample": {"responses_create_params": {}}, "mean/reward": 0.5, "num_rollouts": 4}, kinds.REWARD_PROFILING),
        ({"question": "2 + 2?", "expected_answer": "4"}, kinds.OTHER),
        # Anything with a sign of a rollout, or a NeMo Gym key and nothing else to go by, is rollouts.
        ({"responses_create_params": {}, "response": {}, "_ng_task_index": 0, "_ng_rollout_index": 0}, None),
        ({"responses_create_params": {}, "ng_trajectory": None}, None),
        ({"responses_create_params": {}, "_ng_failure_class": "agent_run_error"}, None),
        ({"task_id": {"taskset": "t", "task_id": "1"}, "task_input": {}, "_ng_task_id": {}}, None),
        ({"_ng_task_index": 0, "_ng_rollout_index": 0}, None),
        ({"agent_ref": {"name": "a"}, "reward": 1.0}, None),
        ({"task_id": "1", "task_input": {}, "agent_ref": {"name": "a"}}, None),  # a string task_id: no task
        ({}, None),
    ],
)
def test_content(row, kind):
    found = kinds.by_content(row, 1)
    assert (found.kind if found else None) == kind


def test_the_first_object_among_the_first_lines_decides(tmp_path):
    task = b'{"responses_create_params": {"input": "2 + 2?"}}\n'
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n   \n{not json\n[1, 2]\n" + task + b'{"response": {}}\n')
    found = _kind_of(path)
    assert found.kind == kinds.TASK_DATASET and "(line 5)" in found.why
    # Past the first few lines nothing is looked at: the file is rollouts.
    path.write_bytes(b"{not json\n" * read.HEAD_LINES + task)
    assert _kind_of(path) == kinds.ROLLOUT_FILE


def test_a_first_row_above_the_row_cap_is_not_looked_at(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"pad": "' + b"x" * 500 + b'"}\n{"responses_create_params": {}}\n')
    [(_, found)] = kinds.plan([read.Source(str(path))], 100)
    assert found.kind == kinds.TASK_DATASET and "(line 2)" in found.why


# -- the kinds the user gives ----------------------------------------------------------------------


def test_given_kinds(tmp_path):
    materialized = tmp_path / "run_materialized_inputs.jsonl"
    materialized.write_text('{"responses_create_params": {}, "_ng_task_index": 0, "_ng_rollout_index": 0}\n')
    every = kinds.Given(every=kinds.ROLLOUTS, every_origin="`--file-kind`")
    assert _kind_of(materialized, every) == kinds.FileKind(kinds.ROLLOUTS, "set by `--file-kind`")
    patterns = kinds.Given(
        patterns=(("sub/*.jsonl", kinds.TASK_DATASET), ("*_materialized_inputs.jsonl", kinds.AUTO), ("*", kinds.ROLLOUTS)),
        base=str(tmp_path),
        patterns_origin="`file-kinds` in trajlint.toml",
    )
    # The first pattern that names the file decides; `auto` leaves it to recognition.
    assert _kind_of(materialized, patterns).kind == kinds.MATERIALIZED_INPUTS
    (tmp_path / "sub").mkdir()
    other = tmp_path / "sub" / "rows.jsonl"
    other.write_text('{"response": {}}\n')
    assert _kind_of(other, patterns) == kinds.FileKind(
        kinds.TASK_DATASET, "set by `file-kinds` in trajlint.toml ('sub/*.jsonl')"
    )
    assert patterns.kind_of("-") is None  # globs never name standard input


# -- what is checked on files that are not rollouts ------------------------------------------------


@pytest.fixture(scope="module")
def real_result():
    from trajlint.check.registry import load_rules

    rules = load_rules()
    return run(iter_sources([str(REAL)]), rules, max_row_bytes=read.DEFAULT_MAX_ROW_BYTES), rules


def test_no_rollout_rule_fires_on_a_file_that_is_not_rollouts(real_result):
    result, rules = real_result
    by_code = {spec.code: spec for spec in rules.values()}
    decided = {str(source.path): kind.kind for source, kind in kinds.plan(list(iter_sources([str(REAL)])), read.DEFAULT_MAX_ROW_BYTES)}
    wrong = [
        (f.path, f.line, f.code)
        for f in result.findings
        if decided[f.path] != kinds.ROLLOUTS and decided[f.path] not in by_code[f.code].impl.kinds
    ]
    assert wrong == []
    codes = collections.Counter(
        (decided[f.path], f.code) for f in result.findings if decided[f.path] != kinds.ROLLOUTS
    )
    # One info per file that is not rollouts; only the jailbreak file's lines (not JSON) are errors.
    assert codes == {
        (kinds.MATERIALIZED_INPUTS, "TL007"): 21,
        (kinds.TASK_DATASET, "TL007"): 102,
        (kinds.REWARD_PROFILING, "TL007"): 4,
        (kinds.OTHER, "TL007"): 5,
    }


def test_health_judges_only_the_rows_of_rollout_files(tmp_path, rules):
    rollout = orjson.loads((EXAMPLES / "clean.jsonl").read_bytes().splitlines()[0])
    (tmp_path / "run.jsonl").write_bytes(orjson.dumps(rollout) + b"\n")
    dispatched = {k: rollout[k] for k in ("responses_create_params", "_ng_task_index", "_ng_rollout_index", "agent_ref")}
    (tmp_path / "run_materialized_inputs.jsonl").write_bytes(orjson.dumps(dispatched) + b"\n{not json\n")
    result = run(iter_sources([str(tmp_path)]), rules, max_row_bytes=1 << 20, health_report=True)
    # Neither the dispatched row nor the bad line of the inputs is a rollout record.
    assert [(name, health.summary["run"]["artifacts"]["records"]) for name, health in result.health] == [
        (str(tmp_path / "run.jsonl"), 1)
    ]
    # The dispatched row and its rollout share an identity; only one of them is a rollout.
    assert [f.code for f in result.findings if f.severity != "info"] == ["TL002"]
    assert result.coverage["TL101"].evaluated + result.coverage["TL101"].unobserved == 1


def _task_findings(write_jsonl, rules, text: str, name: str) -> list[tuple[int, str, str, str]]:
    path = write_jsonl(text, name)
    result = run(iter_sources([str(path)]), rules, max_row_bytes=1 << 20)
    assert all(f.rollout is None for f in result.findings)  # a row that is no rollout names none
    return [(f.line, f.code, f.severity, f.pointer) for f in result.findings if f.code != "TL007"]


def test_task_input_schema(write_jsonl, rules):
    rows = [
        {"responses_create_params": {"input": "2 + 2?"}, "agent_ref": {"name": "a"}},  # 1: clean
        {"responses_create_params": "2 + 2?"},  # 2
        {"question": "2 + 2?"},  # 3: neither a request nor a task
        {"task_id": {"taskset": "", "task_id": 7, "extra": 1}, "task_input": []},  # 4
        {"task_id": {"taskset": "t"}, "task_input": {}},  # 5
        {"responses_create_params": {}, "agent_ref": "simple_agent"},  # 6
        {"responses_create_params": {}, "response": {"output": []}},  # 7: a rollout among task inputs
    ]
    text = "".join(orjson.dumps(row).decode() + "\n" for row in rows) + "[1]\n{bad\n"
    assert _task_findings(write_jsonl, rules, text, "data.jsonl") == [
        (2, "TL106", "error", "/responses_create_params"),
        (3, "TL106", "warning", ""),
        (4, "TL106", "error", "/task_id/extra"),
        (4, "TL106", "error", "/task_id/task_id"),
        (4, "TL106", "error", "/task_id/taskset"),
        (4, "TL106", "error", "/task_input"),
        (5, "TL106", "error", "/task_id/task_id"),
        (6, "TL106", "error", "/agent_ref"),
        (7, "TL106", "warning", "/response"),
        (8, "TL003", "error", ""),
        (9, "TL002", "error", ""),
    ]
    materialized = [
        {"responses_create_params": {}, "_ng_task_index": 0, "_ng_rollout_index": 0},  # 1: clean
        {"responses_create_params": {}, "_ng_task_index": 0},  # 2
        {"question": "2 + 2?", "_ng_task_index": 1, "_ng_rollout_index": 0},  # 3: an error here
    ]
    text = "".join(orjson.dumps(row).decode() + "\n" for row in materialized)
    assert _task_findings(write_jsonl, rules, text, "run_materialized_inputs.jsonl") == [
        (2, "TL106", "error", ""),
        (3, "TL106", "error", ""),
    ]


def test_a_line_that_is_no_object_is_no_rollout_row_in_task_inputs(write_jsonl, rules):
    path = write_jsonl('{"responses_create_params": {}}\n"text"\n', "data.jsonl")
    [finding] = [f for f in run(iter_sources([str(path)]), rules, max_row_bytes=1 << 20).findings if f.code == "TL003"]
    assert finding.message == "a row must be a JSON object, this line holds a string"


def test_a_reward_profile_and_other_data_get_the_input_rules_only(write_jsonl, rules):
    profile = '{"_ng_task_index": 0, "sample": {"responses_create_params": {}}, "mean/reward": 1.0}\n{bad\n'
    assert _task_findings(write_jsonl, rules, profile, "run_reward_profiling.jsonl") == [(2, "TL002", "error", "")]
    other = '{"question": "2 + 2?"}\n{"question": "2 + 2?", "question": "3 + 3?"}\n'
    assert _task_findings(write_jsonl, rules, other, "questions.jsonl") == [(2, "TL005", "warning", "/question")]


# -- the command line and the configuration --------------------------------------------------------


def _lint(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["check", "--output-format", "json", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout) if result.stdout.startswith("{") else {}


def _codes(report: dict) -> collections.Counter:
    return collections.Counter(f["code"] for f in report["findings"])


def test_file_kind_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    materialized = REAL / "v0.3.0" / "resources_servers__blackjack__data__example_rollouts_materialized_inputs.jsonl"
    (tmp_path / "run_materialized_inputs.jsonl").write_bytes(materialized.read_bytes())
    code, report = _lint("--isolated", ".")
    assert code == 0 and _codes(report) == {"TL007": 1}
    code, report = _lint("--isolated", "--file-kind", "rollouts", ".")
    # Linted as rollouts: the row schema judges every row (and these rows pass it, as NeMo Gym reads them).
    assert "TL007" not in _codes(report) and report["summary"]["rules"]["TL101"]["evaluated"] == 5
    code, report = _lint("--isolated", "--file-kind", "task-dataset", ".")
    assert "set by `--file-kind`" in report["findings"][0]["message"]
    assert CliRunner().invoke(main, ["check", "--isolated", "--file-kind", "other", "."]).exit_code == 2


def test_file_kind_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run_materialized_inputs.jsonl").write_text('{"responses_create_params": {}, "_ng_task_index": 0, "_ng_rollout_index": 0}\n')
    (tmp_path / "example.jsonl").write_text('{"responses_create_params": {}}\n')
    config = tmp_path / "trajlint.toml"
    config.write_text('file-kinds = { "example.jsonl" = "rollouts" }\n')
    _, report = _lint(".")
    assert {(f["path"], f["code"]) for f in report["findings"]} >= {("example.jsonl", "TL101"), ("run_materialized_inputs.jsonl", "TL007")}
    config.write_text('file-kind = "rollouts"\nfile-kinds = { "example.jsonl" = "task-dataset" }\n')
    _, report = _lint(".")
    assert "TL007" not in _codes(report)  # one kind for every file wins over the globs
    _, report = _lint("--file-kind", "auto", ".")  # ... and the command line over the file
    assert [f["message"].split(":")[1].strip() for f in report["findings"] if f["code"] == "TL007"] == [
        "set by `file-kinds` in trajlint.toml ('example.jsonl'); its rows are checked as task inputs (task-input-schema); `--file-kind rollouts` lints it as rollouts",
        "its name ends in `_materialized_inputs`; its rows are checked as task inputs (task-input-schema); `--file-kind rollouts` lints it as rollouts",
    ]
    settings = CliRunner().invoke(main, ["check", "--show-settings", "."]).output
    assert 'file-kind = "rollouts"  # ' in settings and 'file-kinds = { "example.jsonl" = "task-dataset" }' in settings
    for bad, said in [('file-kind = "other"', "file-kind: must be one of"), ('file-kinds = ["*"]', "file-kinds: must be a table"),
                      ('file-kinds = { "*" = "rollout" }', "'*' must be one of")]:
        config.write_text(bad + "\n")
        result = CliRunner().invoke(main, ["check", "."])
        assert result.exit_code == 2 and said in result.output, result.output


def test_rule_doc_names_the_kinds_and_an_example_file_name():
    explained = CliRunner().invoke(main, ["rule", "TL106"]).output
    assert "Checks: materialized-inputs files, task-dataset files" in explained
    assert "In a file named `runs/rollouts_materialized_inputs.jsonl`:" in explained
    assert "Checks: rollout files" in CliRunner().invoke(main, ["rule", "TL104"]).output
    assert "Checks: every file" in CliRunner().invoke(main, ["rule", "TL002"]).output


# -- the report does not depend on --jobs ----------------------------------------------------------


def _jobs_run(args: list[str], monkeypatch, *, shard_bytes: int, stdin: bytes | None = None) -> tuple[int, bytes]:
    monkeypatch.setattr(units, "SHARD_BYTES", shard_bytes)
    monkeypatch.setattr(units, "BATCH_BYTES", 3_000)
    monkeypatch.setattr(engine, "PART_ROWS", 7)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    result = CliRunner().invoke(main, args, input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes


def test_kinds_do_not_depend_on_jobs(tmp_path, monkeypatch, generated):
    """Shards after the first of a file never see its first row, nor batches after the first of a
    stream: the kind decided before the file is cut must reach them all."""
    dataset = REAL / "v0.2.0" / "resources_servers__aviary__data__example.jsonl"
    body = dataset.read_bytes().rstrip(b"\n").split(b"\n")
    # A task dataset long enough to be cut, with a stray rollout and a bad line in a later shard.
    rows = body * 60 + [generated[0].read_bytes().split(b"\n")[0], b"{bad"] + body * 20
    (tmp_path / "data.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    materialized = REAL / "nemo-gym-0.7.0-writers" / "taskset_rollouts_materialized_inputs.jsonl"
    (tmp_path / "run_materialized_inputs.jsonl.gz").write_bytes(gzip.compress(materialized.read_bytes() * 5))
    (tmp_path / "run.jsonl").write_bytes(generated[1].read_bytes())
    stdin = b"\n".join(body * 30) + b"\n"
    args = ["check", "--isolated", "--output-format", "json", str(tmp_path), "-"]
    one = _jobs_run([*args, "--jobs", "1"], monkeypatch, shard_bytes=10**9, stdin=stdin)
    report = json.loads(one[1])
    by_path = collections.Counter((Path(f["path"]).name, f["code"]) for f in report["findings"] if f["code"] in ("TL007", "TL106", "TL101"))
    assert by_path == {
        ("data.jsonl", "TL007"): 1,
        ("data.jsonl", "TL106"): 1,  # the stray rollout, a warning
        ("run_materialized_inputs.jsonl.gz", "TL007"): 1,
        ("-", "TL007"): 1,
        **{key: n for key, n in by_path.items() if key[0] == "run.jsonl"},
    }
    for jobs in ("2", "3"):
        assert _jobs_run([*args, "--jobs", jobs], monkeypatch, shard_bytes=2_000, stdin=stdin) == one, jobs
