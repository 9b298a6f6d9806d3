"""Peak memory and time of trajlint as the number of rows and of findings grows.

Two families, each at growing sizes:

- `clean`: tiny clean rows with distinct identities (`{"_ng_task_index": i, ...}`), no findings:
  what a run remembers per row (identities, task repeats, health verdicts) is all that grows;
- `invalid`: lines of `x` in a small gzip file, one `invalid-json` finding each: what a run
  keeps per finding is all that grows.

Each run is `python -m trajlint check --isolated -q FILE` (default `--jobs`) in a child process
of its own (`measure.run`): the largest single process's peak RSS from the kernel, the sum over
the process tree sampled from /proc, and the wall time. The last column is the time of a size
divided by 10x the time of the size before it, for wall and for CPU time (user + system, every
process; on a busy machine the wall time measures the load): about 1.0 is linear. It asserts
nothing.

    python bench/memory.py                                  # clean 1e5,1e6; invalid 1e6
    python bench/memory.py --clean 1e5,1e6,1e7 --invalid 1e6,1e7
    python bench/memory.py --trajlint /tmp/trajlint-abc1234 --args "--jobs 1"

Inputs are written under `bench/out/` (git-ignored) and reused.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure  # noqa: E402

# These timings measure checking: a hit in the result cache would time a lookup instead.
os.environ["TRAJLINT_NO_CACHE"] = "1"

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def clean_file(rows: int) -> Path:
    path = OUT / f"memory-clean-{rows}.jsonl"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        with open(partial, "w") as handle:
            for start in range(0, rows, 100_000):
                handle.write(
                    "".join(
                        f'{{"_ng_task_index":{i},"_ng_rollout_index":0,"reward":1.0}}\n'
                        for i in range(start, min(rows, start + 100_000))
                    )
                )
        os.replace(partial, path)
    return path


def invalid_file(lines: int) -> Path:
    path = OUT / f"memory-invalid-{lines}.jsonl.gz"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        partial = OUT / f"memory-invalid-{lines}.part"
        with gzip.open(partial, "wb", compresslevel=9) as handle:
            block = b"x\n" * 100_000
            for start in range(0, lines, 100_000):
                handle.write(block if lines - start >= 100_000 else b"x\n" * (lines - start))
        os.replace(partial, path)
    return path


def sizes(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clean", default="1e5,1e6", help="row counts of clean rows (comma-separated)")
    parser.add_argument("--invalid", default="1e6", help="line counts of invalid lines (comma-separated)")
    parser.add_argument("--trajlint", default=str(ROOT), help="source tree to run (default: this checkout)")
    parser.add_argument("--args", default="", help="more arguments to `trajlint check`, e.g. '--jobs 1'")
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": options.trajlint}
    extra = shlex.split(options.args)
    print(f"trajlint: {options.trajlint}  args: {' '.join(extra) or '(defaults)'}")
    print(
        "| input | size | wall s | CPU s | largest process MiB | all processes MiB | exit "
        "| wall / (10 x previous) | CPU / (10 x previous) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for family, counts, make in (("clean rows", sizes(options.clean), clean_file), ("invalid lines (gz)", sizes(options.invalid), invalid_file)):
        previous = None
        for count in counts:
            path = make(count)
            argv = [sys.executable, "-m", "trajlint", "check", "--isolated", "-q", *extra, str(path)]
            # Run from the inputs' directory: `-m` puts the working directory first on the path.
            m = measure.run(argv, env=env, cwd=OUT)
            ratio = f"{m.wall_s / (10 * previous[0]):.2f}" if previous else ""
            cpu_ratio = f"{m.cpu_s / (10 * previous[1]):.2f}" if previous else ""
            tree = f"{m.tree_rss_mib:.0f}" if m.tree_rss_mib is not None else "n/a"
            print(
                f"| {family} | {count:.0e} | {m.wall_s:.1f} | {m.cpu_s:.1f} | {m.peak_rss_mib:.0f} | {tree} | "
                f"{m.returncode} | {ratio} | {cpu_ratio} |",
                flush=True,
            )
            if m.returncode not in (0, 1):
                print(f"  stderr: {m.stderr_tail.strip().splitlines()[-1:]}")
            previous = (m.wall_s, m.cpu_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
