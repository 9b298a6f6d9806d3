"""Every file trajlint writes (reports, baselines, build output, health reports) goes through
one writer: beside the target, then renamed over it. A full disk, a read-only directory, a stop
or a second writer never leaves the previous file cut short, and nothing an input names (standard
input's file included) is ever written."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from trajlint.cli import main
from trajlint.report import write

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_NO_CACHE": "1"}  # every run checks and writes


def trajlint(*args: str, stdin=None, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trajlint", *args], stdin=stdin, capture_output=True, text=True, timeout=60,
        env={**ENV, **(env or {})}, cwd=cwd,
    )


class _FullDisk:
    """A file object whose writes fail with ENOSPC once `room` bytes are written."""

    def __init__(self, handle, room: int = 100):
        self._handle, self._room = handle, room

    def write(self, data):
        if len(data) > self._room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return self._handle.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()

    def __getattr__(self, name):
        return getattr(self._handle, name)


def _previous(tmp_path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tmp_path)): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}


def test_a_full_disk_leaves_every_previous_file_whole_and_exits_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    runner = CliRunner()
    rows = str(EXAMPLES / "broken.jsonl")
    assert runner.invoke(main, ["baseline", "--isolated", "-o", "base.json", rows]).exit_code == 0
    assert runner.invoke(main, ["check", "--isolated", "-q", "--output-format", "json:report.json",
                                "--health-report", "health", rows]).exit_code == 1
    assert runner.invoke(main, ["build", "-o", "built.jsonl", rows]).exit_code in (0, 1)
    before = _previous(tmp_path)
    assert len(before) == 5
    real_open = open
    monkeypatch.setattr(write, "open", lambda *a, **k: _FullDisk(real_open(*a, **k)), raising=False)
    for args in (
        ["baseline", "--isolated", "-o", "base.json", rows],
        ["check", "--isolated", "-q", "--output-format", "json:report.json", rows],
        ["check", "--isolated", "-q", "--health-report", "health", rows],
        ["build", "-o", "built.jsonl", rows],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert "No space left on device" in result.stderr
        assert _previous(tmp_path) == before, args  # byte-identical, and no temporary file left


def test_dev_full_is_an_error_not_a_crash(tmp_path):
    rows = str(EXAMPLES / "clean.jsonl")
    for args in (["build", "-o", "/dev/full", rows], ["check", "--isolated", "--output-format", "json:/dev/full", rows]):
        proc = trajlint(*args)
        assert proc.returncode == 2 and "No space left on device" in proc.stderr, proc.stderr
        assert len(proc.stderr.splitlines()) == 1


def test_an_existing_report_in_a_read_only_directory_is_left_untouched(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    """A directory that takes no new file (as a user without write permission on it sees it):
    the report cannot be replaced whole, so it is not written at all."""
    report = tmp_path / "report.json"
    report.write_text("previous")

    def refused(path):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(write, "_temporary_beside", refused)
    result = CliRunner().invoke(
        main, ["check", "--isolated", "-q", "--output-format", f"json:{report}", str(EXAMPLES / "clean.jsonl")]
    )
    assert result.exit_code == 2 and "cannot be replaced whole" in result.stderr, result.output
    assert report.read_text() == "previous"
    result = CliRunner().invoke(main, ["build", "-o", str(tmp_path / "new.jsonl"), str(EXAMPLES / "clean.jsonl")])
    assert result.exit_code == 2 and "Permission denied" in result.stderr
    assert not (tmp_path / "new.jsonl").exists()


def test_the_file_on_standard_input_is_never_written(tmp_path):
    data = (EXAMPLES / "broken.jsonl").read_bytes()
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(data)
    for args in (["check", "-", "--isolated", "--output-format", "json:/dev/stdin"],
                 ["check", "-", "--isolated", "--output-format", "json:/dev/fd/0"],
                 ["build", "-", "-o", "/dev/fd/0"], ["build", "-", "-o", "/dev/stdin"]):
        with open(rows, "rb") as stdin:
            proc = trajlint(*args, stdin=stdin)
        assert proc.returncode == 2 and "standard input" in proc.stderr, (args, proc.stderr)
        assert rows.read_bytes() == data, args


def test_a_file_named_dash_is_a_file_not_standard_input(tmp_path):
    dash = tmp_path / "-"
    dash.write_bytes((EXAMPLES / "broken.jsonl").read_bytes())
    proc = trajlint("check", "--isolated", "./-", "--output-format", "json:./-", cwd=tmp_path)
    assert proc.returncode == 2 and "also an input" in proc.stderr, proc.stderr
    assert dash.read_bytes() == (EXAMPLES / "broken.jsonl").read_bytes()


def test_the_step_summary_is_never_an_input_nor_a_fifo(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes((EXAMPLES / "broken.jsonl").read_bytes())
    proc = trajlint("check", "--isolated", "--output-format", "github", str(rows), env={"GITHUB_STEP_SUMMARY": str(rows)})
    assert proc.returncode == 1 and "cannot write the step summary" in proc.stderr
    assert rows.read_bytes() == (EXAMPLES / "broken.jsonl").read_bytes()
    os.mkfifo(tmp_path / "fifo")
    proc = trajlint("check", "--isolated", "--output-format", "github", str(rows),
                    env={"GITHUB_STEP_SUMMARY": str(tmp_path / "fifo")})
    assert proc.returncode == 1 and "cannot write the step summary" in proc.stderr


def test_a_report_to_a_fifo_nobody_reads_is_an_error_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    proc = trajlint("check", "--isolated", "--output-format", f"json:{tmp_path / 'fifo'}", str(EXAMPLES / "clean.jsonl"))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_two_runs_writing_one_baseline_leave_one_whole_file(tmp_path):
    target = tmp_path / "base.json"
    inputs = [str(EXAMPLES / "broken.jsonl"), str(EXAMPLES)]
    for _ in range(3):
        procs = [
            subprocess.Popen([sys.executable, "-m", "trajlint", "baseline", "--isolated", "-o", str(target), path],
                             env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for path in inputs
        ]
        for proc in procs:
            assert proc.wait(timeout=60) == 0, proc.stderr.read()
            proc.stderr.close()
        document = json.loads(target.read_text())
        assert document["tool"] == "trajlint"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["base.json"]


class _Health:
    """What `report.health.write_report` takes: a summary, and the verdict rows (`during` runs
    while they are written, as a second writer would)."""

    def __init__(self, name: str, rows: int, during=None):
        self.summary = {"run": {"name": name, "artifacts": {"records": rows}}, "tasks": {}}
        self._rows, self._during = rows, during

    def verdict_rows(self):
        for n in range(self._rows):
            if n == 1 and self._during is not None:
                self._during()
            yield json.dumps({"rollout_id": f"{n}-0", "verdict": "healthy", "findings": [], "run": self.summary["run"]["name"]}).encode() + b"\n"


def _pair(directory: Path) -> tuple[str, set[str]]:
    """(the run the summary is of, the runs its verdict rows are of)."""
    summary = json.loads((directory / "quality_summary.json").read_text())
    rows = [json.loads(line) for line in (directory / "rollout_verdicts.jsonl").read_text().splitlines()]
    assert len(rows) == summary["run"]["artifacts"]["records"]
    return summary["run"]["name"], {row["run"] for row in rows}


def test_a_health_report_written_while_another_is_written_is_one_runs_pair(tmp_path):
    from trajlint.report import health

    second = _Health("second", 3)
    first = _Health("first", 5, during=lambda: health.write_report(str(tmp_path), second))
    health.write_report(str(tmp_path), first)  # the second is written whole while the first is
    assert _pair(tmp_path) == ("first", {"first"})  # both files of the run that renamed last
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quality_summary.json", "rollout_verdicts.jsonl"]


def test_a_reader_holding_the_report_directory_reads_one_pair(tmp_path):
    import fcntl
    import threading

    from trajlint.report import health

    health.write_report(str(tmp_path), _Health("old", 2))
    fd = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # as `flock -s DIR cat DIR/*` does
    writer = threading.Thread(target=health.write_report, args=(str(tmp_path), _Health("new", 4)))
    writer.start()
    writer.join(0.5)
    try:
        assert writer.is_alive() and _pair(tmp_path) == ("old", {"old"})  # nothing replaced while read
    finally:
        os.close(fd)
    writer.join(10)
    assert not writer.is_alive() and _pair(tmp_path) == ("new", {"new"})


def test_a_report_directory_locked_too_long_is_one_line_and_exit_2(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.setenv("TRAJLINT_NO_CACHE", "1")
    monkeypatch.setattr(write, "LOCK_WAIT_SECONDS", 0.2)
    report = tmp_path / "health"
    report.mkdir()
    fd = os.open(report, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        result = CliRunner().invoke(main, ["check", "--isolated", "-q", "--health-report", str(report), str(EXAMPLES / "clean.jsonl")])
    finally:
        os.close(fd)
    assert result.exit_code == 2 and "another process has held its lock" in result.output, result.output
    assert list(report.iterdir()) == []  # no temporary file left behind


def test_two_runs_writing_one_health_report_leave_one_runs_pair(tmp_path):
    inputs = {"broken": str(EXAMPLES / "broken.jsonl"), "clean": str(EXAMPLES / "clean.jsonl")}
    alone = {}
    for name, path in inputs.items():
        assert trajlint("check", "--isolated", "-q", "--health-report", str(tmp_path / name), path).returncode in (0, 1)
        alone[name] = ((tmp_path / name / "quality_summary.json").read_bytes(), (tmp_path / name / "rollout_verdicts.jsonl").read_bytes())
    assert alone["broken"] != alone["clean"]
    shared = tmp_path / "shared"
    for _ in range(3):
        procs = [
            subprocess.Popen([sys.executable, "-m", "trajlint", "check", "--isolated", "-q", "--health-report", str(shared), path],
                             env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for path in inputs.values()
        ]
        for proc in procs:
            assert proc.wait(timeout=60) in (0, 1), proc.stderr.read()
            proc.stderr.close()
        pair = ((shared / "quality_summary.json").read_bytes(), (shared / "rollout_verdicts.jsonl").read_bytes())
        assert pair in alone.values()
        assert sorted(p.name for p in shared.iterdir()) == ["quality_summary.json", "rollout_verdicts.jsonl"]
