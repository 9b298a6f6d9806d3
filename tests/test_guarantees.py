"""The promises of the README, tested as such: inputs are never written, the network
is never reached, an internal error is one line (never a traceback) and exit 2, and the fuzzer
finds nothing in a bounded pass and nothing in the inputs that once crashed trajlint."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlint.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
HOSTILE = ROOT / "tests" / "data" / "hostile"
FUZZ = ROOT / "fuzz"
PAST = 1_000_000_000  # 2001-09-09: an mtime no run of trajlint could leave by accident


def _snapshot(directory: Path) -> dict[str, tuple[str, int, int]]:
    """Every file below `directory`: (sha256, size, mtime in ns)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            info = path.stat()
            out[str(path.relative_to(directory))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(), info.st_size, info.st_mtime_ns)
    return out


@pytest.fixture
def inputs(tmp_path) -> Path:
    """The examples and the hostile corpus, with an mtime set far in the past."""
    root = tmp_path / "inputs"
    shutil.copytree(EXAMPLES, root / "examples")
    shutil.copytree(HOSTILE, root / "hostile")
    for path in root.rglob("*"):
        os.utime(path, ns=(PAST * 10**9, PAST * 10**9))
    return root


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["check", "--output-format", "json", "-o", "{out}/report.json"],
        ["check", "--output-format", "sarif:{out}/r.sarif", "--output-format", "junit:{out}/r.xml",
         "--output-format", "concise", "--statistics"],
        ["build", "-o", "{out}/built.jsonl"],
        ["build", "--trajectory-only"],
        ["baseline", "-o", "{out}/baseline.json"],
    ],
    ids=["check", "check-json", "check-many", "build", "build-stdout", "baseline"],
)
def test_inputs_are_never_written(inputs, tmp_path, command):
    out = tmp_path / "out"
    out.mkdir()
    before = _snapshot(inputs)
    args = [part.replace("{out}", str(out)) for part in command]
    extra = ["--isolated"] if command[0] != "build" else []
    result = CliRunner().invoke(main, [*args, *extra, str(inputs)])
    assert result.exit_code in (0, 1), result.output + result.stderr
    assert _snapshot(inputs) == before  # same files, same bytes, same mtimes: nothing created either


def test_check_with_a_baseline_leaves_the_baseline_as_it_was(inputs, tmp_path):
    baseline = tmp_path / "baseline.json"
    runner = CliRunner()
    assert runner.invoke(main, ["baseline", "--isolated", "-o", str(baseline), str(inputs)]).exit_code == 0
    os.utime(baseline, ns=(PAST * 10**9, PAST * 10**9))
    recorded = (baseline.read_bytes(), baseline.stat().st_mtime_ns)
    result = runner.invoke(main, ["check", "--isolated", "--baseline", str(baseline), str(inputs)])
    assert result.exit_code == 0, result.output
    assert (baseline.read_bytes(), baseline.stat().st_mtime_ns) == recorded


def test_an_output_naming_an_input_is_refused_before_anything_is_written(inputs):
    target = inputs / "examples" / "clean.jsonl"
    before = _snapshot(inputs)
    for args in (["check", "--isolated", "-o", str(target)], ["build", "-o", str(target)],
                 ["baseline", "--isolated", "-o", str(target)]):
        result = CliRunner().invoke(main, [*args, str(inputs)])
        assert result.exit_code == 2, args
    assert _snapshot(inputs) == before


# -- no network ------------------------------------------------------------------------------


class NetworkUsed(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise NetworkUsed(f"network access attempted: {args!r}")

    # Imported first: ssl subclasses socket.socket, which is a function once patched. Modules
    # that kept a name from socket before the patch keep the real one; these are the usual ones.
    import http.client
    import urllib.request

    monkeypatch.setattr(http.client.HTTPConnection, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    for name in ("socket", "create_connection", "getaddrinfo", "gethostbyname", "socketpair"):
        monkeypatch.setattr(socket, name, refuse)


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--isolated", "--output-format", "sarif", str(EXAMPLES)],
        ["check", "--isolated", "--output-format", "json", str(EXAMPLES), str(HOSTILE)],
        ["build", str(EXAMPLES)],
        ["schema"],
        *[["schema", name] for name in ("trajectory", "agent-observations", "model-call-capture")],
        ["rules"],
        ["rule", "TL104"],
        ["rule", "duplicate-key", "--output-format", "json"],
    ],
    ids=lambda args: "-".join(a for a in args if not a.startswith("/"))[:40],
)
def test_no_command_reaches_the_network(no_network, args):
    result = CliRunner().invoke(main, args)
    assert not isinstance(result.exception, NetworkUsed), result.exception
    assert result.exit_code in (0, 1), (result.output, result.exception)


def test_schema_references_resolve_without_the_network(no_network):
    """Every packaged schema validates through its `$ref`s, all resolved from the package."""
    from trajlint.contract import schemas

    for name in schemas.names():
        schemas.validator(name).is_valid({})


# -- internal errors -------------------------------------------------------------------------

_INJECT = (
    "import sys\n"
    "from trajlint.check.rules import schema\n"
    "from trajlint.check import rule as spec\n"
    "def boom(subject):\n    raise RuntimeError('injected\\nacross lines')\n"
    "spec.IMPLEMENTATIONS['row-schema'] = spec.Implementation('row-schema', frozenset({'row'}), check=boom)\n"
    "from trajlint.cli import main\n"
    "main()\n"
)


def _with_failing_rule(tmp_path, *args):
    script = tmp_path / "inject.py"
    script.write_text(_INJECT)
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        # The Python path: a row the native core proves clean is one no Python rule looks at.
        env={**os.environ, "PYTHONPATH": str(ROOT), "TRAJLINT_CORE": "off"},
    )


@pytest.mark.parametrize("output", [[], ["--output-format", "sarif:out.sarif"], ["-q"]], ids=["stdout", "file", "quiet"])
def test_an_internal_error_is_one_line_on_stderr_and_exit_2(tmp_path, output):
    proc = _with_failing_rule(tmp_path, "check", "--isolated", *output, str(EXAMPLES / "clean.jsonl"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr
    internal = [line for line in proc.stderr.splitlines() if "internal error" in line]
    assert len(internal) == 1, proc.stderr
    line = internal[0]
    assert f"{EXAMPLES / 'clean.jsonl'}:1" in line  # names the row
    assert "row-schema" in line and "injected across lines" in line
    assert "bug in trajlint" in line and "report" in line
    assert "(2 more)" in line


def test_an_internal_error_still_exits_2_with_exit_zero(tmp_path):
    proc = _with_failing_rule(tmp_path, "check", "--isolated", "--exit-zero", str(EXAMPLES / "clean.jsonl"))
    assert proc.returncode == 2


def test_baseline_with_an_internal_error_names_the_row_and_writes_nothing(tmp_path):
    proc = _with_failing_rule(tmp_path, "baseline", "--isolated", "-o", "b.json", str(EXAMPLES / "clean.jsonl"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{EXAMPLES / 'clean.jsonl'}:1" in proc.stderr and "b.json was not written" in proc.stderr
    assert not (tmp_path / "b.json").exists()


def test_an_unexpected_exception_is_one_line_and_debug_shows_the_traceback(tmp_path):
    """Outside the rules (here: the report), `--debug` is what shows the traceback."""
    script = tmp_path / "inject.py"
    script.write_text(
        "from trajlint.report import text\n"
        "def boom(report):\n    raise RuntimeError('injected')\n"
        "text.render_full = boom\n"
        "from trajlint.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, str(script), "check", "--isolated", str(EXAMPLES / "clean.jsonl")]
    plain = subprocess.run(run, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert plain.returncode == 2
    assert "Traceback" not in plain.stderr and len(plain.stderr.strip().splitlines()) == 1
    assert "bug in trajlint" in plain.stderr
    debug = subprocess.run([*run, "--debug"], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


# -- the fuzzer ------------------------------------------------------------------------------


def _fuzzer():
    sys.path.insert(0, str(FUZZ))
    try:
        import fuzz_pipeline
    finally:
        sys.path.remove(str(FUZZ))
    return fuzz_pipeline


@pytest.mark.fuzz
def test_every_past_crash_stays_fixed():
    fuzz = _fuzzer()
    crashes = sorted(p for p in (FUZZ / "crashes").iterdir() if p.is_file() and not p.name.startswith("."))
    assert crashes, "fuzz/crashes/ holds the inputs that once crashed trajlint"
    for path in crashes:
        fuzz.check_input(path.read_bytes())


@pytest.mark.fuzz
def test_a_bounded_fuzzing_pass_finds_nothing():
    """Deterministic (seeded) mutations of the seed corpus through the whole pipeline; run the
    fuzzer longer with `python fuzz/fuzz_pipeline.py` (see fuzz/README.md)."""
    fuzz = _fuzzer()
    crashes = fuzz.pure_fuzz(runs=1000, max_total_time=25, seed=20260, save_to=None)
    assert not crashes, f"{len(crashes)} crashing input(s); the first: {crashes[0][:200]!r}"
