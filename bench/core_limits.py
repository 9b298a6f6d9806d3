"""Time and memory of the native core's row path on adversarial rows at doubling sizes.

Each shape is one line whose size in bytes is given: a long array of small numbers, of floats
needing every digit, of small objects, of arrays nested as deep as serde_json reads; a long
string, plain or all escapes; an object of many keys, of many keys sharing a long prefix, of many
keys with one repeated at the end (the scanner refuses it); arrays nested past serde_json's limit
(parsed by the scanner alone); a huge identity value. For each size, in a child process of its
own, it times `_core.clean_families(raw, 0)` (the strict scan and the parse: what every proof
starts from), `_core.clean_families(raw, every family)` (the families' proofs, the written ones
and the stubs) and `_core.check_row(raw, 0)` (the evidence and the identity), the best of
`--repeat` runs, and the memory the core's call adds to the process at its peak, as a multiple of
the line's size, each beside orjson's (the Python path's parse of the same line). The growth column is a size's time over half that size's: about 2 is linear, 4
quadratic. Nothing here asserts anything about the times.

    python bench/core_limits.py                             # every shape, 1 to 16 MiB
    python bench/core_limits.py --sizes 32,64,128,256 --shape array   # up to --max-row-bytes
    python bench/core_limits.py --trajlint /tmp/trajlint-abc1234      # another source tree's core

The core is the checkout's (`trajlint/_core*.so`, built as the README says) or, failing that, an
installed trajlint's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
PREFIX = b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "x": '


def _repeat(piece: bytes, size: int, open_: bytes = b"[", close: bytes = b"]") -> bytes:
    """`piece`, comma-separated, in a container filling `size` bytes of row."""
    count = max(1, (size - len(PREFIX) - 3) // (len(piece) + 1))
    return PREFIX + open_ + b",".join([piece] * count) + close + b"}"


def _keys(size: int, prefix: bytes = b"", repeated: bool = False) -> bytes:
    width = len(prefix) + 10
    count = max(2, size // (width + 6))
    keys = [b'"%s%010d": 0' % (prefix, i) for i in range(count)]
    if repeated:
        keys[-1] = keys[0]
    return PREFIX + b"{" + b",".join(keys) + b"}}"


def _nested(size: int, depth: int) -> bytes:
    chain = b"[" * depth + b"0" + b"]" * depth
    return _repeat(chain, size)


SHAPES = {
    "array": lambda n: _repeat(b"0", n),
    "floats": lambda n: _repeat(b"1.2345678901234567e-300", n),
    "objects": lambda n: _repeat(b'{"a":0,"b":"c"}', n),
    "nested-127": lambda n: _nested(n, 125),  # with the row and "x"'s array: 127, serde_json's most
    "nested-1024": lambda n: _nested(n, 1022),  # orjson's most: the parse stops at depth 128
    "string": lambda n: PREFIX + b'"' + b"x" * (n - len(PREFIX) - 3) + b'"}',
    "escapes": lambda n: PREFIX + b'"' + b"\\u00e9\\ud83d\\ude00" * ((n - len(PREFIX)) // 18) + b'"}',
    "keys": lambda n: _keys(n),
    "long-keys": lambda n: _keys(n, b"k" * 1000),
    "repeated-key": lambda n: _keys(n, repeated=True),
    "identity": lambda n: b'{"_ng_rollout_index": 0, "_ng_task_index": [' + b",".join([b"-1"] * (n // 3)) + b"]}",
}


def _rss() -> tuple[int, int]:
    """(resident bytes now, at their peak since the last `_reset_peak`), from /proc."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux: the peak starts again from now


def _added_memory(call) -> int:
    """How far `call()` raises the process's resident memory above where it was, at its peak."""
    import gc

    gc.collect()
    _reset_peak()
    now, _ = _rss()
    call()
    return max(0, _rss()[1] - now)


def _one(shape: str, size: int, repeat: int) -> dict[str, float]:
    """In the child: build the row, time the calls, measure the memory they add."""
    import time

    import orjson

    from trajlint.read import native

    core = native._module()
    if core is None:
        raise SystemExit("trajlint._core is not built: see the README (Building the native core)")
    every = core.SCHEMA | core.COUNTS | core.STRUCTURE | core.OWNERSHIP
    raw = SHAPES[shape](size)
    core_memory = _added_memory(lambda: core.clean_families(raw, every))
    orjson_memory = _added_memory(lambda: orjson.loads(raw))
    times = {}
    for name, call in (
        ("parse", lambda: core.clean_families(raw, 0)),
        ("families", lambda: core.clean_families(raw, every)),
        ("check_row", lambda: core.check_row(raw, 0)),
        ("orjson", lambda: orjson.loads(raw)),
    ):
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - started)
        times[name] = best
    return {
        **times, "bytes": len(raw), "memory": core_memory / len(raw), "orjson_memory": orjson_memory / len(raw),
        "scan": core.scan_line(raw), "read": core.check_row(raw, 0) is not None,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,4,8,16", help="row sizes in MiB, comma-separated")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only these shapes (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trajlint", type=Path, default=ROOT, help="the source tree whose core to time")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        sys.path.insert(0, str(args.trajlint))
        print(json.dumps(_one(args.one[0], int(args.one[1]), args.repeat)))
        return 0
    sizes = [int(float(s) * MIB) for s in args.sizes.split(",")]
    print(
        f"{'shape':<13} {'MiB':>5} {'parse ms':>9} {'growth':>6} {'families ms':>11} {'check_row ms':>12} "
        f"{'orjson ms':>9} {'memory':>7} {'orjson':>7}  verdict"
    )
    for shape in args.shape or list(SHAPES):
        last = None
        for size in sizes:
            done = subprocess.run(
                [sys.executable, __file__, "--one", shape, str(size), "--repeat", str(args.repeat), "--trajlint", str(args.trajlint)],
                capture_output=True, text=True,
            )
            if done.returncode != 0:
                print(f"{shape:<13} {size / MIB:>5.1f} failed: {done.stderr.strip().splitlines()[-1:]}")
                break
            got = json.loads(done.stdout)
            growth = f"{got['parse'] / last:.2f}" if last else ""
            last = got["parse"]
            verdict = "refused by the scan" if got["scan"] else "read" if got["read"] else "not read (too deep)"
            print(
                f"{shape:<13} {got['bytes'] / MIB:>5.1f} {got['parse'] * 1000:>9.1f} {growth:>6} "
                f"{got['families'] * 1000:>11.1f} {got['check_row'] * 1000:>12.1f} {got['orjson'] * 1000:>9.1f} "
                f"{got['memory']:>6.1f}x {got['orjson_memory']:>6.1f}x  {verdict}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
