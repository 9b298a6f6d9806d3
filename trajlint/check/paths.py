"""Globs in the configuration that name input files (`per-file-ignores`, `file-kinds`)."""

from __future__ import annotations

import fnmatch
import os

from trajlint.read.remote import is_url


def path_matches(pattern: str, base: str, path: str) -> bool:
    """Whether `pattern`, relative to the directory `base`, names the input `path`.

    As in ruff, a pattern without a "/" names a file wherever it is; standard input ("-") and
    files outside `base` are never named. An input named by URL is matched by the URL itself.
    """
    if path == "-":
        return False
    if is_url(path):
        # An object is named by a glob of its URL (`s3://bucket/legacy/**`), or by its name.
        return fnmatch.fnmatchcase(path, pattern) or (
            "/" not in pattern and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
        )
    relative = os.path.relpath(os.path.abspath(path), base).replace(os.sep, "/")
    if relative.startswith("../"):
        return False
    pattern = pattern.removeprefix("./")
    if fnmatch.fnmatchcase(relative, pattern):
        return True
    if pattern.startswith("**/") and fnmatch.fnmatchcase(relative, pattern[3:]):
        return True
    return "/" not in pattern and fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], pattern)
