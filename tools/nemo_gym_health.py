"""Run NeMo Gym 0.7.0's own rollout health check on rows, for comparison with trajlint's.

Runs under a Python that has NeMo Gym installed (see ../shared/tools/nemo-gym-0.7-venv.sh), never
under trajlint's: it imports no trajlint code.

    /tmp/nemo-gym-0.7-venv/bin/python tools/nemo_gym_health.py [--persist] IN.jsonl RUN_DIR [IN RUN_DIR ...]

For each pair (one process for all: importing NeMo Gym takes seconds), writes RUN_DIR/rollouts.jsonl — the input lines as they are, or with `--persist` each row as
NeMo Gym's collector persists a finished rollout (observations joined to the capture, the
trajectory built and attached, capture payloads stripped) — and then runs
`run_health_checks` on it, which writes RUN_DIR/nemo-gym/quality_summary.json and
RUN_DIR/nemo-gym/rollout_verdicts.jsonl. Lines that do not parse are kept as they are, so the
health check sees them too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson
from nemo_gym.rollout_health import run_health_checks
from nemo_gym_build import persist  # the collector's steps, shared with the build comparison


def write_rows(source: Path, target: Path, persisted: bool) -> None:
    with source.open("rb") as lines, target.open("wb") as out:
        for line in lines:
            if persisted and line.strip():
                try:
                    row = orjson.loads(line)
                except orjson.JSONDecodeError:
                    row = None
                if isinstance(row, dict):
                    line = orjson.dumps(persist(row)) + b"\n"
            out.write(line if line.endswith(b"\n") else line + b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+", type=Path, metavar="IN RUN_DIR")
    parser.add_argument("--persist", action="store_true", help="persist each row as NeMo Gym's collector does first")
    args = parser.parse_args()
    if len(args.pairs) % 2:
        parser.error("give each input file with its run directory")
    for source, run_dir in zip(args.pairs[::2], args.pairs[1::2]):
        health_check(source, run_dir, args.persist)
    return 0


def health_check(source: Path, run_dir: Path, persisted: bool = False) -> dict:
    """NeMo Gym's health check on `source`'s rows (copied to RUN_DIR/rollouts.jsonl, or persisted
    first); its report goes to RUN_DIR/nemo-gym. Returns the run's quality summary."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rollouts = run_dir / "rollouts.jsonl"
    write_rows(source, rollouts, persisted)
    return run_health_checks([rollouts], output_dir=run_dir / "nemo-gym", workers=1).summary


if __name__ == "__main__":
    sys.exit(main())
