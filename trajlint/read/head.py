"""The first lines of a source, read before the source is checked (what a file's kind is decided from).

A file on disk is opened here, only its first lines are read, and the source comes back carrying
the identity of the file those lines came from (`Source.identity`): whatever reads it afterwards
(the check, each of its shards) opens the path again and reads only that same file, or reports
that it changed, so a file replaced by a rename in between is never judged by one file's head
and checked by the other's rows. A stream (standard input) can be read only once, so the bytes
taken here are handed back first to whoever reads the source afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import BinaryIO

from trajlint.read.decompress import _CHUNK_READERS
from trajlint.read.files import _open_input
from trajlint.read.items import Line, LineTally, Unreadable
from trajlint.read.lines import _split_lines, _whole_document
from trajlint.read.source import Source, _identity_of

# Enough to skip a few damaged lines at the start of a file, few enough to stay cheap.
HEAD_LINES = 8
# A first row this long is still looked at; past it (a row of base64 images, say) the file is
# judged by its name alone, and a stream holds no more than this for the check to read again.
HEAD_BYTES = 16 * 1024 * 1024


def head(
    source: Source, max_row_bytes: int, *, lines: int = HEAD_LINES, max_bytes: int = HEAD_BYTES
) -> tuple[list[Line], Source]:
    """(the first lines of `source`, the source to check afterwards).

    The lines are those of the first `lines` non-blank ones that end within the first
    `max_bytes` bytes (decompressed) and are no longer than `max_row_bytes`, in order, as the
    check reads them: what they are depends on the file's content only, never on how its bytes
    arrive. Memory is bounded by `max_row_bytes` as in the check, except that a stream keeps
    the bytes taken (at most `max_bytes` and a chunk). Nothing here raises: a file that cannot
    be read, or a stream that breaks, gives the lines read before (the check reports it). For a
    stream the source returned reads the bytes taken here again, then the rest; for a file on
    disk it reads only the file these lines came from.
    """
    if source.stream is not None:
        recorder = _Recorder(source.stream)
        found = _head_lines(source, recorder, max_row_bytes, lines, max_bytes)
        return found, dataclasses.replace(source, stream=_Replay(b"".join(recorder.taken), source.stream))
    if source.span is not None:
        return [], source
    opened = _open_input(source.path, probe=True)
    if isinstance(opened, Unreadable):
        return [], source
    with opened:
        # Taken before reading: a file rewritten or appended to while its head is read no
        # longer matches it, and the check says so.
        identity = _identity_of(opened)
        found = _head_lines(source, opened, max_row_bytes, lines, max_bytes)
    if identity is not None and source.identity is None:
        source = dataclasses.replace(source, identity=identity)
    return found, source


def _head_lines(source: Source, handle: BinaryIO, max_row_bytes: int, lines: int, max_bytes: int) -> list[Line]:
    budget = _Budget(_CHUNK_READERS[source.compression or ""](handle), max_bytes)
    found: list[Line] = []
    if source.whole:
        items = _whole_document(source.path, budget, max_row_bytes)
    else:
        items = _split_lines(source.path, budget, max_row_bytes, LineTally())
    try:
        for seen, item in enumerate(items, 1):
            # The line read last when the budget ran out may be the start of a longer one.
            if type(item) is Line and not (budget.cut and budget.spent):
                found.append(item)
            if seen == lines:
                break
    finally:
        items.close()
        budget.close()
    return found


class _Budget:
    """Chunks of a stream until `max_bytes` are taken: `cut` when it stopped early, and `spent`
    once the chunks ran out (what the splitter yields after that is the line it was holding)."""

    def __init__(self, chunks: Iterator[bytes], max_bytes: int) -> None:
        self._chunks = chunks
        self._left = max_bytes
        self.cut = False
        self.spent = False

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        if self._left <= 0:
            self.cut = self.spent = True
            raise StopIteration
        chunk = next(self._chunks, None)
        if chunk is None:
            self.spent = True
            raise StopIteration
        if len(chunk) > self._left:
            chunk = chunk[: self._left]
        self._left -= len(chunk)
        return chunk

    def close(self) -> None:
        self._chunks.close()  # type: ignore[attr-defined]


class _Recorder:
    """A stream's reads, kept."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.taken: list[bytes] = []

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.taken.append(data)
        return data

    def read1(self, size: int = -1) -> bytes:
        read1 = getattr(self._stream, "read1", None) or self._stream.read
        data = read1(size)
        self.taken.append(data)
        return data


class _Replay:
    """A stream whose first bytes were already read: those bytes again, then the rest of it."""

    def __init__(self, taken: bytes, stream: BinaryIO) -> None:
        self._taken = taken
        self._position = 0
        self._stream = stream

    def read(self, size: int | None = -1) -> bytes:
        left = len(self._taken) - self._position
        if not left:
            return self._stream.read(size)
        if size is None or size < 0:
            data = self._taken[self._position :] + self._stream.read()
            self._position = len(self._taken)
            return data
        return self._take(size)

    def read1(self, size: int = -1) -> bytes:
        if self._position < len(self._taken):
            return self._take(size if size >= 0 else len(self._taken))
        read1 = getattr(self._stream, "read1", None) or self._stream.read
        return read1(size)

    def _take(self, size: int) -> bytes:
        data = self._taken[self._position : self._position + size]
        self._position += len(data)
        return data
