"""What parsing a line costs the native core, next to orjson.loads, side by side in one run.

    python bench/core_parse.py                  # 2,000 generated rows (--defects 0.03), then
                                                # examples/ and tests/data/real/ together
    python bench/core_parse.py --rows 500 --rounds 3 --no-build

It builds the benchmark crate `bench/core_parse/` (its own workspace: the parsers it compares
never reach the extension's build) and runs its two binaries, one with the system allocator and
one with mimalloc, on the same lines; in this process it times orjson.loads (the floor) and the
built core's `scan_line` and `check_row(raw, 0)` (trajlint/_core*.so, when built; with
`--before-core PATH`, another build's `check_row` too, e.g. the last commit's). Every
measurement runs once a round, the rounds interleaved, and the fastest round counts, so a busy
machine slows all of them alike. Prints µs per row, MB/s and the ratio to orjson.loads. It
asserts nothing. `--verify` instead counts the lines where a parser meant to build serde_json's
Value (with the same key order and numbers) builds another one.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
CRATE = BENCH / "core_parse"
BINARIES = ("core_parse", "core_parse_mimalloc")


def generated(rows: int, defects: float, seed: int) -> Path:
    path = OUT / f"core-parse-{rows}-{defects}-{seed}.jsonl"
    if not path.exists():
        OUT.mkdir(exist_ok=True)
        argv = [sys.executable, str(BENCH / "generate.py"), "--rows", str(rows), "--defects", str(defects)]
        subprocess.run([*argv, "--seed", str(seed), "-o", str(path)], check=True)
    return path


def corpus_lines(paths: list[Path]) -> list[bytes]:
    lines: list[bytes] = []
    for path in paths:
        lines.extend(line.rstrip(b"\r") for line in path.read_bytes().split(b"\n") if line.strip())
    return lines


def load_core(path: Path) -> Any:
    """Another build of the core (say, the last commit's), loaded beside this tree's."""
    spec = importlib.util.spec_from_file_location("core_before._core", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_timers(before: Path | None) -> dict[str, Callable[[list[bytes]], None]]:
    def orjson_loads(lines: list[bytes]) -> None:
        loads = orjson.loads
        for line in lines:
            try:
                loads(line)
            except orjson.JSONDecodeError:
                pass

    timers = {"orjson.loads (Python)": orjson_loads}
    sys.path.insert(0, str(REPO))
    try:
        from trajlint import _core  # type: ignore[attr-defined]
    except ImportError:
        print("(trajlint/_core not built: its rows are left out)", file=sys.stderr)
        return timers

    def scan_line(lines: list[bytes]) -> None:
        scan = _core.scan_line
        for line in lines:
            scan(line)

    def check_row(lines: list[bytes]) -> None:
        check = _core.check_row
        for line in lines:
            check(line, 0)

    timers["_core.scan_line (Python)"] = scan_line
    timers["_core.check_row(raw, 0) (Python)"] = check_row
    if before is not None:
        check_before = load_core(before).check_row

        def check_row_before(lines: list[bytes]) -> None:
            for line in lines:
                check_before(line, 0)

        timers[f"_core.check_row(raw, 0) (Python, {before.name})"] = check_row_before
    return timers


def measure(lines: list[bytes], rounds: int, before: Path | None) -> list[tuple[str, str, float]]:
    """(parser, allocator, fastest round's seconds) of every parser."""
    path = OUT / "core-parse-lines.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    best: dict[tuple[str, str], float] = {}
    timers = python_timers(before)
    for _ in range(rounds):
        for name, timer in timers.items():
            start = time.perf_counter()
            timer(lines)
            elapsed = time.perf_counter() - start
            best[(name, "")] = min(best.get((name, ""), elapsed), elapsed)
        for binary in BINARIES:
            out = subprocess.run(
                [str(CRATE / "target/release" / binary), str(path), "--rounds", "1"], check=True, capture_output=True
            )
            for record in map(json.loads, out.stdout.decode().splitlines()):
                key = (record["parser"], record["alloc"])
                best[key] = min(best.get(key, record["seconds"]), record["seconds"])
    return [(name, alloc, seconds) for (name, alloc), seconds in best.items()]


def table(title: str, lines: list[bytes], results: list[tuple[str, str, float]]) -> None:
    size = sum(len(line) for line in lines)
    floor = next(seconds for name, _, seconds in results if name.startswith("orjson"))
    print(f"\n{title}: {len(lines):,} lines, {size / 1e6:.1f} MB ({size / len(lines) / 1e3:.1f} KB/line)")
    print(f"{'parser':<50} {'alloc':<9} {'µs/row':>9} {'MB/s':>8} {'x orjson':>9}")
    for name, alloc, seconds in sorted(results, key=lambda result: result[2]):
        per_row = seconds / len(lines) * 1e6
        print(f"{name:<50} {alloc:<9} {per_row:>9.1f} {size / seconds / 1e6:>8.0f} {seconds / floor:>9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000, help="generated rows (default 2,000)")
    parser.add_argument("--defects", type=float, default=0.03, help="share of broken generated lines (default 0.03)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the fastest counts (default 5)")
    parser.add_argument("--no-build", action="store_true", help="run the binaries as built")
    parser.add_argument("--before-core", type=Path, help="also time check_row of this build of the core (a .so)")
    parser.add_argument("--verify", action="store_true", help="count lines a drop-in parser builds differently")
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path", str(CRATE / "Cargo.toml")], check=True)
    corpora = {
        f"generated ({args.rows:,} rows, defects {args.defects})": [generated(args.rows, args.defects, args.seed)],
        "examples/ and tests/data/real/": sorted(
            [*(REPO / "examples").glob("*.jsonl"), *(REPO / "tests/data/real").rglob("*.jsonl")]
        ),
    }
    for title, paths in corpora.items():
        lines = corpus_lines(paths)
        if args.verify:
            path = OUT / "core-parse-lines.jsonl"
            path.write_bytes(b"\n".join(lines) + b"\n")
            out = subprocess.run(
                [str(CRATE / "target/release" / BINARIES[0]), str(path), "--verify"], check=True, capture_output=True
            )
            print(f"{title}: {out.stdout.decode().strip()}")
            continue
        table(title, lines, measure(lines, args.rounds, args.before_core))


if __name__ == "__main__":
    main()
