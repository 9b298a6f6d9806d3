"""The result cache: a rerun reports byte for byte what a cold run reports, in every format; a
changed byte, setting or trajlint always checks again; a broken entry is ignored; standard input
and the health report are never served from it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint import api
from trajlint.check import cache as cache_module
from trajlint.cli import main
from trajlint.cli.execute import ENV_NO_CACHE
from trajlint.report.formats import FORMATS

from .conftest import EXAMPLES, ROOT

REAL = ROOT / "tests" / "data" / "real"


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    """A project: examples and real data in several directories, the working directory."""
    monkeypatch.delenv(cache_module.ENV_DIR, raising=False)
    monkeypatch.delenv(ENV_NO_CACHE, raising=False)
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project / "examples", ignore=shutil.ignore_patterns("*.py"))
    shutil.copytree(REAL / "v0.6.0", project / "real" / "v0.6.0")
    shutil.copytree(REAL / "v0.5.0", project / "real" / "v0.5.0")
    monkeypatch.chdir(project)
    return project


def _entries(directory: Path) -> list[Path]:
    return sorted(p for p in (directory / f"v{cache_module.FORMAT}").rglob("*") if p.is_file())


def _run(*args: str, out: Path | None = None) -> tuple[int, str, str, dict[str, bytes]]:
    """(exit status, stdout, stderr, every report file) of one `trajlint check` with every format."""
    outputs = []
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        outputs = [f"--output-format={name}:{out / name}" for name in FORMATS]
    result = CliRunner().invoke(main, ["check", "--isolated", *outputs, *args], catch_exceptions=False)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out is not None else {}
    return result.exit_code, result.stdout, result.stderr, files


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--runs", "directory"],
        ["--runs", "all", "--select", "ALL", "--show-availability"],
        ["--run-group", "real/**", "--profile", "nemo-gym-0.7", "--statistics"],
        ["--jobs", "2"],
        ["--jobs", "2", "--select", "TL4,TL5", "--output-format", "json"],
    ],
)
def test_a_rerun_reports_byte_for_byte_what_a_cold_run_does(corpus, tmp_path, flags):
    cache_dir = corpus / ".trajlint_cache"
    uncached = _run("--no-cache", *flags, out=tmp_path / "uncached")
    assert not cache_dir.exists()
    cold = _run(*flags, out=tmp_path / "cold")
    assert _entries(cache_dir)
    warm = _run(*flags, out=tmp_path / "warm")
    assert uncached[0] == 1
    assert uncached == cold == warm
    assert set(uncached[3]) == set(FORMATS)
    # One file changed: its run is checked again, the others come from the cache.
    changed = corpus / "real" / "v0.6.0"
    target = sorted(changed.rglob("*.jsonl"))[0]
    target.write_bytes(target.read_bytes() + b'{"broken": \n')
    partly = _run(*flags, out=tmp_path / "partly")
    assert partly == _run("--no-cache", *flags, out=tmp_path / "uncached")
    assert partly != warm


def test_entries_are_read_back(corpus):
    """A rerun takes its findings from the entry (altered here, with a checksum to match)."""
    target = corpus / "examples" / "broken.jsonl"
    _run(str(target))
    (entry,) = _entries(corpus / ".trajlint_cache")
    key = entry.name
    payload = json.loads(entry.read_bytes().partition(b"\n")[2])
    payload["findings"][0][3] = "a message only the cache knows"
    assert cache_module.ResultCache(corpus / ".trajlint_cache").store(key, payload)
    assert "a message only the cache knows" in _run(str(target))[1]
    assert "a message only the cache knows" not in _run("--no-cache", str(target))[1]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-20] + b"x" + data[-19:],  # one byte changed
        lambda data: b"",
        lambda data: b"not an entry at all",
        lambda data: data.replace(b"trajlint-cache", b"trajlint-cachf", 1),
    ],
)
def test_a_broken_entry_is_ignored_and_rewritten(corpus, tmp_path, damage):
    expected = _run("--no-cache", out=tmp_path / "expected")
    _run()
    entries = _entries(corpus / ".trajlint_cache")
    for entry in entries:
        entry.write_bytes(damage(entry.read_bytes()))
    assert _run(out=tmp_path / "after") == expected
    assert all(cache_module.ResultCache(corpus / ".trajlint_cache").load(e.name) is not None for e in entries)


def test_an_entry_that_is_no_result_is_ignored(corpus, tmp_path):
    expected = _run("--no-cache", out=tmp_path / "expected")
    _run()
    store = cache_module.ResultCache(corpus / ".trajlint_cache")
    for entry in _entries(corpus / ".trajlint_cache"):
        store.store(entry.name, {"findings": [["too", "short"]], "coverage": [], "counts": [0, 0, 0], "health": None})
    assert _run(out=tmp_path / "after") == expected


def test_same_size_and_timestamp_with_new_content_is_checked_again(corpus):
    """`touch -d`: metadata is never trusted, the content is hashed."""
    target = corpus / "examples" / "clean.jsonl"
    clean = _run(str(target))
    assert clean[0] == 0
    data = target.read_bytes()
    before = os.stat(target)
    changed = b"[" + data[1:]  # the first row is no JSON object any more
    assert changed != data and len(changed) == len(data)
    target.write_bytes(changed)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    rechecked = _run(str(target))
    assert rechecked == _run("--no-cache", str(target))
    assert rechecked[0] == 1 and rechecked != clean


def test_a_changed_setting_checks_again(corpus):
    for flags in (["--select", "TL1"], ["--select", "ALL"], ["--profile", "nemo-gym-0.7"], ["--max-row-bytes", "5000"],
                  ["--file-kind", "rollouts"], ["--runs", "all"]):
        assert _run(*flags) == _run("--no-cache", *flags)


def test_the_key_covers_trajlint_and_the_settings(monkeypatch):
    rules = {}
    plan = cache_module.RunPlan()
    base = cache_module.settings_digest(rules, max_row_bytes=10, runs=plan, file_kinds=None)
    assert base == cache_module.settings_digest(rules, max_row_bytes=10, runs=plan, file_kinds=None)
    assert base != cache_module.settings_digest(rules, max_row_bytes=11, runs=plan, file_kinds=None)
    assert base != cache_module.settings_digest(rules, max_row_bytes=10, runs=cache_module.RunPlan("all"), file_kinds=None)
    monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", "pydantic")
    assert base != cache_module.settings_digest(rules, max_row_bytes=10, runs=plan, file_kinds=None)
    monkeypatch.setattr(cache_module, "_trajlint_digest", "another trajlint")
    monkeypatch.delenv("TRAJLINT_SCHEMA_BACKEND")
    assert base != cache_module.settings_digest(rules, max_row_bytes=10, runs=plan, file_kinds=None)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_changed_byte_always_checks_again(corpus, data):
    """Mutate one byte of one file: the cached run reports what an uncached run reports."""
    files = sorted(p for p in corpus.rglob("*.jsonl") if ".trajlint_cache" not in p.parts)
    api.check_paths(["."], isolated=True, cache=True)  # every run cached
    target = data.draw(st.sampled_from(files))
    content = bytearray(target.read_bytes())
    position = data.draw(st.integers(0, len(content) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != content[position]))
    content[position] = byte
    stat = os.stat(target)
    target.write_bytes(bytes(content))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cached = api.check_paths(["."], isolated=True, cache=True)
    uncached = api.check_paths(["."], isolated=True)
    assert cached.to_dict() == uncached.to_dict()
    assert cached.exit_code == uncached.exit_code


def test_a_run_too_large_for_an_entry_is_checked_every_time(corpus, monkeypatch):
    """An entry is held whole in memory: a run with more findings than it may hold is not stored,
    so the run's memory stays bounded, and its report is the same."""
    monkeypatch.setattr(cache_module, "MAX_ENTRY_FINDINGS", 3)
    first = CliRunner().invoke(main, ["check", "--isolated", "examples/broken.jsonl", "examples/clean.jsonl"])
    assert first.exit_code == 1
    entries = _entries(corpus / ".trajlint_cache")
    assert len(entries) == 1  # clean.jsonl's run, with no finding; broken.jsonl's has more than 3
    second = CliRunner().invoke(main, ["check", "--isolated", "examples/broken.jsonl", "examples/clean.jsonl"])
    assert (second.exit_code, second.stdout) == (first.exit_code, first.stdout)
    assert _entries(corpus / ".trajlint_cache") == entries


def test_standard_input_is_never_cached(corpus):
    data = (corpus / "examples" / "broken.jsonl").read_bytes()
    result = CliRunner().invoke(main, ["check", "--isolated", "-"], input=data)
    assert result.exit_code == 1
    assert not (corpus / ".trajlint_cache").exists()


def test_the_directory_is_tagged_and_ignored(corpus):
    _run()
    directory = corpus / ".trajlint_cache"
    assert (directory / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (directory / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not list(directory.rglob("*.tmp"))  # no temporary file is left behind
    git = shutil.which("git")
    if git:
        subprocess.run([git, "init", "-q"], check=True)
        status = subprocess.run([git, "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True, check=True)
        assert ".trajlint_cache" not in status.stdout


def test_where_the_cache_lives(corpus, monkeypatch):
    _run("--cache-dir", "elsewhere")
    assert _entries(corpus / "elsewhere") and not (corpus / ".trajlint_cache").exists()
    monkeypatch.setenv(cache_module.ENV_DIR, str(corpus / "from-env"))
    _run()
    assert _entries(corpus / "from-env")
    _run("--cache-dir", "flag-wins")
    assert _entries(corpus / "flag-wins")
    monkeypatch.delenv(cache_module.ENV_DIR)
    (corpus / "conf").mkdir()
    (corpus / "conf" / "trajlint.toml").write_text('cache-dir = "cached"\n')
    CliRunner().invoke(main, ["check", "--config", "conf/trajlint.toml", "examples"], catch_exceptions=False)
    assert _entries(corpus / "conf" / "cached")  # relative to the configuration file
    monkeypatch.setenv(ENV_NO_CACHE, "1")
    _run("--cache-dir", "off")
    assert not (corpus / "off").exists()
    monkeypatch.delenv(ENV_NO_CACHE)
    _run("--no-cache", "--cache-dir", "off")
    assert not (corpus / "off").exists()


def test_the_project_root_is_the_configuration_files_directory(corpus):
    (corpus / "pyproject.toml").write_text("[tool.trajlint]\nprofile = \"latest\"\n")
    (corpus / "examples" / "inner").mkdir()
    os.chdir(corpus / "examples" / "inner")
    CliRunner().invoke(main, ["check", ".."], catch_exceptions=False)
    assert _entries(corpus / ".trajlint_cache")


def test_a_bad_cache_dir_setting_is_one_line(corpus):
    (corpus / "trajlint.toml").write_text("cache-dir = 3\n")
    result = CliRunner().invoke(main, ["check", "examples"])
    assert result.exit_code == 2
    assert "cache-dir: must be the path of a directory" in result.stderr


def test_an_unwritable_cache_still_checks(corpus, tmp_path):
    (corpus / "blocked").write_text("a file, not a directory")
    assert _run("--cache-dir", "blocked/cache") == _run("--no-cache")


def test_baseline_recorded_from_cached_results_is_the_same(corpus):
    runner = CliRunner()
    runner.invoke(main, ["baseline", "--isolated", "--no-cache", "-o", "cold.json"], catch_exceptions=False)
    runner.invoke(main, ["baseline", "--isolated", "-o", "first.json"], catch_exceptions=False)
    runner.invoke(main, ["baseline", "--isolated", "-o", "warm.json"], catch_exceptions=False)
    assert (corpus / "cold.json").read_bytes() == (corpus / "first.json").read_bytes() == (corpus / "warm.json").read_bytes()
    assert json.loads((corpus / "cold.json").read_text())["entries"]
    assert _run("--baseline", "warm.json") == _run("--no-cache", "--baseline", "warm.json")


def test_health_numbers_come_from_the_cache_and_the_health_report_bypasses_it(corpus, tmp_path):
    flags = ["--select", "ALL", "--output-format", "json"]
    uncached = _run("--no-cache", *flags)
    assert json.loads(uncached[1])["summary"]["health"]["rollouts"] > 0
    assert _run(*flags) == uncached == _run(*flags)
    entries = _entries(corpus / ".trajlint_cache")
    CliRunner().invoke(main, ["check", "--isolated", "--health-report", str(tmp_path / "h1"), "examples/clean.jsonl"])
    for entry in entries:  # no entry would give verdict rows: the report checks every row again
        entry.write_bytes(b"")
    CliRunner().invoke(main, ["check", "--isolated", "--health-report", str(tmp_path / "h2"), "examples/clean.jsonl"])
    assert sorted(p.name for p in (tmp_path / "h1").rglob("*")) == sorted(p.name for p in (tmp_path / "h2").rglob("*"))
    for one in (tmp_path / "h1").rglob("*"):
        if one.is_file():
            assert one.read_bytes() == (tmp_path / "h2" / one.relative_to(tmp_path / "h1")).read_bytes()
    assert all(e.read_bytes() == b"" for e in entries)  # nor did it write any


@pytest.mark.slow
def test_concurrent_runs_share_the_cache(corpus):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(ENV_NO_CACHE, None)
    command = [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "json", "."]
    expected = subprocess.run([*command, "--no-cache"], capture_output=True, env=env).stdout
    for _ in range(2):  # cold, all at once; then warm, all at once
        processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(4)]
        outputs = [p.communicate()[0] for p in processes]
        assert all(out == expected for out in outputs)
    store = cache_module.ResultCache(corpus / ".trajlint_cache")
    assert all(store.load(e.name) is not None for e in _entries(corpus / ".trajlint_cache"))
    assert not list((corpus / ".trajlint_cache").rglob("*.tmp"))
