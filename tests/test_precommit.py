"""The pre-commit hook as users get it: the manifest validates, and `pre-commit try-repo`
installs this checkout into a hook environment and gates a clean and a broken rollout file.

try-repo builds the hook's environment with pip, as pre-commit does for a user, in a store of
its own each time (about 20 s here), so there are exactly two runs. They try a committed
snapshot of the working tree: given the checkout itself, try-repo would commit its modified
files but leave new, untracked ones out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git, which is not installed")


def _env(home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    # try-repo commits uncommitted changes into a shadow clone; give that commit an author.
    identity = {"GIT_AUTHOR_NAME": "trajlint tests", "GIT_AUTHOR_EMAIL": "tests@trajlint.invalid"}
    identity |= {"GIT_COMMITTER_NAME": "trajlint tests", "GIT_COMMITTER_EMAIL": "tests@trajlint.invalid"}
    return env | identity | {"PRE_COMMIT_HOME": str(home)}


def pre_commit(*args, cwd, home):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        capture_output=True, text=True, cwd=cwd, env=_env(home), timeout=900,
    )


def git(*args, cwd, home):
    subprocess.run(["git", *args], cwd=cwd, env=_env(home), check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """This checkout's working tree, committed to a repository of its own."""
    home = tmp_path_factory.mktemp("pre-commit-home")
    snapshot = tmp_path_factory.mktemp("hook-repo")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_symlink():  # trajlint/data/ links the catalog and schemas into the package
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(source), snapshot / name)
        elif source.is_file():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / name)
    git("init", "-q", cwd=snapshot, home=home)
    git("add", "-A", cwd=snapshot, home=home)
    git("commit", "-q", "--no-gpg-sign", "-m", "snapshot", cwd=snapshot, home=home)
    return snapshot, home


@pytest.fixture(scope="module")
def user_repo(tmp_path_factory, hook_repo):
    """A user's repository holding one clean and one broken rollout file."""
    snapshot, home = hook_repo
    repo = tmp_path_factory.mktemp("user-repo")
    git("init", "-q", cwd=repo, home=home)
    shutil.copy(EXAMPLES / "clean.jsonl", repo / "clean.jsonl")
    shutil.copy(EXAMPLES / "broken.jsonl", repo / "broken.jsonl")
    return repo, snapshot, home


@pytest.mark.slow
def test_manifest_validates(tmp_path):
    result = pre_commit("validate-manifest", str(ROOT / ".pre-commit-hooks.yaml"), cwd=ROOT, home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_try_repo_passes_a_clean_file(user_repo):
    repo, snapshot, home = user_repo
    result = pre_commit("try-repo", str(snapshot), "trajlint", "--files", "clean.jsonl", cwd=repo, home=home)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Passed" in output


@pytest.mark.slow
def test_try_repo_fails_a_broken_file_with_its_findings(user_repo):
    repo, snapshot, home = user_repo
    result = pre_commit(
        "try-repo", str(snapshot), "trajlint", "--files", "clean.jsonl", "broken.jsonl", cwd=repo, home=home
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Failed" in output
    # The hook prints the concise format: one line per finding.
    assert "broken.jsonl:3: error TL104 trajectory-schema" in output
    assert "clean.jsonl:" not in output


def _user_repo(tmp_path, home, config: str):
    repo = tmp_path / "user"
    repo.mkdir()
    git("init", "-q", cwd=repo, home=home)
    shutil.copy(EXAMPLES / "clean.jsonl", repo / "clean.jsonl")
    shutil.copy(EXAMPLES / "broken.jsonl", repo / "broken.jsonl")
    (repo / "vendor").mkdir()
    shutil.copy(EXAMPLES / "broken.jsonl", repo / "vendor" / "broken.jsonl")
    (repo / ".pre-commit-config.yaml").write_text(config)
    return repo


@pytest.mark.slow
def test_a_config_pinned_by_autoupdate_freeze_to_a_commit_runs(tmp_path, hook_repo):
    """The README's route: `pre-commit autoupdate --freeze` pins the hook to a commit hash
    (the repository has no tags), and the pinned hook runs."""
    snapshot, home = hook_repo
    config = f"repos:\n  - repo: {snapshot}\n    rev: placeholder\n    hooks:\n      - id: trajlint\n"
    repo = _user_repo(tmp_path, home, config)
    updated = pre_commit("autoupdate", "--freeze", cwd=repo, home=home)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=snapshot, capture_output=True, text=True).stdout.strip()
    assert f"rev: {head}" in (repo / ".pre-commit-config.yaml").read_text()
    result = pre_commit("run", "--files", "clean.jsonl", "broken.jsonl", cwd=repo, home=home)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "broken.jsonl:3: error TL104 trajectory-schema" in result.stdout


@pytest.mark.slow
def test_a_local_hook_with_the_manifests_entry_honours_the_configurations_exclude(tmp_path):
    """The README's `repo: local` hook, with the manifest's own entry: pre-commit names every
    file, and --force-exclude keeps an excluded one out."""
    import yaml

    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["entry"].startswith("trajlint check ") and "--force-exclude" in hook["entry"]
    # The trajlint of this checkout, whether or not it is installed where the tests run.
    entry = hook["entry"].replace("trajlint", f"{sys.executable} -m trajlint", 1)
    config = (
        "repos:\n  - repo: local\n    hooks:\n      - id: trajlint\n        name: trajlint\n"
        f"        entry: {entry}\n        language: system\n        files: '{hook['files']}'\n"
        "        require_serial: true\n"
    )
    home = tmp_path / "home"
    repo = _user_repo(tmp_path, home, config)
    env = {"PYTHONPATH": str(ROOT)}
    (repo / "trajlint.toml").write_text('extend-exclude = ["vendor"]\n')

    def run(*files):
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "--files", *files],
            capture_output=True, text=True, cwd=repo, env=_env(home) | env, timeout=300,
        )

    excluded = run("clean.jsonl", "vendor/broken.jsonl")
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr
    failed = run("clean.jsonl", "broken.jsonl", "vendor/broken.jsonl")
    assert failed.returncode == 1
    assert "broken.jsonl:3: error TL104" in failed.stdout and "vendor/" not in failed.stdout
