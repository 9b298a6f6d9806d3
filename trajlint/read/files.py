"""Opening an input read-only, the reasons a path cannot be read, and whether two paths are one file."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from trajlint.read import remote
from trajlint.read.items import Unreadable


def _open_input(path: str, *, probe: bool = False) -> BinaryIO | Unreadable:
    """Open an input read-only: a local regular file, or an object named by URL (`probe`: only a
    few small reads will follow, so an object is fetched in small ranges)."""
    if remote.is_url(path):
        opened = remote.open_object(path, remote.PROBE_BLOCK_BYTES if probe else remote.READ_BLOCK_BYTES)
        return Unreadable(path, 0, opened) if isinstance(opened, str) else opened
    return _open_regular_file(path)


def _input_size(path: str) -> int | None:
    """The input's size in bytes, None when it cannot be told (the read then reports why)."""
    if remote.is_url(path):
        return remote.size(path)
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _open_regular_file(path: str) -> BinaryIO | Unreadable:
    """Open read-only; non-blocking so that a path swapped for a FIFO since it was listed cannot
    hang the open (the flag changes nothing for regular files)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return Unreadable(path, 0, _stat_reason(path, exc))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            return Unreadable(path, 0, f"is {_special_kind(mode)}, not a regular file")
        return open(fd, "rb", buffering=0)
    except OSError as exc:
        os.close(fd)
        return Unreadable(path, 0, _os_reason(exc))


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _stat_reason(path: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError) and os.path.islink(path):
        return "is a symbolic link to a missing file"
    if exc.errno == errno.ELOOP:
        return "is a symbolic link loop"
    return _os_reason(exc)


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return "cannot be read"
