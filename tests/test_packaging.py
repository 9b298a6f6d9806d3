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
