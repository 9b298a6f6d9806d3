"""The one writer of every file trajlint writes: reports, baselines, build output, health reports.

The rule that trajlint never writes to what it reads is enforced here, before anything is
written: a target naming an input file is refused, as is a file named by two outputs. A file is
written beside its target and renamed over it, so that a run stopped halfway (Ctrl-C, a full
disk) leaves the previous file whole.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, AnyStr, TextIO

from trajlint.report.document import Report
from trajlint.report.formats import Output, Renderer, renderer


def problem(outputs: Sequence[Output], inputs: Iterable[str]) -> str | None:
    """Why these outputs cannot be written, or None. Checked before anything is read."""
    to_stdout = [o.format for o in outputs if o.path is None]
    if len(to_stdout) > 1:
        return (
            f"{len(to_stdout)} outputs go to standard output ({', '.join(to_stdout)}); "
            "give all but one a file, e.g. --output-format sarif:trajlint.sarif"
        )
    paths = [o.path for o in outputs if o.path is not None]
    for i, path in enumerate(paths):
        if any(same_file(path, other) for other in paths[:i]):
            return f"two outputs write to {path}"
    for path in paths:
        clash = input_clash(path, inputs)
        if clash is not None:
            return f"output file {path} is also an input ({clash}); trajlint never writes to its inputs"
    return None


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same path once links are resolved, or one inode.

    Every target is checked with this, so that trajlint never writes to an input.
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def input_clash(target: str, inputs: Iterable[str]) -> str | None:
    """The input that `target` would overwrite, if any."""
    return next((p for p in inputs if p != "-" and same_file(target, p)), None)


def own_output(path: str) -> bool:
    """Whether `path` holds what trajlint wrote there before: empty (a clean run's JSONL report),
    or a first line that is a trajlint finding or a health verdict.

    Such a file is left out of this run's search for inputs, so that running a command twice
    does not lint the first run's report. Anything else the run would write over stays an input,
    and `problem` refuses to replace it.
    """
    import orjson

    try:
        with open(path, "rb") as handle:
            first = handle.readline(1 << 20)
    except OSError:
        return False
    if not first.strip():
        return True
    try:
        row = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(row, dict):
        return False
    return {"code", "fingerprint", "severity"} <= row.keys() or {"verdict", "rollout_id", "findings"} <= row.keys()


def write(report: Report, output: Output, stdout: TextIO, render: Renderer | None = None) -> None:
    """Render `report` into the output's file (replacing it) or onto `stdout`."""
    chunks = (render or renderer(output.format))(report)
    if output.path is None:
        for chunk in chunks:
            stdout.write(chunk)
        stdout.flush()
        return
    write_file(output.path, chunks)


def write_file(path: str, chunks: Iterable[AnyStr], *, binary: bool = False) -> None:
    """Write `chunks` (text, or bytes with `binary`) to `path`, replacing what it held."""
    with replacing(path, binary=binary) as handle:
        for chunk in chunks:
            handle.write(chunk)


@contextlib.contextmanager
def replacing(path: str, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A handle whose content replaces `path` once the block ends without an exception."""
    target = os.path.realpath(path)  # a link's file is replaced, not the link
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError:
        mode = 0  # cannot tell: written in place, as any file is by `open`
    # Only a regular file (or none yet) may be replaced by renaming: not /dev/stdout or a FIFO.
    # Anything else, and a directory that takes no new file, is written in place. Otherwise the
    # file is written beside the target and renamed over it, so that a run stopped halfway
    # (Ctrl-C, a full disk) leaves the previous file whole instead of a truncated one.
    opened = _temporary_beside(target) if mode is None or stat.S_ISREG(mode) else None
    fd, temporary = opened if opened is not None else (None, None)
    try:
        opened_as = path if fd is None else fd
        handle = (
            open(opened_as, "wb")  # noqa: SIM115 - closed by the `with` below
            if binary
            else open(opened_as, "w", encoding="utf-8", errors="backslashreplace", newline="\n")  # noqa: SIM115
        )
        with handle:
            yield handle
        if temporary is not None:
            # The permissions of the file it replaces, else those `open` would give a new one.
            os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
            os.replace(temporary, target)
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise


def _temporary_beside(path: str) -> tuple[int, str] | None:
    import tempfile

    directory, name = os.path.split(path)
    try:
        return tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    except OSError:
        return None


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def append_step_summary(report: Report, path: str) -> None:
    """Add the markdown summary to GitHub's step summary file (the file other steps share)."""
    from trajlint.report.github import step_summary

    with open(path, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(step_summary(report))
