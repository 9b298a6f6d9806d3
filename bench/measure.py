"""Run one command as a child process and measure it: wall time, CPU time, peak memory.

The command is started by a small trampoline (a bare `python -I -S` that forks, execs the command
and waits for it with `wait4`). Linux carries a process's peak RSS across exec, and a child forked
straight from this benchmark would start with the benchmark's own memory as its peak; forked from
the trampoline it starts from a few MiB, so the kernel's figure is the command's own: the largest
single process among it and the children it waited for. Wall and CPU time are taken around the
command inside the trampoline, leaving the trampoline's own start-up out. For commands that fan
out to worker processes, the summed RSS of the command's process tree is also sampled from /proc
every 20 ms (Linux only), since the largest single process then understates what the run needs.
That sum counts a page shared by several processes (the interpreter, a library's code, what a
forked worker inherited and never wrote) once in each; the summed PSS (`smaps_rollup`, each
shared page divided among its sharers) is sampled beside it: what the tree takes from the
machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(slots=True)
class Measurement:
    wall_s: float
    cpu_s: float  # user + system, the child and every child it waited for
    peak_rss_mib: float  # largest single process
    tree_rss_mib: float | None  # sampled sum over the process tree; None where /proc is missing
    returncode: int
    stderr_tail: str
    tree_pss_mib: float | None = None  # the same for proportional set sizes (shared pages divided)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                out.extend(int(c) for c in handle.read().split())
    except OSError:
        pass
    return out


def _tree_memory(root: int) -> tuple[int, int]:
    """(resident bytes, proportional bytes) of every process below `root` (the trampoline itself
    left out); the second is 0 where `smaps_rollup` cannot be read."""
    rss = pss = 0
    stack, seen = _children(root), {root}
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/statm") as handle:
                rss += int(handle.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
        pss += _pss(p)
        stack.extend(_children(p))
    return rss, pss


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class _TreeSampler(threading.Thread):
    def __init__(self, pid: int, interval: float = 0.02):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak = self.peak_pss = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            rss, pss = _tree_memory(self.pid)
            self.peak, self.peak_pss = max(self.peak, rss), max(self.peak_pss, pss)
            self.done.wait(self.interval)


_TRAMPOLINE = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    out.write(f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss} {status}")
"""


def run(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdout_path: str = os.devnull,
    stdin_path: str | None = None,
) -> Measurement:
    """Run `argv` to completion with stdout to `stdout_path` (and stdin from `stdin_path`, else
    this process's); never raises on a non-zero exit."""
    sampling = os.path.isdir("/proc/self/task")
    with (
        open(stdin_path or os.devnull, "rb") as given_stdin,
        open(stdout_path, "wb") as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as result,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, result.name, *argv], stdin=given_stdin if stdin_path else None, stdout=out, stderr=err, env=env, cwd=cwd
        )
        sampler = _TreeSampler(proc.pid) if sampling else None
        if sampler:
            sampler.start()
        proc.wait()
        if sampler:
            sampler.done.set()
            sampler.join()
        wall, cpu, maxrss_kib, status = result.read().split()
        err.seek(0)
        tail = err.read()[-2000:].decode(errors="replace")
    return Measurement(
        wall_s=float(wall),
        cpu_s=float(cpu),
        peak_rss_mib=int(maxrss_kib) / 1024,  # kilobytes on Linux
        tree_rss_mib=sampler.peak / 2**20 if sampler and sampler.peak else None,
        tree_pss_mib=sampler.peak_pss / 2**20 if sampler and sampler.peak_pss else None,
        returncode=os.waitstatus_to_exitcode(int(status)),
        stderr_tail=tail,
    )
