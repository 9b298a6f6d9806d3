"""The core's row path on hostile and arbitrary input, against the Python path (the reference).

`check_row` and `clean_families` take any bytes without raising; a family the core proves a row
clean of (for every bit of `_core.PROVED`, whatever families get written) is one of whose rules
the Python path finds nothing on that row; a proof's evidence and identity are the Python path's.
Rows the core cannot read as the Python path does (nested deeper than serde_json reads, an
identity holding a negative zero) are never proved, and go the Python way with the same report.
The cargo-fuzz targets (fuzz/native.sh) check the same row path in Rust; the pipeline fuzzer
(fuzz/fuzz_pipeline.py) runs the fast path's rules off, on and checked.
"""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint.check import fast
from trajlint.read import native

from .conftest import EXAMPLES, ROOT

ALL_FAMILIES = sum(fast.FAMILIES)
FUZZ = ROOT / "fuzz"
CLEAN_ROWS = [
    orjson.loads(raw)
    for path in (EXAMPLES / "clean.jsonl", ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl")
    for raw in path.read_bytes().split(b"\n")
    if raw.strip()
]


@contextlib.contextmanager
def _core_mode(mode: str) -> Iterator[None]:
    """The core off, on or checked, in this process (as TRAJLINT_CORE would say)."""
    saved = native.mode
    native.mode = lambda: mode  # type: ignore[assignment]
    try:
        yield
    finally:
        native.mode = saved  # type: ignore[assignment]


def _fast_selection(proved: int) -> list[str]:
    """The rules of a run that takes the fast path: the line's own, the run-level ones, and the
    families the core proves."""
    codes = set(fast.STRICT | fast.RUN_LEVEL)
    for bit, members in fast.FAMILIES.items():
        if proved & bit:
            codes |= members
    return sorted(codes)


def _reports(lines: list[bytes], select: list[str]) -> dict[str, str]:
    """The JSON report of a check of `lines` (one rollout file), with the core off, on and checked."""
    from trajlint import api

    reports = {}
    for mode in ("off", "on", "check"):
        with _core_mode(mode):
            report = api.check_rows(
                lines, select=select, isolated=True, show_availability=True, jobs=1, file_kind="rollouts"
            )
        reports[mode] = json.dumps(report.to_dict(), sort_keys=True)
    return reports


def _python_codes(raw: bytes, codes: frozenset[str]) -> set[str]:
    """The rules of `codes` the Python path finds on the one-line rollout file `raw`."""
    from trajlint import api

    with _core_mode("off"):
        report = api.check_rows(
            [raw], select=sorted(codes), isolated=True, show_availability=True, jobs=1, file_kind="rollouts"
        )
    return {finding.code for finding in report.findings} & codes


def _nested(depth: int, identity: tuple[int, int]) -> bytes:
    """A rollout row whose arrays nest `depth` deep, counting the row itself."""
    task, rollout = identity
    return b'{"_ng_task_index": %d, "_ng_rollout_index": %d, "deep": %s%s}' % (
        task, rollout, b"[" * (depth - 1), b"]" * (depth - 1)
    )


# -- limits: rows the core does not read as the Python path does ------------------------------


def test_rows_nested_deeper_than_serde_json_reads_go_to_the_python_path(core):
    """serde_json reads 127 nested arrays and objects, orjson 1,024: a row between the two is
    valid strict JSON that the core cannot parse, so it proves nothing of it, and a run on the
    fast path reports what the Python path reports (here the rows' duplicate identities)."""
    assert core.check_row(_nested(127, (0, 0)), 0) is not None  # the deepest row serde_json reads
    for depth in (128, 200, 1024):
        raw = _nested(depth, (0, 0))
        assert core.scan_line(raw) == 0, depth  # orjson reads it exactly as written
        assert core.check_row(raw, 0) is None, depth
        assert core.check_row(raw, core.PROVED) is None, depth
        assert core.clean_families(raw, ALL_FAMILIES) == 0, depth
    lines = [_nested(200, (0, 0)), _nested(200, (0, 0)), _nested(127, (0, 1)), _nested(1024, (0, 2)), _nested(1025, (0, 3))]
    reports = _reports(lines, _fast_selection(core.PROVED))
    assert reports["on"] == reports["off"]
    assert reports["check"] == reports["off"]
    assert '"TL401"' in reports["off"]


def test_lines_over_the_core_s_size_limit_go_to_the_python_path(core):
    """A parsed row takes many times its line in memory, so the core parses no line over 8 MiB
    (`row::MAX_PROVED_LINE`): the Python path takes it alone, and reports the same."""
    def row(size: int, rollout: int) -> bytes:
        head = b'{"_ng_task_index": 0, "_ng_rollout_index": %d, "pad": "' % rollout
        return head + b"x" * (size - len(head) - 2) + b'"}'

    limit = 8 * 1024 * 1024
    assert core.check_row(row(limit, 0), 0) is not None
    assert core.check_row(row(limit + 1, 0), 0) is None
    assert core.clean_families(row(limit + 1, 0), ALL_FAMILIES) == 0
    reports = _reports([row(limit + 1, 0), row(limit + 1, 0), row(1000, 1)], _fast_selection(core.PROVED))
    assert reports["on"] == reports["off"]
    assert reports["check"] == reports["off"]
    assert '"TL401"' in reports["off"]


def test_an_identity_holding_a_negative_zero_is_handed_back_as_written(core):
    """orjson reads `-0` as the integer 0 and serde_json as the float -0.0, and the two name
    different rollouts: the core hands back each identity value's text as the line writes it,
    so the Python path reads what it would read of the whole line."""
    for value in (b"-0", b"-0.0", b"-0e3", b"[1, -0]", b'{"a": -0}', b'{ "a" :\t-0 }'):
        raw = b'{"_ng_task_index": %s, "_ng_rollout_index": 0}' % value
        assert core.check_row(raw, 0)[1] == [("_ng_task_index", value.decode()), ("_ng_rollout_index", "0")], value
    lines = [b'{"_ng_task_index": -0, "_ng_rollout_index": 0}', b'{"_ng_task_index": 0, "_ng_rollout_index": 0}']
    reports = _reports(lines, _fast_selection(core.PROVED))
    assert reports["on"] == reports["off"]
    assert reports["check"] == reports["off"]
    assert "_ng_task_index=0 " in reports["off"]


# -- arbitrary input --------------------------------------------------------------------------


def _disagreement(core: Any, raw: bytes) -> str | None:
    """What the core says of `raw` that the Python path denies, or None. Neither call may raise."""
    from trajlint.check.subject import row_subject

    clean = core.clean_families(raw, ALL_FAMILIES)
    if clean & ~ALL_FAMILIES:
        return f"a family bit no family has: {clean}"
    for bit in fast.FAMILIES:
        if core.clean_families(raw, bit) != clean & bit:
            return f"family {bit} proved alone differs from proved together"
    proof = core.check_row(raw, 0, fast.GAPS)
    if proof is not None:
        try:
            row_subject("rows", 1, raw, checking=True, prove=lambda line: proof)
        except native.CoreMismatch as exc:
            return str(exc)
    proved = clean & core.PROVED
    if proved and core.check_row(raw, proved) is None:
        return f"families {proved} proved, but check_row proves less"
    partly = core.check_row(raw, core.PROVED, 0, False, True)
    if type(partly) is int:
        if partly & ~core.PROVED & ~fast.HEALTH:
            return f"proved in part, of families it cannot prove: {partly}"
        some = fast.partly_proved(partly)
        wrong = _python_codes(raw, some) if some else set()
        if wrong:
            return f"the core proves the row clean of {sorted(some)}, Python finds {sorted(wrong)}"
    codes = frozenset().union(*(members for bit, members in fast.FAMILIES.items() if proved & bit))
    if not codes:
        return None
    found = _python_codes(raw, codes)
    for bit, members in fast.FAMILIES.items():
        if proved & bit and found & members:
            return f"the core proves family {bit} clean, Python finds {sorted(found & members)}"
    return None


_KEYS = sorted({key for row in CLEAN_ROWS for key in row} | set(fast.IDENTITY_KEYS))
_SCALARS = (
    st.none() | st.booleans() | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=4), inner, max_size=4),
    max_leaves=24,
)
_ROWS = st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=6), _VALUES, max_size=8)


def _places(node: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _places(value, (*path, index))


@st.composite
def _mutated_clean_rows(draw: Any) -> dict[str, Any]:
    """A clean row with a few values replaced, negated, nudged or dropped: rows near the
    boundary of what a family proves."""
    row = copy.deepcopy(draw(st.sampled_from(CLEAN_ROWS)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        places = [path for path in _places(row) if path]
        if not places:
            break
        path = draw(st.sampled_from(places))
        parent = row
        for key in path[:-1]:
            parent = parent[key]
        last, old = path[-1], parent[path[-1]]
        action = draw(st.sampled_from(("replace", "drop", "nudge")))
        if action == "drop" and isinstance(parent, dict):
            del parent[last]
        elif action == "nudge" and type(old) in (int, float):
            parent[last] = draw(st.sampled_from((old + 1, old - 1, -old, 0, old * 2, float(old), None)))
        else:
            parent[last] = draw(_VALUES)
    return row


_JSON_BYTES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"u", b"d800", b"0061", b"a", b"1", b"0", b"-0",
     b"-", b".", b"e", b"+", b" ", b"\r", b"\t", b"null", b"true", b"NaN", b"\x00", b"\xff", b"\xc3\xa9",
     b"18446744073709551616", b"1e999", b'"a":1', b'"_ng_task_index":', b'"_ng_rollout_index":',
     b'"task_id":', b'"ng_model_call_capture":', b'"calls":', b'"ng_trajectory":', b'"model_calls":',
     b'"ng_agent_observations":', b'"ng_verifier_invocations":', b"[" * 130, b"]" * 130]
)


def _line(value: Any) -> bytes:
    # json, not orjson: integers beyond 64 bits are written as they are
    return json.dumps(value, ensure_ascii=False).encode()


_INPUTS = (
    _ROWS.map(_line)
    | _mutated_clean_rows().map(_line)
    | _VALUES.map(_line)
    | st.lists(_JSON_BYTES, max_size=40).map(b"".join)
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_INPUTS)
def test_the_core_claims_nothing_the_python_path_denies(core, raw):
    assert _disagreement(core, raw) is None, raw[:300]


def test_the_property_names_a_wrong_proof(core):
    """A core that proved every family of every row would be caught on a defective row."""
    row = copy.deepcopy(CLEAN_ROWS[0])
    row["ng_model_call_capture"] = {"calls": 3}  # TL102: a section of the wrong type

    class Liar:
        PROVED = ALL_FAMILIES

        @staticmethod
        def scan_line(raw: bytes) -> int:
            return 0

        @staticmethod
        def clean_families(raw: bytes, wanted: int) -> int:
            return wanted

        @staticmethod
        def check_row(raw: bytes, wanted: int, extracts: int = 0, judges: bool = False, partial: bool = False) -> tuple:
            return core.check_row(raw, 0, extracts, judges)

    said = _disagreement(Liar, _line(row))
    assert said is not None and "Python finds" in said and "TL102" in said


def test_the_property_names_a_wrong_identity(core):
    class Liar:
        PROVED = 0
        scan_line = staticmethod(core.scan_line)
        clean_families = staticmethod(core.clean_families)

        @staticmethod
        def check_row(raw: bytes, wanted: int, extracts: int = 0, judges: bool = False, partial: bool = False) -> tuple:
            return 0, [("_ng_task_index", "-0.0")], [], None, []

    said = _disagreement(Liar, b'{"_ng_task_index": 0, "_ng_rollout_index": 0}')
    assert said is not None and "disagree" in said


# -- the fuzzers ------------------------------------------------------------------------------


def _pipeline_fuzzer():
    sys.path.insert(0, str(FUZZ))
    try:
        import fuzz_pipeline
    finally:
        sys.path.remove(str(FUZZ))
    return fuzz_pipeline


def test_the_pipeline_fuzzer_takes_the_fast_path(core, monkeypatch):
    """A wrong proof on the fast path is a crash of the pipeline fuzzer."""
    fuzz = _pipeline_fuzzer()
    seed = b'\0{"_ng_task_index": 0, "_ng_rollout_index": 0}\n'
    fuzz.check_input(seed)
    monkeypatch.setattr(core, "check_row", lambda raw, wanted, extracts=0, judges=False, partial=False: (0, [("_ng_task_index", "7")], [], None, []))
    with pytest.raises(fuzz.Crash, match="disagree"):
        fuzz.check_input(seed)


def test_the_native_fuzz_corpora_are_seeded_from_the_repository(tmp_path, monkeypatch):
    sys.path.insert(0, str(FUZZ))
    try:
        import seed_native
    finally:
        sys.path.remove(str(FUZZ))
    monkeypatch.setattr(seed_native, "HERE", tmp_path)
    lines = list(seed_native.lines())
    assert b"".join(lines).count(b"\n") == 0
    assert any(line.startswith(b'{"_ng_task_index"') for line in lines)
    assert seed_native.seed("check_row") == len(set(lines))
    assert seed_native.seed("check_row") == len(set(lines))  # seeding twice adds nothing


def test_every_native_fuzz_target_is_run_by_the_script():
    """fuzz/native.sh (what CI runs) fuzzes every target fuzz/Cargo.toml declares."""
    import tomllib

    declared = {binary["name"] for binary in tomllib.loads((FUZZ / "Cargo.toml").read_text())["bin"]}
    script = (FUZZ / "native.sh").read_text()
    listed = set(script.split("targets=(", 1)[1].split(")", 1)[0].split())
    assert declared == listed == {path.stem for path in (FUZZ / "fuzz_targets").glob("*.rs")}
    assert "native.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_native_fuzz_script_is_valid_bash():
    done = subprocess.run(["bash", "-n", str(FUZZ / "native.sh")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
