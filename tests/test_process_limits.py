"""`check --jobs 400` under real limits on processes (RLIMIT_NPROC, a pids cgroup): the report of
one process, from fewer workers or none; never a hang, a traceback or a failed run.

RLIMIT_NPROC counts the tasks (processes and threads) of the real user id, and binds no process
that holds CAP_SYS_RESOURCE or CAP_SYS_ADMIN, which root does. So a test running as root (as CI
does) runs trajlint under the real ids of `nobody` (65534) with both capabilities gone from its
bounding set. When every file trajlint needs is readable by others it drops every id to
`nobody`; otherwise (an interpreter under a private home directory) the effective id stays 0,
which still reads the files but no longer escapes the limit. The limit is what the user already
runs plus a few tasks, swept over a range, so that only some of the workers (or none) can start.
Two pools of workers are covered: the one that checks shards of a large file, and the one the
result cache uses to check many small runs at once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trajlint.check import parallel

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
_PR_CAPBSET_DROP = 24
_CAP_SYS_ADMIN = 21
_CAP_SYS_RESOURCE = 24
TIMEOUT = 120

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process limits")


@pytest.fixture(scope="module")
def inputs() -> Iterator[dict[str, tuple[Path, str]]]:
    """Each input by name, with its report from one process: `big`, a rollout file large enough
    to start workers; `small`, files each too small for workers, which the result cache checks
    a run per worker."""
    directory = Path(tempfile.mkdtemp(prefix="trajlint-limits-"))
    try:
        os.chmod(directory, 0o777)  # readable by `nobody`, and its cache writable
        path = directory / "rollouts.jsonl"
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "generate.py"), "--size", "36MB", "--payload-kb", "200", "-o", str(path)],
            check=True, capture_output=True, timeout=300,
        )
        # Workers start even where two would (a 2-core machine), not one process and its helper thread.
        assert path.stat().st_size > parallel.PARALLEL_MIN_BYTES * parallel._BESIDE_HELPER
        os.chmod(path, 0o644)
        small = directory / "small"
        small.mkdir(mode=0o755)
        for n in range(6):
            shutil.copy(ROOT / "examples" / "broken.jsonl", small / f"broken-{n}.jsonl")
            os.chmod(small / f"broken-{n}.jsonl", 0o644)
        found = {}
        for name, target in (("big", path), ("small", small)):
            expected = _run(target, "1", lambda: None)
            assert expected.returncode == 1 and expected.stdout, expected.stderr
            found[name] = (target, expected.stdout)
        yield found
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _tasks_of(uid: int) -> int:
    """The processes and threads whose real user id is `uid`: what RLIMIT_NPROC counts."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue  # ended meanwhile
        if int(fields["Uid"].split()[0]) == uid:
            count += int(fields["Threads"])
    return count


def _readable_by_others(path: str) -> bool:
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    parent = os.path.dirname(path)
    while True:
        if not os.stat(parent).st_mode & stat.S_IXOTH:
            return False
        if parent == os.path.dirname(parent):
            return True
        parent = os.path.dirname(parent)


def _nobody_can_run_trajlint() -> bool:
    import click

    needed = [sys.executable, os.__file__, click.__file__, str(ROOT / "trajlint" / "__init__.py")]
    return all(_readable_by_others(path) for path in needed)


def _limited(limit: int) -> Callable[[], None]:
    """What the child runs before trajlint: RLIMIT_NPROC at `limit`, and, as root, the real ids
    of `nobody` and no capability that escapes the limit."""
    root = os.geteuid() == 0
    drop_all = root and _nobody_can_run_trajlint()

    def preexec() -> None:
        if root and not drop_all:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            for cap in (_CAP_SYS_ADMIN, _CAP_SYS_RESOURCE):
                if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                    raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        if root:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            effective = NOBODY if drop_all else 0
            os.setresuid(NOBODY, effective, effective)

    return preexec


def _run(path: Path, jobs: str, preexec: Callable[[], None]) -> subprocess.CompletedProcess[str]:
    """`check --jobs JOBS PATH`; a directory is checked with a result cache of its own, empty."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(path.parent)}
    env.pop("TRAJLINT_NO_CACHE", None)
    if path.is_dir():
        cache = Path(tempfile.mkdtemp(prefix="cache-", dir=path.parent))
        os.chmod(cache, 0o777)
        caching = ["--cache-dir", str(cache)]
    else:
        caching = ["--no-cache"]
    args = [sys.executable, "-m", "trajlint", "check", "--isolated", *caching, "--jobs", jobs,
            "--output-format", "json", str(path)]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=path.parent, env=env,
        preexec_fn=preexec, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"trajlint did not end within {TIMEOUT} s under a process limit")
    assert _group_ends(proc.pid), "a worker process was left running"
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _group_ends(pgid: int) -> bool:
    for _ in range(100):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    os.killpg(pgid, signal.SIGKILL)
    return False


def _assert_bounded(proc: subprocess.CompletedProcess[str], expected: str) -> None:
    """Fewer workers, or none: the report of one process, byte for byte, and nothing else said."""
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr
    assert proc.returncode == 1 and not proc.stderr, proc.stderr
    assert proc.stdout == expected


@pytest.mark.parametrize(("name", "extra"), [*(("big", n) for n in range(2, 9)), *(("small", n) for n in (2, 4, 6))])
def test_jobs_400_under_rlimit_nproc(inputs, name, extra):
    path, expected = inputs[name]
    uid = NOBODY if os.geteuid() == 0 else os.getuid()
    proc = _run(path, "400", _limited(_tasks_of(uid) + extra))
    _assert_bounded(proc, expected)


@contextlib.contextmanager
def _pids_cgroup(limit: int) -> Iterator[Path]:
    """A pids cgroup (v1) allowing `limit` tasks, or a skip where none can be made here."""
    base = Path("/sys/fs/cgroup/pids")
    group = base / f"trajlint-test-{os.getpid()}-{limit}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"no pids cgroup can be made here ({exc.strerror})")
    try:
        (group / "pids.max").write_text(str(limit))
        yield group
    finally:
        for _ in range(100):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)


@pytest.mark.parametrize(("name", "limit"), [("big", 3), ("big", 5), ("big", 7), ("small", 4)])
def test_jobs_400_in_a_pids_cgroup(inputs, name, limit):
    path, expected = inputs[name]
    with _pids_cgroup(limit) as group:
        procs = str(group / "cgroup.procs")

        def join() -> None:
            with open(procs, "w", encoding="ascii") as handle:
                handle.write(str(os.getpid()))

        proc = _run(path, "400", join)
    _assert_bounded(proc, expected)
