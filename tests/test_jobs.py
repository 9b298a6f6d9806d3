"""`--jobs`: files cut into shards and checked in worker processes give the report of one process."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trajlint import read
from trajlint.check import engine, fast, parallel
from trajlint.cli import main
from trajlint.read import native, units

ROOT = Path(__file__).resolve().parents[1]


# -- shards ------------------------------------------------------------------------------------


def _lines_of(path: str, shard_bytes: int, max_row_bytes: int = read.DEFAULT_MAX_ROW_BYTES) -> list[tuple]:
    """Every item the shards yield, at its line in the whole file."""
    out: list[tuple] = []
    before = 0
    for shard in read.shards(read.Source(path), shard_bytes):
        tally = read.LineTally()
        for item in shard.lines(max_row_bytes, tally):
            number = item.number if not isinstance(item, read.Unreadable) else item.line
            out.append((type(item).__name__, number + before, getattr(item, "raw", getattr(item, "size", None))))
        before += tally.lines
    return out


@pytest.mark.parametrize(
    "content",
    [
        b'{"a":1}\n\n{"b":2}\r\n   \n{"c":3}',  # blank lines, CRLF, no final newline
        b'{"a":1}\n' * 40,
        b"\n\n\n" + b'{"long":"' + b"x" * 500 + b'"}\n' + b'{"a":1}\n' * 5 + b"\n",
        b'{"a":1}\n' + b"y" * 2000 + b"\n" + b'{"b":2}\n',  # one line spans many shards
        b"",
        b"\n",
    ],
)
@pytest.mark.parametrize("shard_bytes", [1, 7, 64, 300, 10_000])
@pytest.mark.parametrize("max_row_bytes", [100, read.DEFAULT_MAX_ROW_BYTES])
def test_shards_yield_the_lines_of_the_whole_file(tmp_path, content, shard_bytes, max_row_bytes):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    whole = _lines_of(str(path), 10**9, max_row_bytes)
    assert _lines_of(str(path), shard_bytes, max_row_bytes) == whole
    if len(content) >= 2 * shard_bytes and content.count(b"\n") > 1:
        assert len(read.shards(read.Source(str(path)), shard_bytes)) > 1


def test_shards_start_at_line_starts_and_cover_the_file(tmp_path):
    content = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * (i % 37)) for i in range(500))
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    parts = read.shards(read.Source(str(path)), 1000)
    assert parts[0].span[0] == 0 and parts[-1].span[1] is None
    for a, b in zip(parts, parts[1:]):
        assert a.span[1] == b.span[0] and content[b.span[0] - 1 : b.span[0]] == b"\n"
    assert [p.first_shard for p in parts] == [True] + [False] * (len(parts) - 1)


def test_the_end_of_the_input_is_cut_finer_for_the_workers_to_finish_together(tmp_path):
    content = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"p" * (i % 37)) for i in range(2000))
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    even = read.shards(read.Source(str(path)), 4000)
    tapered = read.shards(read.Source(str(path)), 4000, tail_bytes=8000)
    assert tapered[0].span[0] == 0 and tapered[-1].span[1] is None
    for a, b in zip(tapered, tapered[1:]):
        assert a.span[1] == b.span[0] and content[b.span[0] - 1 : b.span[0]] == b"\n"
    sizes = [(b.span[1] or len(content)) - b.span[0] for b in tapered]
    fine = sum(size < 2000 for size in sizes)  # a quarter the size, at the end only
    assert 8 <= fine <= 13 and max(sizes[-fine:]) < 2000 < min(sizes[:-fine])
    assert len(tapered) > len(even)
    # Two workers cut the last file's end; one process does not.
    other = tmp_path / "other.jsonl"
    other.write_bytes(content)
    planned = [(read.Source(str(other)), None), (read.Source(str(path)), None)]
    assert [u.span for u, _ in parallel.plan_units(planned, 1)] == [None, None]  # under 16 MiB: whole
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(units, "SHARD_BYTES", 4000)
        patch.setattr(parallel, "_MIN_SHARD_BYTES", 1)
        spans = [u.span for u, _ in parallel.plan_units(planned, 2)]
    first, second = spans[: len(even)], spans[len(even) :]
    assert first == [s.span for s in even] and second == [s.span for s in tapered]


def test_only_plain_files_on_disk_are_cut(tmp_path):
    for name in ("rows.jsonl.gz", "row.json"):
        path = tmp_path / name
        path.write_bytes(b"x" * 5000)
        assert len(read.shards(read.Source(str(path)), 100)) == 1
    assert read.shards(read.Source("-", stream=open(os.devnull, "rb")), 1)[0].span is None
    assert read.shards(read.Source(str(tmp_path / "missing.jsonl")), 1)[0].span is None


# -- the report does not depend on --jobs ------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Generated rollouts with defects, plus lines that test the seams between shards."""
    root = tmp_path_factory.mktemp("jobs")
    generated = root / "generated.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "160", "--defects", "0.15",
         "--payload-kb", "4", "--seed", "3", "-o", str(generated)],
        check=True, capture_output=True,
    )
    lines = generated.read_bytes().splitlines(keepends=True)
    first_row = next(line for line in lines if line.startswith(b'{"_ng_task_index"'))
    extra = [
        b"\n",
        b"   \n",
        b"{not json\n",
        b"[1, 2]\n",
        first_row,  # the same rollout as a row in the first shard: a duplicate across shards
        orjson.dumps({"responses_create_params": {"input": "no task index"}}) + b"\n",
        b'{"big": "' + b"z" * 400_000 + b'"}\n',  # over --max-row-bytes below
    ]
    first = orjson.loads(first_row)
    later = [
        # Another stage of that rollout (no duplicate), and a task index equal to an integer one.
        orjson.dumps({**first, "stage_index": 1}) + b"\n",
        orjson.dumps({"_ng_task_index": float(first["_ng_task_index"]), "_ng_rollout_index": 99}) + b"\n",
        orjson.dumps({"responses_create_params": {"input": "no task index either"}}) + b"\n",
    ]
    rows = root / "rows.jsonl"
    rows.write_bytes(b"".join(lines[:80] + extra + lines[80:] + later) + b'{"_ng_task_index": 7}')
    (root / "second.jsonl").write_bytes(b"".join(lines[::-1][:40]))
    return root


def _run(
    args: list[str], monkeypatch, *, shard_bytes: int, min_bytes: int = 0, part_rows: int = 1000, batch_bytes: int = 50_000
) -> tuple[int, bytes]:
    monkeypatch.setattr(units, "SHARD_BYTES", shard_bytes)
    monkeypatch.setattr(units, "BATCH_BYTES", batch_bytes)
    monkeypatch.setattr(engine, "PART_ROWS", part_rows)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", min_bytes)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stdout_bytes


@pytest.mark.parametrize("fmt", ["json", "sarif", "full", "junit", "github", "jsonl", "html"])
def test_jobs_give_byte_identical_reports(corpus, monkeypatch, fmt):
    args = ["check", "--isolated", "--max-row-bytes", "300000", "--output-format", fmt, str(corpus)]
    one_process = _run([*args, "--jobs", "1"], monkeypatch, shard_bytes=10**9)
    assert one_process[0] == 1 and one_process[1]
    for jobs in ("1", "2", "3"):
        assert _run([*args, "--jobs", jobs], monkeypatch, shard_bytes=50_000) == one_process, jobs
    # Absorbing a unit in parts of a few rows changes nothing either.
    assert _run([*args, "--jobs", "1"], monkeypatch, shard_bytes=50_000, part_rows=3) == one_process


def test_health_report_does_not_depend_on_jobs(corpus, monkeypatch, tmp_path):
    reports = []
    for jobs, shard_bytes in (("1", 10**9), ("2", 40_000)):
        out = tmp_path / f"health-{jobs}"
        _run(["check", "--isolated", "-q", "--health-report", str(out), "--jobs", jobs, str(corpus)],
             monkeypatch, shard_bytes=shard_bytes)
        reports.append({str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert reports[0] == reports[1] and len(reports[0]) >= 2


def test_reports_depend_neither_on_jobs_nor_on_the_core(corpus, monkeypatch, tmp_path):
    """Every output (the report, the health report, the exit status) is the same with the core
    off, on or checked, in one process, in parts of a few rows, or in workers that fold their
    rows' digests (duplicates and repeats of one task fall in different shards)."""
    modes = ["off", "on", "check"] if native.available() else ["off"]
    proved = []
    prover = fast.prover

    def counting():
        found = prover()
        if found is None:
            return None
        check_row, families = found

        def check(raw, *args):
            proof = check_row(raw, *args)
            proved.append(proof is not None and type(proof) is not int)
            return proof

        return check, families

    monkeypatch.setattr(fast, "prover", counting)
    outputs = {}
    for mode in modes:
        monkeypatch.setattr(native, "mode", lambda mode=mode: mode)
        for jobs, shard_bytes, part_rows in (("1", 10**9, 1000), ("1", 50_000, 3), ("2", 40_000, 1000)):
            out = tmp_path / f"health-{mode}-{jobs}-{part_rows}"
            code, report = _run(
                ["check", "--isolated", "--show-availability", "--max-row-bytes", "300000", "--output-format", "json",
                 "--health-report", str(out), "--jobs", jobs, str(corpus)],
                monkeypatch, shard_bytes=shard_bytes, part_rows=part_rows,
            )
            health = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
            outputs[mode, jobs, part_rows] = (code, report, health)
    reference = outputs["off", "1", 1000]
    assert reference[0] == 1 and len(reference[2]) >= 4
    assert b"duplicate-rollout-identity" in reference[1] and b"rollout_duplicate_identity" in b"".join(reference[2].values())
    for key, output in outputs.items():
        assert output == reference, key
    if native.available():
        assert any(proved), "the core proved no row: the fast path went untested"


def test_workers_are_used_when_the_input_is_large_enough(corpus, monkeypatch):
    pools = []
    real = parallel._context

    class Recording:
        def __init__(self, context):
            self._context = context

        def Process(self, *args, **kwargs):  # noqa: N802 - multiprocessing's name
            pools.append(1)
            return self._context.Process(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._context, name)

    monkeypatch.setattr(parallel, "_context", lambda: Recording(real()))
    args = ["check", "--isolated", "-q", str(corpus / "rows.jsonl")]
    _run([*args, "--jobs", "2"], monkeypatch, shard_bytes=50_000)
    assert len(pools) == 2  # worker processes started
    _run([*args, "--jobs", "2"], monkeypatch, shard_bytes=50_000, min_bytes=10**9)  # too small to be worth it
    _run([*args, "--jobs", "1"], monkeypatch, shard_bytes=50_000)
    assert len(pools) == 2
    # A compressed file is one stream, read here and checked by both workers.
    compressed = corpus.parent / "workers-used.jsonl.gz"
    compressed.write_bytes(gzip.compress((corpus / "rows.jsonl").read_bytes()))
    _run(["check", "--isolated", "-q", "--jobs", "2", str(compressed)], monkeypatch, shard_bytes=50_000)
    assert len(pools) == 4


def test_standard_input_is_checked_in_its_turn(corpus, monkeypatch):
    data = (corpus / "rows.jsonl").read_bytes()
    args = ["check", "--isolated", "--output-format", "json", "--max-row-bytes", "300000",
            str(corpus / "rows.jsonl"), "-", str(corpus / "second.jsonl")]
    monkeypatch.setattr(units, "SHARD_BYTES", 10**9)
    single = CliRunner().invoke(main, [*args, "--jobs", "1"], input=data)
    monkeypatch.setattr(units, "SHARD_BYTES", 50_000)
    monkeypatch.setattr(units, "BATCH_BYTES", 20_000)  # standard input in many batches
    sharded = CliRunner().invoke(main, [*args, "--jobs", "2"], input=data)
    assert single.exit_code == sharded.exit_code == 1
    assert single.stdout_bytes == sharded.stdout_bytes
    assert b'"path":"-"' in single.stdout_bytes.replace(b" ", b"")


def _stream_lines(source: read.Source, max_row_bytes: int, batch_bytes: int | None) -> list[tuple]:
    items = []
    for batch in [source] if batch_bytes is None else read.batches(source, max_row_bytes, batch_bytes):
        items += [(type(item).__name__, *(getattr(item, name, None) for name in ("number", "raw", "size", "line", "reason")))
                  for item in batch.lines(max_row_bytes)]
    return items


@pytest.mark.parametrize("batch_bytes", [1, 100, 10**6])
def test_batches_yield_the_lines_of_the_stream(tmp_path, batch_bytes):
    content = b'{"a":1}\n\n   \n' + b'{"long":"' + b"x" * 500 + b'"}\n' + b"{not json\n" * 3 + b'{"b":2}'
    path = tmp_path / "rows.jsonl.gz"
    path.write_bytes(gzip.compress(content)[:-6])  # cut before the end: the stream breaks at its last line
    source = read.Source(str(path))
    whole = _stream_lines(source, 100, None)
    assert [item[0] for item in whole] == ["Line", "OversizedLine", "Line", "Line", "Line", "Unreadable"]
    assert _stream_lines(source, 100, batch_bytes) == whole
    parts = list(read.batches(source, 100, batch_bytes))
    assert [b.first_shard for b in parts] == [True] + [False] * (len(parts) - 1)
    empty = tmp_path / "empty.jsonl.gz"
    empty.write_bytes(gzip.compress(b""))
    assert [(b.first_shard, b.items) for b in read.batches(read.Source(str(empty)))] == [(True, ())]


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_compressed_files_are_checked_by_workers_with_the_same_report(corpus, monkeypatch, tmp_path, compression):
    import zstandard

    data = (corpus / "rows.jsonl").read_bytes()
    compress = gzip.compress if compression == "gzip" else zstandard.ZstdCompressor().compress
    suffix = ".gz" if compression == "gzip" else ".zst"
    (tmp_path / f"rows.jsonl{suffix}").write_bytes(compress(data))
    # One broken in the middle: the report names the line where it breaks, whoever reads it.
    broken = compress(data)
    (tmp_path / f"broken.jsonl{suffix}").write_bytes(broken[: len(broken) // 2])
    (tmp_path / "plain.jsonl").write_bytes(data[: len(data) // 3])
    args = ["check", "--isolated", "--output-format", "json", "--max-row-bytes", "300000", str(tmp_path)]
    one_process = _run([*args, "--jobs", "1"], monkeypatch, shard_bytes=10**9)
    assert one_process[0] == 1 and b"unreadable-file" in one_process[1]
    for batch_bytes in (1, 30_000):
        assert _run([*args, "--jobs", "2"], monkeypatch, shard_bytes=50_000, batch_bytes=batch_bytes) == one_process


def test_jobs_setting(tmp_path):
    (tmp_path / "trajlint.toml").write_text("jobs = -1\n")
    result = CliRunner().invoke(main, ["check", "--config", str(tmp_path / "trajlint.toml"), str(tmp_path)])
    assert result.exit_code == 2 and "jobs" in result.output
    assert parallel.usable_cores() >= 1


@pytest.mark.parametrize("shard_bytes", [64, 1000])
def test_hostile_files_cut_into_tiny_shards_give_the_same_report(monkeypatch, shard_bytes):
    args = ["check", "--isolated", "--output-format", "json", "--max-row-bytes", "5000", str(ROOT / "tests" / "data" / "hostile")]
    whole = _run([*args, "--jobs", "1"], monkeypatch, shard_bytes=10**9)
    assert _run([*args, "--jobs", "2"], monkeypatch, shard_bytes=shard_bytes) == whole


_DYING_WORKER = """
import os, sys
from trajlint.read import units
from trajlint.check import engine, parallel
from trajlint.cli import main

def die(unit):
    os._exit(9)

units.SHARD_BYTES = 50_000
parallel.PARALLEL_MIN_BYTES = 0
parallel._check_in_worker = die
sys.argv = ["trajlint", "check", "--isolated", "--no-cache", "--jobs", "2", sys.argv[1]]  # the check must run
main()
"""


def test_a_worker_that_dies_ends_the_run_with_an_error_not_a_hang(corpus):
    proc = subprocess.run(
        [sys.executable, "-c", _DYING_WORKER, str(corpus / "rows.jsonl")],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "worker process ended abruptly" in proc.stderr and "--jobs 1" in proc.stderr


_STOPPED = """
import os, signal, sys, time
from trajlint.read import units
from trajlint.check import engine, parallel
from trajlint.cli import main

signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell may start us ignoring it
path, jobs, how, once = sys.argv[1:]
parent = os.getpid()
check_in_worker, visit = parallel._check_in_worker, engine.RowChecker.visit

def stop_once():
    try:  # whichever process gets here first, once per run
        os.close(os.open(once, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return
    if how == "ctrl-c":
        os.killpg(os.getpgrp(), signal.SIGINT)  # as a terminal does: to every process of the group
    elif how == "ctrl-c-twice":
        os.killpg(os.getpgrp(), signal.SIGINT)
        time.sleep(0.05)
        os.killpg(os.getpgrp(), signal.SIGINT)
    elif how == "sigterm-then-sigint":  # a CI runner's cancel, then an impatient user
        os.kill(parent, signal.SIGTERM)
        time.sleep(0.05)
        os.kill(parent, signal.SIGINT)
    else:
        os.kill(parent, signal.SIGTERM if how == "sigterm" else signal.SIGKILL)  # as `timeout` does
    if os.getpid() != parent:
        time.sleep(60)  # a worker busy with a slow row: the run must not wait for it

def stop_in_worker(unit):
    stop_once()
    return check_in_worker(unit)

def stop_in_visit(self, subject):
    stop_once()
    return visit(self, subject)

units.SHARD_BYTES = 50_000
parallel.PARALLEL_MIN_BYTES = 0
if jobs == "1":
    engine.RowChecker.visit = stop_in_visit
else:
    parallel._check_in_worker = stop_in_worker
sys.argv = ["trajlint", "check", "--isolated", "--no-cache", "--jobs", jobs, path]  # the check must run
main()
"""


def _group_ends(pgid: int) -> bool:
    """Whether every process of the group has ended within a few seconds (then: none left)."""
    for _ in range(100):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    os.killpg(pgid, 9)
    return False


@pytest.mark.parametrize(
    ("jobs", "how", "status", "said"),
    [
        ("1", "ctrl-c", 130, "trajlint: interrupted\n"),
        ("2", "ctrl-c", 130, "trajlint: interrupted\n"),
        ("1", "sigterm", 143, "trajlint: terminated\n"),
        ("2", "sigterm", 143, "trajlint: terminated\n"),
        ("2", "sigkill", -9, ""),  # the parent cannot answer; its workers notice it is gone
        ("2", "ctrl-c-twice", 130, "trajlint: interrupted\n"),
        ("2", "sigterm-then-sigint", 143, "trajlint: terminated\n"),
        ("1", "ctrl-c-twice", 130, "trajlint: interrupted\n"),
        ("1", "sigterm-then-sigint", 143, "trajlint: terminated\n"),
    ],
)
def test_a_stopped_run_ends_with_its_status_and_no_worker_left(corpus, tmp_path, jobs, how, status, said):
    """Also when a second signal comes while the first is handled, and while a worker is busy
    with a slow row (60 s here): the run stops at once, it does not wait for the worker."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _STOPPED, str(corpus / "rows.jsonl"), jobs, how, str(tmp_path / "stopped")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
    )
    try:
        # A worker left running would hold the pipes open: the run would never seem to end.
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert proc.returncode == status, err
    assert err == said and out == ""
    assert _group_ends(proc.pid), "a worker process was left running"
    assert time.monotonic() - started < 30, "the run waited for a busy worker"


def test_workers_started_without_fork_give_the_same_report(corpus, monkeypatch):
    """Where fork is missing (macOS, Windows) the checker is pickled to each worker."""
    import multiprocessing

    args = ["check", "--isolated", "--output-format", "json", str(corpus / "rows.jsonl")]
    forked = _run([*args, "--jobs", "2"], monkeypatch, shard_bytes=400_000)
    monkeypatch.setattr(parallel, "_context", lambda: multiprocessing.get_context("spawn"))
    assert _run([*args, "--jobs", "2"], monkeypatch, shard_bytes=400_000) == forked


_PIECES = [b'{"a":1}', b"", b"   ", b"\r", b"{not json", b'{"long":"' + b"x" * 120 + b'"}', b"[1]", b"\t\r", b"\xff\xfe"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from(_PIECES), max_size=30),
    final_newline=st.booleans(),
    shard_bytes=st.integers(min_value=1, max_value=300),
    max_row_bytes=st.sampled_from([5, 50, 100_000]),
)
def test_any_cut_yields_the_lines_of_the_whole_file(tmp_path, lines, final_newline, shard_bytes, max_row_bytes):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline and lines else b""))
    assert _lines_of(str(path), shard_bytes, max_row_bytes) == _lines_of(str(path), 10**9, max_row_bytes)


def _count_workers(monkeypatch) -> list[int]:
    started: list[int] = []
    real = parallel._context

    class Recording:
        def __init__(self, context):
            self._context = context

        def Process(self, *args, **kwargs):  # noqa: N802 - multiprocessing's name
            started.append(1)
            return self._context.Process(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._context, name)

    monkeypatch.setattr(parallel, "_context", lambda: Recording(real()))
    return started


def test_workers_never_outnumber_the_work_or_the_cores(corpus, monkeypatch, tmp_path):
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")  # every run checks
    started = _count_workers(monkeypatch)
    # --jobs 64 on a small stream: one batch, checked here, no worker at all.
    small = (ROOT / "examples" / "clean.jsonl").read_bytes()
    assert len(small) < 16_000
    result = CliRunner().invoke(main, ["check", "--isolated", "-q", "--jobs", "64", "-"], input=small)
    assert result.exit_code in (0, 1) and started == []
    # Three small files on 64 cores: three workers at most.
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.jsonl").write_bytes(small)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 64)
    _run(["check", "--isolated", "-q", "--jobs", "64", str(tmp_path)], monkeypatch, shard_bytes=10**9)
    assert len(started) == 3
    # Many shards, but two cores: two workers.
    started.clear()
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    _run(["check", "--isolated", "-q", "--jobs", "64", str(corpus)], monkeypatch, shard_bytes=20_000)
    assert len(started) == 2


@pytest.mark.parametrize(("text", "cores"), [("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000", 1)])
def test_a_cgroup_cpu_quota_counts_as_cores(text, cores):
    assert parallel._cpu_max(text) == cores


_REFUSED = """
import os, sys, threading
from trajlint.read import units
from trajlint.check import parallel
from trajlint.cli import main

units.SHARD_BYTES = 50_000
parallel.PARALLEL_MIN_BYTES = 0
parallel.usable_cores = lambda: 4
if sys.argv[2] == "fork":
    forks = [0]
    real_fork = os.fork
    def fork():  # the second fork fails, as under RLIMIT_NPROC or a pids cgroup
        forks[0] += 1
        if forks[0] > 1:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return real_fork()
    os.fork = fork
else:
    real_start = threading.Thread.start
    def start(self):
        if os.getpid() == parent:
            raise RuntimeError("can't start new thread")
        return real_start(self)
    parent = os.getpid()
    threading.Thread.start = start
sys.argv = ["trajlint", "check", "--isolated", "--no-cache", "-q", "--jobs", "4", sys.argv[1]]  # the check must run
main()
"""


@pytest.mark.parametrize("refused", ["fork", "thread"])
def test_a_system_that_refuses_workers_gets_the_report_of_fewer_not_a_hang(corpus, refused):
    proc = subprocess.Popen(
        [sys.executable, "-c", _REFUSED, str(corpus / "rows.jsonl"), refused],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert _group_ends(proc.pid), "a worker process was left running"
    # Fewer workers (here: none), and the report one process gives.
    alone = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--no-cache", "-q", "--jobs", "1", str(corpus / "rows.jsonl")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert proc.returncode == alone.returncode == 1 and not err, err
    assert out == alone.stdout and out


# -- what the run keeps of a part's rows does not depend on where parts are cut ------------------


def _judged_rows() -> st.SearchStrategy:
    """Rows as the health judge sees them: indices that collide (1 and 1.0), repeat or are missing,
    stages, verdicts, digests."""
    from trajlint.health.view import Digest

    index = st.sampled_from([0, 1, 1.0, 2, "a"])
    digest = st.one_of(
        st.none(),
        st.builds(
            Digest, st.integers(0, 3), st.integers(0, 2), st.booleans(),
            st.lists(st.tuples(st.sampled_from(["500", "429"]), st.integers(1, 3)), max_size=2).map(tuple),
            st.booleans(), st.integers(0, 2), st.integers(0, 9), st.integers(0, 9), st.integers(0, 9),
            st.integers(0, 9), st.booleans(),
        ),
    )
    row = st.fixed_dictionaries(
        {}, optional={"_ng_task_index": index, "_ng_rollout_index": index, "stage_index": st.sampled_from([0, 1]),
                      "_ng_rollout_id": st.sampled_from(["r-1", "r-2"])},
    )
    return st.lists(st.tuples(row, digest, st.sets(st.sampled_from(["TL601", "TL603", "TL607"]))), max_size=25)


def _cuts(rows: list, draw_cuts: list[int]) -> list[tuple[str, int, list]]:
    """(path, lines before, rows) of each part: the rows split in two files, each cut where drawn."""
    half = len(rows) // 2
    parts = []
    for path, file_rows in (("a.jsonl", rows[:half]), ("b.jsonl", rows[half:])):
        cuts = sorted({0, len(file_rows), *(c % (len(file_rows) + 1) for c in draw_cuts)})
        parts += [(path, start, file_rows[start:end]) for start, end in zip(cuts, cuts[1:])]
    return parts


def _row_by_row(rules, inputs):
    """A run's health absorbing one row at a time, as the health report did before rows were
    folded where they are judged: the reference the folded parts are held to."""
    import tempfile

    from trajlint.health.verdicts import HealthRun, _Ordinal

    class RowByRow(HealthRun):
        def absorb(self, location, judged):
            task = judged.task
            if task is None:
                task = _Ordinal(self.rows, (self.inputs.get(location.path, len(self.inputs)), location.line))
                self._ordinals.append(task)
            self.rows += 1
            digest = judged.digest
            self.stats.records += 1
            if digest is not None:
                self.stats.add(digest)
            self.issues.update(judged.found_checks)
            self.unobserved.update(judged.missing)
            position = self.repeats.add(
                task, judged.index, judged.verdict, stage=judged.stage, first=location, rollout=judged.rollout,
                policy_calls_observed=digest is not None and digest.policy_calls_observed,
                successful=digest is not None and digest.successful_turn_calls > 0,
            )
            offset = self._spool.tell()
            self._spool.write(judged.record)
            self._add_index(task, judged.index, judged.stage, offset, len(judged.record), position)

    return RowByRow(rules, inputs, spool=tempfile.TemporaryFile())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_judged_rows(), st.lists(st.integers(0, 30), max_size=4), st.lists(st.integers(0, 30), max_size=4))
@example(  # rows named by their position in later parts, with unreadable lines before them
    [({}, None, set())] * 6 + [({"_ng_task_index": 1, "_ng_rollout_index": 0}, None, {"TL601"})] * 6, [2, 4], [0, 1, 2, 3, 5, 7],
)
def test_health_folded_in_parts_is_the_health_row_by_row(rows, draw_cuts, unreadable):
    from types import SimpleNamespace

    from trajlint.builder.identity import rollout_identity
    from trajlint.check.registry import load_rules
    from trajlint.findings import Location
    from trajlint.health.verdicts import HealthRuns, fold_judged

    runs = HealthRuns(load_rules().values(), spool=True)
    judge = runs.digester()
    judged = [
        judge.digest(
            SimpleNamespace(row=row, rollout=rollout_identity(row), judgement=fast.Judgement(frozenset(unobserved), digest)),
            [], sorted(unobserved), {},
        )
        for row, digest, unobserved in rows
    ]
    inputs = ["a.jsonl", "b.jsonl"]
    by_row, folded = _row_by_row(runs.rules, inputs), runs.for_run(inputs)
    # The k-th row of a file is on line 2k; lines that never became rows are on odd lines.
    for path, before, part in _cuts(judged, draw_cuts):
        for n, one in enumerate(part, start=before + 1):
            by_row.absorb(Location(path, 2 * n), one)
        if part:
            folded.absorb_folded(path, 2 * before, fold_judged([(2 * n, one) for n, one in enumerate(part, start=1)]))
    assert list(folded.run_findings()) == list(by_row.run_findings())
    lines = [(path, 2 * n + 1, "invalid-json") for n in unreadable for path in inputs[: n % 2 + 1]]
    assert folded.finish(lines) == by_row.finish(lines)
    assert list(folded.verdict_rows()) == list(by_row.verdict_rows())


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0, 1, 1.0, "a"]), st.sampled_from([0, 1]), st.sampled_from([None, 0, 1]),
                       st.sampled_from(["k-1", "k-2", None])), max_size=25),
    st.lists(st.integers(0, 30), max_size=4),
)
def test_identity_digests_folded_in_parts_find_what_row_by_row_finds(keys, draw_cuts):
    from trajlint.check.rules.identity import DuplicateRolloutIdentity, SharedCaptureKey
    from trajlint.check.subject import Subject
    from trajlint.findings import Location

    subjects = []
    for task, index, stage, key in keys:
        row = {"_ng_task_index": task, "_ng_rollout_index": index, **({"stage_index": stage} if stage is not None else {})}
        if key is not None:
            row["_ng_rollout_id"] = key
        subjects.append(Subject("-", 0, frozenset({"line", "row"}), value=row))
    for rule in (DuplicateRolloutIdentity, SharedCaptureKey):
        digests = [d for d in (rule().digest(s) for s in subjects)]
        by_row, folded = rule(), rule()
        for path, before, part in _cuts(digests, draw_cuts):
            rows = [(n, d) for n, d in enumerate(part, start=1) if d is not None]
            for n, d in rows:
                by_row.absorb(Location(path, n + before), d)
            if rows:
                folded.absorb_folded(path, before, rule.fold(rows))
        assert list(folded.finish()) == list(by_row.finish())


def test_a_shifted_finding_keeps_every_field_but_its_lines():
    import dataclasses

    from trajlint.findings import Finding, Location, Rollout

    finding = Finding(
        "TL401", "duplicate-rollout-identity", "error", "message", "a.jsonl", 3, "/x",
        (Location("a.jsonl", 2, "/y"), Location("b.jsonl", 5), Location("a.jsonl", 0)),
        Rollout("t", "r"), "fingerprint", True,
    )
    shifted = engine._shifted(finding, "a.jsonl", 10)
    assert shifted.line == 13
    assert shifted.related == (Location("a.jsonl", 12, "/y"), Location("b.jsonl", 5), Location("a.jsonl", 0))
    for field in dataclasses.fields(Finding):
        if field.name not in ("line", "related"):
            assert getattr(shifted, field.name) == getattr(finding, field.name), field.name
    assert engine._shifted(dataclasses.replace(finding, line=0), "a.jsonl", 10).line == 0


def test_a_checker_sent_to_another_process_proves_as_that_process_can(core, rules, monkeypatch):
    """A worker elsewhere (a Ray cluster's) may lack the native core: a checker pickled there
    takes the core's proof from the process it lands in, never its sender's."""
    import pickle

    checker = engine.RowChecker(list(rules.values()))
    assert checker.prove is not None
    sent = pickle.dumps(checker)
    assert b"trajlint._core" not in sent
    assert pickle.loads(sent).prove is not None
    monkeypatch.setattr(read.native, "mode", lambda: "off")
    assert pickle.loads(sent).prove is None
