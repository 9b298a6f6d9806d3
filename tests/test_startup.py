"""What the short commands import: each loads what its run uses, and what it does not use waits
for a run that does (the worker pool, gitignore matching, the read stage for `--version`).

Module sets, not times: the start-up times are measured by bench/startup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trajlint import __version__

ROOT = Path(__file__).resolve().parent.parent
ROW = (ROOT / "examples" / "clean.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[0]

pytestmark = pytest.mark.slow


def _imported(
    tmp_path: Path, *args: str, stdin: str | None = None, status: int = 0, env: dict[str, str] | None = None
) -> tuple[set[str], str]:
    """The modules `python -X importtime -m trajlint ARGS` imports, and its standard output."""
    env = {**{k: v for k, v in os.environ.items() if k != "TRAJLINT_NO_CACHE"}, "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "trajlint", *args],
        cwd=tmp_path,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == status, proc.stderr[-3000:]
    modules = {
        line.split("|")[2].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "self [us]" not in line
    }
    return modules, proc.stdout


def _one_row(tmp_path: Path) -> Path:
    path = tmp_path / "one-row.jsonl"
    path.write_text(ROW, encoding="utf-8")
    return path


def test_version_loads_no_stage(tmp_path):
    modules, out = _imported(tmp_path, "--version")
    assert out == f"trajlint, version {__version__}\n"
    assert {"click", "trajlint.cli.commands"} <= modules
    # The version is the package's own constant, and the options' tables name the file kinds and
    # the output formats without the stages behind them.
    unused = {
        "importlib.metadata",
        "concurrent.futures",
        "pathspec",
        "hashlib",
        "trajlint.read",
        "trajlint.check.paths",
        "trajlint.report.document",
        "trajlint.spill",
    }
    assert sorted(unused & modules) == []


def test_rule_loads_no_gitignore_matching(tmp_path):
    modules, out = _imported(tmp_path, "rule", "TL101")
    assert out.startswith("# ")
    assert "trajlint.check.rules" in modules
    assert sorted({"pathspec", "concurrent.futures"} & modules) == []


@pytest.mark.parametrize("jobs", ["1", "4"])
def test_one_row_check_starts_no_pool(tmp_path, jobs):
    # With the result cache on (its own directory): one file is hashed without threads.
    path = _one_row(tmp_path)
    modules, _ = _imported(tmp_path, "check", "--isolated", "--cache-dir", str(tmp_path / "cache"), "--jobs", jobs, str(path))
    assert {"trajlint.check.engine", "trajlint.check.cache"} <= modules
    # One row is too little work for worker processes; a named file matches no gitignore
    # pattern; no baseline is applied; a plain file needs no decompressor.
    unused = {"concurrent.futures", "pathspec", "trajlint.report.baseline", "gzip", "zstandard", "importlib.metadata"}
    assert sorted(unused & modules) == []


def test_one_row_piped_check_starts_no_pool(tmp_path):
    modules, _ = _imported(tmp_path, "check", "--isolated", "--no-cache", "-", stdin=ROW)
    assert {"trajlint.check.engine", "trajlint.report.health"} <= modules
    # Without a cache, nothing of the cache is loaded (nor hashlib, which only it needs here).
    unused = {"concurrent.futures", "pathspec", "trajlint.report.baseline", "trajlint.check.cache", "hashlib"}
    assert sorted(unused & modules) == []
    # Nor when the environment turns the cache off.
    modules, _ = _imported(tmp_path, "check", "--isolated", "-", stdin=ROW, env={"TRAJLINT_NO_CACHE": "1"})
    assert sorted(unused & modules) == []
    modules, _ = _imported(tmp_path, "check", "--isolated", "--cache-dir", str(tmp_path / "c"), "-", stdin=ROW, env={"TRAJLINT_NO_CACHE": "0"})
    assert "trajlint.check.cache" in modules


def test_check_without_health_rules_loads_no_health_report(tmp_path):
    path = _one_row(tmp_path)
    modules, _ = _imported(tmp_path, "check", "--isolated", "--no-cache", "--select", "TL101", str(path))
    assert "trajlint.check.engine" in modules
    assert sorted({"trajlint.report.health", "trajlint.check.cache"} & modules) == []


def test_rows_the_core_proves_load_no_schema_validator(tmp_path):
    from trajlint.check import fast
    from trajlint.read import native

    if not native.available() or fast.prover() is None:
        pytest.skip("the native core is not built here: every row is validated the Python way")
    path = _one_row(tmp_path)
    modules, out = _imported(tmp_path, "check", "--isolated", "--no-cache", "--output-format", "json", str(path))
    assert json.loads(out)["findings"] == []
    # The core proved the row: jsonschema-rs, the Python rules' validator, is found, never loaded.
    assert "jsonschema_rs" not in modules
    # A row the Python path validates is validated with the core's compiled validators: one
    # engine in the process. With the core off, jsonschema-rs validates it.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(ROW.replace('"_ng_rollout_index": 0', '"_ng_rollout_index": "x"', 1), encoding="utf-8")
    modules, on = _imported(tmp_path, "check", "--isolated", "--no-cache", "--output-format", "json", str(broken), status=1)
    assert "jsonschema_rs" not in modules
    assert any(f["code"].startswith("TL1") for f in json.loads(on)["findings"])
    modules, off = _imported(
        tmp_path, "check", "--isolated", "--no-cache", "--output-format", "json", str(broken), status=1, env={"TRAJLINT_CORE": "off"}
    )
    assert "jsonschema_rs" in modules
    assert off == on


def test_findings_are_fingerprinted_without_openssl_when_the_core_is_on(tmp_path, monkeypatch):
    from trajlint.read import native

    if not native.available():
        pytest.skip("the native core is not built here: fingerprints are hashed with hashlib")
    examples = ROOT / "examples"
    # hashlib loads OpenSSL's libcrypto (3-4 MiB resident in every process of a run).
    monkeypatch.setenv("TRAJLINT_CORE", "on")
    modules, out = _imported(tmp_path, "check", "--isolated", "--no-cache", "--jobs", "1", "--output-format", "json", str(examples), status=1)
    assert json.loads(out)["findings"]
    assert sorted({"hashlib", "_hashlib"} & modules) == []
    monkeypatch.setenv("TRAJLINT_CORE", "off")
    modules, off = _imported(tmp_path, "check", "--isolated", "--no-cache", "--jobs", "1", "--output-format", "json", str(examples), status=1)
    assert "hashlib" in modules
    assert off == out
