"""Time `trajlint check` cold and on a rerun served from the result cache, side by side.

    python bench/cache.py                         # 1 GB in 8 generated files under bench/out/
    python bench/cache.py --size 200MB --files 4
    python bench/cache.py --dir runs/ --repeat 5  # your own corpus
    python bench/cache.py --hashes                # also: hash functions over 1 GB

Runs, one after another on the same corpus: `--no-cache` (no cache at all), cold (an empty
cache directory, which the run fills), and reruns on the unchanged corpus (the best of
`--repeat`). Every run writes the JSON report; the script checks that all of them are byte for
byte the same, and prints the times and the ratios. It asserts nothing about the times.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
GB = 10**9


def generate(directory: Path, size: int, files: int) -> list[Path]:
    """`files` generated files of `size` bytes in all, made once and reused."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in range(files):
        path = directory / f"rollouts-{seed}.jsonl"
        if not path.exists():
            print(f"generating {path} ...", file=sys.stderr)
            subprocess.run(
                [sys.executable, str(BENCH / "generate.py"), "--size", str(size // files), "--seed", str(seed), "-o", str(path)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        paths.append(path)
    return paths


def timed(command: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, done.stdout


def hash_rates(total: int = GB) -> list[tuple[str, float]]:
    """GB/s of each hash function over `total` bytes, fed 1 MiB at a time as a file is read."""
    block = os.urandom(64 << 20)
    view = memoryview(block)
    rates = []
    for name in ("sha256", "blake2b", "blake2s", "sha1", "md5", "sha512", "sha3_256"):
        digest = hashlib.new(name)
        start = time.perf_counter()
        fed = 0
        while fed < total:
            for offset in range(0, len(block), 1 << 20):
                digest.update(view[offset : offset + (1 << 20)])
            fed += len(block)
        rates.append((name, fed / GB / (time.perf_counter() - start)))
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="check this corpus instead of a generated one")
    parser.add_argument("--size", default="1GB", help="generated corpus size in all (default 1GB)")
    parser.add_argument("--files", type=int, default=8, help="generated files (default 8)")
    parser.add_argument("--repeat", type=int, default=3, help="reruns, best taken (default 3)")
    parser.add_argument("--jobs", type=int, default=0, help="--jobs for trajlint (default 0: every core)")
    parser.add_argument("--hashes", action="store_true", help="also time hash functions over 1 GB")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(BENCH))
    from generate import parse_size

    if args.dir is not None:
        corpus = args.dir
    else:
        size = parse_size(args.size)
        corpus = BENCH / "out" / f"cache-{size}-{args.files}"
        generate(corpus, size, args.files)
    data = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz", ".jsonl.zst")))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRAJLINT_NO_CACHE", None)
    env.pop("TRAJLINT_CACHE_DIR", None)
    with tempfile.TemporaryDirectory(prefix="trajlint-cache-bench-") as cache_dir:
        command = [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "json",
                   "--jobs", str(args.jobs), "--cache-dir", cache_dir, str(corpus)]
        uncached, expected = timed([*command, "--no-cache"], env)
        cold, output = timed(command, env)
        assert output == expected, "the cold cached run's report differs from the uncached one"
        reruns = []
        for _ in range(args.repeat):
            elapsed, output = timed(command, env)
            assert output == expected, "a rerun's report differs from the uncached one"
            reruns.append(elapsed)
        entries = sum(1 for p in Path(cache_dir).rglob("*") if p.is_file())
    warm = min(reruns)
    print(f"corpus: {corpus} ({data / GB:.2f} GB), --jobs {args.jobs}, {entries} cache files; reports identical")
    print(f"--no-cache      {uncached:8.2f} s")
    print(f"cold (fills)    {cold:8.2f} s   ({cold / uncached:.2f}x the uncached time)")
    print(f"rerun (best of {args.repeat}) {warm:8.2f} s   ({', '.join(f'{t:.2f}' for t in reruns)})")
    print(f"cold / rerun    {cold / warm:8.1f}x")
    print(f"uncached / rerun {uncached / warm:7.1f}x")
    if args.hashes:
        print("hash functions over 1 GB (one core, 1 MiB updates):")
        for name, rate in hash_rates():
            print(f"  {name:<9} {rate:6.2f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
