"""The native core (`trajlint._core`, Rust), and which path answers: ``TRAJLINT_CORE``.

The core answers one question per line before the Python path does its work: does orjson read
this line exactly as written (valid strict JSON, no key twice in an object, no integer beyond 64
bits)? A line it proves clean needs no strict-JSON re-examination in Python (TL005/TL006 skip
their re-serialization and scans); a line it does not prove clean goes the Python way, which
explains it. The Python path stays the reference:

- ``TRAJLINT_CORE=off``: Python only.
- ``TRAJLINT_CORE=on``: the core decides what it can prove (the default when the core is built).
- ``TRAJLINT_CORE=check``: both, on every line; any difference stops the run (`CoreMismatch`).

A checkout run with PYTHONPATH has no compiled core: trajlint then runs in pure Python.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

#: The core's verdict bits (`trajlint._core` defines the same).
INVALID = 1
REPEATED = 2
OVERSIZED = 4

MODES = ("off", "on", "check")
#: The `trajlint._core` this code was written for (`API` in src/lib.rs); a core built from other
#: sources is not used.
API = 8


class CoreError(ValueError):
    """TRAJLINT_CORE asks for what this installation cannot do."""


class CoreMismatch(Exception):
    """In check mode, the core and the Python path disagreed about a line."""


@cache
def _module() -> object | None:
    try:
        from trajlint import _core
    except ImportError:
        return _installed_core()
    return _core if getattr(_core, "API", None) == API else None


def _installed_core() -> object | None:
    """The core of a trajlint of this version installed in this environment's site-packages.

    Running from a checkout (`python -m pytest` in the repository after `pip install .`) imports
    the checkout's Python files, while the compiled core went into site-packages: it is taken
    from there. Only site-packages is searched, never another checkout.
    """
    import importlib.machinery
    import importlib.util
    import site
    import sys
    from pathlib import Path

    from trajlint import __version__

    here = Path(__file__).resolve().parent.parent
    places = [*site.getsitepackages(), site.getusersitepackages()]
    for place in places:
        package = Path(place) / "trajlint"
        if not package.is_dir() or package.resolve() == here:
            continue
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = package / f"_core{suffix}"
            if not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location("trajlint._core", path)
            if spec is None or spec.loader is None:
                continue
            try:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            except ImportError:
                continue
            if getattr(module, "__version__", None) != __version__ or getattr(module, "API", None) != API:
                continue  # another trajlint's core: its answers may not be this one's
            sys.modules["trajlint._core"] = module
            return module
    return None


def module() -> Any:
    """The compiled core (`trajlint._core`); only asked for when `mode()` is not off."""
    return _module()


def available() -> bool:
    """Whether the compiled core is importable here."""
    return _module() is not None


@cache
def mode() -> str:
    """off, on or check: what TRAJLINT_CORE asks for, checked against what is built."""
    wanted = os.environ.get("TRAJLINT_CORE", "").strip().lower()
    if not wanted:
        return "on" if available() else "off"
    if wanted not in MODES:
        raise CoreError(f"TRAJLINT_CORE must be off, on or check, not {wanted!r}")
    if wanted != "off" and not available():
        raise CoreError(
            f"TRAJLINT_CORE={wanted} needs trajlint's native core (trajlint._core), which this "
            "installation lacks (or has from other sources); install trajlint with pip (it compiles "
            "the core) or set TRAJLINT_CORE=off"
        )
    return wanted


def scanner():
    """The core's line verdict function (bytes -> int), or None when the Python path decides."""
    if mode() == "off":
        return None
    return _module().scan_line  # type: ignore[union-attr]


def mismatch(path: str, line: int, what: str) -> CoreMismatch:
    return CoreMismatch(
        f"{path}:{line}: the native core and the Python path disagree: {what} "
        "(TRAJLINT_CORE=check; this is a bug in trajlint, please report it with this line)"
    )


@cache
def sha256_hex() -> Callable[..., str]:
    """SHA-256 of byte chunks in hex, for fingerprints: the core's when it is on (the process
    then never loads OpenSSL, which hashlib does), hashlib's when off, both under check."""
    from trajlint.findings import sha256_hex as reference

    if mode() == "off":
        return reference
    core = _module().sha256_hex  # type: ignore[union-attr]
    if mode() == "on":
        return core

    def checked(*chunks: bytes) -> str:
        hexed = core(*chunks)
        if hexed != reference(*chunks):
            raise CoreMismatch(f"the native core's SHA-256 of {len(chunks)} chunks differs from hashlib's: {hexed}")
        return hexed

    return checked
