"""Units of work for the check processes: a plain file cut into shards (byte spans), a stream's
lines cut into batches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from trajlint.read.files import _input_size, _open_input
from trajlint.read.items import DEFAULT_MAX_ROW_BYTES, Line, LineTally, OversizedLine, Unreadable
from trajlint.read.source import Source, _identity_of

# Shards this size keep a worker's findings and digests small and give every core a fair share;
# the per-shard cost (an open, a seek, a search for the next line end) is negligible beside it.
SHARD_BYTES = 16 * 1024 * 1024


def shards(source: Source, shard_bytes: int | None = None, tail_bytes: int = 0) -> list[Source]:
    """`source` cut at line ends into shards of about `shard_bytes`, in file order; with
    `tail_bytes`, the file's last `tail_bytes` or so are cut four times finer (see `_offsets`).

    Only a plain JSONL file (on disk, or an object named by URL) can be cut (a compressed stream has no byte offsets to seek
    to); anything else, and a file too small to be worth cutting, is its single shard. Finding
    the cuts reads a little past each nominal offset, never the file. A file that cannot be
    opened here is left whole, for the read to report.
    """
    shard_bytes = shard_bytes or SHARD_BYTES
    if source.stream is not None or source.compression or source.whole or source.span is not None:
        return [source]
    size = _input_size(source.path)
    if size is None or size < 2 * shard_bytes:
        return [source]
    opened = _open_input(source.path, probe=True)
    if isinstance(opened, Unreadable):
        return [source]
    starts = [0]
    try:
        with opened as handle:
            # Each shard opens the file again (a worker cannot share this descriptor); what it
            # opens must be this file as it is now, or the report would mix two files. (An
            # object named by URL has no identity to check.)
            identity = _identity_of(handle)
            if source.identity is not None and identity != source.identity:
                # Not the file whose head decided its kind: left whole, its read says so.
                return [source]
            if identity is not None:
                size = identity[2]
            for nominal in _offsets(size, shard_bytes, tail_bytes):
                start = _line_start_at_or_after(handle, max(nominal, starts[-1] + 1))
                if start is None or start >= size:
                    break
                starts.append(start)
    except OSError:
        return [source]
    ends: list[int | None] = [*starts[1:], None]  # the last shard reads whatever the file holds then
    return [Source(source.path, "", False, span=(a, b), identity=identity) for a, b in zip(starts, ends)]


def _offsets(size: int, shard_bytes: int, tail_bytes: int) -> list[int]:
    """Where shards of a file of `size` bytes nominally start, after the first.

    Workers take shards in order, so the run ends when the worker holding the last one is done,
    while the others wait: up to a whole shard's time. Cutting the end finer lets them share
    it, for a few more shards in all.
    """
    if tail_bytes <= 0:
        return list(range(shard_bytes, size, shard_bytes))
    offsets = list(range(shard_bytes, size - tail_bytes, shard_bytes))
    fine = max(1, shard_bytes // 4)
    offsets.extend(range((offsets[-1] if offsets else 0) + fine, size, fine))
    return offsets


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
