"""Start-up time of trajlint's short commands, next to the interpreter's own.

Each command runs as a child process (`measure.run`: wall time, and CPU time user + system),
round-robin over `--repeat` rounds and over the source trees given with `--trajlint`, so that
the machine's noise spreads over all of them alike:

- `python -c pass`: the interpreter alone, the floor of every row;
- `python -c "import trajlint"`: the package;
- `trajlint --version`;
- `trajlint rule TL101`: the rule catalog and the rules' implementations;
- `trajlint check --isolated FILE`: a file of one row, the first row of `examples/clean.jsonl`;
- `trajlint check --isolated -`: the same row piped to standard input.

Checks run with `TRAJLINT_NO_CACHE=1` (a cache hit would time a lookup) and every command from a
temporary directory (`-m` puts the working directory first on the path). Each tree's bytecode is
compiled once, before the rounds, into a cache directory of its own (`PYTHONPYCACHEPREFIX`),
so that no run compiles a module, as none does in an installed trajlint, even where
`PYTHONDONTWRITEBYTECODE` is set; the warm-up runs are not timed. The report gives, per command
and tree, the median wall time with its [min–max], the median CPU time, both as a ratio to
`python -c pass`, the number of modules the command imports (`-X importtime`, one extra run),
and, with two trees or more, the median wall time of each tree against the first. It asserts
nothing.

    python bench/startup.py                                   # this checkout, 10 rounds
    python bench/startup.py --repeat 20
    python bench/startup.py --trajlint /tmp/trajlint-main --trajlint .    # two trees side by side
    #   mkdir /tmp/trajlint-main && git archive main | tar -x -C /tmp/trajlint-main
    #   (and copy trajlint/_core.abi3.so beside it, when the tree under test has its core built)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: (label, arguments after `python`, whether the row is piped to standard input)
COMMANDS: list[tuple[str, list[str], bool]] = [
    ("python -c pass", ["-c", "pass"], False),
    ('python -c "import trajlint"', ["-c", "import trajlint"], False),
    ("trajlint --version", ["-m", "trajlint", "--version"], False),
    ("trajlint rule TL101", ["-m", "trajlint", "rule", "TL101"], False),
    ("trajlint check FILE (one row)", ["-m", "trajlint", "check", "--isolated", "{row}"], False),
    ("trajlint check - (one row piped)", ["-m", "trajlint", "check", "--isolated", "-"], True),
]


def _argv(args: list[str], row: Path) -> list[str]:
    return [sys.executable, *(a.replace("{row}", str(row)) for a in args)]


def _imports(argv: list[str], env: dict[str, str], cwd: str, stdin: str | None) -> int:
    """How many modules the command imports: the lines of `-X importtime`."""
    with open(stdin or os.devnull, "rb") as given:
        done = subprocess.run(
            [argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=cwd, stdin=given, capture_output=True, text=True
        )
    return sum(1 for line in done.stderr.splitlines() if line.startswith("import time:") and "self [us]" not in line)


def _tree_label(tree: Path) -> str:
    done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=tree)
    commit = done.stdout.strip() if done.returncode == 0 and (tree / ".git").exists() else "not a git checkout"
    return f"{tree} ({commit})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="rounds of every command (default: 10)")
    parser.add_argument(
        "--trajlint",
        type=Path,
        action="append",
        help="a source tree to time; repeat to time several side by side (default: this checkout)",
    )
    options = parser.parse_args()
    trees = [tree.resolve() for tree in options.trajlint or [ROOT]]
    row_text = (ROOT / "examples" / "clean.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[0]

    with tempfile.TemporaryDirectory(prefix="trajlint-startup-") as scratch:
        row = Path(scratch) / "one-row.jsonl"
        row.write_text(row_text, encoding="utf-8")
        envs = {}
        for i, tree in enumerate(trees):
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env.update(PYTHONPATH=str(tree), TRAJLINT_NO_CACHE="1", PYTHONPYCACHEPREFIX=str(Path(scratch) / f"pycache-{i}"))
            envs[tree] = env
        runs = [(label, _argv(args, row), str(row) if piped else None) for label, args, piped in COMMANDS]

        print(f"machine: {os.cpu_count()} cores; load average before {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        for tree in trees:
            print(f"tree: {_tree_label(tree)}")
        print(f"python: {sys.executable}; {options.repeat} rounds; row: {len(row_text.encode())} bytes")
        imports: dict[tuple[Path, str], int] = {}
        for tree in trees:  # warm-up: compile every module each command imports, untimed
            for label, argv, stdin in runs:
                imports[tree, label] = _imports(argv, envs[tree], scratch, stdin)
                warm = measure.run(argv, env=envs[tree], cwd=Path(scratch), stdin_path=stdin)
                if warm.returncode != 0:
                    print(f"  {label} in {tree} exits {warm.returncode}: {warm.stderr_tail.strip().splitlines()[-1:]}")

        wall: dict[tuple[Path, str], list[float]] = {key: [] for key in imports}
        cpu: dict[tuple[Path, str], list[float]] = {key: [] for key in imports}
        for _ in range(options.repeat):
            for label, argv, stdin in runs:
                for tree in trees:
                    m = measure.run(argv, env=envs[tree], cwd=Path(scratch), stdin_path=stdin)
                    wall[tree, label].append(m.wall_s)
                    cpu[tree, label].append(m.cpu_s)

    print(f"load average after {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    first = trees[0]
    several = len(trees) > 1
    header = "| command | tree | wall ms, median [min–max] | CPU ms | wall / python -c pass | CPU / python -c pass | modules |"
    print(header + (" wall / first tree |" if several else ""))
    print("|---|---|---:|---:|---:|---:|---:|" + ("---:|" if several else ""))
    for label, _, _ in runs:
        for i, tree in enumerate(trees):
            w, c = wall[tree, label], cpu[tree, label]
            floor_w = statistics.median(wall[tree, COMMANDS[0][0]])
            floor_c = statistics.median(cpu[tree, COMMANDS[0][0]])
            cells = [
                label,
                f"{i + 1}",
                f"{statistics.median(w) * 1e3:.0f} [{min(w) * 1e3:.0f}–{max(w) * 1e3:.0f}]",
                f"{statistics.median(c) * 1e3:.0f}",
                f"{statistics.median(w) / floor_w:.1f}x",
                f"{statistics.median(c) / floor_c:.1f}x" if floor_c else "n/a",
                f"{imports[tree, label]}",
            ]
            if several:
                cells.append(f"{statistics.median(w) / statistics.median(wall[first, label]):.2f}x")
            print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
