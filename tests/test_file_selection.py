"""Which files a run reads, as ruff chooses them: `include`/`extend-include`, `exclude`/
`extend-exclude` with ruff's default excludes, `.gitignore`, `--force-exclude` for named paths,
`--stdin-filename`, and never the run's own reports."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from trajlint.cli import main

from .conftest import EXAMPLES

ROW = (EXAMPLES / "clean.jsonl").read_bytes().splitlines(keepends=True)[0]
BROKEN = (EXAMPLES / "broken.jsonl").read_bytes()


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(main, ["check", *args], input=input)


def shown(*args: str) -> list[str]:
    result = run("--show-files", *args)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A git work tree with rollout files where ruff's users keep things they do not lint."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in ("runs/a.jsonl", ".venv/lib/x.jsonl", "node_modules/p/x.jsonl", "build/x.jsonl",
                 "runs/__pycache__/x.jsonl", "scratch/x.jsonl", "runs/b.ndjson", "runs/tmp-1.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(ROW)
    (tmp_path / ".gitignore").write_text("scratch/\ntmp-*.jsonl\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_default_excludes_and_gitignore(tree):
    assert shown("--isolated") == ["runs/a.jsonl"]


def test_no_respect_gitignore_and_an_empty_exclude(tree):
    assert shown("--isolated", "--no-respect-gitignore") == ["runs/a.jsonl", "runs/tmp-1.jsonl", "scratch/x.jsonl"]
    every = shown("--isolated", "--no-respect-gitignore", "--exclude", "")
    assert ".venv/lib/x.jsonl" in every and "node_modules/p/x.jsonl" in every and len(every) == 7


def test_git_info_exclude_and_nested_gitignore_with_negation(tree):
    (tree / ".git" / "info").mkdir(exist_ok=True)
    (tree / ".git" / "info" / "exclude").write_text("a.jsonl\n")
    assert shown("--isolated") == []
    (tree / "runs" / ".gitignore").write_text("!a.jsonl\n")
    assert shown("--isolated") == ["runs/a.jsonl"]
    # The .gitignore files above a searched directory speak too, up to the repository's root.
    assert shown("--isolated", "runs") == ["runs/a.jsonl"]
    (tree / "runs" / ".gitignore").unlink()
    assert shown("--isolated", "runs") == []


def test_extend_include_finds_ndjson(tree):
    assert shown("--isolated", "--extend-include", "*.ndjson") == ["runs/a.jsonl", "runs/b.ndjson"]
    assert shown("--isolated", "--include", "*.ndjson") == ["runs/b.ndjson"]


def test_extend_exclude_adds_to_the_defaults(tree):
    assert shown("--isolated", "--no-respect-gitignore", "--extend-exclude", "scratch,tmp-*") == ["runs/a.jsonl"]


def test_configuration_keys(tree):
    (tree / "trajlint.toml").write_text(
        'extend-include = ["*.ndjson"]\nextend-exclude = ["runs/a.jsonl"]\nrespect-gitignore = false\n'
    )
    assert shown() == ["runs/b.ndjson", "runs/tmp-1.jsonl", "scratch/x.jsonl"]
    # The command line's extend-exclude adds to the file's.
    assert shown("--extend-exclude", "scratch") == ["runs/b.ndjson", "runs/tmp-1.jsonl"]
    (tree / "trajlint.toml").write_text('exclude = "build"\n')
    bad = run("--show-files")
    assert bad.exit_code == 2 and "exclude: must be a list of gitignore-style patterns" in bad.stderr


def test_named_paths_are_read_unless_force_exclude(tree):
    named = ["runs/a.jsonl", ".venv/lib/x.jsonl", "scratch/x.jsonl"]
    assert shown("--isolated", *named) == named
    # Excludes, not .gitignore, decide for named paths, as in ruff (pre-commit names tracked files).
    assert shown("--isolated", "--force-exclude", *named) == ["runs/a.jsonl", "scratch/x.jsonl"]
    assert shown("--isolated", "--force-exclude", "--extend-exclude", "runs", *named) == ["scratch/x.jsonl"]
    assert shown("--isolated", "--force-exclude", ".venv") == []


def test_stdin_filename_names_standard_input(tree):
    result = run("--isolated", "--output-format", "json", "--stdin-filename", "runs/piped.jsonl", input=BROKEN)
    paths = {finding["path"] for finding in json.loads(result.stdout)["findings"]}
    assert paths == {"runs/piped.jsonl"}
    (tree / "trajlint.toml").write_text('[per-file-ignores]\n"runs/*" = ["TL0"]\n')
    ignored = run("--output-format", "json", "--stdin-filename", "runs/piped.jsonl", "-", input=BROKEN)
    codes = {finding["code"] for finding in json.loads(ignored.stdout)["findings"]}
    assert ignored.exit_code == 1 and codes and not any(code.startswith("TL0") for code in codes)
    # Every rule ignored on the only input: a gate that checks nothing, which is refused.
    (tree / "trajlint.toml").write_text('[per-file-ignores]\n"runs/*" = ["ALL"]\n')
    ignored = run("--stdin-filename", "runs/piped.jsonl", "-", input=BROKEN)
    assert ignored.exit_code == 2 and '"runs/*" leaves no rule' in ignored.stderr, ignored.stderr
    skipped = run("--isolated", "--force-exclude", "--stdin-filename", ".venv/x.jsonl", "-", input=BROKEN)
    assert skipped.exit_code == 0 and skipped.stdout == "All checks passed: 0 rows in 0 files.\n"


def test_a_second_run_does_not_lint_the_first_runs_reports(tree):
    (tree / "runs" / "a.jsonl").write_bytes(BROKEN)
    args = ["--isolated", "--output-format", "jsonl:findings.jsonl", "--health-report", "health"]
    first = run(*args)
    assert first.exit_code == 1 and (tree / "findings.jsonl").stat().st_size > 0
    assert (tree / "health" / "rollout_verdicts.jsonl").exists()
    second = run(*args)
    assert second.exit_code == 1, second.stderr
    assert second.stderr.splitlines()[0] == first.stderr.splitlines()[0]
    assert {json.loads(line)["path"] for line in (tree / "findings.jsonl").read_text().splitlines()} == {
        "runs/a.jsonl"
    }


def test_a_report_over_someone_elses_rollouts_is_still_refused(tree):
    result = run("--isolated", "--output-format", "jsonl:runs/a.jsonl")
    assert result.exit_code == 2 and "is also an input" in result.stderr
    assert (tree / "runs" / "a.jsonl").read_bytes() == ROW
