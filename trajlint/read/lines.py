"""Chunks -> lines.

This is the hot path, so lines are produced by reading large chunks and splitting them with
``bytes.split`` (C speed) rather than by ``readline``. Memory stays bounded by the chunk size plus
``max_row_bytes``: a longer line is counted while it is skipped and reported as `OversizedLine`.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import compress, count

from trajlint.read.decompress import _StreamBroken
from trajlint.read.items import Line, LineTally, OversizedLine, Unreadable

# JSON whitespace (RFC 8259); a line made only of these is blank.
_JSON_WHITESPACE = b" \t\r"
_WHITESPACE_AND_NEWLINE = b" \t\r\n"
_BLANK_START = (b" ", b"\t", b"\r", b"\n")

# A chunk whose first whole line is longer than this is split by `bytes.find` (`split_newlines`).
_LONG_LINE = 1024

_SET_LINE_PATH = Line.path.__set__  # type: ignore[attr-defined]
_SET_LINE_NUMBER = Line.number.__set__  # type: ignore[attr-defined]
_SET_LINE_RAW = Line.raw.__set__  # type: ignore[attr-defined]


def split_newlines(chunk: bytes) -> list[bytes]:
    """`chunk.split(b"\\n")`, at memchr's speed where lines are long.

    `bytes.split` with a one-byte separator tests each byte in a loop of its own: on rollout rows
    of tens of KB that is several times slower than `bytes.find`, which calls memchr. A Python
    loop over `find` costs more per line, though, so it is taken only when the chunk's first
    whole line is long (a file's lines are mostly alike).
    """
    find = chunk.find
    first = find(b"\n")
    if first < 0:
        return [chunk]
    end = find(b"\n", first + 1)
    if 0 <= end - first <= _LONG_LINE:
        return chunk.split(b"\n")
    pieces = [chunk[:first]]
    append = pieces.append
    start = first + 1
    while end >= 0:
        append(chunk[start:end])
        start = end + 1
        end = find(b"\n", start)
    append(chunk[start:])
    return pieces


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
            blank_run = 0  # blank lines between the first piece and the tail, not in `pieces`
            # `strip` stops at the first byte that is not blank, where `translate` would copy the
            # whole chunk: a chunk often starts with a space inside a string.
            if chunk[:1] in _BLANK_START and not chunk.strip(_WHITESPACE_AND_NEWLINE):
                # Nothing but whitespace and line ends (a file of newlines): counted, not split.
                ends = chunk.count(b"\n")
                pieces = [chunk[: chunk.find(b"\n")], chunk[chunk.rfind(b"\n") + 1 :]] if ends else [chunk]
                blank_run = max(ends - 1, 0)
            else:
                pieces = split_newlines(chunk)
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
            # Lines this short on average are mostly blank (a file of newlines): which pieces
            # hold more than JSON whitespace is found at C speed, and only those are visited.
            keep = None
            if len(pieces) > len(chunk) >> 4 and not blank_run:
                keep = chunk.translate(None, whitespace).split(b"\n")
                keep.pop()
                keep[0] = b"?"  # the first piece may end a carried line: decided below
            if carried_size or skipping:
                size = carried_size + len(pieces[0])
                if skipping or size > max_row_bytes:
                    number += 1
                    yield OversizedLine(path, number, size)
                    del pieces[0]
                    if keep is not None:
                        del keep[0]
                else:
                    carried.append(pieces[0])
                    pieces[0] = b"".join(carried)
                carried.clear()
                carried_size = 0
                skipping = False
            # Only a chunk longer than the cap can hold an oversized line between two newlines.
            check_size = len(chunk) > max_row_bytes
            first = number + 1
            numbered = enumerate(pieces, first) if keep is None else compress(zip(count(first), pieces), keep)
            for number, raw in numbered:  # noqa: B020 - numbering goes on from the last chunk
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
            number = first - 1 + len(pieces) + blank_run
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
