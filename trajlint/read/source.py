"""One file to read: opened, its bytes decompressed into chunks, the chunks split into lines."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from trajlint.read.decompress import _CHUNK_READERS, _span_chunks
from trajlint.read.files import _open_input
from trajlint.read.items import DEFAULT_MAX_ROW_BYTES, Line, LineTally, OversizedLine, Unreadable
from trajlint.read.lines import _split_lines, _whole_document

CHANGED = "changed while it was read (replaced, rewritten or appended to); check it again once it is written"


def file_identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a file from another: device, inode, size, modification time."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _identity_of(handle: BinaryIO) -> tuple[int, int, int, int] | None:
    try:
        return file_identity(os.fstat(handle.fileno()))
    except (OSError, ValueError, AttributeError):  # not a file on disk
        return None


@dataclass(frozen=True, slots=True)
class Source:
    """One file to read. ``compression`` ("", "gzip", "zstd") and ``whole`` (a one-row .json
    file) follow from the path's suffixes unless given."""

    path: str
    compression: str | None = None
    whole: bool | None = None
    stream: BinaryIO | None = field(default=None, repr=False, compare=False)  # stdin only
    # A shard: the bytes [start, end) of a plain file (end None: to the end of the file). Its
    # lines are numbered from 1 at `start`; whoever split the file adds the lines before it.
    span: tuple[int, int | None] | None = None
    # The file as it was when its head was read (`read.head`) or it was cut (`file_identity`);
    # a read that opens anything else (the file replaced by a rename, rewritten, appended to)
    # reports it instead of reading.
    identity: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        name = self.path.lower()
        compression = ""
        if name.endswith(".gz"):
            compression, name = "gzip", name[:-3]
        elif name.endswith(".zst"):
            compression, name = "zstd", name[:-4]
        if self.compression is None:
            object.__setattr__(self, "compression", compression)
        if self.whole is None:
            object.__setattr__(self, "whole", name.endswith(".json"))

    @property
    def first_shard(self) -> bool:
        """Whether this is the file itself or the shard that starts it (which speaks for the file)."""
        return self.span is None or self.span[0] == 0

    def lines(
        self, max_row_bytes: int = DEFAULT_MAX_ROW_BYTES, tally: LineTally | None = None
    ) -> Iterator[Line | OversizedLine | Unreadable]:
        """Yield the file's rows in order; a failure ends the iteration with one `Unreadable`.

        `tally`, when given, holds the number of physical lines read once the iteration ends.
        """
        if self.stream is not None:
            handle, owned = self.stream, False  # stdin belongs to the caller: never closed here
        else:
            opened = _open_input(self.path)
            if isinstance(opened, Unreadable):
                if not self.first_shard:  # the file went away after it was split
                    opened = Unreadable(self.path, 1, opened.reason)
                yield opened
                return
            handle, owned = opened, True
            if self.identity is not None and _identity_of(handle) != self.identity:
                handle.close()
                yield Unreadable(self.path, 1, CHANGED)
                return
        if self.span is None:
            chunks = _CHUNK_READERS[self.compression](handle)
        else:
            chunks = _span_chunks(handle, *self.span)
        tally = tally if tally is not None else LineTally()
        try:
            if self.whole:
                yield from _whole_document(self.path, chunks, max_row_bytes)
            else:
                yield from _split_lines(self.path, chunks, max_row_bytes, tally)
        finally:
            chunks.close()
            if owned:
                handle.close()
