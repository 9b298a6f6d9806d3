"""Read stage: named paths -> files -> physical lines (with path and line number) -> parsed values.

This is the hot path, so lines are produced by reading large chunks and splitting them with
``bytes.split`` (C speed) rather than by ``readline``. Memory stays bounded by the chunk size plus
``max_row_bytes``: a longer line is counted while it is skipped and reported as `OversizedLine`.
Nothing here ever raises on data or on a bad path: problems come back as `Unreadable` items, and
files are only ever opened read-only.

Directory decision (ruff-like): a directory is searched recursively for ``*.jsonl``,
``*.jsonl.gz`` and ``*.jsonl.zst`` files; a directory holding none of them yields nothing and is
not a finding (ruff only warns when a whole run finds no files, which the command line can do by
noticing that no `Source` came back). A named path that is missing, unreadable or a special file,
and a glob that matches nothing, are `Unreadable` items.
"""

from __future__ import annotations

import errno
import fnmatch
import gzip
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import orjson
import zstandard

__all__ = [
    "DEFAULT_MAX_ROW_BYTES",
    "Batch",
    "Line",
    "OversizedLine",
    "ParseError",
    "Source",
    "Unreadable",
    "batches",
    "iter_sources",
    "parse",
    "shards",
]

DEFAULT_MAX_ROW_BYTES = 256 * 1024 * 1024

# 256 KiB chunks measured fastest: large enough to amortise the per-chunk Python work, small
# enough that the decompressed chunk is still in cache when it is split.
_CHUNK_BYTES = 256 * 1024
# Compressed bytes zstandard's stream_reader asks for at a time (its own default).
_ZSTD_READ_BYTES = 128 * 1024

_JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")
_GLOB_CHARS = frozenset("*?[")
# JSON whitespace (RFC 8259); a line made only of these is blank.
_JSON_WHITESPACE = b" \t\r"


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank physical line; ``raw`` lacks the b"\\n" (a trailing b"\\r" may stay)."""

    path: str
    number: int
    raw: bytes


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """A line longer than ``max_row_bytes``; it was skipped, never held whole. ``size`` excludes the b"\\n"."""

    path: str
    number: int
    size: int


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A path that cannot be read (``line`` 0), or a stream that broke before line ``line`` was complete."""

    path: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True)
class ParseError:
    """Why a line is not strict JSON; ``kind`` is utf8, bom, non-finite, truncated or syntax."""

    kind: str
    message: str
    offset: int | None


class _StreamBroken(Exception):
    """Raised by a chunk reader when its stream fails. ``whole_file`` means the file was never in
    the expected format (reported at line 0), rather than broken at some line."""

    def __init__(self, reason: str, *, whole_file: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.whole_file = whole_file


# ---------------------------------------------------------------------------------------------
# Sources


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
            opened = _open_regular_file(self.path)
            if isinstance(opened, Unreadable):
                if not self.first_shard:  # the file went away after it was split
                    opened = Unreadable(self.path, 1, opened.reason)
                yield opened
                return
            handle, owned = opened, True
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


@dataclass(slots=True)
class LineTally:
    lines: int = 0


# Shards this size keep a worker's findings and digests small and give every core a fair share;
# the per-shard cost (an open, a seek, a search for the next line end) is negligible beside it.
SHARD_BYTES = 16 * 1024 * 1024


def shards(source: Source, shard_bytes: int | None = None) -> list[Source]:
    """`source` cut at line ends into shards of about `shard_bytes`, in file order.

    Only a plain JSONL file on disk can be cut (a compressed stream has no byte offsets to seek
    to); anything else, and a file too small to be worth cutting, is its single shard. Finding
    the cuts reads a little past each nominal offset, never the file. A file that cannot be
    opened here is left whole, for the read to report.
    """
    shard_bytes = shard_bytes or SHARD_BYTES
    if source.stream is not None or source.compression or source.whole or source.span is not None:
        return [source]
    try:
        size = os.stat(source.path).st_size
    except OSError:
        return [source]
    if size < 2 * shard_bytes:
        return [source]
    opened = _open_regular_file(source.path)
    if isinstance(opened, Unreadable):
        return [source]
    starts = [0]
    try:
        with opened as handle:
            for nominal in range(shard_bytes, size, shard_bytes):
                start = _line_start_at_or_after(handle, max(nominal, starts[-1] + 1))
                if start is None or start >= size:
                    break
                starts.append(start)
    except OSError:
        return [source]
    ends: list[int | None] = [*starts[1:], None]  # the last shard reads whatever the file holds then
    return [Source(source.path, "", False, span=(a, b)) for a, b in zip(starts, ends)]


def _line_start_at_or_after(handle: BinaryIO, offset: int) -> int | None:
    """The first offset >= `offset` that follows a b"\n" (None: no line starts there)."""
    position = offset - 1  # the byte before `offset` may itself end a line
    handle.seek(position)
    while piece := handle.read(64 * 1024):
        found = piece.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(piece)
    return None


# Lines of a stream handed to a worker at a time: small enough that two workers share an 8 MiB
# stream fairly, large enough that handing a batch over (a pickle through a pipe) costs little
# beside checking it (~30 ms of rows); the row cap bounds the digests a worker returns.
BATCH_BYTES = 1024 * 1024
BATCH_ROWS = 1000


@dataclass(frozen=True, slots=True)
class Batch:
    """Lines of a stream already read here, for a worker to check.

    A compressed file or standard input has no offsets a worker could seek to, so the process
    that reads it cuts its lines into batches instead. Lines keep their numbers in the whole
    stream; the batch that starts the stream (`first_shard`) speaks for the file. A line is
    carried as (number, raw), which pickles far faster than a `Line`.
    """

    path: str
    first_shard: bool
    items: tuple[tuple[int, bytes] | OversizedLine | Unreadable, ...]
    size: int = 0  # bytes of its lines

    def lines(
        self, max_row_bytes: int = DEFAULT_MAX_ROW_BYTES, tally: LineTally | None = None
    ) -> Iterator[Line | OversizedLine | Unreadable]:
        """The batch's items as the stream yielded them (the row cap was applied when it was read).

        `tally` stays at 0: the lines carry their numbers in the whole stream, so nobody adds
        lines before them."""
        path = self.path
        for item in self.items:
            yield Line(path, *item) if type(item) is tuple else item  # type: ignore[misc]


def batches(
    source: Source, max_row_bytes: int = DEFAULT_MAX_ROW_BYTES, batch_bytes: int | None = None
) -> Iterator[Batch]:
    """`source`'s lines read here and cut into batches of about `batch_bytes`, in order.

    There is always a first batch, empty for an empty stream, so the file is reported on.
    """
    batch_bytes = batch_bytes or BATCH_BYTES
    items: list[tuple[int, bytes] | OversizedLine | Unreadable] = []
    size = 0
    first = True
    for item in source.lines(max_row_bytes):
        if type(item) is Line:
            items.append((item.number, item.raw))
            size += len(item.raw)
        else:
            items.append(item)  # type: ignore[arg-type]
        if size >= batch_bytes or len(items) >= BATCH_ROWS:
            yield Batch(source.path, first, tuple(items), size)
            items, size, first = [], 0, False
    if items or first:
        yield Batch(source.path, first, tuple(items), size)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same path once links are resolved, or one inode.

    Every writer checks its target with this, so that trajlint never writes to an input.
    """
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


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


def iter_sources(paths: Sequence[str], *, stdin: BinaryIO | None = None) -> Iterator[Source | Unreadable]:
    """Expand named paths into sources, in the order named; directories in sorted order.

    The same file reached twice (named twice, via a glob and a directory, through a symlink) is
    read once, at its first mention.
    """
    seen: set[tuple[int, int]] = set()
    stdin_taken = False
    for path in paths:
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


# ---------------------------------------------------------------------------------------------
# Chunk readers: each yields decompressed byte chunks and raises _StreamBroken on failure.


def _plain_chunks(handle: BinaryIO) -> Iterator[bytes]:
    # read1 returns what a pipe has now instead of waiting for a full chunk.
    read = getattr(handle, "read1", None) or handle.read
    try:
        while chunk := read(_CHUNK_BYTES):
            yield chunk
    except OSError as exc:
        raise _StreamBroken(f"read failed: {_os_reason(exc)}") from None


def _span_chunks(handle: BinaryIO, start: int, end: int | None) -> Iterator[bytes]:
    try:
        handle.seek(start)
        left = None if end is None else end - start
        while left is None or left > 0:
            chunk = handle.read(_CHUNK_BYTES if left is None else min(_CHUNK_BYTES, left))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            yield chunk
    except OSError as exc:
        raise _StreamBroken(f"read failed: {_os_reason(exc)}") from None


def _gzip_chunks(handle: BinaryIO) -> Iterator[bytes]:
    # read1 makes one decompression step per call, so everything decoded before a failure has
    # already been handed out when the error is raised.
    produced = False
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as gz:
            while chunk := gz.read1(_CHUNK_BYTES):
                produced = True
                yield chunk
    except EOFError:
        raise _StreamBroken("gzip stream ends before its end-of-stream marker") from None
    except gzip.BadGzipFile as exc:
        text = str(exc)
        if text.startswith("Not a gzipped file"):
            if not produced:
                raise _StreamBroken("not a gzip stream", whole_file=True) from None
            reason = "data after the last gzip member is not gzip"
        elif text.startswith("CRC check failed"):
            reason = "gzip data is corrupt (CRC check failed)"
        elif text.startswith("Incorrect length"):
            reason = "gzip data is corrupt (length check failed)"
        else:
            reason = "gzip header is corrupt"
        raise _StreamBroken(reason) from None
    except zlib.error:
        raise _StreamBroken("gzip data is corrupt (invalid deflate data)") from None
    except OSError as exc:
        raise _StreamBroken(f"read failed: {_os_reason(exc)}") from None


def _zstd_chunks(handle: BinaryIO) -> Iterator[bytes]:
    # stream_reader bounds each read's output (a zstd bomb cannot flood memory) and measured 1.5x
    # faster here than decompressobj, but it ends silently at a truncated frame: _ZstdFrames tells.
    frames = _ZstdFrames(handle)
    decompressor = zstandard.ZstdDecompressor()
    try:
        with decompressor.stream_reader(
            frames, read_size=_ZSTD_READ_BYTES, read_across_frames=True, closefd=False
        ) as reader:
            while chunk := reader.read(_CHUNK_BYTES):
                yield chunk
    except zstandard.ZstdError as exc:
        if frames.not_zstd:
            raise frames.not_zstd_error() from None
        detail = str(exc).lower().removeprefix("zstd decompress error: ").strip() or "invalid data"
        raise _StreamBroken(f"zstd data is corrupt ({detail})") from None
    except OSError as exc:
        raise _StreamBroken(f"read failed: {_os_reason(exc)}") from None
    if frames.not_zstd:
        raise frames.not_zstd_error()
    if frames.truncated:
        raise _StreamBroken("zstd stream ends inside a frame (truncated)")


class _ZstdFrames:
    """Passes compressed bytes to the decompressor while following the frame layout (RFC 8878:
    frame headers, block headers, checksums, skippable frames), so that the end of the input can
    be told apart from the end of a frame. Only headers are looked at: one step per block.

    Input stops at the first thing that is not a frame: the decompressor then finishes the good
    frames (it would drop the last read's output if it met the bad bytes itself).
    """

    _MAGIC, _DESCRIPTOR, _HEADER_REST, _BLOCK_HEADER, _CHECKSUM, _SKIPPABLE_SIZE, _NOT_ZSTD = range(7)

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._state = self._MAGIC
        self._need = 4  # header bytes the current state reads
        self._header = b""  # header bytes gathered so far (a header may straddle two reads)
        self._skip = 0  # block or skippable-frame content to pass over first
        self._checksum = False
        self.completed = 0  # zstd frames seen to their end

    @property
    def truncated(self) -> bool:
        return not (self._state == self._MAGIC and not self._header and not self._skip)

    @property
    def not_zstd(self) -> bool:
        return self._state == self._NOT_ZSTD

    def not_zstd_error(self) -> _StreamBroken:
        if not self.completed:
            return _StreamBroken("not a zstd stream", whole_file=True)
        return _StreamBroken("data after the last zstd frame is not zstd")

    def read(self, size: int = -1) -> bytes:
        if self._state == self._NOT_ZSTD:
            return b""
        data = self._handle.read(size)
        position, end = 0, len(data)
        while position < end:
            if self._skip:
                step = min(self._skip, end - position)
                self._skip -= step
                position += step
                continue
            take = min(self._need - len(self._header), end - position)
            self._header += data[position : position + take]
            position += take
            if len(self._header) == self._need:
                header, self._header = self._header, b""
                self._advance(header)
                if self._state == self._NOT_ZSTD:
                    return data[: max(0, position - len(header))]
        return data

    def _advance(self, header: bytes) -> None:
        state, value = self._state, int.from_bytes(header, "little")
        if state == self._MAGIC:
            if value == 0xFD2FB528:
                self._state, self._need = self._DESCRIPTOR, 1
            elif value & 0xFFFFFFF0 == 0x184D2A50:
                self._state, self._need = self._SKIPPABLE_SIZE, 4
            else:
                self._state = self._NOT_ZSTD  # also zstd's pre-1.0 legacy frames
        elif state == self._DESCRIPTOR:
            single_segment = value >> 5 & 1
            content_size_bytes = (single_segment, 2, 4, 8)[value >> 6]
            dictionary_id_bytes = (0, 1, 2, 4)[value & 3]
            self._checksum = bool(value & 4)
            rest = (1 - single_segment) + dictionary_id_bytes + content_size_bytes  # + window byte
            self._state, self._need = (self._HEADER_REST, rest) if rest else (self._BLOCK_HEADER, 3)
        elif state == self._HEADER_REST:
            self._state, self._need = self._BLOCK_HEADER, 3
        elif state == self._BLOCK_HEADER:
            block_type, block_size = value >> 1 & 3, value >> 3
            self._skip = 1 if block_type == 1 else block_size  # an RLE block stores one byte
            if value & 1:  # last block of the frame
                if self._checksum:
                    self._state, self._need = self._CHECKSUM, 4
                else:
                    self._end_frame()
        elif state == self._CHECKSUM:
            self._end_frame()
        elif state == self._SKIPPABLE_SIZE:
            self._skip = value
            self._state, self._need = self._MAGIC, 4

    def _end_frame(self) -> None:
        self.completed += 1
        self._state, self._need = self._MAGIC, 4


_CHUNK_READERS = {"": _plain_chunks, "gzip": _gzip_chunks, "zstd": _zstd_chunks}


# ---------------------------------------------------------------------------------------------
# Chunks -> lines

_SET_LINE_PATH = Line.path.__set__  # type: ignore[attr-defined]
_SET_LINE_NUMBER = Line.number.__set__  # type: ignore[attr-defined]
_SET_LINE_RAW = Line.raw.__set__  # type: ignore[attr-defined]


def _split_lines(
    path: str, chunks: Iterator[bytes], max_row_bytes: int, tally: LineTally
) -> Iterator[Line | OversizedLine | Unreadable]:
    """Split chunks on b"\\n". A line cut by a chunk boundary is carried over in parts; once it
    outgrows max_row_bytes its bytes are only counted."""
    number = 0  # physical lines completed so far
    carried: list[bytes] = []  # start of the line whose end has not been read yet
    carried_size = 0
    skipping = False  # the carried line is oversized: count, do not keep
    whitespace = _JSON_WHITESPACE
    # A frozen dataclass's __init__ costs about 1 us a row (object.__setattr__ per field), as
    # much as all the other per-row work together; setting the slots directly is 3x cheaper.
    new, set_path, set_number, set_raw = object.__new__, _SET_LINE_PATH, _SET_LINE_NUMBER, _SET_LINE_RAW
    try:
        for chunk in chunks:
            pieces = chunk.split(b"\n")
            if len(pieces) == 1:  # no line ends in this chunk
                carried_size += len(chunk)
                if skipping:
                    continue
                if carried_size > max_row_bytes:
                    skipping = True
                    carried.clear()
                else:
                    carried.append(chunk)
                continue
            tail = pieces.pop()
            if carried_size or skipping:
                size = carried_size + len(pieces[0])
                if skipping or size > max_row_bytes:
                    number += 1
                    yield OversizedLine(path, number, size)
                    del pieces[0]
                else:
                    carried.append(pieces[0])
                    pieces[0] = b"".join(carried)
                carried.clear()
                carried_size = 0
                skipping = False
            # Only a chunk longer than the cap can hold an oversized line between two newlines.
            check_size = len(chunk) > max_row_bytes
            for number, raw in enumerate(pieces, number + 1):
                # Rows start with "{": testing the first byte avoids a strip on nearly every row.
                if raw[:1] in whitespace and not raw.strip(whitespace):
                    continue
                if check_size and len(raw) > max_row_bytes:
                    yield OversizedLine(path, number, len(raw))
                    continue
                line = new(Line)
                set_path(line, path)
                set_number(line, number)
                set_raw(line, raw)
                yield line
            if tail:
                carried_size = len(tail)
                if carried_size > max_row_bytes:
                    skipping = True
                else:
                    carried.append(tail)
    except _StreamBroken as broken:
        # The partial line is not yielded: a half row would only show up as a misleading JSON error.
        tally.lines = number + 1
        yield Unreadable(path, 0 if broken.whole_file else number + 1, broken.reason)
        return
    tally.lines = number + (1 if skipping or carried else 0)
    if skipping:
        yield OversizedLine(path, number + 1, carried_size)
    elif carried:
        raw = b"".join(carried)
        if raw.strip(whitespace):
            yield Line(path, number + 1, raw)


def _whole_document(path: str, chunks: Iterator[bytes], max_row_bytes: int) -> Iterator[Line | OversizedLine | Unreadable]:
    """A .json file is one row at line 1, whatever its newlines; an empty one is still yielded so
    the caller reports it rather than silently reading nothing."""
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in chunks:
            size += len(chunk)
            if size <= max_row_bytes:
                parts.append(chunk)
            elif parts:
                parts.clear()
    except _StreamBroken as broken:
        yield Unreadable(path, 0 if broken.whole_file else 1, broken.reason)
        return
    if size > max_row_bytes:
        yield OversizedLine(path, 1, size)
    else:
        yield Line(path, 1, b"".join(parts))


# ---------------------------------------------------------------------------------------------
# Parsing


def parse(raw: bytes) -> object | ParseError:
    """Strict JSON via orjson; only when it fails is the line examined again to name the cause.

    orjson accepts integers up to 64 bits (signed or unsigned) exactly and silently turns larger
    ones into floats; that precision loss is left for a later rule to report.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return _diagnose(raw, exc)


def _diagnose(raw: bytes, exc: orjson.JSONDecodeError) -> ParseError:
    if raw.startswith(b"\xef\xbb\xbf"):
        return ParseError("bom", "line starts with a UTF-8 byte order mark", 0)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        byte = raw[bad.start]
        return ParseError("utf8", f"invalid UTF-8 byte 0x{byte:02x} at byte {bad.start}", bad.start)
    text = raw.decode("utf-8")
    # orjson reports positions in characters of the decoded text; we report bytes.
    position = min(max(exc.pos, 0), len(text))
    offset = len(text[:position].encode("utf-8"))
    reason = exc.msg
    end = len(raw.rstrip(b" \t\r\n"))

    non_finite = _non_finite_literal(raw, offset)
    if non_finite is not None:
        literal, start = non_finite
        return ParseError("non-finite", f"{literal} is not valid JSON (at byte {start})", start)
    if reason.startswith("number is infinity"):
        return ParseError("syntax", f"number out of range: too large for a 64-bit float (at byte {offset})", offset)
    if not raw.strip(b" \t\r\n"):
        return ParseError("truncated", "no JSON value: the input is empty or only whitespace", 0)
    if reason.startswith("unexpected content after document"):
        return ParseError("syntax", f"extra data after the JSON value at byte {offset}", offset)
    if offset >= end or reason.startswith(("unexpected end of data", "EOF while parsing")):
        return ParseError("truncated", "line ends inside a JSON value (truncated?)", offset)
    if "surrogate" in reason:
        return ParseError("syntax", f"unpaired UTF-16 surrogate escape in a string (at byte {offset})", offset)
    return ParseError("syntax", f"invalid JSON at byte {offset}: {reason}", offset)


def _non_finite_literal(raw: bytes, offset: int) -> tuple[str, int] | None:
    """The bare NaN/Infinity token where orjson stopped, and its start.

    orjson stops at the token (older versions at the minus sign of "-Infinity", newer ones just
    after it); text inside a string never stops the parser, so it cannot be mistaken for one.
    """
    for start in (offset, offset - 1):
        if start >= 0 and raw.startswith(b"-Infinity", start):
            return "-Infinity", start
    for token in ("Infinity", "NaN"):
        if raw.startswith(token.encode(), offset):
            return token, offset
    return None
