"""The Python API: the same findings, summary and exit status as `trajlint check`, rows checked in
memory as piped ones are, builds and rule docs as the commands give them, and a lazy import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import trajlint
from trajlint import api

from .conftest import EXAMPLES, ROOT

REAL = ROOT / "tests" / "data" / "real"


def _cli(*args: str, stdin: bytes | None = None, cwd=ROOT) -> tuple[dict, int]:
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--output-format", "json", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_NO_CACHE": "1"},
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout), done.returncode


@pytest.mark.slow
@pytest.mark.parametrize(
    ("paths", "settings", "flags"),
    [
        (["examples"], {}, []),
        (["tests/data/real"], {}, []),
        (["tests/data/real"], {"profile": "nemo-gym-0.7", "fail_level": "warning"}, ["--profile", "nemo-gym-0.7", "--fail-level", "warning"]),
        (["tests/data/real"], {"select": ["TL1", "TL4"], "runs": "all"}, ["--select", "TL1,TL4", "--runs", "all"]),
        (["examples", "tests/data/real"], {"ignore": ["TL104"], "show_availability": True}, ["--ignore", "TL104", "--show-availability"]),
    ],
)
def test_api_and_cli_give_the_same_report(paths, settings, flags, monkeypatch):
    monkeypatch.chdir(ROOT)
    report = api.check_paths(paths, isolated=True, **settings)
    document, status = _cli(*paths, "--isolated", *flags)
    assert report.findings  # the corpus has findings to compare
    assert [f.to_dict() for f in report.findings] == document["findings"]
    assert report.to_dict() == document
    assert report.summary == document["summary"]
    assert report.exit_code == status
    assert report.ok is (status == 0)


def test_rows_in_memory_are_checked_as_rows_piped_to_the_command():
    raw = (EXAMPLES / "broken.jsonl").read_bytes() + (EXAMPLES / "clean.jsonl").read_bytes()
    lines = raw.splitlines()
    as_dicts = []
    for line in lines:
        try:
            as_dicts.append(json.loads(line))
        except ValueError:
            as_dicts.append(line.decode())  # a broken line stays a line
    document, status = _cli("--isolated", "-", stdin=raw)
    for rows in (lines, [line.decode() for line in lines]):
        report = api.check_rows(rows, isolated=True)
        assert [f.to_dict() for f in report.findings] == document["findings"]
        assert report.summary == document["summary"]
        assert report.exit_code == status == 1
        assert report.files == ("-",)
    # A mapping is checked as its JSON (parsing may have changed the row: duplicate keys merge).
    import orjson

    dumped = b"".join((r.encode() if isinstance(r, str) else orjson.dumps(r)) + b"\n" for r in as_dicts)
    document, status = _cli("--isolated", "-", stdin=dumped)
    for rows in (as_dicts, iter(as_dicts)):
        report = api.check_rows(rows, isolated=True)
        assert [f.to_dict() for f in report.findings] == document["findings"]
        assert report.exit_code == status == 1


def test_row_lines_are_the_row_positions():
    clean = [json.loads(line) for line in (EXAMPLES / "clean.jsonl").read_text().splitlines()]
    rows = [clean[0], "{not json", clean[1]]
    report = api.check_rows(rows, isolated=True)
    assert {f.line for f in report.findings if f.severity == "error"} == {2}
    assert (report.summary["lines"], report.summary["rows"]) == (3, 2)  # a line that is no row


def test_health_numbers_are_in_the_report():
    report = api.check_paths(str(EXAMPLES / "clean.jsonl"), isolated=True, select=["ALL"])
    assert report.health is not None
    assert report.health == report.summary["health"]


def test_a_bad_setting_raises_with_the_commands_line():
    with pytest.raises(api.SettingsError, match="TL999"):
        api.check_paths(str(EXAMPLES), isolated=True, select=["TL999"])
    with pytest.raises(api.SettingsError, match="--profile"):
        api.check_rows([], isolated=True, profile="nonesuch")
    with pytest.raises(api.SettingsError):
        api.rules(config=str(EXAMPLES / "missing.toml"))


def test_configuration_file_is_read_unless_isolated(tmp_path, monkeypatch):
    (tmp_path / "trajlint.toml").write_text('select = ["TL001"]\n')
    monkeypatch.chdir(tmp_path)
    internal = "TL901"  # internal-error: always on
    assert [r.code for r in api.rules()] == ["TL001", internal]
    assert len(api.rules(isolated=True)) > 2
    assert [r.code for r in api.rules(config=str(tmp_path / "trajlint.toml"))] == ["TL001", internal]


def test_rules_carry_their_docs():
    from trajlint.check.registry import load_rules
    from trajlint.report import rule_doc

    listed = api.rules(isolated=True, select=["ALL"])
    specs = load_rules()
    assert [r.code for r in listed] == sorted(s.code for s in specs.values())
    first = listed[0]
    spec = next(s for s in specs.values() if s.code == first.code)
    assert first.docs == rule_doc.explain(spec, "text")
    assert first.summary and first.rationale and first.family
    strict = {r.code: r.severity for r in api.rules(isolated=True, select=["ALL"], profile="nemo-gym-0.7")}
    assert strict != {r.code: r.severity for r in listed}


def test_build_row_is_what_the_build_command_writes():
    from trajlint.row.sections import STATED

    line = (EXAMPLES / "clean.jsonl").read_bytes().splitlines()[0]
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "build", "-"], input=line + b"\n", capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
    )
    written = json.loads(done.stdout)
    for row in (line, line.decode(), json.loads(line)):
        built = api.build_row(row)
        assert built.trajectory == written[STATED]
        assert built.ledger == written["trajlint"]["ledger"]
        assert list(built.excluded) == written["trajlint"]["excluded"]
        assert built.rollout is not None
    with pytest.raises(ValueError, match="not valid JSON"):
        api.build_row("{")
    with pytest.raises(ValueError, match="JSON object"):
        api.build_row("[1]")


def test_names_are_reexported_from_the_package():
    for name in api.__all__:
        assert getattr(trajlint, name) is getattr(api, name)
    assert set(api.__all__) <= set(dir(trajlint))
    with pytest.raises(AttributeError):
        trajlint.nonesuch  # noqa: B018


def test_importing_the_package_loads_nothing_else():
    probe = "import sys, trajlint; print(sorted(m for m in sys.modules if m.startswith(('trajlint', 'click', 'typing'))))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.split() == ["['trajlint']"]


def test_type_information_is_shipped():
    assert (ROOT / "trajlint" / "py.typed").exists()
    stub = (ROOT / "trajlint" / "__init__.pyi").read_text()
    import trajlint as package

    for name in package.__all__:
        assert f" {name}" in stub or f"{name}:" in stub


def test_pipeline_example_keeps_rows_without_errors(tmp_path):
    clean = (EXAMPLES / "clean.jsonl").read_bytes()
    broken = (EXAMPLES / "broken.jsonl").read_bytes()
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "pipeline.py")], input=clean + broken, capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    kept = done.stdout.splitlines()
    assert kept and set(kept) <= set(clean.splitlines() + broken.splitlines())
    # every kept row checks without an error on its own
    for line in kept:
        assert not [f for f in api.check_rows([line], isolated=True).findings if f.severity == "error"]
    assert len(kept) < len((clean + broken).splitlines())
    assert b"dropped" in done.stderr
