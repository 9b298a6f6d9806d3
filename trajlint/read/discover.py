"""Named paths, globs and directories -> the files to read (`Source`), or `Unreadable` items.

Directory decision (ruff-like): a directory is searched recursively for ``*.jsonl``,
``*.jsonl.gz`` and ``*.jsonl.zst`` files; a directory holding none of them yields nothing and is
not a finding (ruff only warns when a whole run finds no files, which the command line can do by
noticing that no `Source` came back). A named path that is missing, unreadable or a special file,
and a glob that matches nothing, are `Unreadable` items. URLs are expanded by `remote`.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from trajlint.read import remote
from trajlint.read.files import _os_reason, _special_kind, _stat_reason
from trajlint.read.items import Unreadable
from trajlint.read.source import Source

_JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")
_GLOB_CHARS = frozenset("*?[")


def iter_sources(paths: Sequence[str], *, stdin: BinaryIO | None = None) -> Iterator[Source | Unreadable]:
    """Expand named paths into sources, in the order named; directories in sorted order.

    The same file reached twice (named twice, via a glob and a directory, through a symlink) is
    read once, at its first mention.
    """
    seen: set[tuple[int, int]] = set()
    seen_urls: set[str] = set()
    stdin_taken = False
    for path in paths:
        if remote.is_url(path):
            yield from _named_url(path, seen_urls)
            continue
        if path == "-":
            if not stdin_taken:
                stdin_taken = True
                stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
                if stream is None:
                    yield Unreadable("-", 0, "standard input is not available")
                else:
                    yield Source("-", "", False, stream)
            continue
        if "\0" in path:  # os.stat would raise ValueError: no file name can hold one
            yield Unreadable(path, 0, "contains a NUL byte, which no file name can hold")
            continue
        try:
            info = os.stat(path)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and _GLOB_CHARS.intersection(path):
                matches = _expand_glob(path)
                if not matches:
                    yield Unreadable(path, 0, "glob matched no files")
                for match in matches:
                    yield from _named(match, seen)
            else:
                yield Unreadable(path, 0, _stat_reason(path, exc))
            continue
        yield from _named(path, seen, info)


def _named_url(url: str, seen: set[str]) -> Iterator[Source | Unreadable]:
    """The objects a URL names; a URL that names none, or cannot be listed, is one `Unreadable`
    at line 0 whose path is the URL with any credentials masked."""
    try:
        found = remote.expand(url, _JSONL_SUFFIXES)
    except remote.RemoteError as exc:
        yield Unreadable(exc.url, 0, exc.reason)
        return
    for match in found:
        if match not in seen:
            seen.add(match)
            yield Source(match)


def _expand_glob(pattern: str) -> list[str]:
    """Like ``glob.glob(pattern, recursive=True)``, sorted, except that ``**`` never descends into
    a symlinked directory: the stdlib's does, and two link loops make it explode combinatorially.

    As in glob, names starting with "." are matched only by a component that starts with ".",
    and a trailing ``**`` matches everything below its directory.
    """
    drive, rest = os.path.splitdrive(pattern)
    if os.altsep:
        rest = rest.replace(os.altsep, os.sep)
    parts = rest.split(os.sep)
    base = drive
    if parts[0] == "" and len(parts) > 1:  # absolute
        base, parts = drive + os.sep, parts[1:]
    return sorted(set(_glob_parts(base, parts)))


def _glob_parts(base: str, parts: list[str]) -> Iterator[str]:
    if not parts:
        if base and os.path.lexists(base):
            yield base
        return
    head, rest = parts[0], parts[1:]
    if head == "**":
        for directory in _directories_below(base):
            yield from _glob_parts(directory, rest or ["*"])
    elif _GLOB_CHARS.intersection(head):
        try:
            names = os.listdir(base or os.curdir)
        except OSError:
            return
        if not head.startswith("."):
            names = [name for name in names if not name.startswith(".")]
        for name in fnmatch.filter(names, head):
            yield from _glob_parts(os.path.join(base, name), rest)
    else:
        yield from _glob_parts(os.path.join(base, head), rest)


def _directories_below(base: str) -> Iterator[str]:
    """``base`` and every directory under it, not through symlinks, skipping hidden ones."""
    stack = [base]
    while stack:
        directory = stack.pop()
        yield directory
        try:
            with os.scandir(directory or os.curdir) as scan:
                below = [
                    os.path.join(directory, entry.name)
                    for entry in scan
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
                ]
        except OSError:
            continue
        stack.extend(sorted(below, reverse=True))


def _named(path: str, seen: set[tuple[int, int]], info: os.stat_result | None = None) -> Iterator[Source | Unreadable]:
    """A path the user named (or a glob matched): any regular file is read, directories searched."""
    if info is None:
        try:
            info = os.stat(path)
        except OSError as exc:
            yield Unreadable(path, 0, _stat_reason(path, exc))
            return
    if stat.S_ISDIR(info.st_mode):
        yield from _search_directory(path, seen)
    elif stat.S_ISREG(info.st_mode):
        if _first_visit(info, seen):
            yield Source(path)
    else:
        # Opening a FIFO would block until a writer appears; devices never end.
        yield Unreadable(path, 0, f"is {_special_kind(info.st_mode)}, not a regular file")


def _search_directory(top: str, seen: set[tuple[int, int]]) -> Iterator[Source | Unreadable]:
    """Depth-first with entries sorted by name, so the order never depends on the filesystem.

    An explicit stack instead of recursion: however deep the tree, no RecursionError.
    """
    listing = _sorted_entries(top)
    if isinstance(listing, Unreadable):
        yield listing
        return
    stack = [listing]  # per open directory: its entries not yet visited, last-to-visit first
    while stack:
        entries = stack[-1]
        if not entries:
            stack.pop()
            continue
        entry = entries.pop()
        try:
            is_directory = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_directory = False  # vanished since listed; the stat below reports it if it matters
        if is_directory:
            # Symlinked directories are not followed (is_dir above is False for them): no loops.
            listing = _sorted_entries(entry.path)
            if isinstance(listing, Unreadable):
                yield listing
            else:
                stack.append(listing)
            continue
        if not entry.name.endswith(_JSONL_SUFFIXES):
            continue
        try:
            info = os.stat(entry.path)  # follows a symlinked file to what it names
        except OSError as exc:
            yield Unreadable(entry.path, 0, _stat_reason(entry.path, exc))
            continue
        # FIFOs, sockets and devices are skipped without being opened.
        if stat.S_ISREG(info.st_mode) and _first_visit(info, seen):
            yield Source(entry.path)


def _sorted_entries(directory: str) -> list[os.DirEntry[str]] | Unreadable:
    try:
        with os.scandir(directory) as scan:
            return sorted(scan, key=lambda entry: entry.name, reverse=True)
    except OSError as exc:
        return Unreadable(directory, 0, _os_reason(exc))


def _first_visit(info: os.stat_result, seen: set[tuple[int, int]]) -> bool:
    key = (info.st_dev, info.st_ino)
    if key in seen:
        return False
    seen.add(key)
    return True
