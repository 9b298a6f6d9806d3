"""Both schema backends give the same findings (code, pointer and message) and the same builds."""

from __future__ import annotations

import copy
import random

import orjson
import pytest

from trajlint.builder import build
from trajlint.check import catalog
from trajlint.contract import validate as validation

from .conftest import EXAMPLES, ROOT, check_paths
from .rule_rows import value_paths

SAMPLES = ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl"
JUNK = [None, -1, 1.5, True, "", "x", [], {}, [None], {"kind": "turn"}, {"model_call_id": ""}, [{}]]

pytest.importorskip("jsonschema_rs")



def _mutants(rows, count, seed=7):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        row = copy.deepcopy(rng.choice(rows))
        for _ in range(rng.randint(1, 3)):
            path = rng.choice([p for p in value_paths(row) if p])
            node = row
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = copy.deepcopy(rng.choice(JUNK))
        out.append(row)
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rows = [orjson.loads(line) for line in SAMPLES.read_bytes().splitlines() if line.strip()]
    lines = [orjson.dumps(row) for row in rows + _mutants(rows, 400)]
    for entry in catalog.packaged().values():
        lines += [line.encode() for e in entry.examples if not e.missing for line in e.jsonl.splitlines() if line.strip()]
    path = tmp_path_factory.mktemp("backends") / "corpus.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _run(monkeypatch, which, rules, *paths):
    monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", which)
    validation._backend.cache_clear()
    try:
        assert validation.backend() == which
        result = check_paths(paths, rules)
        return [(f.path, f.line, f.code, f.pointer, f.message) for f in result.findings]
    finally:
        validation._backend.cache_clear()


def test_same_findings_with_either_backend(monkeypatch, rules, corpus):
    python = _run(monkeypatch, "python", rules, corpus, EXAMPLES)
    rust = _run(monkeypatch, "rust", rules, corpus, EXAMPLES)
    assert any(code.startswith("TL1") for _, _, code, _, _ in python)
    assert rust == python


def test_same_builds_with_either_backend(monkeypatch, corpus):
    rows = []
    for line in corpus.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            rows.append(value)
    built = {}
    for which in ("python", "rust"):
        monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", which)
        validation._backend.cache_clear()
        built[which] = [build(row).trajectory for row in rows]
    validation._backend.cache_clear()
    assert built["rust"] == built["python"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Rows from the benchmark's generator: every dialect and row kind, with its defects."""
    import subprocess
    import sys

    path = tmp_path_factory.mktemp("generated") / "rollouts.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "150", "--defects", "0.2",
         "--payload-kb", "4", "--seed", "5", "-o", str(path)],
        check=True, capture_output=True,
    )
    return path


def test_same_findings_with_either_backend_on_generated_rollouts(monkeypatch, rules, generated):
    python = _run(monkeypatch, "python", rules, generated)
    rust = _run(monkeypatch, "rust", rules, generated)
    assert any(code.startswith("TL1") for _, _, code, _, _ in python)
    assert rust == python
