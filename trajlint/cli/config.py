"""Configuration: `[tool.trajlint]` in `pyproject.toml`, or the top level of `trajlint.toml`.

The nearest file walking up from the working directory wins (in one directory `trajlint.toml`
before `pyproject.toml`; a `pyproject.toml` without `[tool.trajlint]` is passed over), as ruff
finds its configuration. `--config PATH` names the file and `--isolated` reads none. Options on
the command line override the file. A bad file is one clear line naming the file and the key,
and exit status 2: a gate that silently ignores a typo in its configuration gates nothing.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajlint.check.kinds import AUTO, CHOICES
from trajlint.check.select import DEFAULT_PROFILE, PROFILES
from trajlint.findings import SEVERITIES
from trajlint.read import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, DEFAULT_MAX_ROW_BYTES

DEFAULT_FAIL_LEVEL = "error"

PYPROJECT = "pyproject.toml"
TRAJLINT_TOML = "trajlint.toml"

_LISTS = ("select", "extend-select", "ignore")
#: File selection, as ruff's keys of the same names: lists of gitignore-style patterns.
PATTERN_LISTS = ("include", "extend-include", "exclude", "extend-exclude")
_FLAGS = ("show-availability", "respect-gitignore", "force-exclude")
KEYS = (
    *_LISTS,
    *PATTERN_LISTS,
    "respect-gitignore",
    "force-exclude",
    "severity",
    "per-file-ignores",
    "profile",
    "fail-level",
    "max-row-bytes",
    "jobs",
    "baseline",
    "show-availability",
    "runs",
    "run-groups",
    "file-kind",
    "file-kinds",
    "cache-dir",
    "executor",
    "ray-address",
)
EXECUTORS = ("local", "ray")
RUN_MODES = ("file", "directory", "all")


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message is one line naming file and key."""


@dataclass(frozen=True, slots=True)
class FileConfig:
    """The settings one file holds, checked for type and value (rule selectors are checked
    against the rules later, with this file and key named in the error)."""

    path: Path | None = None
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.path is None:
            return "(none)"
        return f"{self.path} [tool.trajlint]" if self.path.name == PYPROJECT else str(self.path)

    def where(self, key: str) -> str:
        """How an error names the place of `key`: the file and the key."""
        return f"{self.label}: {key}"

    @property
    def directory(self) -> str:
        """What relative paths and globs in the file are relative to."""
        return str(self.path.parent) if self.path is not None else os.getcwd()


def _table(path: Path) -> dict[str, Any] | None:
    """The trajlint settings in `path`; None for a pyproject.toml without `[tool.trajlint]`."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and inline tables
        raise ConfigError(f"{path}: not valid TOML: arrays or tables nested too deeply to read") from None
    if path.name != PYPROJECT:
        return data
    table = data.get("tool", {}).get("trajlint") if isinstance(data.get("tool"), dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.trajlint] must be a table")
    return table


def discover(start: Path) -> Path | None:
    """The nearest configuration file at or above `start`."""
    for directory in (start, *start.parents):
        candidate = directory / TRAJLINT_TOML
        if candidate.is_file():
            return candidate
        candidate = directory / PYPROJECT
        if candidate.is_file() and _table(candidate) is not None:
            return candidate
    return None


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _check(key: str, value: Any) -> str | None:
    """What is wrong with `value` for `key`, or None."""
    if key in _LISTS:
        return None if _strings(value) else "must be a list of rule selectors (strings)"
    if key == "severity":
        if not isinstance(value, dict):
            return 'must be a table of rule selector = "error" | "warning" | "info"'
        bad = next((k for k, v in value.items() if v not in SEVERITIES), None)
        return None if bad is None else f"{bad!r} must be one of {', '.join(SEVERITIES)}, not {value[bad]!r}"
    if key == "per-file-ignores":
        if not isinstance(value, dict):
            return "must be a table of glob = [rule selectors]"
        bad = next((k for k, v in value.items() if not _strings(v)), None)
        return None if bad is None else f"{bad!r} must be a list of rule selectors (strings)"
    if key == "profile":
        ok = isinstance(value, str) and value in PROFILES  # `in` a dict hashes: a list would raise
        return None if ok else f"must be one of {', '.join(PROFILES)}, not {value!r}"
    if key == "fail-level":
        return None if value in SEVERITIES else f"must be one of {', '.join(SEVERITIES)}, not {value!r}"
    if key == "max-row-bytes":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        return None if ok else f"must be a positive integer (bytes), not {value!r}"
    if key == "jobs":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return None if ok else f"must be a number of processes (0: one per usable core), not {value!r}"
    if key == "baseline":
        return None if isinstance(value, str) and value else "must be the path of a baseline file"
    if key == "cache-dir":
        return None if isinstance(value, str) and value else "must be the path of a directory"
    if key == "runs":
        ok = isinstance(value, str) and value in RUN_MODES
        return None if ok else f"must be one of {', '.join(RUN_MODES)}, not {value!r}"
    if key == "run-groups":
        return None if _strings(value) else "must be a list of globs (strings)"
    if key in PATTERN_LISTS:
        return None if _strings(value) else "must be a list of gitignore-style patterns (strings)"
    if key in _FLAGS:
        return None if isinstance(value, bool) else f"must be true or false, not {value!r}"
    if key == "file-kind":
        ok = isinstance(value, str) and value in CHOICES
        return None if ok else f"must be one of {', '.join(CHOICES)}, not {value!r}"
    if key == "file-kinds":
        if not isinstance(value, dict):
            return f"must be a table of glob = {' | '.join(CHOICES)}"
        bad = next((k for k, v in value.items() if not (isinstance(v, str) and v in CHOICES)), None)
        return None if bad is None else f"{bad!r} must be one of {', '.join(CHOICES)}, not {value[bad]!r}"
    if key == "executor":
        ok = isinstance(value, str) and value in EXECUTORS
        return None if ok else f"must be one of {', '.join(EXECUTORS)}, not {value!r}"
    if key == "ray-address":
        return None if isinstance(value, str) and value else "must be the address of a Ray cluster (a string)"
    raise AssertionError(key)


def load(path: Path) -> FileConfig:
    """Read and check one configuration file."""
    table = _table(path)
    config = FileConfig(path.resolve(), {})
    if table is None:
        return config
    for key, value in table.items():
        if key not in KEYS:
            close = difflib.get_close_matches(key.replace("_", "-"), KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(KEYS)}"
            raise ConfigError(f"{config.where(key)}: unknown key{hint}")
        problem = _check(key, value)
        if problem:
            raise ConfigError(f"{config.where(key)}: {problem}")
    values = dict(table)
    for key in ("baseline", "cache-dir"):  # relative to the file's directory
        if key in values:
            values[key] = os.path.join(config.directory, values[key])
    return FileConfig(config.path, values)


def find(explicit: str | None = None, *, isolated: bool = False, start: Path | None = None) -> FileConfig:
    """The configuration this run uses: the named file, none, or the nearest one."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"{explicit}: no such configuration file")
        return load(path)
    if isolated:
        return FileConfig()
    found = discover((start or Path.cwd()).resolve())
    return load(found) if found is not None else FileConfig()


@dataclass(frozen=True, slots=True)
class Setting:
    value: Any
    #: Where the value came from: "default", the file, or the option.
    origin: str


def resolve(config: FileConfig, overrides: Mapping[str, Any]) -> dict[str, Setting]:
    """Every key's value: an option given on the command line, else the file's, else the default.

    The selection keys are not merged here: the file's and the command line's are separate
    layers (see `trajlint.check.select`), so both are kept, the file's under its own key.
    """
    defaults = {
        "severity": {},
        "per-file-ignores": {},
        "profile": DEFAULT_PROFILE,
        "fail-level": DEFAULT_FAIL_LEVEL,
        "max-row-bytes": DEFAULT_MAX_ROW_BYTES,
        "jobs": 0,
        "baseline": None,
        "runs": "file",
        "run-groups": [],
        "show-availability": False,
        "include": list(DEFAULT_INCLUDE),
        "extend-include": [],
        "exclude": list(DEFAULT_EXCLUDE),
        "extend-exclude": [],
        "respect-gitignore": True,
        "force-exclude": False,
        "file-kind": AUTO,
        "file-kinds": {},
        "cache-dir": None,
        "executor": "local",
        "ray-address": None,
    }
    settings: dict[str, Setting] = {}
    for key, default in defaults.items():
        if overrides.get(key) is not None:
            settings[key] = Setting(overrides[key], f"--{key}")
        elif key in config.values:
            settings[key] = Setting(config.values[key], str(config.path))
        else:
            settings[key] = Setting(default, "default")
    return settings


def _toml(value: Any) -> str:
    """A value as TOML, so `--show-settings` output can be pasted back into a file."""
    import json
    import re

    if value is None:
        return "(none)"
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = (
            f"{k if re.fullmatch(r'[A-Za-z0-9_-]+', k) else json.dumps(k)} = {_toml(v)}" for k, v in value.items()
        )
        return "{ " + ", ".join(items) + " }"
    return json.dumps(value, ensure_ascii=False)


def show(config: FileConfig, settings: Mapping[str, Setting], selections: Mapping[str, Any]) -> list[str]:
    """The resolved configuration as `key = value  # origin` lines.

    `selections` holds the command line's select, extend-select and ignore (None: not given);
    the file's come from `config`. Both are shown, since they are applied one after the other.
    """
    lines = [f"config file: {config.label}"]
    for key in _LISTS:
        shown = False
        if key in config.values:
            lines.append(f"{key} = {_toml(config.values[key])}  # {config.path}")
            shown = True
        if selections.get(key) is not None:
            lines.append(f"{key} = {_toml(list(selections[key]))}  # --{key}")
            shown = True
        if not shown:
            lines.append(f"{key} = {_toml(['ALL'] if key == 'select' else [])}  # default")
    for key, setting in settings.items():
        lines.append(f"{key} = {_toml(setting.value)}  # {setting.origin}")
    return lines
