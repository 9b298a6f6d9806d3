"""Compare trajlint's rollout health with NeMo Gym 0.7.0's `gym eval health-check` on the same rows.

    python tools/compare_health_with_nemo_gym.py FILE.jsonl [...] [--persist] [--gym-python PATH] [--json]

For each FILE, in a temporary RUN_DIR: NeMo Gym (in its own venv, through
tools/nemo_gym_health.py) writes RUN_DIR/rollouts.jsonl — the lines as they are, or with
`--persist` each row as its collector persists it — and runs its health check on it; then
`trajlint check --health-report` runs on the very same file. The two `quality_summary.json`
are compared check by check, the two `rollout_verdicts.jsonl` row by row, and every
difference is put in a category. Exit status: 0 when every difference is one trajlint makes by
design, 1 otherwise, 3 when NeMo Gym is not available.

Differences by design:
- anthropic: NeMo Gym 0.7.0 reads no Anthropic Messages response, so every turn on a Messages
  call is `agent_turn_hollow` for it; trajlint judges the turn by what the response says;
- not-persisted: NeMo Gym judges only a trajectory its collector persisted (a row without one —
  never collected, or its projection failed — is unobserved; a producer's trajectory not yet
  merged with the capture has every reference "missing"); trajlint builds the trajectory from
  the row's evidence, as the collector would;
- salvaged: NeMo Gym cannot read the stated trajectory (`record_unreadable`) and skips every
  trajectory check, or its collector dropped a whole observation bundle or producer trajectory
  for one invalid record; trajlint reports the damage and judges what validates;
- compaction-helper: NeMo Gym sums the calls the turns reference against the transcript's usage;
  under the newest ownership rules a compaction helper is no turn, yet the harness's usage
  counts its tokens, so trajlint adds the helper calls of the agent's compactions;
- damaged: the row's capture is there but malformed (say, JSON-encoded twice); NeMo Gym reads it
  as no calls at all (`model_calls_unavailable`) and leaves the call checks unobserved; trajlint
  reports the damage (`capture-schema`) and still judges what the trajectory claims;
- retry: NeMo Gym's duplicate identity ignores `_ng_attempt_index`; a retry is another attempt;
- follows: a verdict or task flag that differs only because of differences above.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_GYM_PYTHON = os.environ.get("NEMO_GYM_PYTHON", "/tmp/nemo-gym-0.7-venv/bin/python")
BY_DESIGN = ("anthropic", "compaction-helper", "damaged", "not-persisted", "salvaged", "retry", "follows")
CHECK_IDS = (
    "check_execution_error", "record_unreadable", "rollout_duplicate_identity", "rollout_missing_agent_turns",
    "rollout_ended_on_failed_model_call", "agent_turn_hollow", "model_call_zero_completion_tokens",
    "model_call_missing_token_counts", "trajectory_capture_mismatch", "model_call_failed",
    "rollout_token_count_mismatch", "model_call_runaway_generation", "task_consistently_unhealthy",
    "task_no_successful_model_calls",
)


# -- running both ----------------------------------------------------------------------------------


def run_nemo_gym(jobs: list[tuple[Path, Path]], gym_python: str, persist: bool) -> None:
    """NeMo Gym's side for every (source, run_dir), in one process (it takes seconds to import)."""
    pairs = [str(part) for source, run_dir in jobs for part in (source.resolve(), run_dir.resolve())]
    command = [gym_python, str(HERE / "nemo_gym_health.py"), *pairs, *(["--persist"] if persist else [])]
    subprocess.run(command, check=True, capture_output=True, cwd=tempfile.gettempdir())


def run_trajlint(run_dir: Path) -> None:
    """trajlint's side, through its command line, on the rows NeMo Gym checked."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--isolated", "--exit-zero", "-q",
         "--health-report", str(run_dir / "trajlint"), str(run_dir / "rollouts.jsonl")],
        check=True, capture_output=True, env=env, cwd=run_dir,
    )


def _load(run_dir: Path, tool: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    base = run_dir / tool
    summary = orjson.loads((base / "quality_summary.json").read_bytes())
    verdicts = [orjson.loads(line) for line in (base / "rollout_verdicts.jsonl").read_bytes().splitlines()]
    return summary, verdicts


# -- which source row each verdict row is ----------------------------------------------------------


def _part(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int) else (1, str(value))


def rows_in_verdict_order(path: Path) -> list[Any]:
    """The file's records (a dict, or None for a line that is not one) in NeMo Gym's verdict order."""
    records = []
    ordinal = 0
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            key = (row.get("_ng_task_index", ordinal), row.get("_ng_rollout_index", 0), row.get("stage_index"))
        else:
            row = None
            key = (f"__unreadable_record__:input-0:line-{number}", 0, None)
        records.append((tuple(_part(v) for v in key), row))
        ordinal += 1
    return [row for _, row in sorted(records, key=lambda item: item[0])]


# -- why a row differs ------------------------------------------------------------------------------


def _persisted(row: dict[str, Any]) -> bool:
    """The row holds a trajectory NeMo Gym's collector wrote (it strips the capture's payloads)."""
    if not isinstance(row.get("ng_trajectory"), dict):
        return False
    capture = row.get("ng_model_call_capture")
    calls = capture.get("calls") if isinstance(capture, dict) else None
    return not any(isinstance(c, dict) and ("response" in c or "request" in c) for c in calls or ())


def _dropped(row: dict[str, Any]) -> bool:
    """NeMo Gym's collector dropped a whole section for one invalid record (trajlint keeps the rest)."""
    trajectory = row.get("ng_trajectory")
    gaps = trajectory.get("gaps") if isinstance(trajectory, dict) else None
    codes = {gap.get("code") for gap in gaps or () if isinstance(gap, dict)}
    return bool(codes & {"agent_observations_invalid", "producer_trajectory_invalid"})


def _capture_damaged(row: dict[str, Any]) -> bool:
    capture = row.get("ng_model_call_capture")
    if capture is None:
        return False
    calls = capture.get("calls") if isinstance(capture, dict) else None
    return not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls)


def _compacted(row: dict[str, Any]) -> bool:
    """The agent compacted its context with helper calls (which are no turns, but spend tokens)."""
    bundle = row.get("ng_agent_observations")
    records = bundle.get("records") if isinstance(bundle, dict) else None
    return any(
        isinstance(r, dict) and r.get("kind") == "context_compaction" and r.get("model_calls") for r in records or ()
    )


def _messages_turns(row: dict[str, Any]) -> Counter[Any]:
    """turn_no -> how many stated turns with that number reference an Anthropic Messages call."""
    trajectory = row.get("ng_trajectory") or {}
    dialect = {}
    for call in trajectory.get("model_calls") or ():
        meta = call.get("response_metadata") or {}
        dialect[call.get("model_call_id")] = meta.get("dialect")
    out: Counter[Any] = Counter()
    for turn in trajectory.get("turns") or ():
        if any(dialect.get((ref or {}).get("model_call_id")) == "messages" for ref in turn.get("model_calls") or ()):
            out[turn.get("turn_no")] += 1
    return out


def classify(check: str, row: dict[str, Any] | None, ours: list[dict], theirs: list[dict], gym: dict) -> str:
    """The category of a difference in `check`'s findings (or coverage) on one row."""
    if row is None:
        return "unexplained"
    gym_checks = {f["check"] for f in gym["findings"]}
    if check != "record_unreadable" and ("record_unreadable" in gym_checks or _dropped(row)):
        return "salvaged"
    if not _persisted(row):
        return "not-persisted"
    if _capture_damaged(row) and check in gym["unobserved"]:
        return "damaged"
    if check == "agent_turn_hollow" and len(theirs) > len(ours):
        extra = Counter(f["locator"]["turn"] for f in theirs) - Counter(f["locator"]["turn"] for f in ours)
        messages = _messages_turns(row)
        if all(messages[turn] >= n for turn, n in extra.items()):
            return "anthropic"
    if check == "rollout_duplicate_identity" and len(theirs) > len(ours) and "_ng_attempt_index" in row:
        return "retry"
    if check == "rollout_token_count_mismatch" and len(theirs) > len(ours) and _compacted(row):
        return "compaction-helper"
    return "unexplained"


def compare_files(sources: list[Path], gym_python: str, persist: bool, keep: Path | None = None) -> list[dict[str, Any]]:
    """Run both tools on each file (in RUN_DIRs under `keep`, else temporary) and compare them."""
    with tempfile.TemporaryDirectory(prefix="health-") as tmp:
        base = keep or Path(tmp)
        jobs = [(source, base / f"{i}-{source.stem}") for i, source in enumerate(sources)]
        run_nemo_gym(jobs, gym_python, persist)
        results = []
        for source, run_dir in jobs:
            run_trajlint(run_dir)
            results.append(compare_run(source, run_dir, persist))
        return results


def compare_run(source: Path, run_dir: Path, persist: bool) -> dict[str, Any]:
    """Both tools' reports in `run_dir`, compared check by check and row by row."""
    gym_summary, gym_rows = _load(run_dir, "nemo-gym")
    our_summary, our_rows = _load(run_dir, "trajlint")
    rows = rows_in_verdict_order(run_dir / "rollouts.jsonl")
    differences: Counter[tuple[str, str]] = Counter()  # (check, category) -> rows
    examples: dict[tuple[str, str], str] = {}
    explained_tasks: set[str] = set()

    def note(check: str, category: str, where: str) -> None:
        differences[(check, category)] += 1
        examples.setdefault((check, category), where)

    if len(gym_rows) != len(our_rows):
        note("records", "unexplained", f"{len(gym_rows)} verdict rows against trajlint's {len(our_rows)}")
    for row, gym, ours in zip(rows, gym_rows, our_rows):
        key = (gym["_ng_task_index"], gym["_ng_rollout_index"], gym.get("stage_index"))
        where = f"{source.name}: task {key[0]} rollout {key[1]}"
        if key != (ours["_ng_task_index"], ours["_ng_rollout_index"], ours.get("stage_index")):
            note("records", "unexplained", f"{where}: trajlint has task {ours['_ng_task_index']} rollout {ours['_ng_rollout_index']}")
            continue
        theirs_by, ours_by = defaultdict(list), defaultdict(list)
        for f in gym["findings"]:
            theirs_by[f["check"]].append(f)
        for f in ours["findings"]:
            ours_by[f["check"]].append(f)
        categories = []
        for check in CHECK_IDS:
            if len(theirs_by[check]) != len(ours_by[check]):
                categories.append(classify(check, row, ours_by[check], theirs_by[check], gym))
                note(check, categories[-1], where)
        for check in sorted(set(gym["unobserved"]) ^ set(ours["unobserved"])):
            categories.append(classify(check, row, [], [], gym) if row is not None else "unexplained")
            note(f"unobserved:{check}", categories[-1], where)
        if gym["verdict"] != ours["verdict"]:
            explained = categories and all(c in BY_DESIGN for c in categories)
            note(f"verdict:{gym['verdict']}->{ours['verdict']}", "follows" if explained else "unexplained", where)
        if categories and all(c in BY_DESIGN for c in categories):
            explained_tasks.add(str(key[0]))
    for task, theirs in gym_summary["tasks"].items():
        ours = our_summary["tasks"].get(task)
        if ours is None:
            note("tasks", "unexplained", f"{source.name}: task {task} missing in trajlint's summary")
            continue
        for check in sorted(set(theirs["flags"]) ^ set(ours["flags"])):
            note(check, "follows" if task in explained_tasks else "unexplained", f"{source.name}: task {task}")
    gym_stats, our_stats = _stats(gym_summary), _stats(our_summary)
    for name in gym_stats:
        if gym_stats[name] != our_stats[name]:
            # Statistics sum over rows: they move with the rows judged differently above.
            by_design = differences and all(category in BY_DESIGN for _, category in differences)
            note(f"stats:{name}", "follows" if by_design else "unexplained", f"{gym_stats[name]} against {our_stats[name]}")
    return {
        "file": str(source),
        "stats": {name: [gym_stats[name], our_stats[name]] for name in gym_stats},
        "persist": persist,
        "records": gym_summary["run"]["artifacts"]["records"],
        "counts": {
            check: [gym_summary["run"]["issues"].get(check, 0), our_summary["run"]["issues"].get(check, 0)]
            for check in CHECK_IDS
        },
        "verdicts": {
            verdict: [gym_summary["run"]["verdicts"][verdict], our_summary["run"]["verdicts"][verdict]]
            for verdict in ("healthy", "unhealthy", "unobserved")
        },
        "differences": [
            {"check": check, "category": category, "rows": count, "example": examples[(check, category)]}
            for (check, category), count in sorted(differences.items())
        ],
    }


def _stats(summary: dict[str, Any]) -> dict[str, Any]:
    run = summary["run"]
    stats = run["stats"]
    return {
        "captures": run["artifacts"]["captures"],
        "model_call_errors": stats["model_call_errors"]["total"],
        "ended_on_error": stats["model_call_errors"]["ended_on_error"],
        "replayed_calls": stats["duplicated_calls"]["replayed"],
        **{f"tokens_{name}": value for name, value in stats["tokens"].items()},
    }


def render(result: dict[str, Any]) -> list[str]:
    lines = [f"{result['file']}{' (persisted by NeMo Gym first)' if result['persist'] else ''}: {result['records']} records"]
    lines.append(f"  {'check':<40} {'NeMo Gym':>9} {'trajlint':>9}")
    for check, (theirs, ours) in result["counts"].items():
        mark = "" if theirs == ours else "  *"
        lines.append(f"  {check:<40} {theirs:>9} {ours:>9}{mark}")
    for verdict, (theirs, ours) in result["verdicts"].items():
        lines.append(f"  {'verdict ' + verdict:<40} {theirs:>9} {ours:>9}{'' if theirs == ours else '  *'}")
    for name, (theirs, ours) in result["stats"].items():
        lines.append(f"  {'stats ' + name:<40} {theirs:>9} {ours:>9}{'' if theirs == ours else '  *'}")
    for diff in result["differences"]:
        lines.append(f"  - {diff['check']}: {diff['rows']} × {diff['category']} (e.g. {diff['example']})")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--persist", action="store_true", help="persist each row with NeMo Gym's collector first")
    parser.add_argument("--gym-python", default=DEFAULT_GYM_PYTHON)
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the run directories under DIR")
    args = parser.parse_args()
    if not Path(args.gym_python).exists():
        print(f"NeMo Gym is not available at {args.gym_python}; build it with nemo-gym-0.7-venv.sh", file=sys.stderr)
        return 3
    results = compare_files(args.files, args.gym_python, args.persist, args.keep)
    if args.json:
        print(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
    else:
        for result in results:
            print("\n".join(render(result)))
    unexplained = any(d["category"] not in BY_DESIGN for r in results for d in r["differences"])
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
