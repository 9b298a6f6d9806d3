"""Where the packaged JSON Schemas and the rule catalog live.

An installed wheel carries them as ``trajlint/data/{schemas,rules}``; a source checkout (and an
editable install) keeps them at the top of the repository. Both layouts are looked up here so no
other module needs to know which one it runs from.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # the trajlint package


@cache
def _data_dir(name: str) -> Path:
    for candidate in (_PACKAGE / "data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"trajlint's packaged {name}/ directory is missing; reinstall trajlint")


def schemas_dir() -> Path:
    return _data_dir("schemas")


def rules_dir() -> Path:
    return _data_dir("rules")


def checkout_dir() -> Path | None:
    """The source checkout this package runs from, if any (where `schema --write` writes)."""
    root = _PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "schemas").is_dir() else None
