"""Bounded memory: findings and run-level state spill to disk past a budget without changing a
byte of any report, a run's findings past `max-findings-per-run` are counted but not listed,
and running out of memory ends the run with one line and exit 2."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from trajlint import spill
from trajlint.report.formats import FORMATS

ROOT = Path(__file__).resolve().parents[1]
TINY = {"TRAJLINT_SPILL_ITEMS": "2", "TRAJLINT_SPILL_BYTES": "0"}


# -- the containers --------------------------------------------------------------------------


def test_sorted_reads_back_a_stable_sort_whatever_the_budget(monkeypatch):
    rng = random.Random(7)
    items = [(rng.randrange(20), n) for n in range(500)]
    for env in ({}, TINY, {"TRAJLINT_SPILL_ITEMS": "3", "TRAJLINT_SPILL_BYTES": "100"}):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        store = spill.Sorted(lambda item: item[0], items)
        assert list(store) == sorted(items, key=lambda item: item[0])
        assert list(store) == list(store)  # read twice
        assert len(store) == 500
        store.close()


def test_sorted_merges_its_runs_past_the_fan_in(monkeypatch):
    monkeypatch.setenv("TRAJLINT_SPILL_ITEMS", "1")
    monkeypatch.setenv("TRAJLINT_SPILL_BYTES", "0")
    items = list(range(spill.FAN_IN * 3, 0, -1))
    store = spill.Sorted(lambda item: item % 7, items)
    assert len(store._runs) < spill.FAN_IN
    assert list(store) == sorted(items, key=lambda item: item % 7)


def test_sorted_takes_a_long_iterable_a_chunk_at_a_time(monkeypatch):
    monkeypatch.setenv("TRAJLINT_SPILL_ITEMS", "4")
    store = spill.Sorted(lambda item: -item)

    def produced():
        for n in range(100):
            assert n - len(store) <= 4  # what is taken but not stored is at most a chunk
            yield n

    store.extend(produced())
    assert len(store) == 100 and list(store) == list(range(99, -1, -1))


def test_packed_goes_to_disk_past_its_budget_and_pickles_whole(monkeypatch):
    monkeypatch.setenv("TRAJLINT_SPILL_ITEMS", "4")
    monkeypatch.setenv("TRAJLINT_SPILL_BYTES", "0")
    packed = spill.Packed(range(30))
    assert packed._disk is not None  # the blocks went to the file
    assert list(packed) == list(range(30)) and len(packed) == 30
    copy = pickle.loads(pickle.dumps(packed))
    assert list(copy) == list(range(30))
    kept = spill.Packed(range(30), spill=False)
    assert kept._disk is None and list(kept) == list(range(30))
    assert packed[3] == 3 and packed[2:5] == [2, 3, 4] and packed == list(range(30))


def test_sort_key_groups_as_dict_keys_do():
    from trajlint.spill import key_bytes as sort_key

    assert sort_key((None, 1, 0)) == sort_key((None, 1.0, False))
    assert sort_key((None, 1, 0)) != sort_key((None, "1", 0))
    assert sort_key(("a", "b")) != sort_key(("ab", ""))
    assert sort_key((b"[1]", 2.5)) == sort_key((b"[1]", 2.5))
    nan = float("nan")
    assert sort_key((nan,)) != sort_key((nan,))


# -- reports: the same bytes with and without spilling, for every --jobs ----------------------


def _inputs(tmp_path: Path) -> list[str]:
    """Findings of every kind: row rules, unreadable lines, duplicates in one file and across
    files of one run, a shared capture key, availability notes; one input is compressed, so
    `--jobs 2` checks it in workers."""
    rows = [json.dumps({"_ng_task_index": i % 7, "_ng_rollout_index": i % 3, "reward": 1.0}) for i in range(60)]
    rows += ["x", "[1]", "{", '{"_ng_task_index": 1, "_ng_rollout_index": 0, "_ng_rollout_id": "k"}']
    rows += ['{"_ng_rollout_index": 0, "reward": 0.5}', '{"_ng_task_index": "10", "reward": 1.0}']  # by position; by text
    rows += ['{"_ng_task_index": 2, "_ng_rollout_index": 0, "_ng_rollout_id": "k"}']
    plain = tmp_path / "a.jsonl"
    plain.write_text("\n".join(rows) + "\n")
    packed = tmp_path / "b.jsonl.gz"
    packed.write_bytes(gzip.compress((ROOT / "examples" / "broken.jsonl").read_bytes() + b"\n".join(r.encode() for r in rows)))
    return [str(plain), str(packed), str(ROOT / "examples" / "broken.jsonl")]


def _check(args: list[str], env: dict[str, str], cwd: Path, cache: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", *([] if cache else ["--no-cache"]), *args],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        cwd=cwd,
        timeout=300,
    )


def test_every_format_is_byte_identical_with_spilling_and_any_jobs(tmp_path):
    inputs = _inputs(tmp_path)
    outputs = [f"--output-format={name}:{tmp_path}/{{}}.{name}" for name in FORMATS]
    reports = {}
    runs = [("memory", {}, "1"), ("spilled", TINY, "1"), ("spilled-2", TINY, "2"), ("memory-2", {}, "2")]
    runs += [("cache-fill", TINY, "2"), ("cached", TINY, "2")]  # the second is read from the cache
    for label, env, jobs in runs:
        out = tmp_path / label
        out.mkdir()
        args = [o.replace("{}", label + "/r") for o in outputs]
        args += ["--health-report", str(out / "health")] if not label.startswith("cache") else []
        cache = label.startswith("cache")
        done = _check([*args, "--jobs", jobs, "--show-availability", "--runs", "all", *inputs], env, tmp_path, cache)
        assert done.returncode == 1, done.stderr
        reports[label] = {name: (out / f"r.{name}").read_bytes() for name in FORMATS}
        for name in ("quality_summary.json", "rollout_verdicts.jsonl") if not cache else ():
            reports[label][name] = (out / "health" / name).read_bytes()
    for label in ("spilled", "spilled-2", "memory-2", "cache-fill", "cached"):
        for name in reports[label]:
            assert reports[label][name] == reports["memory"][name], (label, name)
    tasks = json.loads(reports["memory"]["quality_summary.json"])["tasks"]
    assert len(tasks) > 2  # more than the tiny budget: the summary's tasks were written from disk
    doc = json.loads(reports["memory"]["json"])
    codes = {f["code"] for f in doc["findings"]}
    assert {"TL002", "TL401", "TL411"} <= codes  # the run-level rules spilled too
    assert doc["summary"]["truncated"] is None


def test_the_json_report_is_the_whole_document_dumped_at_once():
    import orjson

    from trajlint.findings import Finding, Location
    from trajlint.report import json as json_format
    from trajlint.report.document import Report, document

    findings = [
        Finding("TL001", "a", "error", "m\n\"q\"", "p", n, "/x", related=(Location("p", 1),)) for n in range(3)
    ]
    for listed in ([], findings[:1], findings):
        report = Report(findings=listed, summary={"n": {"deep": [1, 2]}, "findings": len(listed)}, rules=())
        expected = orjson.dumps(document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
        assert "".join(json_format.render(report)) == expected


# -- the ceiling -----------------------------------------------------------------------------


def test_max_findings_per_run_lists_the_first_and_counts_the_rest(tmp_path):
    inputs = _inputs(tmp_path)[:1]
    whole = json.loads(_check(["--output-format", "json", *inputs], {}, tmp_path).stdout)
    done = _check(["--output-format", "json", "--max-findings-per-run", "3", *inputs], {}, tmp_path)
    assert done.returncode == 1
    cut = json.loads(done.stdout)
    assert cut["findings"] == whole["findings"][:3]
    summary, full = cut["summary"], whole["summary"]
    assert summary["findings"] == full["findings"] > 3
    assert summary["by_rule"] == full["by_rule"] and summary["by_severity"] == full["by_severity"]
    assert summary["truncated"] == {
        "max_findings_per_run": 3,
        "findings": full["findings"] - 3,
        "runs": {inputs[0]: full["findings"] - 3},
    }
    text = _check(["--output-format", "concise", "--max-findings-per-run", "3", *inputs], {}, tmp_path).stdout.decode()
    assert len(text.splitlines()) == 4
    assert f"{full['findings'] - 3:,} not listed: 1 run passed max-findings-per-run 3" in text.splitlines()[-1]


def test_findings_past_the_ceiling_still_fail_the_run(tmp_path):
    # The first finding in report order is made an info; the errors after it are not listed.
    (tmp_path / "trajlint.toml").write_text('severity = { TL301 = "info" }\n')
    broken = str(ROOT / "examples" / "broken.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--output-format", "json", "--max-findings-per-run", "1", broken],
        capture_output=True, env=env, cwd=tmp_path, timeout=300,
    )
    doc = json.loads(done.stdout)
    assert [f["severity"] for f in doc["findings"]] == ["info"]
    assert doc["summary"]["by_severity"]["error"] > 0
    assert done.returncode == 1


def test_max_findings_per_run_comes_from_the_configuration(tmp_path):
    inputs = _inputs(tmp_path)[:1]
    (tmp_path / "trajlint.toml").write_text("max-findings-per-run = 2\n")
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--output-format", "json", *inputs],
        capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, timeout=300,
    )
    assert len(json.loads(done.stdout)["findings"]) == 2
    (tmp_path / "trajlint.toml").write_text("max-findings-per-run = -1\n")
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", *inputs],
        capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, timeout=300,
    )
    assert done.returncode == 2 and b"max-findings-per-run" in done.stderr


def test_zero_lists_every_finding(tmp_path):
    inputs = _inputs(tmp_path)[:1]
    whole = json.loads(_check(["--output-format", "json", *inputs], {}, tmp_path).stdout)
    every = json.loads(_check(["--output-format", "json", "--max-findings-per-run", "0", *inputs], {}, tmp_path).stdout)
    assert every == whole


# -- out of memory ---------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_running_out_of_memory_ends_the_run_with_one_line_and_exit_2(tmp_path, jobs):
    inputs = _inputs(tmp_path)
    script = (
        "import sys\n"
        "from trajlint.check import engine\n"
        "def absorb(self, unit, lines_before):\n"
        "    raise MemoryError\n"
        "engine.Engine.absorb = absorb\n"
        "from trajlint.cli import main\n"
        f"sys.argv = ['trajlint', 'check', '--isolated', '--jobs', '{jobs}', *{inputs!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path, timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trajlint: out of memory:"), lines


def test_task_table_reads_back_in_both_orders_from_disk(monkeypatch):
    from trajlint.findings import Location
    from trajlint.health.tasks import TaskRepeats

    def fill(repeats):
        for n, task in enumerate([3, "b", 1, 3, "a", 1.0, 2, "b", 10]):
            repeats.add(task, n % 2, "healthy", first=Location("f", n), rollout=None,
                        policy_calls_observed=True, successful=n % 3 == 0)
        return repeats

    from trajlint.health.verdicts import _task_order

    memory = fill(TaskRepeats(order=_task_order))
    monkeypatch.setenv("TRAJLINT_SPILL_ITEMS", "2")
    spilled = fill(TaskRepeats(order=_task_order))
    assert spilled.tasks.spilled and not memory.tasks.spilled
    assert list(spilled.tasks.items()) == list(memory.tasks.items())
    assert list(spilled.tasks.ordered()) == list(memory.tasks.ordered())
    assert [t for t, _ in memory.tasks.ordered()][:3] == [1, 10, 2]  # 1.0 is the task 1
    assert len(spilled.tasks) == len(memory.tasks) == 6
    assert spilled.outcome(3) == memory.outcome(3) and spilled.copies(1, 1) == memory.copies(1, 1)


# -- rows freed as they are checked ----------------------------------------------------------


@pytest.mark.parametrize("core", ["off", "on"])
def test_rows_checked_the_python_way_leave_no_cycle_for_the_collector(monkeypatch, core):
    """A row the rules explain (every row with the core off; a defective one with it on) is
    freed by its reference counts once checked: no parsed row or build is left waiting in a
    reference cycle for the cyclic collector, which would then walk it, row after row."""
    import gc

    from trajlint.api import check_paths

    from .conftest import EXAMPLES

    monkeypatch.setenv("TRAJLINT_CORE", core)
    check_paths(str(EXAMPLES), isolated=True, jobs=1)  # modules, rules, compiled schemas: made once
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        report = check_paths(str(EXAMPLES), isolated=True, jobs=1)
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert report.findings
    assert not {"Subject", "Build", "HealthView", "Ledger"} & set(left), sorted(set(left))
