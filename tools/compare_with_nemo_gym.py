"""Compare trajlint's build with NeMo Gym 0.7.0's on the same rows, and explain every difference.

    python tools/compare_with_nemo_gym.py FILE.jsonl [...] [--gym-python PATH] [--json]

NeMo Gym runs in its own venv (../shared/tools/nemo-gym-0.7-venv.sh; default
/tmp/nemo-gym-0.7-venv/bin/python, or $NEMO_GYM_PYTHON) through tools/nemo_gym_build.py. Exit
status: 0 when every difference is one trajlint makes by design, 1 otherwise, 3 when NeMo Gym is
not available.

Differences by design (see the README's section on the build):
- anthropic: NeMo Gym 0.7.0 has no Anthropic Messages dialect, so its turns on `messages` calls are
  hollow (no answer, no reasoning, no tool calls counted in step_count);
- compaction-helper / verifier: the newest ownership rules keep such calls out of the turns;
- salvaged: NeMo Gym drops a whole observation bundle (or producer trajectory) for one invalid
  record; trajlint keeps the records that validate;
- item-defaults: NeMo Gym re-serializes conversation items through its Responses models, adding
  their default keys (`phase`, `status`, `id`: null); trajlint keeps items as written (same content).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing
DEFAULT_GYM_PYTHON = os.environ.get("NEMO_GYM_PYTHON", "/tmp/nemo-gym-0.7-venv/bin/python")
TURN_FIELDS = ("invocation_id", "turn_no", "step_count", "question", "answer", "reasoning_content", "model_calls", "resolved", "timestamp")


def gym_builds(gym_python: str, data: bytes) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [gym_python, str(HERE / "nemo_gym_build.py")], input=data, capture_output=True, check=True, cwd="/tmp"
    )
    return [orjson.loads(line) for line in proc.stdout.splitlines()]


def _dialect_of(trajectory: dict[str, Any], ref: dict[str, Any] | None) -> str | None:
    for call in trajectory["model_calls"]:
        if ref and call["model_call_id"] == ref.get("model_call_id"):
            return call["response_metadata"].get("dialect")
    return None


def compare_row(row: dict[str, Any], gym: dict[str, Any]) -> list[tuple[str, str]]:
    """(category, description) of each difference; category "unexplained" is a fidelity bug."""
    from trajlint.builder import build

    ours = build(row)
    theirs = gym.get("ng_trajectory")
    if theirs is None:
        return [("gym-failed", gym.get("error") or "NeMo Gym built no trajectory")]
    dropped = {g["code"] for g in theirs["gaps"]} & {"agent_observations_invalid", "producer_trajectory_invalid"}
    if dropped:
        # NeMo Gym discarded a whole section for one bad record; trajlint builds from what validates.
        return [("salvaged", f"NeMo Gym dropped evidence ({', '.join(sorted(dropped))})")]
    out: list[tuple[str, str]] = []
    mine = ours.trajectory
    by_call = {e.model_call_id: e for e in ours.ledger.calls}
    gym_turn_calls = {(t["model_calls"] or [{}])[0].get("model_call_id") for t in theirs["turns"]}
    for call_id in gym_turn_calls - {(t["model_calls"] or [{}])[0].get("model_call_id") for t in mine["turns"]}:
        entry = by_call.get(call_id)
        reason = entry.outcome if entry else "unknown"
        category = reason if reason in ("compaction-helper", "verifier") else "unexplained"
        out.append((category, f"NeMo Gym made a turn of call {call_id}; trajlint: {reason}"))
    if out:
        return out  # the turn lists differ in membership; field comparison would only repeat it
    if len(mine["turns"]) != len(theirs["turns"]):
        return [("unexplained", f"{len(mine['turns'])} turns vs NeMo Gym's {len(theirs['turns'])}")]
    for a, b in zip(mine["turns"], theirs["turns"]):
        for name in TURN_FIELDS:
            if a[name] != b[name]:
                dialect = _dialect_of(mine, (a["model_calls"] or [None])[0])
                anthropic = dialect == "messages" and name in ("answer", "reasoning_content", "step_count")
                # step_count also moves for later turns of an invocation once a Messages turn counts its tools
                if not anthropic and name == "step_count":
                    anthropic = any(c["response_metadata"].get("dialect") == "messages" for c in mine["model_calls"])
                out.append(("anthropic" if anthropic else "unexplained", f"turn {a['invocation_id']}#{a['turn_no']}: {name}"))
    for part in ("model_calls", "tool_calls", "gaps"):
        if mine[part] != theirs[part]:
            out.append(("unexplained", f"{part} differ"))
    out.extend(_compare_invocations(mine["invocations"], theirs["invocations"]))
    return out


def _subset(ours: Any, theirs: Any) -> bool:
    """Our item says nothing NeMo Gym's does not (NeMo Gym adds the defaults of Responses items)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return all(k in theirs and _subset(v, theirs[k]) for k, v in ours.items())
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(_subset(a, b) for a, b in zip(ours, theirs))
    return ours == theirs


def _compare_invocations(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    if len(mine) != len(theirs):
        return [("unexplained", f"{len(mine)} invocations vs NeMo Gym's {len(theirs)}")]
    out = []
    for a, b in zip(mine, theirs):
        if {k: v for k, v in a.items() if k != "conversation"} != {k: v for k, v in b.items() if k != "conversation"}:
            out.append(("unexplained", f"invocation {a['invocation_id']} differs"))
        elif a["conversation"] != b["conversation"]:
            same = _subset(a["conversation"], b["conversation"])
            out.append(("item-defaults" if same else "unexplained", f"invocation {a['invocation_id']} conversation"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--gym-python", default=DEFAULT_GYM_PYTHON)
    parser.add_argument("--json", action="store_true", help="print the tally as JSON")
    args = parser.parse_args()
    if not Path(args.gym_python).exists():
        print(f"NeMo Gym is not available at {args.gym_python}; build it with nemo-gym-0.7-venv.sh", file=sys.stderr)
        return 3
    tally: Counter[str] = Counter()
    rows = identical = 0
    examples: dict[str, str] = {}
    for file in args.files:
        data = Path(file).read_bytes()
        lines = [line for line in data.splitlines() if line.strip()]
        for row_line, gym in zip(lines, gym_builds(args.gym_python, b"\n".join(lines) + b"\n")):
            rows += 1
            diffs = compare_row(orjson.loads(row_line), gym)
            identical += not diffs
            for category, text in diffs:
                tally[category] += 1
                examples.setdefault(category, f"{file}: {text}")
    summary = {"rows": rows, "identical": identical, "differences": dict(tally), "examples": examples}
    if args.json:
        print(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())
    else:
        print(f"rows compared: {rows}; identical builds: {identical}")
        for category, count in sorted(tally.items()):
            print(f"  {category:<18} {count:5}  e.g. {examples[category]}")
    return 1 if tally.get("unexplained") or tally.get("gym-failed") else 0


if __name__ == "__main__":
    sys.exit(main())
