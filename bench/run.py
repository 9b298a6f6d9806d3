"""trajlint's speed next to the floor and next to NeMo Gym's own health check, on the same file.

    python bench/run.py                       # 20,000 generated rows (cached under bench/out/)
    python bench/run.py --size 100MB --repeat 5
    python bench/run.py --file runs/rollouts.jsonl --no-gym

In one run, every command below is timed as its own child process on the same file, round-robin
over `--repeat` rounds so that machine noise spreads over all of them; medians are reported:
  (a) floor: read and parse every line with orjson, nothing else (bench/floor.py);
  (b) `python -m trajlint check --isolated --output-format json FILE > /dev/null` from this checkout,
      with its native core (`TRAJLINT_CORE=on`) when the checkout has one built, and then also
      (b0) the same with `TRAJLINT_CORE=off` (pure Python);
  (b1) (b) held to one core with `taskset -c 0`, where taskset exists: in one process the core
      proves lines ahead on a helper thread when a second core is free (`trajlint.check.ahead`);
  (c) the same as (b) with `--jobs N`, when trajlint has that option;
  (d) NeMo Gym 0.7.0 `gym eval health-check RUN_DIR --rollouts-file FILE --workers 2`, when its venv
      exists (it writes its reports into a temporary RUN_DIR);
  (e) start-up: `trajlint check` and `gym eval health-check` on a one-row file, and `python -c pass`.
The timed checkout's modules are byte-compiled first, as `pip install` leaves an installed copy.
Nothing is asserted about the times: the figures are for reading, with the core count and the load
average printed so the noise is visible.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
GYM_CANDIDATES = (Path("/tmp/nemo-gym-0.7-venv/bin/gym"),)

sys.path.insert(0, str(BENCH))
from floor import open_lines  # noqa: E402
from generate import parse_size  # noqa: E402
from measure import Measurement, run  # noqa: E402

# These timings measure checking: a hit in the result cache would time a lookup instead.
os.environ["TRAJLINT_NO_CACHE"] = "1"


@dataclass
class Subject:
    """One command under test and its measurements."""

    key: str
    label: str
    argv: list[str] | None  # None: not available on this machine (see `note`)
    note: str = ""
    cwd: Path | None = None
    env: dict[str, str] | None = None
    gym_run_dir: bool = False  # needs a fresh temporary RUN_DIR each time
    runs: list[Measurement] = field(default_factory=list)

    def median(self, name: str) -> float | None:
        values = [getattr(m, name) for m in self.runs if getattr(m, name) is not None]
        return statistics.median(values) if values else None


# -- the input file ---------------------------------------------------------------------------


def cached_file(args: argparse.Namespace) -> Path:
    """A generated file named by its parameters under bench/out/, generated once."""
    amount = f"rows{args.rows}" if args.size is None else f"size{args.size}"
    name = f"rollouts-{amount}-seed{args.seed}-defects{args.defects:g}-kb{args.payload_kb:g}.jsonl{args.suffix}"
    return _generate(OUT / name, ["--rows", str(args.rows)] if args.size is None else ["--size", str(args.size)], args)


def one_row_file(path: Path, counts: dict) -> Path:
    """A file holding one typical row of `path`: the first clean row within 20% of the mean size."""
    listed = Path(str(path) + ".defects.json")
    broken = {d["line"] for d in json.loads(listed.read_text())["defects"]} if listed.exists() else set()
    mean = counts["bytes"] / max(1, counts["lines"])
    OUT.mkdir(exist_ok=True)
    stem = path.name.removesuffix(".gz").removesuffix(".zst").removesuffix(".jsonl")
    target = OUT / f"one-row-of-{stem}.jsonl"
    with open_lines(str(path)) as lines:
        for number, line in enumerate(lines, start=1):
            if number not in broken and line.startswith(b"{") and abs(len(line) - mean) <= 0.2 * mean:
                target.write_bytes(line)
                return target
    raise SystemExit(f"no typical clean row in {path}")


def _generate(path: Path, amount: list[str], args: argparse.Namespace) -> Path:
    if path.exists():
        return path
    OUT.mkdir(exist_ok=True)
    argv = [sys.executable, str(BENCH / "generate.py"), *amount, "-o", str(path), "--seed", str(args.seed)]
    argv += ["--defects", str(args.defects), "--payload-kb", str(args.payload_kb)]
    print(f"generating {path.relative_to(REPO)} ...", file=sys.stderr, flush=True)
    subprocess.run(argv, check=True)
    return path


# -- the commands ------------------------------------------------------------------------------


def trajlint_env(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def byte_compile(root: Path) -> None:
    """Write the bytecode of that checkout's modules, as `pip install` does for an installed copy:
    a checkout run without it (or with PYTHONDONTWRITEBYTECODE set) compiles every module it
    imports on each start, about 0.1 s that no installed trajlint pays. NeMo Gym, installed by
    pip into its venv, has its bytecode already."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(root / "trajlint")], check=False, capture_output=True)


def core_census(root: Path, path: Path) -> dict | None:
    """How many lines that checkout's native core proves clean, and how many it leaves to the
    Python path (None when it has no core built)."""
    script = (
        "import json, sys\n"
        "from trajlint.read import native\n"
        "if not native.available():\n    print('null'); sys.exit()\n"
        "core = native._module()\n"
        "scan = core.scan_line\n"
        "from trajlint.check import fast\n"
        "wanted = getattr(core, 'PROVED', 0)\n"
        "prove = getattr(core, 'check_row', None)\n"
        "codes = sorted(fast.STRICT | fast.RUN_LEVEL) + sorted(c for b, m in fast.FAMILIES.items() if b & wanted for c in m)\n"
        "selection = ','.join(codes) if prove is not None else None\n"
        "health = getattr(fast, 'HEALTH', 0)\n"
        "judges = bool(wanted & health)\n"
        "every = getattr(fast, 'wanted_extracts', lambda codes, judges=False: 0)(['TL503'], True)\n"
        "proved = default = 0\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from floor import open_lines\n"
        "lines = python = 0\n"
        "with open_lines(sys.argv[1]) as handle:\n"
        "    for raw in handle:\n"
        "        raw = raw.rstrip(b'\\n')\n"
        "        if not raw.strip(b' \\t\\r'):\n            continue\n"
        "        lines += 1\n"
        "        python += scan(raw) != 0\n"
        "        if prove is not None:\n"
        "            proved += (prove(raw, wanted, 0, judges) if judges else prove(raw, wanted)) is not None\n"
        "            default += judges and prove(raw, wanted, every, True) is not None\n"
        "print(json.dumps({'lines': lines, 'python': python, 'proved': proved, 'default': default, 'selection': selection}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), str(BENCH)], capture_output=True, text=True, env=trajlint_env(root), cwd=root
    )
    if done.returncode != 0:
        return None
    return json.loads(done.stdout)


def trajlint_argv(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "json", *extra, str(path)]


def trajlint_has_jobs(root: Path) -> bool:
    """Whether that checkout's `trajlint check` has a --jobs option (read from its --help)."""
    done = subprocess.run(
        [sys.executable, "-m", "trajlint", "check", "--help"], capture_output=True, text=True, env=trajlint_env(root), cwd=root
    )
    return "--jobs" in done.stdout


def find_gym(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    return next((p for p in GYM_CANDIDATES if p.exists()), None)


def gym_argv(gym: Path, path: Path, workers: int) -> list[str]:
    # RUN_DIR is appended per run: a fresh temporary directory, never the data's directory.
    return [str(gym), "eval", "health-check", "--rollouts-file", str(path.resolve()), "--workers", str(workers)]


def subjects(args: argparse.Namespace, path: Path, one_row: Path, gym_input: Path | None) -> tuple[list[Subject], list[Subject]]:
    root = args.trajlint
    env = trajlint_env(root)
    core = args.census is not None
    if core:
        env["TRAJLINT_CORE"] = "on"
    off_env = {**env, "TRAJLINT_CORE": "off"}
    gym = None if args.no_gym else find_gym(args.gym)
    gym_note = "skipped (--no-gym)" if args.no_gym else f"n/a: no NeMo Gym venv at {', '.join(map(str, GYM_CANDIDATES))}"
    main = [
        Subject("floor", "(a) floor: orjson parse only", [sys.executable, str(BENCH / "floor.py"), str(path)]),
    ]
    has_jobs = trajlint_has_jobs(root)
    # Once trajlint has --jobs its default is every core, so (b) asks for one process.
    single = trajlint_argv(path, "--jobs", "1") if has_jobs else trajlint_argv(path)
    on = ", core on" if core else ""
    if core:
        main.append(Subject("off", "(b0) trajlint check" + (" --jobs 1" if has_jobs else "") + ", core off", single, cwd=root, env=off_env))
    main.append(Subject("trajlint", "(b) trajlint check" + (" --jobs 1" if has_jobs else "") + on, single, cwd=root, env=env))
    taskset = shutil.which("taskset")
    if core and taskset:
        # One process may still prove lines ahead on a second core (`trajlint.check.ahead`):
        # held to one core, it shows what the helper thread adds.
        main.append(Subject("one_core", "(b1) (b) held to one core (taskset -c 0)", [taskset, "-c", "0", *single], cwd=root, env=env))
    if has_jobs:
        main.append(Subject("jobs", f"(c) trajlint check --jobs {args.jobs}{on}", trajlint_argv(path, "--jobs", str(args.jobs)), cwd=root, env=env))
    else:
        main.append(Subject("jobs", f"(c) trajlint check --jobs {args.jobs}", None, note="n/a: trajlint check has no --jobs option yet"))
    selection = (args.census or {}).get("selection")
    if selection and has_jobs:
        # The rules the core proves whole families of: the fast path, next to the same rules in Python.
        narrowed = trajlint_argv(path, "--jobs", "1", "--select", selection)
        main.append(Subject("fast_off", "(f0) the core's families only, core off", narrowed, cwd=root, env=off_env))
        main.append(Subject("fast", "(f) the core's families only, core on", narrowed, cwd=root, env=env))
    if gym and gym_input:
        main.append(Subject("gym", f"(d) gym eval health-check --workers {args.gym_workers}", gym_argv(gym, gym_input, args.gym_workers), gym_run_dir=True))
    else:
        main.append(Subject("gym", f"(d) gym eval health-check --workers {args.gym_workers}", None, note=gym_note))
    startup = [
        Subject("python", "(e) python -c pass", [sys.executable, "-c", "pass"]),
        Subject("trajlint1", "(e) trajlint check, one row", trajlint_argv(one_row), cwd=root, env=env),
    ]
    if gym:
        startup.append(Subject("gym1", "(e) gym eval health-check, one row", gym_argv(gym, one_row, args.gym_workers), gym_run_dir=True))
    return main, startup


def measure_once(subject: Subject) -> None:
    if subject.argv is None:
        return
    if not subject.gym_run_dir:
        subject.runs.append(run(subject.argv, env=subject.env, cwd=subject.cwd))
        return
    run_dir = tempfile.mkdtemp(prefix="gym-health-")
    try:
        argv = subject.argv[:3] + [run_dir] + subject.argv[3:]
        subject.runs.append(run(argv, cwd=Path(run_dir)))
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


# -- the report -------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{unit}"


def checkout_version(root: Path) -> str:
    """The trajlint tree under test: its commit, marked when it has uncommitted changes."""
    done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=root)
    commit = done.stdout.strip() if done.returncode == 0 and (root / ".git").exists() else "not a git checkout"
    return f"{root} ({commit})"


def report(path: Path, counts: dict, main: list[Subject], startup: list[Subject], args: argparse.Namespace, load_before, load_after) -> str:
    size_mb = counts["bytes"] / 1e6
    lines = [
        f"trajlint: {checkout_version(args.trajlint)}",
        f"machine: {os.cpu_count()} cores, {platform.machine()}, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}",
        f"load average (1/5/15 min): {' '.join(f'{x:.2f}' for x in load_before)} before, {' '.join(f'{x:.2f}' for x in load_after)} after",
        f"file: {path} — {size_mb:,.1f} MB"
        + (f" uncompressed ({path.stat().st_size / 1e6:,.1f} MB on disk)" if path.suffix in (".gz", ".zst") else "")
        + f", {counts['lines']:,} lines, {counts['rows']:,} parse as JSON",
        f"medians of {args.repeat} runs, each a separate process; [min–max] wall time",
        "",
        f"{'':44} {'wall s':>18} {'MB/s':>8} {'rows/s':>9} {'CPU s':>8} {'peak RSS':>10} {'tree RSS':>10} {'tree PSS':>10}  exit",
    ]
    for s in main + startup:
        if not s.runs:
            lines.append(f"{s.label:44} {s.note}")
            continue
        walls = [m.wall_s for m in s.runs]
        wall = statistics.median(walls)
        spread = f"{wall:7.2f} [{min(walls):.2f}–{max(walls):.2f}]"
        throughput = s in main
        codes = sorted({m.returncode for m in s.runs})
        lines.append(
            f"{s.label:44} {spread:>18} {_fmt(size_mb / wall if throughput else None, '8.1f'):>8} "
            f"{_fmt(counts['lines'] / wall if throughput else None, '9,.0f'):>9} {_fmt(s.median('cpu_s'), '8.2f'):>8} "
            f"{_fmt(s.median('peak_rss_mib'), '7.0f', ' MiB'):>10} {_fmt(s.median('tree_rss_mib'), '7.0f', ' MiB'):>10} "
            f"{_fmt(s.median('tree_pss_mib'), '7.0f', ' MiB'):>10}  "
            f"{','.join(map(str, codes))}"
        )
        if any(m.returncode not in (0, 1) for m in s.runs):
            lines.append(f"    ! exit status {codes}: {s.runs[-1].stderr_tail.strip()[-600:]}")
    by = {s.key: s for s in main}

    def ratio(a: str, b: str, text: str) -> str:
        if a not in by or b not in by:
            return f"  {text}: n/a"
        x, y = by[a].median("wall_s"), by[b].median("wall_s")
        return f"  {text}: " + ("n/a" if x is None or y is None else f"{x / y:.2f}x")

    lines += [
        "",
        "ratios of median wall times:",
        ratio("trajlint", "floor", "(b)/(a) trajlint check / floor"),
        ratio("floor", "trajlint", "(a)/(b) trajlint's throughput as a share of the floor's"),
        ratio("off", "trajlint", "(b0)/(b) core off / core on"),
        ratio("one_core", "trajlint", "(b1)/(b) one core / one process with its helper thread"),
        ratio("gym", "jobs", "(d)/(c) NeMo Gym health-check / trajlint --jobs N"),
        ratio("jobs", "trajlint", "(c)/(b) trajlint --jobs / single process"),
        ratio("one_core", "jobs", "(b1)/(c) one core / trajlint --jobs N"),
        ratio("gym", "trajlint", "(d)/(b) NeMo Gym health-check / trajlint check"),
        ratio("fast_off", "fast", "(f0)/(f) the core's families: Python / fast path"),
        ratio("floor", "fast", "(a)/(f) the core's families, throughput as a share of the floor's"),
        "",
        "peak RSS: the largest single process (kernel rusage); tree RSS: sampled sum over the process and its workers;",
        "tree PSS: the same for proportional sizes, a page shared by several processes divided among them.",
    ]
    census = args.census
    if census is None:
        lines.append("native core: not built in the tree under test; every row went the Python way.")
    else:
        share = census["python"] / max(1, census["lines"])
        lines.append(
            f"native core: {census['lines'] - census['python']:,} of {census['lines']:,} lines proved clean of "
            f"strict-JSON problems; {census['python']:,} ({share:.1%}) went to the Python path to be explained."
        )
        default = census.get("default", 0)
        lines.append(
            f"fast path, every rule selected ((b), (c)): {default:,} of {census['lines']:,} lines "
            f"({default / max(1, census['lines']):.1%}) proved clean of every rule, with their health judged by the core;"
            f" the other {census['lines'] - default:,} went the Python way."
        )
        if census.get("selection"):
            proved = census.get("proved", 0)
            lines.append(
                f"fast path (f): {proved:,} of {census['lines']:,} lines ({proved / max(1, census['lines']):.1%}) proved clean of"
                f" every rule of `--select {census['selection']}`; the other"
                f" {census['lines'] - proved:,} went the Python way."
            )
    gym = by["gym"]
    if gym.runs and args.gym_input_note:
        lines.append(args.gym_input_note)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--rows", type=int, default=20_000, help="generate this many rows (default 20,000)")
    source.add_argument("--size", type=parse_size, help="generate this many bytes instead: 100MB, 1GB")
    source.add_argument("--file", type=Path, help="use this rollout file instead of generating one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--defects", type=float, default=0.03, help="share of broken lines in generated files (default 0.03)")
    parser.add_argument("--payload-kb", type=float, default=25.0, help="mean row size of generated files, KB (default 25)")
    parser.add_argument("--compress", choices=("none", "gzip", "zstd"), default="none", help="compress the generated file")
    parser.add_argument(
        "--trajlint", type=Path, default=REPO, help="the trajlint source tree to time (default: this checkout), e.g. a `git worktree`"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; medians are reported (default 3)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="N for trajlint check --jobs N (default: cores)")
    parser.add_argument("--gym", help="path of NeMo Gym's `gym` command (default: the 0.7.0 venv in /tmp, if present)")
    parser.add_argument("--gym-workers", type=int, default=2)
    parser.add_argument("--no-gym", action="store_true", help="do not run NeMo Gym's health check")
    parser.add_argument("--json", type=Path, help="also write every measurement to this JSON file")
    args = parser.parse_args(argv)
    args.suffix = {"none": "", "gzip": ".gz", "zstd": ".zst"}[args.compress]
    args.trajlint = args.trajlint.resolve()

    path = args.file if args.file else cached_file(args)
    counts = json.loads(subprocess.run([sys.executable, str(BENCH / "floor.py"), str(path)], capture_output=True, check=True).stdout)
    one_row = one_row_file(path, counts)

    # NeMo Gym reads one plain JSONL file; give it a decompressed copy of a compressed input.
    args.gym_input_note = ""
    gym_input: Path | None = path
    scratch = None
    if path.name.endswith((".gz", ".zst")) and not args.no_gym and find_gym(args.gym):
        scratch = tempfile.TemporaryDirectory(prefix="trajlint-bench-")
        gym_input = Path(scratch.name) / "rollouts.jsonl"
        with open_lines(str(path)) as src, open(gym_input, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        args.gym_input_note = "NeMo Gym read a decompressed copy of the file (it reads plain JSONL only)."

    args.census = core_census(args.trajlint, path)
    byte_compile(args.trajlint)
    main_subjects, startup = subjects(args, path, one_row, gym_input)
    load_before = os.getloadavg()
    try:
        for round_no in range(args.repeat):
            for subject in startup + main_subjects:
                print(f"round {round_no + 1}/{args.repeat}: {subject.label}", file=sys.stderr, flush=True)
                measure_once(subject)
    finally:
        if scratch:
            scratch.cleanup()
    load_after = os.getloadavg()

    print(report(path, counts, main_subjects, startup, args, load_before, load_after))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "file": str(path),
                    "counts": counts,
                    "cores": os.cpu_count(),
                    "load_before": load_before,
                    "load_after": load_after,
                    "repeat": args.repeat,
                    "core": args.census,
                    "subjects": [{"key": s.key, "label": s.label, "note": s.note, "runs": [asdict(m) for m in s.runs]} for s in main_subjects + startup],
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
