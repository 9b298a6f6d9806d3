"""Read stage: named paths -> files -> physical lines (with path and line number) -> parsed values.

Nothing here ever raises on data or on a bad path: problems come back as `Unreadable` items, and
files are only ever opened read-only. The modules, in the order the data flows through them:

- `discover`: named paths, globs and directories -> `Source` items (each file once) or `Unreadable`.
- `files`: the read-only open and the reasons a path cannot be read.
- `remote`: inputs named by URL (object storage), read through fsspec, imported only for a URL.
- `source`: `Source`, one file to read: opened, decompressed, split into lines.
- `decompress`: a plain, gzip or zstd file -> byte chunks; a broken stream raises `_StreamBroken`.
- `lines`: byte chunks -> `Line` and `OversizedLine` items, memory bounded by the row cap.
- `parse`: a line's bytes -> its value, or a `ParseError` naming why it is not strict JSON.
- `units`: work for the check processes: a plain file cut into shards, a stream into batches.
- `head`: a source's first lines, read before it is checked (a stream's are handed back to it).
- `items`: what the stage yields (`Line`, `OversizedLine`, `Unreadable`, `ParseError`, `LineTally`).
"""

from __future__ import annotations

from trajlint.read.discover import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Selection, iter_sources, missing
from trajlint.read.files import _input_size as input_size
from trajlint.read.head import HEAD_BYTES, HEAD_LINES, head
from trajlint.read.items import DEFAULT_MAX_ROW_BYTES, Line, LineTally, OversizedLine, ParseError, Unreadable
from trajlint.read.parse import parse
from trajlint.read.source import Source
from trajlint.read.units import BATCH_BYTES, BATCH_ROWS, SHARD_BYTES, Batch, batches, shards

__all__ = [
    "BATCH_BYTES",
    "BATCH_ROWS",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DEFAULT_MAX_ROW_BYTES",
    "HEAD_BYTES",
    "HEAD_LINES",
    "SHARD_BYTES",
    "Batch",
    "Line",
    "LineTally",
    "OversizedLine",
    "ParseError",
    "Selection",
    "Source",
    "Unreadable",
    "batches",
    "head",
    "input_size",
    "iter_sources",
    "missing",
    "parse",
    "shards",
]
