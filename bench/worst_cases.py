"""Time and peak memory of trajlint on adversarial single rows at doubling sizes.

Each family is one row whose size grows with n: a deep chain of invocation parents, n captured
calls sharing one model_call_id and claimed n times, n invocations with one reference each, one
invocation claiming n calls. Every rule and the build should be at most O(n log n) in the row,
so the time of a size divided by the time of half that size (the growth column) should stay
near 2; about 4 is quadratic, about 8 cubic. Nothing here asserts anything about the times.

    python bench/worst_cases.py                          # every family, n = 1k, 2k, 4k, 8k
    python bench/worst_cases.py --sizes 2000,4000,8000,16000 --family chain
    python bench/worst_cases.py --trajlint /tmp/trajlint-abc1234     # time another source tree
    python bench/worst_cases.py --blank-mib 64,128,256   # files of nothing but blank lines

`--blank-mib` times files of blank lines instead (newlines, and CRLF with spaces), zstd-compressed
as the red team made them: they should go at near read speed, the growth near 2.

Each run is `python -m trajlint check --isolated --jobs 1 --output-format json FILE > /dev/null`
in a child process of its own (a child's peak memory comes from `wait4`, so runs do not mix);
`start-up` is the same command on a one-row file, to read small sizes against.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

# These timings measure checking: a hit in the result cache would time a lookup instead.
os.environ["TRAJLINT_NO_CACHE"] = "1"

ROOT = Path(__file__).resolve().parent.parent
POLICY = {"type": "responses_api_models", "name": "policy"}


def _call(call_id: str, index: int, **extra: Any) -> dict[str, Any]:
    return {
        "model_call_id": call_id, "response_id": f"resp_{index}", "call_index": index, "model_ref": POLICY,
        "dialect": "responses", "status_code": 200, "started_at": 100.0 + index, "completed_at": 100.5 + index,
        "request": {"input": [{"role": "user", "content": "go"}]},
        "response": {"id": f"resp_{index}", "status": "completed", "output": []},
        **extra,
    }


def _invocation(invocation_id: str, refs: list[str], **extra: Any) -> dict[str, Any]:
    return {"kind": "agent_invocation", "invocation_id": invocation_id, "status": "completed",
            "model_calls": [{"model_call_id": c} for c in refs], "conversation": [], **extra}


def _row(calls: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"_ng_task_index": 0, "_ng_rollout_index": 0}
    if calls:
        row["ng_model_call_capture"] = {"rollout_id": "0-0", "metrics": {"num_calls": len(calls)}, "calls": calls}
    if records:
        row["ng_agent_observations"] = {"source": "bench", "records": records, "gaps": []}
    return row


def chain(n: int) -> dict[str, Any]:
    """n invocations, each the parent of the next; no cycle."""
    records = [_invocation(f"inv{i}", [], **({"parent_invocation_id": f"inv{i - 1}"} if i else {})) for i in range(n)]
    return _row([], records)


def chain_cycle(n: int) -> dict[str, Any]:
    """n invocations in a chain whose root names the last one as its parent: one cycle of n."""
    records = [_invocation(f"inv{i}", [], parent_invocation_id=f"inv{(i - 1) % n}") for i in range(n)]
    return _row([], records)


def same_id(n: int) -> dict[str, Any]:
    """n captured calls sharing one model_call_id, and one invocation referring to it n times."""
    return _row([_call("x", i) for i in range(n)], [_invocation("inv", ["x"] * n)])


def same_id_sessions(n: int) -> dict[str, Any]:
    """n captured calls sharing one model_call_id whose session header names one invocation."""
    return _row([_call("x", i, client_session_id="inv") for i in range(n)], [_invocation("inv", [])])


def many_invocations(n: int) -> dict[str, Any]:
    """n invocations, each with one reference to a call of its own."""
    return _row([_call(f"c{i}", i) for i in range(n)], [_invocation(f"inv{i}", [f"c{i}"]) for i in range(n)])


def many_sessions(n: int) -> dict[str, Any]:
    """n invocations, each owning a call of its own through the call's session header only."""
    calls = [_call(f"c{i}", i, client_session_id=f"inv{i}") for i in range(n)]
    return _row(calls, [_invocation(f"inv{i}", []) for i in range(n)])


def one_invocation(n: int) -> dict[str, Any]:
    """One invocation claiming n calls."""
    return _row([_call(f"c{i}", i) for i in range(n)], [_invocation("inv", [f"c{i}" for i in range(n)])])


def claimed_twice(n: int) -> dict[str, Any]:
    """n calls each claimed by two invocations: n ownership conflicts."""
    calls = [_call(f"c{i}", i) for i in range(n)]
    refs = [f"c{i}" for i in range(n)]
    return _row(calls, [_invocation("a", refs), _invocation("b", refs)])


FAMILIES: dict[str, Callable[[int], dict[str, Any]]] = {
    "chain": chain,
    "chain-cycle": chain_cycle,
    "same-id": same_id,
    "same-id-sessions": same_id_sessions,
    "many-invocations": many_invocations,
    "many-sessions": many_sessions,
    "one-invocation": one_invocation,
    "claimed-twice": claimed_twice,
}


def measure(tree: Path, path: Path, timeout: float) -> tuple[float, float, int | None]:
    """(wall seconds, peak RSS in MiB, exit status or None when it timed out) of checking `path`."""
    command = [sys.executable, "-m", "trajlint", "check", "--isolated", "--jobs", "1", "--output-format", "json",
               str(path)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    status: int | None = None
    while True:
        pid, raw, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            status = os.waitstatus_to_exitcode(raw)
            break
        if time.perf_counter() - start > timeout:
            child.kill()
            pid, raw, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.005)
    wall = time.perf_counter() - start
    child.returncode = status if status is not None else -9  # reaped here, not by Popen
    return wall, usage.ru_maxrss / 1024, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,2000,4000,8000", help="comma-separated n, each double the last")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these (repeatable)")
    parser.add_argument("--trajlint", type=Path, default=ROOT, help="the source tree to time (default: this one)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is stopped")
    parser.add_argument("--blank-mib", help="time files of this many MiB of blank lines instead (comma-separated)")
    args = parser.parse_args(argv)
    if args.blank_mib:
        return blank_lines(args.trajlint, [int(s) for s in args.blank_mib.split(",")], args.timeout)
    sizes = [int(s) for s in args.sizes.split(",")]
    families = args.family or list(FAMILIES)

    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp, "one.jsonl")
        one.write_bytes(orjson.dumps(chain(1)) + b"\n")
        wall, rss, _ = measure(args.trajlint, one, args.timeout)
        print(f"trajlint: {args.trajlint}; start-up (one tiny row): {wall:.2f} s, {rss:.0f} MiB\n")
        print(f"| {'family':<17} | {'n':>7} | {'row MB':>7} | {'wall s':>8} | {'growth':>6} | {'peak MiB':>8} | exit |")
        print(f"|{'-' * 19}|{'-' * 9}|{'-' * 9}|{'-' * 10}|{'-' * 8}|{'-' * 10}|------|")
        for name in families:
            previous: float | None = None
            for n in sizes:
                path = Path(tmp, f"{name}-{n}.jsonl")
                data = orjson.dumps(FAMILIES[name](n)) + b"\n"
                path.write_bytes(data)
                wall, rss, status = measure(args.trajlint, path, args.timeout)
                path.unlink()
                growth = f"{wall / previous:.1f}x" if previous else ""
                shown = f"{wall:.2f}" if status is not None else f">{args.timeout:.0f}"
                print(f"| {name:<17} | {n:>7,} | {len(data) / 1e6:>7.2f} | {shown:>8} | {growth:>6} | {rss:>8.0f} | "
                      f"{status if status is not None else 'kill':>4} |", flush=True)
                previous = wall
                if status is None:
                    break  # the next size takes longer still
    return 0


def blank_lines(tree: Path, sizes: list[int], timeout: float) -> int:
    import zstandard

    print(f"| {'lines':<12} | {'MiB':>5} | {'wall s':>8} | {'growth':>6} | {'MiB/s':>7} | {'peak MiB':>8} | exit |")
    print(f"|{'-' * 14}|{'-' * 7}|{'-' * 10}|{'-' * 8}|{'-' * 9}|{'-' * 10}|------|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, unit in (("newlines", b"\n"), ("spaces+crlf", b"  \r\n")):
            previous: float | None = None
            for mib in sizes:
                path = Path(tmp, f"{name}-{mib}.jsonl.zst")
                block = unit * ((1 << 20) // len(unit))
                with open(path, "wb") as handle, zstandard.ZstdCompressor().stream_writer(handle) as out:
                    for _ in range(mib):
                        out.write(block)
                wall, rss, status = measure(tree, path, timeout)
                path.unlink()
                growth = f"{wall / previous:.1f}x" if previous else ""
                print(f"| {name:<12} | {mib:>5} | {wall:>8.2f} | {growth:>6} | {mib / wall:>7.0f} | {rss:>8.0f} | "
                      f"{status if status is not None else 'kill':>4} |", flush=True)
                previous = wall
    return 0


if __name__ == "__main__":
    sys.exit(main())
