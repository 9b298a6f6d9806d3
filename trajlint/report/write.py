"""The one writer of every file trajlint writes: reports, baselines, build output, health reports.

The rule that trajlint never writes to what it reads is enforced here, before anything is
written: a target naming an input file is refused, as is a file named by two outputs. A file is
written beside its target and renamed over it, so that a run stopped halfway (Ctrl-C, a full
disk) leaves the previous file whole.
"""

from __future__ import annotations

import contextlib
import errno
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
    """The input that `target` would overwrite, if any. Standard input (`-`) is compared by its
    file's identity: `/dev/stdin` or `/dev/fd/0` with a file redirected to standard input names
    that file."""
    for p in inputs:
        if p == "-":
            if _is_standard_input(target):
                return "standard input"
        elif same_file(target, p):
            return p
    return None


def _is_standard_input(target: str) -> bool:
    """Whether `target` is the regular file redirected to standard input (a pipe or terminal
    there loses nothing to a write)."""
    try:
        given = os.fstat(0)
        named = os.stat(target)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(given.st_mode) and (given.st_dev, given.st_ino) == (named.st_dev, named.st_ino)


def own_output(path: str) -> bool:
    """Whether `path` holds what trajlint wrote there before: empty (a clean run's JSONL report),
    or a first line that is a trajlint finding or a health verdict.

    Such a file is left out of this run's search for inputs, so that running a command twice
    does not lint the first run's report. Anything else the run would write over stays an input,
    and `problem` refuses to replace it.
    """
    import orjson

    try:
        # Without blocking, and only a regular file: a FIFO named as an output must not hang.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
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


class NotReplaceable(OSError):
    """A file that exists and cannot be replaced whole (its directory takes no new file):
    writing it in place would lose it to a run stopped halfway, so it is not written."""


#: How long a writer waits for a report directory's lock (held by another writer for the
#: moment of its renames, or by a reader reading the pair) before it gives up.
LOCK_WAIT_SECONDS = 30.0


def write_together(
    files: Sequence[tuple[str, Iterable[AnyStr]]], *, binary: bool = False, lock: str | None = None
) -> None:
    """Write several files that belong together (a health report's summary and verdicts).

    Each is written beside its target as `write_file` does, and only once every one is written
    are they renamed over their targets, one right after the other, with Ctrl-C and SIGTERM held
    meanwhile. With `lock` (their directory), the renames happen under an exclusive `flock` of
    that directory: two runs writing the same report leave the pair of the one that renamed
    last, never one file of each, and a reader holding a shared `flock` of the directory reads a
    pair of one run. Each file is whole at every moment; what no lock can prevent is a writer
    killed outright (SIGKILL, a power cut) between two renames.
    """
    pending: list[tuple[str, str]] = []
    try:
        for path, chunks in files:
            with replacing(path, binary=binary, deferred=pending) as handle:
                for chunk in chunks:
                    handle.write(chunk)
        with _locked(lock), _stop_signals_held():
            while pending:
                temporary, target = pending[0]
                os.replace(temporary, target)
                pending.pop(0)
    finally:
        for temporary, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


@contextlib.contextmanager
def _locked(directory: str | None) -> Iterator[None]:
    """An exclusive `flock` of `directory` for the block (nothing where there is no flock);
    waited for at most `LOCK_WAIT_SECONDS`, then an OSError."""
    try:
        import fcntl
    except ImportError:  # Windows
        fcntl = None  # type: ignore[assignment]
    if directory is None or fcntl is None:
        yield
        return
    import time

    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OSError(
                        errno.EAGAIN, f"another process has held its lock for over {LOCK_WAIT_SECONDS:g} s"
                    ) from None
                time.sleep(0.05)
        yield  # the lock goes with the descriptor
    finally:
        os.close(fd)


_STOP_SIGNALS = ("SIGINT", "SIGTERM")


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait (the kernel keeps them pending) until the block is left."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {getattr(signal, name) for name in _STOP_SIGNALS}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def replacing(path: str, *, binary: bool = False, deferred: list[tuple[str, str]] | None = None) -> Iterator[IO[Any]]:
    """A handle whose content replaces `path` once the block ends without an exception.

    A regular file (or none yet) is written beside the target and renamed over it, so that a run
    stopped halfway (Ctrl-C, a full disk) leaves the previous file whole and two runs writing one
    file leave one of their files, whole. Where no file can be made beside it (a read-only
    directory), an existing file is refused (`NotReplaceable`) rather than written in place.
    Anything else (/dev/stdout, a pipe, a device) is written in place, opened without blocking:
    a FIFO nobody reads is an error, not a hang. With `deferred`, the rename is left to the
    caller: (the file written, its target) is appended there (`write_together`).
    """
    target = os.path.realpath(path)  # a link's file is replaced, not the link
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    temporary = None
    if mode is None or stat.S_ISREG(mode):
        try:
            fd, temporary = _temporary_beside(target)
        except OSError as exc:
            if mode is None:
                raise
            raise NotReplaceable(
                exc.errno,
                f"{exc.strerror or exc} in its directory, so it cannot be replaced whole; "
                "trajlint does not overwrite a file in place",
            ) from None
    else:
        fd = _open_in_place(target)
    try:
        handle = (
            open(fd, "wb")  # noqa: SIM115 - closed by the `with` below
            if binary
            else open(fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n")  # noqa: SIM115
        )
        with handle:
            yield handle
        if temporary is not None:
            # The permissions of the file it replaces, else those `open` would give a new one.
            os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
            if deferred is not None:
                deferred.append((temporary, target))
            else:
                os.replace(temporary, target)
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise


def _open_in_place(path: str) -> int:
    """A descriptor writing to a device or pipe; it blocks again once open, so a slow reader is
    waited for."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def _temporary_beside(path: str) -> tuple[int, str]:
    import tempfile

    directory, name = os.path.split(path)
    return tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def append_step_summary(report: Report, path: str) -> None:
    """Add the markdown summary to GitHub's step summary file (the file other steps share)."""
    from trajlint.report.github import step_summary

    if input_clash(path, report.files) is not None:
        raise OSError(errno.EINVAL, "it is an input of this run")
    # Appended to, not replaced: other steps of the job write the same file. Only a regular file:
    # a FIFO there would hang the run.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(step_summary(report))
