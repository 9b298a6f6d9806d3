"""An installed trajlint (a wheel, outside the checkout) finds its schemas and rule catalog."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from .conftest import EXAMPLES, ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(work / "dist"), str(ROOT)],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (work / "dist").glob("trajlint-*.whl")
    site = work / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True, text=True,
    )
    assert install.returncode == 0, install.stderr
    return wheel, site, work


@pytest.mark.slow
def test_wheel_contains_schemas_and_rules(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    schemas = {p.name for p in (ROOT / "schemas").glob("*.json")}
    rules = {p.name for p in (ROOT / "rules").glob("*.toml")}
    assert {f"trajlint/data/schemas/{n}" for n in schemas} <= names
    assert {f"trajlint/data/rules/{n}" for n in rules} <= names
    assets = {p.name for p in (ROOT / "trajlint" / "report" / "html_assets").iterdir()}
    assert {f"trajlint/report/html_assets/{n}" for n in assets} <= names
    # PEP 561: type checkers use the API's annotations only from a package marked as typed
    assert {"trajlint/py.typed", "trajlint/__init__.pyi", "trajlint/api.py"} <= names


@pytest.mark.slow
def test_installed_package_runs_outside_the_checkout(installed):
    _, site, work = installed
    outside = work / "elsewhere"
    outside.mkdir()
    shutil.copy(EXAMPLES / "clean.jsonl", outside / "clean.jsonl")
    env = {**os.environ, "PYTHONPATH": str(site)}

    def trajlint(*args):
        return subprocess.run(
            [sys.executable, "-m", "trajlint", *args], capture_output=True, text=True, env=env, cwd=outside
        )

    where = subprocess.run(
        [sys.executable, "-c", "import trajlint.contract.data as r; print(r.schemas_dir()); print(r.rules_dir())"],
        capture_output=True, text=True, env=env, cwd=outside,
    )
    assert where.stdout.splitlines() == [
        str(site / "trajlint" / "data" / "schemas"), str(site / "trajlint" / "data" / "rules")
    ]
    assert trajlint("check", "clean.jsonl").returncode == 0
    assert '"$id"' in trajlint("schema", "trajectory").stdout
    assert "TL104" in trajlint("rules").stdout
    assert trajlint("check", "clean.jsonl", "--output-format", "html:report.html").returncode == 0
    assert "PASS" in (outside / "report.html").read_text()


def test_version_is_one_number():
    """The wheel takes its version from Cargo.toml (maturin reads no .py file); the package
    states it again, and the two must agree."""
    import tomllib

    import trajlint

    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    assert cargo["package"]["version"] == trajlint.__version__
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"]


@pytest.mark.slow
def test_wheel_carries_the_native_core(installed):
    wheel, site, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("trajlint/_core.") and n.endswith((".so", ".pyd")) for n in names)
    version = subprocess.run(
        [sys.executable, "-c", "import trajlint, trajlint._core as c; print(c.__version__, trajlint.__version__)"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)}, cwd=site,
    )
    assert version.returncode == 0, version.stderr
    core, package = version.stdout.split()
    assert core == package


@pytest.mark.slow
def test_an_installed_trajlint_refuses_schema_write_in_one_line_and_bundles(installed):
    _, site, work = installed
    env = {**os.environ, "PYTHONPATH": str(site)}
    for cwd in (work, ROOT):  # even inside a checkout, the wheel's models are not the checkout's
        result = subprocess.run(
            # -P: the working directory is not put on sys.path, so the checkout is not imported
            [sys.executable, "-P", "-m", "trajlint", "schema", "--write"],
            capture_output=True, text=True, env=env, cwd=cwd,
        )
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "pip install -e ." in result.stderr
        assert "Traceback" not in result.stderr
    bundled = subprocess.run(
        [sys.executable, "-m", "trajlint", "schema", "--bundle", "rollout-row"],
        capture_output=True, text=True, env=env, cwd=work,
    )
    assert bundled.returncode == 0 and '"common.ModelCallRef"' in bundled.stdout


def test_license_file_is_the_one_pyproject_names():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "Apache-2.0"
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS AND CONDITIONS" in text


@pytest.mark.slow
def test_wheel_carries_the_license(installed):
    wheel, _, _ = installed
    assert any(name.endswith("/LICENSE") and ".dist-info/" in name for name in zipfile.ZipFile(wheel).namelist())
