"""Generate a realistic NeMo Gym rollout JSONL file for benchmarks, deterministically from a seed.

    python bench/generate.py --rows 20000 -o rollouts.jsonl [--seed 0] [--defects 0.03] [--payload-kb 25]
    python bench/generate.py --size 1GB -o rollouts.jsonl.zst      # .gz / .zst compress by suffix

Rows mix the three model-call dialects, harness bundles (subagents, tool timings, compactions,
sandboxes, gaps), simple-agent producer trajectories, capture-only rows, verifier evidence and
rows persisted the way NeMo Gym's collector writes them, with several repeats per task. A share
of the lines (`--defects`) is broken on purpose; every broken line is listed, with its line
number and JSON pointer, in FILE.defects.json. Rows are written one at a time, so memory stays
flat whatever the size. `--size` counts uncompressed bytes (1 MB = 10^6 bytes).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))  # trajlint from this checkout (persisted rows use its builder)

from rowgen import defects  # noqa: E402
from rowgen.persist import persist  # noqa: E402
from rowgen.plan import plan  # noqa: E402
from rowgen.rows import build_row  # noqa: E402

DEFAULT_PAYLOAD_KB = 25.0
# The mean row is about STRUCTURE_KB + TEXT_KB_PER_SCALE * scale, where `scale` multiplies every
# free-text length (measured on 3,000 rows, seed 0): the JSON structure of the calls, claims and
# turns alone makes ~21 KB, the conversation text the rest.
STRUCTURE_KB = 20.95
TEXT_KB_PER_SCALE = 11.08
_MIN_SCALE = 0.02
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9}


def parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9.]+)\s*([KMG]?B?)\s*", text.upper())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 100MB, 1GB)")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def text_scale(payload_kb: float) -> float:
    """The text-length multiplier that makes the mean row about `payload_kb` KB."""
    return max(_MIN_SCALE, (payload_kb - STRUCTURE_KB) / TEXT_KB_PER_SCALE)


@contextlib.contextmanager
def open_output(path: Path, compression: str) -> Iterator[BinaryIO]:
    """A binary writer that compresses with gzip or zstandard, or not at all.

    The gzip header gets no file name and time stamp, so the same seed gives the same bytes.
    """
    with open(path, "wb", buffering=1 << 20) as raw:
        if compression == "gzip":
            with gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw, mtime=0) as gz:
                yield gz
        elif compression == "zstd":
            import zstandard

            with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as zst:
                yield zst
        else:
            yield raw


def compression_of(path: Path) -> str:
    return "gzip" if path.name.endswith(".gz") else "zstd" if path.name.endswith(".zst") else "none"


def generate(out: Path, *, rows: int | None, size: int | None, seed: int, defect_rate: float, payload_kb: float) -> dict:
    """Write the file (atomically, via a temporary name) and return the defect manifest."""
    scale = text_scale(payload_kb)
    tmp = out.with_name(out.name + ".part")
    written = lines = 0
    kinds: Counter[str] = Counter()
    listed: list[dict] = []
    with open_output(tmp, compression_of(out)) as handle:
        for planned in plan(seed, defect_rate):
            if (rows is not None and lines >= rows) or (size is not None and written >= size):
                break
            spec = planned.spec
            row = build_row(spec, seed, scale)
            if spec.persisted:
                row = persist(row)
            rng = _defect_rng(seed, spec.line)
            entry = None
            if planned.defect:
                pointer, detail = defects.apply(planned.defect, row, rng)
                entry = {"line": spec.line, "defect": planned.defect, "pointer": pointer, "detail": detail}
            data = defects.serialize(planned.defect, row, rng)
            handle.write(data)
            written += len(data)
            lines += 1
            kinds[f"{spec.kind}/{spec.source}/{spec.dialect}" + ("/persisted" if spec.persisted else "")] += 1
            if entry:
                entry.update(
                    kind=spec.kind,
                    source=spec.source,
                    dialect=spec.dialect,
                    persisted=spec.persisted,
                    task_index=spec.task_index,
                    rollout_index=spec.rollout_index,
                )
                listed.append(entry)
    os.replace(tmp, out)
    manifest = {
        "file": out.name,
        "seed": seed,
        "defect_rate": defect_rate,
        "payload_kb": payload_kb,
        "lines": lines,
        "bytes": written,
        "rows_by_kind": dict(sorted(kinds.items())),
        "defects_by_kind": dict(Counter(e["defect"] for e in listed)),
        "defects": listed,
    }
    return manifest


def _defect_rng(seed: int, line: int) -> random.Random:
    return random.Random(f"{seed}:defect:{line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    amount = parser.add_mutually_exclusive_group(required=True)
    amount.add_argument("--rows", type=int, help="number of lines to write")
    amount.add_argument("--size", type=parse_size, help="write until this many (uncompressed) bytes: 100MB, 1GB")
    parser.add_argument("-o", "--output", type=Path, required=True, help="FILE.jsonl, FILE.jsonl.gz or FILE.jsonl.zst")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--defects", type=float, default=0.03, help="share of broken lines (default 0.03)")
    parser.add_argument(
        "--payload-kb", type=float, default=DEFAULT_PAYLOAD_KB, help="mean row size to aim for, in KB (default 25; at least ~21)"
    )
    compress = parser.add_mutually_exclusive_group()
    compress.add_argument("--gzip", action="store_true", help="compress with gzip (adds .gz to the name)")
    compress.add_argument("--zstd", action="store_true", help="compress with zstandard (adds .zst to the name)")
    args = parser.parse_args(argv)
    out: Path = args.output
    suffix = ".gz" if args.gzip else ".zst" if args.zstd else ""
    if suffix and not out.name.endswith(suffix):
        out = out.with_name(out.name + suffix)
    if not 0 <= args.defects <= 1:
        parser.error("--defects is a share between 0 and 1")
    if text_scale(args.payload_kb) == _MIN_SCALE:
        floor_kb = STRUCTURE_KB + TEXT_KB_PER_SCALE * _MIN_SCALE
        print(f"note: rows average at least ~{floor_kb:.0f} KB (their structure alone); texts are at their shortest", file=sys.stderr)
    started = time.perf_counter()
    manifest = generate(out, rows=args.rows, size=args.size, seed=args.seed, defect_rate=args.defects, payload_kb=args.payload_kb)
    manifest_path = out.with_name(out.name + ".defects.json")
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    mean = manifest["bytes"] / max(1, manifest["lines"]) / 1000
    print(
        f"{out}: {manifest['lines']:,} lines, {manifest['bytes'] / 1e6:,.1f} MB uncompressed (mean {mean:.1f} KB/row), "
        f"{len(manifest['defects'])} defective lines listed in {manifest_path.name}; {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
