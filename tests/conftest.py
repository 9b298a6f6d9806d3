from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SAMPLES = ROOT.parent / "shared" / "data" / "samples" / "clean-rollouts.jsonl"


@pytest.fixture(scope="session")
def rules():
    from trajlint.check.registry import load_rules

    return load_rules()


def check_paths(paths, rules, max_row_bytes=256 * 1024 * 1024):
    from trajlint.check.run import run
    from trajlint.read import iter_sources

    return run(iter_sources([str(p) for p in paths]), rules, max_row_bytes=max_row_bytes)


@pytest.fixture
def check(rules):
    """Lint the given paths with every packaged rule; returns the engine result."""

    def _check(*paths, max_row_bytes=256 * 1024 * 1024):
        return check_paths(paths, rules, max_row_bytes)

    return _check


@pytest.fixture
def write_jsonl(tmp_path):
    def _write(text: str | bytes, name: str = "rows.jsonl") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    return _write
