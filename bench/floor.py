"""The floor: read every line of a rollout file and parse it with orjson, nothing else.

No linter can be faster than this on one core, so trajlint's time is read against it. It reads
compressed files the way trajlint does (gzip.open; zstandard's stream_reader behind a buffer).

    python bench/floor.py FILE     # prints {"lines", "rows", "unparseable", "bytes"} as JSON
"""

from __future__ import annotations

import gzip
import io
import sys
from typing import BinaryIO

import orjson


def open_lines(path: str) -> BinaryIO:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".zst"):
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True), 1 << 20)
    return open(path, "rb", buffering=1 << 20)


def parse_all(path: str) -> dict[str, int]:
    lines = rows = unparseable = size = 0
    with open_lines(path) as handle:
        for line in handle:
            lines += 1
            size += len(line)
            if not line.strip():
                continue
            try:
                orjson.loads(line)
                rows += 1
            except orjson.JSONDecodeError:
                unparseable += 1
    return {"lines": lines, "rows": rows, "unparseable": unparseable, "bytes": size}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(parse_all(sys.argv[1])).decode() + "\n")
