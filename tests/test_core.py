"""The native core (`trajlint._core`) against the Python path, which stays the reference.

Every report is byte-identical with the core off and in check mode (where the core decides what
it proves and each of its verdicts is compared with Python's), for --jobs 1 and 2. Where the core
is not built these tests skip, except in CI (CI=true), where they fail: a broken build must not
pass by skipping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlint.read import native

from .conftest import EXAMPLES, ROOT

HOSTILE = ROOT / "tests" / "data" / "hostile"
REAL = ROOT / "tests" / "data" / "real"


def _env(mode: str | None) -> dict[str, str]:
    # Every run checks: none takes its report from the result cache.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_NO_CACHE": "1"}
    env.pop("TRAJLINT_CORE", None)
    if mode is not None:
        env["TRAJLINT_CORE"] = mode
    return env


def _trajlint(mode: str | None, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trajlint", *args], capture_output=True, env=_env(mode), cwd=ROOT
    )


def _python_verdict(raw: bytes) -> int:
    """What the core must answer, from the Python path alone."""
    from trajlint.check.rules.strict_json import scan

    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return native.INVALID
    found = scan(raw)
    return (native.REPEATED if found.repeated else 0) | (native.OVERSIZED if found.oversized else 0)


@pytest.fixture(scope="module")
def defective(tmp_path_factory):
    """A generated file with every kind of defect the generator makes (3% of its rows)."""
    out = tmp_path_factory.mktemp("generated") / "rollouts.jsonl"
    made = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "300", "--defects", "0.1",
         "--payload-kb", "22", "--seed", "3", "-o", str(out)],
        capture_output=True, text=True,
    )
    assert made.returncode == 0, made.stderr
    return out


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("corpus", ["examples", "real", "hostile", "generated"])
def test_reports_identical_with_the_core_off_and_checked(core, corpus, jobs, defective):
    paths = {
        "examples": [str(EXAMPLES)],
        "real": [str(REAL)],
        "hostile": [str(HOSTILE)],
        "generated": [str(defective)],
    }[corpus]
    args = ["check", "--isolated", "--output-format", "json", "--jobs", jobs, *paths]
    off = _trajlint("off", *args)
    checked = _trajlint("check", *args)
    assert checked.returncode == off.returncode, checked.stderr.decode()
    assert checked.returncode in (0, 1), checked.stderr.decode()
    assert checked.stdout == off.stdout
    assert json.loads(off.stdout)["findings"] or corpus == "real"


def test_verdicts_on_the_hostile_lines(core):
    lines = [line for path in sorted(HOSTILE.glob("*.jsonl")) for line in path.read_bytes().split(b"\n")]
    verdicts = {core.scan_line(raw) for raw in lines}
    assert {0, native.INVALID, native.REPEATED, native.OVERSIZED} <= verdicts
    for raw in lines:
        assert core.scan_line(raw) == _python_verdict(raw), raw[:200]


@pytest.mark.parametrize(
    "raw, verdict",
    [
        (b'{"a":1,"b":[1,2.5e3,{"c":null}]}', 0),
        (b'{"a":1,"a":2}', native.REPEATED),
        (b'{"a":1,"\\u0061":2}', native.REPEATED),  # the same key, written two ways
        (b'{"x":{"a":1},"y":{"a":2}}', 0),  # one key in two objects
        (b"18446744073709551615", 0),
        (b"18446744073709551616", native.OVERSIZED),
        (b"-9223372036854775809", native.OVERSIZED),
        (b"1e400", native.INVALID),  # infinite as a double: orjson refuses it
        (b"1e-400", 0),
        (b"[NaN]", native.INVALID),
        (b'"\\ud800"', native.INVALID),  # an unpaired surrogate escape
        (b'"\\ud83d\\ude00"', 0),
        (b'"\xed\xa0\x80"', native.INVALID),  # a surrogate in UTF-8
        (b"\xef\xbb\xbf{}", native.INVALID),
        (b"[" * 1024 + b"]" * 1024, 0),
        (b"[" * 1025 + b"]" * 1025, native.INVALID),  # deeper than orjson reads
        (b"", native.INVALID),
        (b"{} {}", native.INVALID),
    ],
)
def test_verdict(core, raw, verdict):
    assert core.scan_line(raw) == verdict
    assert _python_verdict(raw) == verdict


_JSON_BYTES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"u", b"d800", b"dc00", b"0061", b"a", b"1", b"0",
     b"-", b".", b"e", b"+", b" ", b"\n", b"\t", b"null", b"true", b"NaN", b"\x00", b"\xff", b"\xc3\xa9",
     b"18446744073709551616", b"9" * 30, b'"a"', b'"b"', b'"a":1', b"1e999"]
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_JSON_BYTES, max_size=40))
def test_verdicts_agree_with_python_on_json_like_bytes(core, pieces):
    raw = b"".join(pieces)
    assert core.scan_line(raw) == _python_verdict(raw)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.lists(st.tuples(st.text(max_size=3), inner), max_size=4),
    max_leaves=20,
)


def _write(value) -> bytes:
    """JSON text in which a list of pairs is an object whose keys may repeat."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return b"{" + b",".join(json.dumps(k).encode() + b":" + _write(v) for k, v in value) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_write(v) for v in value) + b"]"
    return json.dumps(value, ensure_ascii=False).encode()


@settings(max_examples=1500, deadline=None)
@given(_VALUES)
def test_verdicts_agree_with_python_on_json_values(core, value):
    raw = _write(value)
    assert core.scan_line(raw) == _python_verdict(raw)


def test_check_mode_stops_on_a_difference(core, monkeypatch):
    from trajlint.check.subject import row_subject

    def wrong(raw):  # a core that misses every repeated key
        return core.scan_line(raw) & ~native.REPEATED

    with pytest.raises(native.CoreMismatch, match=r"rows.jsonl:7: .*repeated key: the core says no, Python yes"):
        row_subject("rows.jsonl", 7, b'{"a":1,"a":2}', wrong, checking=True)


def test_a_clean_verdict_skips_the_python_rescan(core):
    """A line the core proves clean is not re-serialized: TL005/TL006 take the core's word."""
    from trajlint.check.rules.strict_json import duplicate_key, integer_out_of_range
    from trajlint.check.subject import row_subject

    raw = b'{"a":1,"a":2,"n":123456789012345678901234}'
    told_clean = row_subject("t.jsonl", 1, raw, lambda _: 0)
    assert list(duplicate_key(told_clean)) == [] and list(integer_out_of_range(told_clean)) == []
    assert told_clean._memo is None  # nothing computed: no orjson.dumps, no scan
    asked = row_subject("t.jsonl", 1, raw, core.scan_line)
    assert [v.pointer for v in duplicate_key(asked)] == ["/a"]
    assert [v.pointer for v in integer_out_of_range(asked)] == ["/n"]


def test_the_core_is_the_one_this_code_expects(core):
    import trajlint

    assert core.API == native.API
    assert core.__version__ == trajlint.__version__


def test_check_mode_never_takes_a_cached_report(core, tmp_path):
    """Check mode is there to run both paths: it neither reads nor fills the result cache."""
    env = {**_env("check"), "TRAJLINT_NO_CACHE": ""}
    args = [sys.executable, "-m", "trajlint", "check", "--isolated", "--cache-dir"]
    checked = subprocess.run([*args, str(tmp_path / "checked"), str(EXAMPLES)], capture_output=True, env=env, cwd=ROOT)
    assert checked.returncode == 1
    assert not [p for p in (tmp_path / "checked").rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"]
    on = subprocess.run([*args, str(tmp_path / "on"), str(EXAMPLES)], capture_output=True, env={**env, "TRAJLINT_CORE": "on"}, cwd=ROOT)
    assert on.returncode == 1 and on.stdout == checked.stdout
    assert [p for p in (tmp_path / "on").rglob("*") if p.is_file() and p.name != "CACHEDIR.TAG"]


def test_the_cache_key_covers_the_compiled_core(core, monkeypatch):
    from trajlint.check import cache

    monkeypatch.setattr(cache, "_trajlint_digest", None)
    with_core = cache.trajlint_digest()
    monkeypatch.setattr(cache, "_trajlint_digest", None)
    monkeypatch.setattr(native, "_module", lambda: None)
    assert cache.trajlint_digest() != with_core


def test_unknown_mode_is_one_line_exit_2():
    done = _trajlint("sometimes", "check", "--isolated", str(EXAMPLES))
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        "Error: TRAJLINT_CORE must be off, on or check, not 'sometimes'"
    ]


@pytest.fixture
def no_core(monkeypatch):
    """This process as a checkout without the compiled module (as PYTHONPATH runs have) sees it."""
    monkeypatch.setattr(native, "_module", lambda: None)
    native.mode.cache_clear()
    yield monkeypatch
    native.mode.cache_clear()


@pytest.mark.parametrize("mode", ["on", "check"])
def test_core_asked_for_but_not_built(no_core, mode):
    no_core.setenv("TRAJLINT_CORE", mode)
    with pytest.raises(native.CoreError, match=f"^TRAJLINT_CORE={mode} needs trajlint's native core"):
        native.mode()


@pytest.mark.parametrize("mode", ["off", ""])
def test_without_the_core_python_decides(no_core, mode):
    no_core.setenv("TRAJLINT_CORE", mode)
    assert native.mode() == "off" and native.scanner() is None


def test_pure_python_run_without_the_core():
    done = _trajlint("off", "check", "--isolated", str(EXAMPLES))
    assert done.returncode == 1
    assert b"TL" in done.stdout
