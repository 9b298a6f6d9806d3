"""What a person at a terminal sees, as ruff users expect it: colour where it helps and never
elsewhere, severity in `concise`, a progress line on a terminal only, did-you-mean for rule names."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import orjson
import pytest
from click.testing import CliRunner

from trajlint.cli import main

from .conftest import EXAMPLES, ROOT

BROKEN = str(EXAMPLES / "broken.jsonl")
ESC = "\x1b["


def check(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, ["check", "--isolated", *args], env=env)


def test_color_always_paints_text_formats_by_severity():
    out = check("--color", "always", "--output-format", "concise", BROKEN).stdout
    lines = out.splitlines()
    assert all(ESC in line for line in lines)
    assert any("\x1b[1;31merror\x1b[0m \x1b[1mTL301\x1b[0m negative-count" in line for line in lines)
    assert any("\x1b[1;33mwarning\x1b[0m" in line for line in lines)
    full = check("--color", "always", "--output-format", "full", BROKEN).stdout
    assert "\x1b[1;31mTL301\x1b[0m negative-count" in full


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--color", "never"), {"FORCE_COLOR": "1"}),
        ((), {}),  # CliRunner's standard output is no terminal
        ((), {"NO_COLOR": "1", "FORCE_COLOR": "1"}),
        (("--output-format", "json", "--color", "always"), {}),
        (("--output-format", "sarif"), {"FORCE_COLOR": "1"}),
        (("--statistics", "--output-format", "json", "--color", "always"), {}),
    ],
    ids=["never", "not-a-terminal", "no-color-wins", "json", "sarif", "json-statistics"],
)
def test_no_color(args, env):
    result = check(*args, BROKEN, env={"NO_COLOR": "", "FORCE_COLOR": "", **env})
    assert result.exit_code == 1 and ESC not in result.output


def test_force_color_paints_without_a_terminal_but_never_a_file(tmp_path):
    assert ESC in check(BROKEN, env={"NO_COLOR": "", "FORCE_COLOR": "1"}).stdout
    check("--color", "always", "-o", str(tmp_path / "r.txt"), BROKEN)
    assert ESC not in (tmp_path / "r.txt").read_text()


def test_color_never_lets_the_data_paint(tmp_path):
    row = orjson.loads((EXAMPLES / "clean.jsonl").read_bytes().splitlines()[0])
    row["ng_trajectory"] = {"\x1b[31mRED": 1}
    (tmp_path / "rows.jsonl").write_bytes(orjson.dumps(row) + b"\n")
    out = check("--color", "always", "--output-format", "concise", str(tmp_path / "rows.jsonl")).stdout
    assert "\\x1b[31mRED" in out and "\x1b[31m" not in out


@pytest.mark.parametrize(
    ("name", "hint"),
    [("TL1O4", "did you mean 'TL104'?"), ("tl104", None), ("trajectory-schem", "did you mean 'trajectory-schema'?"),
     ("zzzz", "see `trajlint rules`")],
)
def test_rule_suggests_a_close_name(name, hint):
    result = CliRunner().invoke(main, ["rule", name])
    if hint is None:  # a code in lower case is the code
        assert result.exit_code == 0 and result.stdout.startswith("# trajectory-schema (TL104)")
    else:
        assert result.exit_code == 2
        assert result.stderr.splitlines()[-1] == f"Error: Invalid value for RULE: no rule {name!r}; {hint}"


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal 100 columns wide (a new one has none, and nothing fits in 0 columns)."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    return parent, child


_RUN = "import trajlint.cli.progress as p; p.DELAY = 0; from trajlint.cli import main; main()"


def _run_with_stderr(stderr: int, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-c", _RUN, "check", "--isolated", "--jobs", "1", "--output-format", "json", *args],
        stdout=subprocess.PIPE, stderr=stderr, env={**env, "PYTHONPATH": str(ROOT), "TERM": "xterm"},
        timeout=120, check=False,
    )


def test_progress_appears_on_a_terminal_only():
    parent, child = _terminal()
    try:
        shown = _run_with_stderr(child, str(EXAMPLES))
        os.close(child)
        child = -1
        seen = b""
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # the terminal's other end is closed: everything is read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(parent)
        if child >= 0:
            os.close(child)
    assert shown.returncode == 1
    assert b"trajlint:" in seen and b"B/s" in seen
    assert b"trajlint:" not in shown.stdout  # the report is untouched
    piped = _run_with_stderr(subprocess.PIPE, str(EXAMPLES))
    assert piped.returncode == 1 and piped.stderr == b""
    assert piped.stdout == shown.stdout


def test_no_progress_when_quiet_or_in_ci():
    for extra, env in ((("-q",), {}), ((), {"CI": "true"})):
        parent, child = _terminal()
        try:
            base = {k: v for k, v in os.environ.items() if k != "CI"}
            proc = subprocess.run(
                [sys.executable, "-c", _RUN, "check", "--isolated", "--output-format", "json", *extra, str(EXAMPLES)],
                stdout=subprocess.PIPE, stderr=child, timeout=120, check=False,
                env={**base, **env, "PYTHONPATH": str(ROOT), "TERM": "xterm"},
            )
            os.set_blocking(parent, False)
            try:
                seen = os.read(parent, 65536)
            except BlockingIOError:
                seen = b""
        finally:
            os.close(parent)
            os.close(child)
        assert proc.returncode == 1 and b"B/s" not in seen
