"""The `trajlint` command's entry point: the command line, then an exit that skips the
interpreter's teardown."""

from __future__ import annotations

from trajlint.cli.commands import main
from trajlint.cli.exit import EXIT_CLEAN, EXIT_FINDINGS


def run() -> None:
    """The `trajlint` command (and `python -m trajlint`).

    Freeing every object a run made (its findings, the identities of every row, the modules)
    takes tens of milliseconds after the report is out: a tenth of a run on a few rows, which a
    pre-commit hook makes many times a day. Nothing of it reaches a file (`atexit` handlers,
    such as a coverage recorder's, still run), so the process ends without it, as mypy does.
    """
    try:
        main()
        status: object = EXIT_CLEAN
    except SystemExit as stop:
        status = stop.code
    quick_exit(status)


def quick_exit(status: object) -> None:
    """End the process with `status` (as `sys.exit` reads it) once the `atexit` handlers have
    run and standard output and error are flushed, without freeing what the run holds. Under a
    tracer or profiler (coverage, cProfile), which write their data once the program returns,
    or with a thread still at work that the interpreter would wait for, it exits the usual way."""
    import atexit
    import os
    import sys
    import threading

    if _watched() or any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(status)
    if status is None:
        code = EXIT_CLEAN
    elif isinstance(status, int):
        code = status & 0xFF
    else:  # `sys.exit("message")`: Python prints it and exits with 1
        print(status, file=sys.stderr)
        code = 1
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None:
        sys.exit(status)
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except (OSError, ValueError):
            # The reader left before the end (`trajlint check | head`): what it took is all
            # it wanted, as `signals.guarded` has it for a pipe closed earlier.
            code = code or EXIT_FINDINGS
    os._exit(code)


def _watched() -> bool:
    """Whether a tracer or profiler watches this process (`sys.settrace`, `sys.setprofile`, or
    a tool of `sys.monitoring`, as coverage uses on Python 3.12 and later)."""
    import sys

    if sys.gettrace() is not None or sys.getprofile() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))
