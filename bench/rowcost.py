"""The Python a run spends per row around the native core, stage by stage, the core's own time left out.

    python bench/rowcost.py FILE [--rounds 7] [--no-health-report] [--trajlint TREE]

The core's answers (`check_row`) are taken once and then looked up, so what is timed is the
Python around them. Each round, in this process (CPU time, the fastest round counts):
  read    the unit's lines alone;
  check   `RowChecker.check_unit` on the whole file, reading included: what a worker does;
  parent  the result unpickled and absorbed (`Engine.absorb`), the run finished (run-level
          rules, task health) and the verdict lines read back: what the reporting process
          does, serially, whatever `--jobs` says; split into absorb, finish and verdict rows.
The rules are the default run's (every rule) with the health report's judge (`--no-health-report`:
without the report, as `trajlint check FILE` runs). A file whose rows the core proves (a default
run takes the fast path) shows what a proved row costs; `TREE` times another source tree (a
`git archive` snapshot with its `trajlint/_core*.so`). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-health-report", action="store_true")
    parser.add_argument("--trajlint", help="the trajlint source tree to time (default: this checkout)")
    args = parser.parse_args()
    sys.path.insert(0, args.trajlint or str(Path(__file__).resolve().parent.parent))
    os.environ["TRAJLINT_NO_CACHE"] = "1"

    from trajlint.check import fast
    from trajlint.check import run as runs
    from trajlint.check.engine import Engine
    from trajlint.check.registry import load_rules
    from trajlint.health.verdicts import health_runs
    from trajlint.read import LineTally, Source

    answers: dict = {}
    seen: dict = {}
    prover = fast.prover

    def cached_prover():
        found = prover()
        if found is None:
            raise SystemExit("the core is off or not built: nothing to time around it")
        check_row, proved = found

        def cached(raw, *rest):
            # Keyed by a few of the line's bytes: hashing a whole 25 KB line would be timed too.
            key = (len(raw), raw[:256], raw[-256:], *rest)
            answer = answers.get(key, answers)
            if answer is answers:
                answer = answers[key] = check_row(raw, *rest)
                if seen.setdefault(key, raw) != raw:
                    raise SystemExit("two lines share a key: lengthen it")
            return answer

        return cached, proved

    fast.prover = cached_prover
    rules = load_rules()
    report = not args.no_health_report

    def engine():
        health = health_runs(rules.values(), report=report)
        return Engine(
            [r for r in rules.values() if r.impl.check or r.impl.reduction or r.impl.observed],
            None,
            digesters=[health.digester()] if health is not None else [],
            observers_for=(lambda name: [health.for_run([args.file])]) if health is not None else None,
        )

    engine().checker.check_unit(Source(args.file), 1 << 28)  # takes the core's answers
    gc.freeze()  # the answers are this script's: no collection should walk them
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds)

    rows = 0
    for _ in range(args.rounds):
        started = time.process_time()
        for _ in Source(args.file).lines(1 << 28, LineTally()):
            pass
        keep("read", time.process_time() - started)
        run = engine()
        started = time.process_time()
        unit = run.checker.check_unit(Source(args.file), 1 << 28)
        keep("check", time.process_time() - started)
        rows = unit.row_count
        data = pickle.dumps(unit, pickle.HIGHEST_PROTOCOL)
        marks = [time.process_time()]
        run.absorb(pickle.loads(data), 0)
        marks.append(time.process_time())
        runs._finish_run(run, args.file)
        marks.append(time.process_time())
        if report:
            for state in run.runs.values():
                for _ in state.observers[0].verdict_rows():
                    pass
        marks.append(time.process_time())
        for name, (start, end) in zip(("absorb", "finish", "verdict rows"), zip(marks, marks[1:])):
            keep(name, end - start)
        keep("parent", marks[-1] - marks[0])
    per_row = {name: seconds * 1e6 / max(rows, 1) for name, seconds in best.items()}
    print(f"{args.file}: {rows:,} rows, {'with' if report else 'without'} the health report; µs per row (fastest of {args.rounds}):")
    print(f"  read {per_row['read']:.1f}, check {per_row['check']:.1f} (less read: {per_row['check'] - per_row['read']:.1f})")
    print(f"  parent {per_row['parent']:.1f}: absorb {per_row['absorb']:.1f}, finish {per_row['finish']:.1f}, verdict rows {per_row['verdict rows']:.1f}")
    print(f"  a unit's result: {len(data) / max(rows, 1):.0f} pickled bytes per row")


if __name__ == "__main__":
    main()
