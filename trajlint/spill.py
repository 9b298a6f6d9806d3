"""Sequences whose memory does not grow with their length: kept in compressed blocks, and on
disk once they pass a budget.

A run of millions of rows can have millions of findings and run-level entries. What trajlint
keeps of them is held here: `Packed`, an append-only sequence read back in order, and
`Sorted`, items appended in any order and read back sorted by a key (ties in the order they
were appended, as a stable sort has them), by sorting chunks that fit the budget and merging
them. Both can be read any number of times.

Items are pickled in blocks of `BLOCK_ITEMS` and compressed; blocks stay in memory until their
compressed bytes pass `MEMORY_BYTES`, then go to an unnamed temporary file (removed by the
system however the process ends). The environment variables `TRAJLINT_SPILL_ITEMS` and
`TRAJLINT_SPILL_BYTES` set both; tests make them tiny so that every path is taken.
"""

from __future__ import annotations

import heapq
import itertools
import os
import pickle
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")


def _setting(name: str, default: int) -> int:
    try:
        return max(0, int(os.environ.get(name, default)))
    except ValueError:
        return default


#: Items per block, and items a `Sorted` sorts in memory before writing them as one run. A
#: run keeps several sorted sequences at once (findings, both identity rules, the health
#: index), so this bounds what a run holds unpacked. At 20,000 a 20,000-row run packed nothing
#: and peaked 5 MiB higher than at 10,000; at 4,096 packing and merging the items cost the
#: process that absorbs every row about 0.25 s of CPU, which with `--jobs 2` is time the
#: workers wait for (bench/README.md, "Where the memory goes").
BLOCK_ITEMS = 1024
SORT_ITEMS = 10_000
#: Compressed bytes of blocks a sequence keeps in memory before the rest goes to disk.
MEMORY_BYTES = 8 * 1024 * 1024
#: Runs merged at once; past it they are merged into one first.
FAN_IN = 32


def _block_items() -> int:
    return max(1, _setting("TRAJLINT_SPILL_ITEMS", BLOCK_ITEMS))


def _sort_items() -> int:
    items = _setting("TRAJLINT_SPILL_ITEMS", 0)
    return max(1, items) if items else SORT_ITEMS


def _memory_bytes() -> int:
    return _setting("TRAJLINT_SPILL_BYTES", MEMORY_BYTES)


class _Disk:
    """One unnamed temporary file that the blocks of several sequences are appended to."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0

    def write(self, data: bytes) -> tuple[int, int]:
        if self._file is None:
            import tempfile

            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by `close`
        offset = self._end
        os.pwrite(self._file.fileno(), data, offset)
        self._end += len(data)
        return offset, len(data)

    def read(self, offset: int, length: int) -> bytes:
        assert self._file is not None
        return os.pread(self._file.fileno(), length, offset)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _ReadBack(Generic[T]):
    """What `Packed` and `Sorted` share: a sequence read back by iterating, never indexed."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, index: int | slice) -> Any:
        return _item(self, index)

    def __eq__(self, other: object) -> Any:
        if isinstance(other, (list, tuple, _ReadBack)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class Packed(_ReadBack[T]):
    """An append-only sequence of picklable items, read back in the order appended.

    `spill=False` keeps every block in memory (compressed): what a worker process hands back
    is pickled whole, and a part of a unit is small. `block` items make a block (default
    `BLOCK_ITEMS`): 1 for items that are each large.
    """

    def __init__(
        self, items: Iterable[T] = (), *, spill: bool = True, disk: _Disk | None = None, block: int | None = None
    ):
        self._blocks: list[bytes | tuple[int, int]] = []
        self._tail: list[T] = []
        self._length = 0
        self._memory = 0
        self._spill = spill
        self._disk = disk
        self._block = block or _block_items()
        self.extend(items)

    def __getstate__(self) -> dict[str, Any]:
        blocks = [self._disk.read(*b) if isinstance(b, tuple) else b for b in self._blocks]  # type: ignore[union-attr]
        return {"blocks": blocks, "tail": self._tail, "length": self._length, "block": self._block}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._blocks = state["blocks"]
        self._tail = state["tail"]
        self._length = state["length"]
        self._memory = sum(len(b) for b in self._blocks)
        self._spill = False
        self._disk = None
        self._block = state.get("block") or _block_items()

    def append(self, item: T) -> None:
        self._tail.append(item)
        self._length += 1
        if len(self._tail) >= self._block:
            self._seal()

    def extend(self, items: Iterable[T]) -> None:
        if not isinstance(items, list):
            for item in items:
                self.append(item)
            return
        # A list (a sorted chunk): taken a block at a time, not an item at a time.
        start = 0
        while start < len(items):
            taken = items[start : start + self._block - len(self._tail)]
            self._tail.extend(taken)
            self._length += len(taken)
            start += len(taken)
            if len(self._tail) >= self._block:
                self._seal()

    def _seal(self) -> None:
        data = zlib.compress(pickle.dumps(self._tail, pickle.HIGHEST_PROTOCOL), 1)
        self._tail = []
        if self._spill and self._memory + len(data) > _memory_bytes():
            if self._disk is None:
                self._disk = _Disk()
            self._blocks.append(self._disk.write(data))
        else:
            self._memory += len(data)
            self._blocks.append(data)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[T]:
        blocks, tail = list(self._blocks), list(self._tail)  # what is there now
        for block in blocks:
            data = self._disk.read(*block) if isinstance(block, tuple) else block  # type: ignore[union-attr]
            yield from pickle.loads(zlib.decompress(data))
        yield from tail

    def close(self) -> None:
        """Free the blocks (and the file of a sequence that made its own)."""
        self._blocks, self._tail, self._length, self._memory = [], [], 0, 0
        if self._disk is not None:
            self._disk.close()
            self._disk = None


class Sorted(_ReadBack[T]):
    """Items appended in any order, read back sorted by `key` (ties in the order appended)."""

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()):
        self._key = key
        # Items as appended: a stable sort keeps ties in order within a chunk, and `heapq.merge`
        # takes equal items from the earlier of its inputs, which are the runs in the order
        # they were written, so no sequence number is held per item.
        self._chunk: list[T] = []
        self._runs: list[Packed[T]] = []
        self._length = 0
        self._disk = _Disk()
        self._limit = _sort_items()
        self.extend(items)

    def __getstate__(self) -> dict[str, Any]:
        # What crosses to another process: the items in order (a worker's run is sent whole).
        return {"key": self._key, "items": list(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["key"], state["items"])  # type: ignore[misc]

    def append(self, item: T) -> None:
        self._chunk.append(item)
        self._length += 1
        if len(self._chunk) >= self._limit:
            self._flush()

    def extend(self, items: Iterable[T]) -> None:
        # The run adds a part's rows at once: as many as the chunk has room for at a time, so
        # that a long iterable is never held whole.
        rest = iter(items)
        while taken := list(itertools.islice(rest, self._limit - len(self._chunk))):
            self._chunk.extend(taken)
            self._length += len(taken)
            if len(self._chunk) >= self._limit:
                self._flush()

    def _flush(self) -> None:
        self._chunk.sort(key=self._key)
        self._runs.append(Packed(self._chunk, disk=self._disk))
        self._chunk = []
        if len(self._runs) >= FAN_IN:
            merged = Packed(heapq.merge(*self._runs, key=self._key), disk=self._disk)
            for run in self._runs:
                run._blocks = []  # its blocks stay in the shared file until it is closed
            self._runs = [merged]

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[T]:
        chunk = sorted(self._chunk, key=self._key)
        if not self._runs:
            return iter(chunk)
        return heapq.merge(*self._runs, chunk, key=self._key)

    def close(self) -> None:
        self._chunk, self._runs = [], []
        self._disk.close()


def _item(seq: Iterable[T], index: int | slice) -> Any:
    """`seq[index]` by reading it (for a few items, or a test): no random access is kept."""
    if isinstance(index, slice):
        if (index.start or 0) < 0 or (index.stop or 0) < 0 or index.step not in (None, 1):
            return list(seq)[index]
        return list(itertools.islice(seq, index.start, index.stop))
    if index < 0:
        return list(seq)[index]
    try:
        return next(itertools.islice(seq, index, None))
    except StopIteration:
        raise IndexError(index) from None


def key_bytes(key: tuple[Any, ...]) -> bytes:
    """Bytes that order grouping keys: equal exactly when the keys are equal as dict keys
    (`1`, `1.0` and `True` are one key, as in a dict), whatever their types."""
    return b"".join(map(_part, key))  # made for every row's identity keys: no generator


_NONE = b"n" + (0).to_bytes(8, "big")


def _part(value: Any) -> bytes:
    kind = type(value)
    if kind is str:  # the usual keys first: a string, or an integer (not a boolean)
        data = value.encode("utf-8", "surrogatepass")
        return b"s" + len(data).to_bytes(8, "big") + data
    if kind is int:
        data = str(value).encode()
        return b"i" + len(data).to_bytes(8, "big") + data
    if value is None:  # the usual stage: none
        return _NONE
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not value.is_integer():
            if value != value:  # NaN: equal to nothing, not even another NaN
                import uuid

                tag, data = b"N", uuid.uuid4().bytes
            else:
                tag, data = b"f", repr(value).encode()
        else:
            tag, data = b"i", str(int(value)).encode()
    elif isinstance(value, str):
        tag, data = b"s", value.encode("utf-8", "surrogatepass")
    elif isinstance(value, bytes):
        tag, data = b"b", value
    else:
        tag, data = b"r", repr(value).encode("utf-8", "backslashreplace")
    return tag + len(data).to_bytes(8, "big") + data

