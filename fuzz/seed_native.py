"""Seed the cargo-fuzz corpora of the native core's targets with real lines.

Every non-blank line of `examples/`, `tests/data/real/` and `tests/data/hostile/` (compressed
files decompressed where the standard library, or zstandard when installed, can) becomes one
input of `fuzz/corpus/<target>/`, named by its SHA-1, so seeding twice adds nothing. The corpora
are made at run time and never committed.

    python fuzz/seed_native.py scan_line check_row
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCES = (ROOT / "examples", ROOT / "tests" / "data" / "real", ROOT / "tests" / "data" / "hostile")
#: libFuzzer's inputs stay small enough to mutate quickly; the real rows are all smaller.
MAX_BYTES = 64 * 1024


def _content(path: Path) -> bytes | None:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError):
            return None  # a truncated stream: the hostile corpus has one on purpose
    if path.suffix == ".zst":
        try:
            import zstandard
        except ImportError:
            return None
        try:
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
        except zstandard.ZstdError:
            return None
    if path.suffix in (".jsonl", ".json"):
        return data
    return None


def lines() -> Iterator[bytes]:
    """Each non-blank line of the seed sources, as written (a trailing CR kept)."""
    for source in SOURCES:
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            content = _content(path)
            if content is None:
                continue
            for line in content.split(b"\n"):
                if line.strip() and len(line) <= MAX_BYTES:
                    yield line


def seed(target: str) -> int:
    """Write the seed lines into `fuzz/corpus/<target>/`; the number of inputs it holds."""
    directory = HERE / "corpus" / target
    directory.mkdir(parents=True, exist_ok=True)
    for line in lines():
        path = directory / hashlib.sha1(line).hexdigest()
        if not path.exists():
            path.write_bytes(line)
    return sum(1 for _ in directory.iterdir())


def main(targets: list[str]) -> int:
    if not targets:
        print(__doc__, file=sys.stderr)
        return 2
    for target in targets:
        print(f"fuzz/corpus/{target}: {seed(target)} inputs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
