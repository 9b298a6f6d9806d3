"""Filter a stream of rollouts with trajlint's Python API: keep the rows with no error.

    python examples/pipeline.py < rollouts.jsonl > clean.jsonl

Rows are checked in batches, so a stream of any length is held one batch at a time; each row
is passed on as the bytes it came in. Run-level rules (duplicate rollouts, task health) judge
one batch at a time here; check whole files with `trajlint.check` for those.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator

import trajlint

BATCH_ROWS = 1000


def rows_without_errors(lines: Iterable[bytes], batch_rows: int = BATCH_ROWS) -> Iterator[bytes]:
    """The lines (JSONL rows) on which trajlint finds no error, in order."""
    lines = iter(lines)
    while batch := list(itertools.islice(lines, batch_rows)):
        report = trajlint.check_rows(batch, isolated=True)
        # Row n of the batch is line n; line 0 would be the batch as a whole.
        bad = {f.line for f in report.findings if f.severity == "error"}
        if 0 in bad:
            continue
        yield from (line for number, line in enumerate(batch, start=1) if number not in bad)


def main() -> None:
    counted = {"read": 0, "kept": 0}

    def lines() -> Iterator[bytes]:
        for line in sys.stdin.buffer:
            if line.strip():
                counted["read"] += 1
                yield line

    for line in rows_without_errors(lines()):
        counted["kept"] += 1
        sys.stdout.buffer.write(line)
    dropped = counted["read"] - counted["kept"]
    print(f"kept {counted['kept']:,} rows; dropped {dropped:,} with an error", file=sys.stderr)


if __name__ == "__main__":
    main()
