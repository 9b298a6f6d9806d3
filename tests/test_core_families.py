"""The core's proofs, family by family, against the Python path (the reference).

A family the core proves a line clean of (`trajlint.check.fast.FAMILIES`) must be one of whose
rules the Python path finds nothing on that line: checked on every line of every corpus, each
family on its own, so a wrong proof is named by its family and line. A proof that never proves
anything would pass that, so each written family must also prove the clean example's rows. And
end to end: with the core checked (`TRAJLINT_CORE=check`), a run of the proved families' rules
reports byte for byte what the Python path reports, and takes the fast path on most rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from trajlint.check import fast
from trajlint.read import native

from .conftest import EXAMPLES, ROOT

HOSTILE = ROOT / "tests" / "data" / "hostile"
REAL = ROOT / "tests" / "data" / "real"
ALL_FAMILIES = sum(fast.FAMILIES)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Generated files: one with many defects of every kind the generator makes, one clean."""
    out = tmp_path_factory.mktemp("generated")
    files = []
    for name, defects, seed in (("defective.jsonl", "0.3", "5"), ("mostly-clean.jsonl", "0.02", "6")):
        path = out / name
        made = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "250", "--defects", defects,
             "--payload-kb", "22", "--seed", seed, "-o", str(path)],
            capture_output=True, text=True,
        )
        assert made.returncode == 0, made.stderr
        files.append(path)
    return files


def _corpus(generated: list[Path]) -> list[Path]:
    files = [*sorted(EXAMPLES.rglob("*.jsonl")), *sorted(REAL.rglob("*.jsonl")), *sorted(HOSTILE.rglob("*.jsonl"))]
    files += sorted((ROOT / "tests" / "data" / "contract").rglob("*.jsonl"))
    files += [ROOT / "tests" / "data" / "nemo-gym-0.7-persisted.jsonl", *generated]
    return [path for path in files if path.is_file()]


def _python_findings(path: Path) -> dict[int, set[str]]:
    """line -> codes the Python path reports there, every rule selected."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_NO_CACHE": "1", "TRAJLINT_CORE": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--select", "ALL", "--jobs", "1",
         "--max-row-bytes", str(256 * 1024 * 1024), "--output-format", "json", str(path)],
        capture_output=True, env=env, cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr.decode()
    found: dict[int, set[str]] = defaultdict(set)
    for finding in json.loads(done.stdout)["findings"]:
        found[finding["line"]].add(finding["code"])
    return found


def test_every_proof_is_one_python_agrees_with(core, generated):
    proved_lines: dict[int, int] = defaultdict(int)
    for path in _corpus(generated):
        found = _python_findings(path)
        for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
            if not raw.strip():
                continue
            clean = core.clean_families(raw, ALL_FAMILIES) & core.PROVED
            for bit, codes in fast.FAMILIES.items():
                if clean & bit:
                    proved_lines[bit] += 1
                    wrong = found.get(number, set()) & codes
                    assert not wrong, f"{path.relative_to(ROOT)}:{number}: the core proves family {bit} clean, Python finds {sorted(wrong)}"
    for bit in fast.FAMILIES:
        if core.PROVED & bit:
            assert proved_lines[bit], f"family {bit} is said to be proved but proves no line"


def test_each_written_family_proves_the_clean_example(core):
    rows = [raw for raw in (EXAMPLES / "clean.jsonl").read_bytes().split(b"\n") if raw.strip()]
    for bit in fast.FAMILIES:
        if core.PROVED & bit:
            proved = [core.clean_families(raw, bit) == bit for raw in rows]
            # The health judgement covers rows with a stated trajectory NeMo Gym reads whole: one
            # row of the example (the others derive their turns from the evidence).
            assert all(proved) if bit != fast.HEALTH else any(proved), f"family {bit}"


def test_a_stub_family_proves_nothing(core):
    raw = next(raw for raw in (EXAMPLES / "clean.jsonl").read_bytes().split(b"\n") if raw.strip())
    for bit in fast.FAMILIES:
        if not core.PROVED & bit:
            assert core.clean_families(raw, bit) == 0


def test_lines_that_are_not_strict_objects_are_never_proved(core):
    for raw in (b"", b"[]", b"1", b'{"a": 1, "a": 2}', b'{"a": 1' , b'{"n": 123456789012345678901234567890}', b"\xff"):
        assert core.clean_families(raw, ALL_FAMILIES) == 0
        assert core.check_row(raw, 0) is None


def _selection(core) -> str:
    codes = sorted(fast.STRICT | fast.RUN_LEVEL | fast.REDUCED)
    for bit, members in fast.FAMILIES.items():
        if core.PROVED & bit:
            codes += sorted(members)
    return ",".join(codes)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_reports_identical_on_the_fast_path(core, generated, jobs):
    paths = [str(EXAMPLES), str(REAL), str(HOSTILE), *map(str, generated)]
    args = ["check", "--isolated", "--select", _selection(core), "--output-format", "json", "--jobs", jobs, *paths]
    runs = {}
    for mode in ("off", "on", "check"):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_NO_CACHE": "1", "TRAJLINT_CORE": mode}
        runs[mode] = subprocess.run([sys.executable, "-m", "trajlint", *args], capture_output=True, env=env, cwd=ROOT)
        assert runs[mode].returncode in (0, 1), runs[mode].stderr.decode()
    assert runs["on"].stdout == runs["off"].stdout
    assert runs["check"].stdout == runs["off"].stdout


def test_the_fast_path_is_taken_for_proved_rows(core, monkeypatch):
    """A run whose every rule the core proves parses no proved row in Python."""
    from trajlint import api
    from trajlint.check import subject as subject_module

    parsed = []
    real_parse = subject_module.parse
    monkeypatch.setattr(subject_module, "parse", lambda raw: parsed.append(raw) or real_parse(raw))
    monkeypatch.setattr(native, "mode", lambda: "on")
    result = api.check_paths([str(EXAMPLES / "clean.jsonl")], select=[_selection(core)], isolated=True)
    rows = [raw for raw in (EXAMPLES / "clean.jsonl").read_bytes().split(b"\n") if raw.strip()]
    # The selection holds the health rules: a row is proved with its health judged.
    unproved = [raw for raw in rows if core.check_row(raw, core.PROVED, fast.GAPS | fast.STATED_ID, True) is None]
    assert result is not None and len(unproved) < len(rows)
    assert sorted(parsed) == sorted(unproved)


def test_a_wrong_proof_stops_a_checked_run(core, monkeypatch, tmp_path):
    """Check mode compares: a proof of a row in which Python finds a defect is a mismatch."""
    from trajlint import api

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_model_call_capture": {"calls": 3}}\n')
    proof = (1, [("_ng_task_index", "0"), ("_ng_rollout_index", "0")], [], None, [])
    monkeypatch.setattr(fast, "prover", lambda: (lambda raw, wanted, extracts, judges, partial=False: proof, ALL_FAMILIES))
    monkeypatch.setattr(native, "mode", lambda: "check")
    with pytest.raises(api.SettingsError, match="the core proves the row clean, Python finds TL102"):
        api.check_paths([str(bad)], select=["TL0", "TL1"], isolated=True)


# -- rows proved clean of some families only --------------------------------------------------

#: TL301's failing example: a negative token count, on a row every other family proves clean.
NEGATIVE_COUNT = (
    b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "task_id": "0", "ng_model_call_capture": {"rollout_id": "0-0",'
    b' "metrics": {"tokens_in": -41, "tokens_out": 10, "tokens_total": 60, "latency_total_ms": 1500.0, "num_calls": 1},'
    b' "calls": [{"model_call_id": "a1", "response_id": "resp_a1", "call_index": 0, "model_ref": {"type":'
    b' "responses_api_models", "name": "policy"}, "dialect": "responses", "status_code": 200, "started_at": 1786032100.0,'
    b' "completed_at": 1786032101.5, "tokens_in": -41, "tokens_out": 10, "tokens_total": 60, "latency_total_ms": 1500.0,'
    b' "request": {"input": [{"role": "user", "content": "What is 6*7?"}]}, "response": {"id": "resp_a1", "status":'
    b' "completed", "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text":'
    b' "42"}]}]}}]}}'
)


def test_a_row_proved_in_part_names_the_families_it_is_clean_of(core):
    partly = core.check_row(NEGATIVE_COUNT, core.PROVED, 0, True, True)
    assert type(partly) is int
    # The schema rejects a negative count too (the count rule owns it): not proved either.
    assert partly == fast.STRUCTURE | fast.OWNERSHIP | fast.DRIFT
    assert core.check_row(NEGATIVE_COUNT, core.PROVED, 0, True) is None  # not asked: nothing
    assert core.check_row(b"[1, 2]", core.PROVED, 0, True, True) is None  # no row at all
    assert fast.partly_proved(fast.SCHEMA | fast.OWNERSHIP | fast.HEALTH) == (
        fast.FAMILIES[fast.SCHEMA] | fast.FAMILIES[fast.OWNERSHIP] - {"TL209"}
    )


def test_the_rules_of_families_proved_clean_do_not_run_on_the_row(core, monkeypatch, tmp_path):
    from trajlint import api
    from trajlint.check.rules import structure

    path = tmp_path / "rows.jsonl"
    path.write_bytes(NEGATIVE_COUNT + b"\n")
    validated = []
    real = structure._repeats
    monkeypatch.setattr(structure, "_repeats", lambda *args: validated.append(args[1]) or real(*args))
    reports = {}
    for mode in ("off", "on"):
        monkeypatch.setattr(native, "mode", lambda mode=mode: mode)
        del validated[:]
        report = api.check_paths([str(path)], isolated=True, show_availability=True)
        reports[mode] = ([(f.code, f.line, f.pointer, f.message) for f in report.findings], report.summary, list(validated))
    assert reports["on"][:2] == reports["off"][:2]
    assert {code for code, *_ in reports["on"][0]} >= {"TL301"}
    assert reports["off"][2] and not reports["on"][2]  # the ids were proved unique, not looked at


def test_a_wrong_partial_proof_stops_a_checked_run(core, monkeypatch, tmp_path):
    """Check mode runs every rule on a row proved clean in part and compares."""
    from trajlint import api

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_model_call_capture": {"calls": 3}}\n')
    real = fast.prover()
    monkeypatch.setattr(fast, "prover", lambda: (lambda raw, wanted, extracts, judges, partial=False: fast.SCHEMA, real[1]))
    monkeypatch.setattr(native, "mode", lambda: "check")
    with pytest.raises(api.SettingsError, match=r"the core proves the row clean of the families of TL102, Python finds them"):
        api.check_paths([str(bad)], isolated=True)
    monkeypatch.setattr(native, "mode", lambda: "on")  # the same lie, unchecked, hides the defect
    assert "TL102" not in {f.code for f in api.check_paths([str(bad)], isolated=True).findings}
