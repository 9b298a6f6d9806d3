"""NeMo Gym 0.7.0's health numbers for every rollout file of the real-data corpus, one file at a time.

Runs under a Python that has NeMo Gym installed (see ../shared/tools/nemo-gym-0.7-venv.sh):

    /tmp/nemo-gym-0.7-venv/bin/python tools/nemo_gym_real_health.py --trajlint-python PY [-o OUT]

For each rollout file of tests/data/real, NeMo Gym's own health check (`run_health_checks`, what
`gym eval health-check RUN_DIR --rollouts-file FILE` runs; through tools/nemo_gym_health.py, the
rows as they are) judges that file alone, and the numbers of its `quality_summary.json` go to
tests/data/real/nemo-gym-0.7-health.json (or OUT; `-` for standard output), keyed by the file's
path relative to tests/data/real, sorted:

    {"v0.2.0/x_rollouts.jsonl": {"records": 1, "healthy": 0, "unhealthy": 0, "unobserved": 1,
                                 "tasks": 1, "issues": {"check": n, ...}}, ...}

`issues` holds the checks with a nonzero count only. tests/test_real_health.py compares these
numbers with trajlint's, without NeMo Gym.

Which files are rollouts: NeMo Gym's health check reads whatever file it is given, so the choice
is the caller's. trajlint decides each file's kind by itself (`trajlint rule non-rollout-file`),
and every file it gives a `non-rollout-file` finding is left out: task datasets, materialized
inputs, reward profiles and data NeMo Gym does not write. That agrees with NeMo Gym's aggregator,
which skips `*_materialized_inputs.jsonl` shards by name (rollout_collection.py,
`_expand_input_glob`; checked below), except for the failures sidecars `*_failures.jsonl`: the
aggregator skips them too, as they are no shard, but they hold the records of failed attempts
and trajlint lints and judges them as rollouts, so their health is compared as well. trajlint
runs (under --trajlint-python, default $TRAJLINT_PYTHON) with `--isolated`, so no configuration
changes its decision.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = ROOT / "tests" / "data" / "real"
DEFAULT_OUTPUT = CORPUS / "nemo-gym-0.7-health.json"
VERDICTS = ("healthy", "unhealthy", "unobserved")


def corpus_files() -> list[Path]:
    """Every JSONL file of the corpus (it holds no compressed file)."""
    return sorted(CORPUS.rglob("*.jsonl"))


def rollout_files(trajlint_python: str) -> list[Path]:
    """The corpus files trajlint judges as rollouts: those without a `non-rollout-file` finding."""
    corpus = CORPUS.relative_to(ROOT).as_posix()
    completed = subprocess.run(
        [trajlint_python, "-m", "trajlint", "check", "--isolated", "--exit-zero", "--select", "non-rollout-file",
         "--output-format", "json", corpus],
        check=True, capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    report = orjson.loads(completed.stdout)
    files = corpus_files()
    if report["summary"]["files"] != len(files):
        raise SystemExit(f"trajlint checked {report['summary']['files']} files of {corpus}, not its {len(files)} JSONL files")
    not_rollouts = {ROOT / finding["path"] for finding in report["findings"] if finding["code"] == "TL007"}
    skipped_by_name = {path for path in files if path.stem.endswith("_materialized_inputs")}
    if not skipped_by_name <= not_rollouts:
        raise SystemExit(f"trajlint judges files NeMo Gym's aggregator skips as rollouts: {sorted(skipped_by_name - not_rollouts)}")
    return [path for path in files if path not in not_rollouts]


def numbers(summary: dict) -> dict:
    """What the comparison needs of one run's `quality_summary.json`."""
    run = summary["run"]
    return {
        "records": run["artifacts"]["records"],
        **{verdict: run["verdicts"][verdict] for verdict in VERDICTS},
        "tasks": len(summary["tasks"]),
        "issues": {check: count for check, count in run["issues"].items() if count},
    }


def corpus_health(trajlint_python: str) -> dict[str, dict]:
    # NeMo Gym's side, as the other comparisons run it; imported here so that the test can use
    # this module's `numbers` without NeMo Gym.
    from nemo_gym_health import health_check

    results = {}
    with tempfile.TemporaryDirectory(prefix="real-health-") as tmp:
        for i, path in enumerate(rollout_files(trajlint_python)):
            summary = health_check(path, Path(tmp) / str(i))
            results[path.relative_to(CORPUS).as_posix()] = numbers(summary)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(DEFAULT_OUTPUT), help="where to write (default: %(default)s)")
    parser.add_argument(
        "--trajlint-python", default=os.environ.get("TRAJLINT_PYTHON"),
        help="a Python with trajlint's dependencies, which decides the files' kinds (default: $TRAJLINT_PYTHON)",
    )
    args = parser.parse_args()
    if not args.trajlint_python:
        parser.error("give --trajlint-python (or set TRAJLINT_PYTHON): trajlint decides which files are rollouts")
    data = orjson.dumps(corpus_health(args.trajlint_python), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if args.output == "-":
        sys.stdout.buffer.write(data)
    else:
        Path(args.output).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
