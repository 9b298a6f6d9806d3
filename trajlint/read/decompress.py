"""Chunk readers: each yields decompressed byte chunks and raises _StreamBroken on failure.

A plain file is read whole or as a shard's byte span; gzip and zstd are decompressed as they are read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import BinaryIO

from trajlint.read.files import _os_reason

# 256 KiB chunks measured fastest: large enough to amortise the per-chunk Python work, small
# enough that the decompressed chunk is still in cache when it is split.
_CHUNK_BYTES = 256 * 1024
# The largest window a frame may need (`zstd --long=31`, the format's limit for its tools).
ZSTD_MAX_WINDOW = 1 << 31
# Compressed bytes zstandard's stream_reader asks for at a time (its own default).
_ZSTD_READ_BYTES = 128 * 1024


class _StreamBroken(Exception):
    """Raised by a chunk reader when its stream fails. ``whole_file`` means the file was never in
    the expected format (reported at line 0), rather than broken at some line."""

    def __init__(self, reason: str, *, whole_file: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.whole_file = whole_file


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
    import gzip  # the decompressors are imported by the first file that needs one

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
    import zstandard

    frames = _ZstdFrames(handle)
    # Frames made with `zstd --long=31` need a 2 GiB window, the most zstd's tools make (the
    # library's default stops at 128 MiB). Memory follows the data: the window buffer is only
    # touched as far as the frame fills it.
    decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
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
        if "too much memory" in detail or "window" in detail:
            raise _StreamBroken(
                f"zstd frame needs a larger window than {ZSTD_MAX_WINDOW >> 30} GiB, the most trajlint reads"
            ) from None
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
