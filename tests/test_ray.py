"""`--executor ray` on a real two-node Ray cluster started on this machine (one per session): the
report is byte-identical to `--jobs 1`, whether the workers read files, byte-range shards, objects
in S3 or batches of a stream; a task whose worker dies is retried; a unit that always kills its
worker ends the run with one line; stopping the run cancels the cluster's tasks."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlint.cli import main

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "data" / "hostile"
REAL = ROOT / "tests" / "data" / "real"


def _report(tmp_path: Path, name: str, *args: str) -> tuple[int, bytes, str]:
    out = tmp_path / f"{name}.json"
    result = CliRunner().invoke(main, ["check", "--isolated", "--output-format", f"json:{out}", "-q", *args])
    return result.exit_code, out.read_bytes() if out.exists() else b"", result.stderr


def _same_as_one_process(tmp_path: Path, *paths: str) -> bytes:
    code, local, local_err = _report(tmp_path, "local", "--jobs", "1", *paths)
    ray_code, on_ray, err = _report(tmp_path, "ray", "--executor", "ray", *paths)
    assert (ray_code, err) == (code, local_err), err
    assert on_ray == local
    return on_ray


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated file with defects, large enough for several shards, and its gzip copy."""
    directory = tmp_path_factory.mktemp("generated")
    path = directory / "generated.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "200", "--defects", "0.15", "-o", str(path)],
        check=True,
        capture_output=True,
    )
    (directory / "generated.jsonl.defects.json").unlink(missing_ok=True)
    (directory / "copy.jsonl.gz").write_bytes(gzip.compress(path.read_bytes()))
    return directory


def test_hostile_and_real_corpora_match_one_process(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # relative paths, read by the workers from the driver's directory
    _same_as_one_process(tmp_path, "tests/data/hostile", "tests/data/real")


def test_shards_and_stream_batches_match_one_process(ray_cluster, generated, tmp_path):
    from trajlint.check import parallel
    from trajlint.read import Source

    planned = parallel.plan_units([(Source(str(generated / "generated.jsonl")), None)], 2)
    assert len(planned) >= 4  # the file is checked as several byte-range shards
    report = _same_as_one_process(tmp_path, str(generated))
    assert b'"code": "TL1' in report  # the defects are found


def test_s3_objects_read_by_the_workers(ray_cluster, s3, generated, tmp_path):
    url = s3.upload(generated, "for-ray")
    code, local, local_err = _report(tmp_path, "local", "--jobs", "1", url)
    ray_code, on_ray, err = _report(tmp_path, "ray", "--executor", "ray", url)
    assert (ray_code, err) == (code, local_err) and on_ray == local and url.encode() in on_ray


def _run_with(monkeypatch, tmp_path, wrap, *paths):
    """The CLI's run on Ray with every task's checker wrapped by `wrap` (defined in a test: Ray
    ships it to the workers by value)."""
    from trajlint.check import ray_executor

    original = ray_executor.RayExecutor.check_units

    def check_units(self, checker, planned, max_row_bytes):
        return original(self, wrap(checker), planned, max_row_bytes)

    monkeypatch.setattr(ray_executor.RayExecutor, "check_units", check_units)
    return _report(tmp_path, "ray", "--executor", "ray", *paths)


def test_a_worker_killed_mid_run_is_retried(ray_cluster, generated, tmp_path, monkeypatch):
    marker = tmp_path / "killed-once"

    class DiesOnce:
        def __init__(self, checker):
            self.checker = checker

        def check_unit(self, unit, max_row_bytes, kind):
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return self.checker.check_unit(unit, max_row_bytes, kind)
            os._exit(1)  # the worker process dies mid-run, as a killed one does

    _, local, local_err = _report(tmp_path, "local", "--jobs", "1", str(generated))
    code, on_ray, err = _run_with(monkeypatch, tmp_path, DiesOnce, str(generated))
    assert marker.exists() and err == local_err and code == 1
    assert on_ray == local


def test_a_unit_that_always_kills_its_worker_ends_the_run(ray_cluster, generated, tmp_path, monkeypatch):
    class AlwaysDies:
        def __init__(self, checker):
            self.checker = checker

        def check_unit(self, unit, max_row_bytes, kind):
            if getattr(unit, "span", None) and unit.span[0] > 0:
                os._exit(1)
            return self.checker.check_unit(unit, max_row_bytes, kind)

    code, _, err = _run_with(monkeypatch, tmp_path, AlwaysDies, str(generated / "generated.jsonl"))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "generated.jsonl (bytes " in line and "its worker died on every one of 4 tries" in line


def test_ctrl_c_cancels_the_clusters_tasks(ray_cluster, generated, tmp_path, monkeypatch):
    import _thread

    cancelled = []
    original_cancel = ray.cancel

    def cancel(ref, **options):
        cancelled.append(ref)
        return original_cancel(ref, **options)

    monkeypatch.setattr(ray, "cancel", cancel)

    running = tmp_path / "running"
    running.mkdir()

    class Slow:
        def __init__(self, checker):
            self.checker = checker

        def check_unit(self, unit, max_row_bytes, kind):
            (running / str(os.getpid())).touch()
            time.sleep(120)
            return self.checker.check_unit(unit, max_row_bytes, kind)

    stop = threading.Event()

    def ctrl_c_once_both_nodes_work() -> None:
        while len(list(running.iterdir())) < 2 and not stop.wait(0.1):
            pass
        if not stop.is_set():
            _thread.interrupt_main()

    watcher = threading.Thread(target=ctrl_c_once_both_nodes_work, daemon=True)
    watcher.start()
    try:
        code, _, err = _run_with(monkeypatch, tmp_path, Slow, str(generated / "generated.jsonl"))
    finally:
        stop.set()
        watcher.join()
    interrupted = time.monotonic()
    assert code == 130 and "interrupted" in err
    assert len(cancelled) >= 2  # every task in flight, on both nodes
    # The cancelled tasks give their CPUs back long before they would have ended.
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < interrupted + 60:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2
    assert time.monotonic() - interrupted < 60  # long before the tasks' two minutes


def test_without_ray_the_extra_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    result = CliRunner().invoke(main, ["check", "--isolated", "--executor", "ray", str(HOSTILE / "nulls.jsonl")])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["Error: --executor ray needs Ray: pip install 'trajlint[ray]'"]


def test_executor_and_address_from_the_configuration(tmp_path, monkeypatch):
    (tmp_path / "trajlint.toml").write_text('executor = "ray"\nray-address = "127.0.0.1:1"\n')
    monkeypatch.chdir(tmp_path)
    shown = CliRunner().invoke(main, ["check", "--show-settings"])
    assert 'executor = "ray"' in shown.stdout and 'ray-address = "127.0.0.1:1"' in shown.stdout
    (tmp_path / "trajlint.toml").write_text('executor = "spark"\n')
    bad = CliRunner().invoke(main, ["check", "."])
    assert bad.exit_code == 2 and "executor: must be one of local, ray, not 'spark'" in bad.stderr


@pytest.mark.parametrize("copies", [1, 4])
def test_compressed_files_as_batches_or_whole_tasks(ray_cluster, generated, tmp_path_factory, tmp_path, monkeypatch, copies):
    """Fewer compressed files than tasks in flight (2 per CPU: 4 here) are read by the driver and
    sent in batches; as many or more are read whole by the workers. Either way, the same report."""
    from trajlint import read

    directory = tmp_path_factory.mktemp("compressed")
    for index in range(copies):
        (directory / f"copy-{index}.jsonl.gz").write_bytes((generated / "copy.jsonl.gz").read_bytes())
    _, local, local_err = _report(tmp_path, "local", "--jobs", "1", str(directory))
    batched = []
    original = read.batches
    monkeypatch.setattr(read, "batches", lambda *a, **k: batched.append(a[0].path) or original(*a, **k))
    code, on_ray, err = _report(tmp_path, "ray", "--executor", "ray", str(directory))
    assert (code, err, on_ray) == (1, local_err, local)
    assert len(batched) == (1 if copies == 1 else 0)
