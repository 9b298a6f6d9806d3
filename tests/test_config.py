"""Configuration files: discovery, every key, command-line overrides and one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlint.check import select
from trajlint.cli import config, main

from .conftest import EXAMPLES


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project directory with the examples under runs/, as the working directory."""
    (tmp_path / "runs").mkdir()
    for name in ("clean.jsonl", "broken.jsonl"):
        shutil.copy(EXAMPLES / name, tmp_path / "runs" / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args):
    return CliRunner().invoke(main, ["check", *args])


def findings(*args):
    result = check("--output-format", "json", *args)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


# -- discovery ------------------------------------------------------------------------------


def test_nearest_file_wins_and_pyproject_without_table_is_skipped(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "trajlint.toml").write_text('select = ["TL1"]\n')
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.trajlint]\nselect = ["TL4"]\n')
    (tmp_path / "a" / "b" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert config.discover(deep) == tmp_path / "a" / "pyproject.toml"
    (tmp_path / "a" / "b" / "trajlint.toml").write_text("")
    assert config.discover(deep) == tmp_path / "a" / "b" / "trajlint.toml"
    # In one directory trajlint.toml comes before pyproject.toml.
    (tmp_path / "a" / "trajlint.toml").write_text("")
    assert config.discover(tmp_path / "a") == tmp_path / "a" / "trajlint.toml"
    assert config.find(start=tmp_path / "a", isolated=True).path is None


def test_no_file_means_defaults(tmp_path):
    found = config.find(start=tmp_path)
    if found.path is None:  # a configuration above the temporary directory would be found too
        settings = config.resolve(found, {})
        assert settings["fail-level"] == config.Setting("error", "default")
        assert settings["max-row-bytes"].value == 256 * 1024 * 1024
        assert settings["profile"].value == "latest"


def test_config_in_pyproject_applies_every_key(project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.trajlint]\n'
        'select = ["TL0", "TL104", "TL401"]\n'
        'ignore = ["TL002"]\n'
        'severity = { TL401 = "warning", "trajectory-schema" = "info" }\n'
        'per-file-ignores = { "runs/broken.jsonl" = ["row-not-object"] }\n'
        'fail-level = "warning"\n'
    )
    status, doc = findings("runs")
    codes = {(f["code"], f["severity"]) for f in doc["findings"]}
    assert codes == {("TL104", "info"), ("TL401", "warning")}
    assert "TL002" not in doc["summary"]["rules"]
    assert {"TL001", "TL003", "TL104", "TL401", "TL901"} <= set(doc["summary"]["rules"])
    assert not any(code.startswith(("TL1", "TL4")) and code not in ("TL104", "TL401") for code in doc["summary"]["rules"])
    assert status == 1
    # The command line overrides the file.
    status, doc = findings("--fail-level", "error", "runs")
    assert status == 0
    status, doc = findings("--fail-level", "error", "--extend-select", "TL002", "runs")
    assert status == 1 and {f["code"] for f in doc["findings"]} == {"TL002", "TL104", "TL401"}
    status, _ = findings("--isolated", "runs")
    assert status == 1


def test_trajlint_toml_is_found_from_a_subdirectory(project):
    (project / "trajlint.toml").write_text('select = ["TL401"]\n')
    (project / "runs" / "deeper").mkdir()
    import os

    os.chdir(project / "runs" / "deeper")
    _, doc = findings("..")
    assert {f["code"] for f in doc["findings"]} == {"TL401"}


def test_config_option_names_the_file(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("cfg") / "strict.toml"
    elsewhere.write_text('select = ["TL003"]\n')
    (project / "trajlint.toml").write_text('select = ["TL4"]\n')
    _, doc = findings("--config", str(elsewhere), "runs")
    assert {f["code"] for f in doc["findings"]} == {"TL003"}
    assert check("--config", str(elsewhere), "--isolated", "runs").exit_code == 2
    missing = check("--config", "nope.toml", "runs")
    assert missing.exit_code == 2 and "nope.toml: no such configuration file" in missing.stderr


def test_selection_layers_file_then_command_line(project):
    (project / "trajlint.toml").write_text('select = ["TL0"]\nignore = ["TL002"]\n')
    _, doc = findings("runs")
    assert {f["code"] for f in doc["findings"]} == {"TL003"}
    _, doc = findings("--extend-select", "TL002", "runs")
    assert {f["code"] for f in doc["findings"]} == {"TL002", "TL003"}
    _, doc = findings("--ignore", "TL003", "runs")
    assert doc["findings"] == []
    _, doc = findings("--select", "TL401", "runs")
    assert {f["code"] for f in doc["findings"]} == {"TL401"}


def test_warnings_only_pass_at_the_default_fail_level(project):
    (project / "trajlint.toml").write_text('severity = { ALL = "warning", TL003 = "info" }\n')
    assert check("runs").exit_code == 0
    assert check("--fail-level", "warning", "runs").exit_code == 1
    assert check("--fail-level", "info", "--select", "TL003", "runs").exit_code == 1
    assert check("--fail-level", "warning", "--select", "TL003", "runs").exit_code == 0
    (project / "trajlint.toml").write_text('severity = { ALL = "warning" }\nfail-level = "warning"\n')
    assert check("runs").exit_code == 1
    assert check("--exit-zero", "runs").exit_code == 0


def test_per_file_ignores_globs_relative_to_the_config_and_negation(project):
    (project / "runs" / "old").mkdir()
    shutil.copy(project / "runs" / "broken.jsonl", project / "runs" / "old" / "broken.jsonl")
    (project / "trajlint.toml").write_text(
        '[per-file-ignores]\n"runs/old/**" = ["ALL"]\n"!runs/old/*" = ["TL0"]\n'
    )
    _, doc = findings("runs")
    paths = {(f["path"], f["code"]) for f in doc["findings"]}
    assert not any(path.startswith("runs/old") for path, _ in paths)
    assert not any(code.startswith("TL0") for _, code in paths)
    assert ("runs/broken.jsonl", "TL104") in paths
    # Globs are relative to the file's directory, not to where trajlint runs.
    import os

    os.chdir(project / "runs")
    _, doc = findings(".")
    assert not any(f["path"].startswith("old") for f in doc["findings"])


def test_profile_severities_apply_before_the_users(project, monkeypatch):
    monkeypatch.setitem(select.PROFILES, "nemo-gym-0.7", {"duplicate-rollout-identity": "info"})
    _, doc = findings("--profile", "nemo-gym-0.7", "--select", "TL401", "runs")
    assert {f["severity"] for f in doc["findings"]} == {"info"}
    (project / "trajlint.toml").write_text('profile = "nemo-gym-0.7"\nseverity = { TL401 = "warning" }\n')
    status, doc = findings("--select", "TL401", "runs")
    assert status == 0 and {f["severity"] for f in doc["findings"]} == {"warning"}
    assert check("--profile", "nemo-gym-0.8", "runs").exit_code == 2


def test_max_row_bytes_from_the_file(project):
    (project / "trajlint.toml").write_text("max-row-bytes = 100\n")
    _, doc = findings("runs/clean.jsonl")
    assert {f["code"] for f in doc["findings"]} == {"TL004"}
    _, doc = findings("--max-row-bytes", "100000", "runs/clean.jsonl")
    assert doc["findings"] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('selct = ["TL1"]\n', "trajlint.toml: selct: unknown key (did you mean 'select'?)"),
        ('select = "TL1"\n', "trajlint.toml: select: must be a list of rule selectors"),
        ('ignore = ["TL1x"]\n', "unknown rule selector 'TL1x' in "),
        ('extend-select = [1]\n', "trajlint.toml: extend-select: must be a list"),
        ('severity = { TL104 = "fatal" }\n', "trajlint.toml: severity: 'TL104' must be one of error, warning, info"),
        ('severity = { TL1044 = "info" }\n', "unknown rule selector 'TL1044' in "),
        ('severity = "info"\n', "trajlint.toml: severity: must be a table"),
        ('per-file-ignores = { "a/*" = "TL1" }\n', "trajlint.toml: per-file-ignores: 'a/*' must be a list"),
        ('per-file-ignores = { "a/*" = ["TL7"] }\n', "unknown rule selector 'TL7' in "),
        ('profile = "newest"\n', "trajlint.toml: profile: must be one of latest, nemo-gym-0.7"),
        ('fail-level = "fatal"\n', "trajlint.toml: fail-level: must be one of error, warning, info"),
        ("max-row-bytes = 0\n", "trajlint.toml: max-row-bytes: must be a positive integer"),
        ("max-row-bytes = true\n", "trajlint.toml: max-row-bytes: must be a positive integer"),
        ("baseline = 3\n", "trajlint.toml: baseline: must be the path"),
        ("select = [\n", "trajlint.toml: not valid TOML"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(project, text, message):
    (project / "trajlint.toml").write_text(text)
    result = check("runs")
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    if "unknown rule selector" in message:
        assert str(project / "trajlint.toml") in result.stderr


def test_bad_tool_table_in_pyproject(project):
    (project / "pyproject.toml").write_text('[tool]\ntrajlint = "yes"\n')
    result = check("runs")
    assert result.exit_code == 2 and "[tool.trajlint] must be a table" in result.stderr
    (project / "pyproject.toml").write_text('[tool.trajlint]\nfail_level = "info"\n')
    result = check("runs")
    assert "pyproject.toml [tool.trajlint]: fail_level: unknown key (did you mean 'fail-level'?)" in result.stderr


def test_show_settings(project):
    (project / "trajlint.toml").write_text(
        'select = ["TL1", "TL4"]\nseverity = { TL401 = "warning" }\n'
        '[per-file-ignores]\n"runs/*.jsonl" = ["TL104"]\n'
    )
    result = check("--show-settings", "--ignore", "TL105", "--fail-level", "info")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    where = str(project / "trajlint.toml")
    assert lines[0] == f"config file: {where}"
    assert f'select = ["TL1", "TL4"]  # {where}' in lines
    assert 'ignore = ["TL105"]  # --ignore' in lines
    assert f'severity = {{ TL401 = "warning" }}  # {where}' in lines
    assert f'per-file-ignores = {{ "runs/*.jsonl" = ["TL104"] }}  # {where}' in lines
    assert 'fail-level = "info"  # --fail-level' in lines
    assert 'profile = "latest"  # default' in lines
    assert "baseline = (none)  # default" in lines
    listed = [line.split()[0] for line in lines if line.startswith("  TL")]
    assert "TL105" not in listed and {"TL101", "TL104", "TL401", "TL901"} <= set(listed)
    assert "  TL401  duplicate-rollout-identity   warning" in lines


def test_show_settings_isolated(project):
    (project / "trajlint.toml").write_text('select = ["TL1"]\n')
    result = check("--show-settings", "--isolated")
    assert result.exit_code == 0
    assert result.stdout.startswith("config file: (none)\nselect = [\"ALL\"]  # default\n")


def test_baseline_path_is_relative_to_the_config_file(project):
    (project / "runs" / "trajlint.toml").write_text('baseline = "known.json"\n')
    loaded = config.load(project / "runs" / "trajlint.toml")
    assert Path(loaded.values["baseline"]) == project / "runs" / "known.json"


# -- configuration in its lane: what a file found in a parent directory can and cannot do ------


def _parent_config(project: Path, text: str) -> Path:
    """`project` moved one level down, under a parent directory whose pyproject.toml says `text`."""
    (project / "pyproject.toml").write_text(f"[tool.trajlint]\n{text}\n")
    inner = project / "inner"
    inner.mkdir()
    shutil.move(str(project / "runs"), str(inner / "runs"))
    return inner


def _run_in(directory: Path, *args: str):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "TRAJLINT_NO_CACHE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "trajlint", *args], cwd=directory, env=env, capture_output=True, text=True, timeout=60
    )


def test_a_baseline_named_by_a_parent_config_is_read_only_as_a_regular_file(project):
    import os

    os.mkfifo(project / "fifo")
    inner = _parent_config(project, 'baseline = "fifo"')
    proc = _run_in(inner, "check", "runs")  # a FIFO nobody writes: no hang
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "is a FIFO, not a regular file" in proc.stderr
    (project / "pyproject.toml").write_text('[tool.trajlint]\nbaseline = "/dev/zero"\n')
    proc = _run_in(inner, "check", "runs")  # never read to the end
    assert proc.returncode == 2 and "is a device, not a regular file" in proc.stderr


def test_a_baseline_larger_than_the_limit_is_refused(project, monkeypatch):
    from trajlint.report import baseline

    (project / "base.json").write_text(json.dumps({"schema_version": 1, "entries": []}) + " " * 100)
    monkeypatch.setattr(baseline, "MAX_BYTES", 50)
    result = check("--isolated", "--baseline", "base.json", "runs")
    assert result.exit_code == 2 and "is larger than 50 bytes" in result.output


def test_baseline_never_overwrites_a_file_that_is_not_a_baseline(project):
    victim = project / "victim.txt"
    victim.write_text("precious\n")
    inner = _parent_config(project, 'baseline = "victim.txt"')
    proc = _run_in(inner, "baseline", "runs")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "not a trajlint baseline" in proc.stderr and "--force" in proc.stderr and "pyproject.toml" in proc.stderr
    assert victim.read_text() == "precious\n"
    assert _run_in(inner, "baseline", "runs").returncode == 2
    # A baseline is replaced; --force replaces anything regular.
    assert _run_in(inner, "baseline", "--force", "runs").returncode == 0
    assert json.loads(victim.read_text())["tool"] == "trajlint"
    assert _run_in(inner, "baseline", "runs").returncode == 0


def test_baseline_never_writes_into_a_fifo_or_a_device(project):
    import os

    os.mkfifo(project / "fifo")
    for target in (str(project / "fifo"), "/dev/null"):
        proc = _run_in(project, "baseline", "--isolated", "--force", "-o", target, "runs")
        assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr


def test_settings_that_select_no_rule_are_an_error(project):
    inner = _parent_config(project, 'ignore = ["ALL"]')
    proc = _run_in(inner, "check", "runs")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "no rule is selected" in proc.stderr and str(project / "pyproject.toml") in proc.stderr
    assert _run_in(inner, "baseline", "runs").returncode == 2
    assert _run_in(inner, "check", "--isolated", "runs").returncode == 1


def test_per_file_ignores_that_leave_no_file_a_rule_are_an_error(project):
    inner = _parent_config(project, 'per-file-ignores = {"**" = ["ALL"]}')
    proc = _run_in(inner, "check", "runs")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert str(project / "pyproject.toml") in proc.stderr and '"**"' in proc.stderr
    assert "no rule to run on any of the 2 files checked" in proc.stderr and not proc.stdout
    assert _run_in(inner, "baseline", "runs").returncode == 2
    assert not (inner / ".trajlint-baseline.json").exists()
    assert _run_in(inner, "check", "--isolated", "runs").returncode == 1


def test_per_file_ignores_leaving_no_rule_count_every_checked_file(project):
    (project / "trajlint.toml").write_text('per-file-ignores = { "broken.jsonl" = ["ALL"], "clean.jsonl" = ["TL"] }\n')
    proc = _run_in(project, "check", "runs")  # two patterns that together ignore everything
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert str(project / "trajlint.toml") in proc.stderr and '"broken.jsonl", "clean.jsonl" leave' in proc.stderr
    # Only the files checked count: one file, ignored whole, is the same gate that checks nothing.
    (project / "trajlint.toml").write_text('per-file-ignores = { "broken.jsonl" = ["ALL"] }\n')
    proc = _run_in(project, "check", "runs/broken.jsonl")
    assert proc.returncode == 2 and '"broken.jsonl" leaves no rule' in proc.stderr, proc.stderr


def test_per_file_ignores_that_leave_some_file_a_rule_still_apply(project):
    (project / "trajlint.toml").write_text('per-file-ignores = { "broken.jsonl" = ["ALL"] }\n')
    result = check("--output-format", "json", "runs")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["findings"] == [] and document["summary"]["files"] == 2
    (project / "trajlint.toml").write_text('per-file-ignores = { "**" = ["TL1"] }\n')
    result = check("--output-format", "json", "runs")
    codes = {finding["code"] for finding in json.loads(result.stdout)["findings"]}
    assert result.exit_code == 1 and codes and not any(code.startswith("TL1") for code in codes)


def test_the_configuration_in_force_is_named(project):
    (project / "trajlint.toml").write_text('ignore = ["TL104"]\n')
    result = check("-v", "--output-format", "json", "runs")
    assert f"configuration {project / 'trajlint.toml'}" in result.stderr
    assert json.loads(result.stdout)["configuration"] == str(project / "trajlint.toml")
    result = check("--isolated", "--verbose", "--output-format", "json", "runs")
    assert "no configuration file" in result.stderr
    assert json.loads(result.stdout)["configuration"] is None
