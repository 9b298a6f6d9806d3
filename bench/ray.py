"""`--executor ray` next to the local pool on the same file, and Ray's cost per unit of input.

    python bench/ray.py                      # a 200 MB generated file (cached under bench/out/)
    python bench/ray.py --size 1GB --repeat 3
    python bench/ray.py --size 1GB --overhead-only --absorb
    python bench/ray.py --file runs/rollouts.jsonl --tiny 0 --check-options '--ignore TL401,TL411,TL610,TL611'

It starts a local Ray cluster of `--nodes` nodes with one CPU each (ray.cluster_utils.Cluster:
separate raylets and object stores on this machine), then times, round-robin over `--repeat`
rounds, each as its own child process on the same file:
  (a) `trajlint check --isolated --output-format json --jobs 2 FILE`;
  (b) the same with `--executor ray --ray-address ADDRESS` (the driver connects to the running
      cluster: its connection time is included, the cluster's start-up is not);
and checks that their reports are byte-identical. Then, in this process, connected once, the
per-unit overhead: `--tiny` one-row files checked by the run with `LocalPool(1)` and with the
Ray executor; (Ray - local) / files is what a unit costs on Ray beyond its checking (a task
submitted, scheduled, its result fetched and unpickled), and the driver's CPU per unit. With
`--absorb`, the driver's own share alone: the file's unit results checked and pickled in this
process, then the CPU time the run spends unpickling and absorbing them in input order.
`--overhead-only` skips (a) and (b). Nothing is asserted; the load average is printed so the
noise is visible.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# These timings measure checking: a hit in the result cache would time a lookup instead.
os.environ["TRAJLINT_NO_CACHE"] = "1"

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
# Run as `python bench/ray.py`, this file's directory comes first on the path, where it would
# stand for the `ray` package itself.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
sys.path.insert(0, str(REPO))


def _input(args: argparse.Namespace) -> Path:
    if args.file:
        return Path(args.file)
    OUT.mkdir(exist_ok=True)
    path = OUT / f"ray-{args.size}-seed0.jsonl"
    if not path.exists():
        print(f"generating {path} ...", flush=True)
        subprocess.run(
            [sys.executable, str(BENCH / "generate.py"), "--size", args.size, "--defects", "0.03", "-o", str(path)],
            check=True,
        )
    return path


def _timed(argv: list[str], out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command's own process tree on this machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with out.open("wb") as handle:
        done = subprocess.run(argv, stdout=handle, stderr=subprocess.PIPE, cwd=REPO)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _per_unit(tiny: int, workdir: Path) -> tuple[float, float, float]:
    """(wall seconds per unit in one local process, wall seconds per unit on Ray, the Ray driver's
    CPU seconds per unit) for `tiny` one-row files."""
    from trajlint.check.executor import LocalPool
    from trajlint.check.ray_executor import RayExecutor
    from trajlint.check.registry import load_rules
    from trajlint.check.run import run
    from trajlint.read import iter_sources

    row = next(line for line in (REPO / "examples").glob("*.jsonl") for line in [line.read_text().splitlines()[0]])
    directory = workdir / "tiny"
    directory.mkdir()
    for index in range(tiny):
        (directory / f"{index:05d}.jsonl").write_text(row + "\n")
    rules = load_rules()
    times, cpu = {}, {}
    for name, executor in (("local", LocalPool(1)), ("ray", RayExecutor())):
        started, used = time.perf_counter(), time.process_time()
        result = run(iter_sources([str(directory)]), rules, max_row_bytes=256 * 1024 * 1024, executor=executor)
        times[name], cpu[name] = time.perf_counter() - started, time.process_time() - used
        assert result.files == tiny
    return times["local"] / tiny, times["ray"] / tiny, cpu["ray"] / tiny


def _absorb(path: Path) -> tuple[float, int, int]:
    """(CPU seconds the run spends unpickling and absorbing `path`'s unit results, units, bytes of
    pickled results): the driver's own share of the work, measured in one process."""
    import pickle

    from trajlint.check.executor import LocalPool
    from trajlint.check.registry import load_rules
    from trajlint.check.run import run
    from trajlint.read import iter_sources

    spent = {}
    blobs: list[bytes] = []

    class Recorded(LocalPool):
        def check_units(self, checker, planned, max_row_bytes):
            blobs.extend(pickle.dumps(checker.check_unit(unit, max_row_bytes, kind)) for unit, kind in planned)
            started = time.process_time()  # the consumer absorbs between the yields
            for (unit, _), blob in zip(planned, blobs):
                yield unit, [pickle.loads(blob)]
            spent["absorb"] = time.process_time() - started

    run(iter_sources([str(path)]), load_rules(), max_row_bytes=256 * 1024 * 1024, executor=Recorded(2))
    return spent["absorb"], len(blobs), sum(map(len, blobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="200MB", help="generated file size (uncompressed) [200MB]")
    parser.add_argument("--file", help="time this file instead of a generated one")
    parser.add_argument("--nodes", type=int, default=2, help="Ray nodes, one CPU each [2]")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of (a) and (b) [1]")
    parser.add_argument(
        "--check-options", default="", help="more options for both runs, e.g. '--ignore TL401,TL411,TL610,TL611'"
    )
    parser.add_argument("--absorb", action="store_true", help="also time the driver's absorb step alone, in one process")
    parser.add_argument("--overhead-only", action="store_true", help="only the per-unit overhead")
    parser.add_argument("--tiny", type=int, default=300, help="one-row files for the per-unit overhead (0: skip) [300]")
    args = parser.parse_args()

    path = _input(args)
    size = path.stat().st_size
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    import ray
    from ray.cluster_utils import Cluster

    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        for _ in range(args.nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        print(f"cluster of {args.nodes} nodes started in {time.perf_counter() - started:.1f} s", flush=True)
        base = [sys.executable, "-m", "trajlint", "check", "--isolated", "--output-format", "json", *args.check_options.split(), str(path)]
        subjects = {
            "local --jobs 2": [*base, "--jobs", "2"],
            f"ray, {args.nodes} nodes": [*base, "--executor", "ray", "--ray-address", cluster.address],
        }
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            if args.overhead_only:
                subjects = {}
            times: dict[str, list[float]] = {name: [] for name in subjects}
            cpu: dict[str, list[float]] = {name: [] for name in subjects}
            for _ in range(args.repeat):
                for index, (name, argv) in enumerate(subjects.items()):
                    wall, used = _timed(argv, workdir / f"{index}.json")
                    times[name].append(wall)
                    cpu[name].append(used)
            if subjects:
                identical = (workdir / "0.json").read_bytes() == (workdir / "1.json").read_bytes()
                print(f"\nfile: {path} ({size / 1e6:,.0f} MB); load average {os.getloadavg()[0]:.2f}; "
                      f"{os.cpu_count()} cores on this machine")
                local = statistics.median(times["local --jobs 2"])
                for name, values in times.items():
                    median = statistics.median(values)
                    print(
                        f"  {name:<18} {median:7.1f} s  {size / 1e6 / median:6.1f} MB/s  x{median / local:.2f} of local"
                        f"  (CPU of its own processes: {statistics.median(cpu[name]):.1f} s)"
                    )
                # The Ray driver's own CPU time is what it spends planning, submitting, fetching and
                # absorbing results: the input rate one driver can keep up with.
                driver = statistics.median(cpu[f"ray, {args.nodes} nodes"])
                print(f"  the Ray driver alone keeps up with {size / 1e6 / driver:,.0f} MB/s of input ({driver:.1f} s CPU)")
                print(f"  reports byte-identical: {identical}")
            if args.tiny:
                ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
                try:
                    one, on_ray, driver_cpu = _per_unit(args.tiny, workdir)
                finally:
                    ray.shutdown()
                print(f"\nper unit ({args.tiny} one-row files): one local process {one * 1e3:.1f} ms, "
                      f"Ray {on_ray * 1e3:.1f} ms: Ray adds {(on_ray - one) * 1e3:.1f} ms a unit; "
                      f"the driver's CPU per unit on Ray {driver_cpu * 1e3:.2f} ms")
    finally:
        cluster.shutdown()
    if args.absorb:
        spent, units, result_bytes = _absorb(path)
        print(f"\nabsorb step alone: {spent:.2f} s CPU for {size / 1e6:,.0f} MB ({size / 1e6 / spent:,.0f} MB/s of input); "
              f"{units} units, results {result_bytes / 1e6:.1f} MB pickled ({result_bytes / size:.2%} of the input)")


if __name__ == "__main__":
    main()
