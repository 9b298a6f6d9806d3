"""The output formats by name, and the `FORMAT[:PATH]` spelling of an output.

Formats are imported only when used, so a run pays for the formats it writes and nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from trajlint.report.context import Report

Renderer = Callable[[Report], Iterator[str]]

# name -> (module, function): what each format is and where it lives.
_RENDERERS: dict[str, tuple[str, str]] = {
    "full": ("trajlint.report.text", "render_full"),
    "concise": ("trajlint.report.text", "render_concise"),
    "json": ("trajlint.report.json", "render"),
    "jsonl": ("trajlint.report.jsonl", "render"),
    "sarif": ("trajlint.report.sarif", "render"),
    "github": ("trajlint.report.github", "render"),
    "junit": ("trajlint.report.junit", "render"),
}
ALIASES = {"text": "full"}
NAMES: tuple[str, ...] = (*_RENDERERS, *ALIASES)
DEFAULT = "full"


def renderer(name: str) -> Renderer:
    module, function = _RENDERERS[ALIASES.get(name, name)]
    return getattr(importlib.import_module(module), function)


@dataclass(frozen=True, slots=True)
class Output:
    """One report to write: a format and a file, or standard output when `path` is None."""

    format: str
    path: str | None = None

    @classmethod
    def parse(cls, spec: str) -> Output:
        """`json` or `sarif:out/trajlint.sarif`; raises ValueError naming the formats."""
        name, sep, path = spec.partition(":")
        name = name.strip().lower()
        if name not in NAMES:
            raise ValueError(f"unknown output format {name!r}; choose from {', '.join(NAMES)}")
        if sep and not path:
            raise ValueError(f"{spec!r} names no file after the colon")
        return cls(ALIASES.get(name, name), path or None)


def _summary_only(report: Report) -> Iterator[str]:
    from trajlint.report.text import summary_line

    yield summary_line(report.summary) + "\n"


def console(name: str | None, *, statistics: bool = False, quiet: bool = False) -> Renderer | None:
    """What standard output shows for the format sent there (None: no format was).

    `--statistics` replaces the report with counts by rule (a JSON list for the JSON formats);
    `--quiet` replaces it with the summary line. Reports written to files are never changed.
    """
    if statistics:
        from trajlint.report import statistics as stats

        return stats.render_json if name in ("json", "jsonl") else stats.render_text
    if name is None:
        return None
    return _summary_only if quiet else renderer(name)
