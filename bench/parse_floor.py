"""Throughput of `trajlint check` next to the floor: reading and parsing every line with orjson.

Both are measured in this one run, on the same file, so the ratio is meaningful on any machine.

    python bench/parse_floor.py FILE [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing


def parse_only(path: str) -> int:
    rows = 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                orjson.loads(line)
                rows += 1
    return rows


def trajlint_check(path: str) -> int:
    from trajlint.check.engine import load_rules, run
    from trajlint.read import iter_sources

    result = run(iter_sources([path]), load_rules(), max_row_bytes=256 * 1024 * 1024)
    return result.rows


def best_of(fn, path: str, repeat: int) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = fn(path)
        best = min(best, time.perf_counter() - start)
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    size_mb = os.path.getsize(args.file) / 1e6

    floor, rows = best_of(parse_only, args.file, args.repeat)
    check, _ = best_of(trajlint_check, args.file, args.repeat)
    print(f"file: {args.file} ({size_mb:,.1f} MB, {rows:,} rows), best of {args.repeat}")
    for label, seconds in (("orjson parse (floor)", floor), ("trajlint check", check)):
        print(f"  {label:<22} {seconds:8.3f} s  {size_mb / seconds:9.1f} MB/s  {rows / seconds:11,.0f} rows/s")
    print(f"  ratio check/floor: {check / floor:.1f}x")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS: {peak:,.0f} MB")


if __name__ == "__main__":
    main()
