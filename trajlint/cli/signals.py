"""Stopping a run: SIGINT and SIGTERM end it with 130 and 143, a closed pipe quietly, and an
unexpected exception with one line and exit 2 (`--debug` keeps the traceback)."""

from __future__ import annotations

import functools
import signal
import sys
from collections.abc import Callable
from typing import Any

import click

from trajlint.cli.exit import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
)


class Terminated(BaseException):
    """SIGTERM arrived (`timeout`, a process manager). Raised like Ctrl-C's KeyboardInterrupt so
    that the run unwinds and stops its workers; a BaseException, so that no `except Exception`
    on the way (rule containment) takes it for a bug."""


def _raise_terminated(signum: int, frame: Any) -> None:
    # A second signal while this one unwinds the run (a second Ctrl-C, SIGINT then SIGTERM from
    # a CI runner) would interrupt the cleanup that stops the workers, and a run whose workers
    # were never told to stop waits for them forever: from the first signal on, both are ignored.
    _ignore_stop_signals()
    raise Terminated


def _raise_interrupted(signum: int, frame: Any) -> None:
    _ignore_stop_signals()
    raise KeyboardInterrupt


def _set_stop_handlers(on_int: Any, on_term: Any) -> tuple[Any, Any] | None:
    """Install handlers for SIGINT and SIGTERM and return the ones they replace (None where
    signals cannot be set from here: a thread other than the main one)."""
    try:
        previous = (
            signal.signal(signal.SIGINT, on_int),
            signal.signal(signal.SIGTERM, on_term),
        )
    except ValueError:
        return None
    # None: a handler set outside Python, which cannot be put back; the default stands in.
    return tuple(signal.SIG_DFL if p is None else p for p in previous)  # type: ignore[return-value]


def _ignore_stop_signals() -> None:
    """A second Ctrl-C (or SIGTERM) while trajlint says why it stops must not cut that short
    into another status."""
    _set_stop_handlers(signal.SIG_IGN, signal.SIG_IGN)


# Memory held back from the start of a run and given up when memory runs out, so that saying so
# and exiting does not itself fail for want of memory. Python runs out where the address space
# is limited (`ulimit -v`); a control group's limit ends a process with the kernel's OOM killer
# instead. So the reserve is address space alone: zeroed `bytes` come from calloc, whose fresh
# pages are never touched, where a `bytearray` is written over and held in memory, 4 MiB of
# every run's resident set.
_RESERVE_BYTES = 4 * 1024 * 1024
_reserve: bytes | None = None

OUT_OF_MEMORY = (
    "trajlint: out of memory: the run needs more memory than this machine or its limits "
    "(ulimit -v, a container) allow; rerun with --jobs 1, a lower --max-row-bytes, or more memory\n"
)


def out_of_memory() -> None:
    """End the run at once with one line and exit 2: with no memory left, unwinding any further
    (or running exit handlers) can fail again and again instead of ending."""
    global _reserve
    _reserve = None
    import os

    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001, S110 - what could not be written is lost either way
        pass
    try:
        os.write(2, OUT_OF_MEMORY.encode())
    finally:
        os._exit(EXIT_ERROR)


class Failure(click.ClickException):
    """A problem with the invocation, the configuration or the environment, not with the data."""

    exit_code = EXIT_ERROR


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn an unexpected exception into one line and exit 2; `--debug` keeps the traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, debug: bool = False, **kwargs: Any) -> Any:
        global _reserve
        _reserve = bytes(_RESERVE_BYTES)
        on_int = signal.getsignal(signal.SIGINT)  # kept unless Python's own: the shell may have set it ignored
        if on_int is signal.default_int_handler:
            on_int = _raise_interrupted
        previous = _set_stop_handlers(signal.SIG_DFL if on_int is None else on_int, _raise_terminated)
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            _ignore_stop_signals()
            previous = (
                None  # the process is on its way out: a third signal changes nothing
            )
            click.echo("trajlint: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except Terminated:
            _ignore_stop_signals()
            previous = None
            click.echo("trajlint: terminated", err=True)
            sys.exit(EXIT_TERMINATED)
        except MemoryError:
            out_of_memory()
        except BrokenPipeError:
            # The reader (e.g. `| head`) went away; nothing left to say and no one to say it to.
            sys.stderr.close()
            sys.exit(EXIT_FINDINGS)
        except Exception as exc:  # noqa: BLE001
            if debug:
                raise
            click.echo(
                f"trajlint: internal error: {type(exc).__name__}: {exc}. This is a bug in "
                "trajlint; rerun with --debug for the traceback and please report it.",
                err=True,
            )
            sys.exit(EXIT_ERROR)
        finally:
            if previous is not None:
                _set_stop_handlers(*previous)

    return click.option(
        "--debug", is_flag=True, help="Show tracebacks of internal errors."
    )(wrapper)
