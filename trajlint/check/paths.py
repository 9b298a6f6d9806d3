"""Globs in the configuration that name input files (`per-file-ignores`, `file-kinds`)."""

from __future__ import annotations

import fnmatch
import os


def path_matches(pattern: str, base: str, path: str) -> bool:
    """Whether `pattern`, relative to the directory `base`, names the input `path`.

    As in ruff, a pattern without a "/" names a file wherever it is; standard input ("-") and
    files outside `base` are never named.
    """
    if path == "-":
        return False
    relative = os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")
    if relative.startswith("../"):
        return False
    pattern = pattern.removeprefix("./")
    if fnmatch.fnmatchcase(relative, pattern):
        return True
    if pattern.startswith("**/") and fnmatch.fnmatchcase(relative, pattern[3:]):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], pattern)
