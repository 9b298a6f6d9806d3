"""The output formats by name, and the `FORMAT[:PATH]` spelling of an output.

Formats are imported only when used, so a run pays for the formats it writes and nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from trajlint.report.document import Report

Renderer = Callable[[Report], Iterator[str]]

class Format(NamedTuple):
    """What a format is and where it lives (imported when used)."""

    module: str
    function: str
    #: Statistics in this format are a JSON list, not a text table.
    json: bool = False
    #: With `$GITHUB_STEP_SUMMARY` set, the run's markdown summary is appended to it too.
    step_summary: bool = False
    #: The report shows sampled rows with their builds (`Report.samples`), read after the run.
    samples: bool = False


# The one table of formats: the CLI's choices and help are read from it.
FORMATS: dict[str, Format] = {
    "full": Format("trajlint.report.text", "render_full"),
    "concise": Format("trajlint.report.text", "render_concise"),
    "json": Format("trajlint.report.json", "render", json=True),
    "jsonl": Format("trajlint.report.jsonl", "render", json=True),
    "sarif": Format("trajlint.report.sarif", "render"),
    "github": Format("trajlint.report.github", "render", step_summary=True),
    "junit": Format("trajlint.report.junit", "render"),
    "gitlab": Format("trajlint.report.gitlab", "render"),
    "html": Format("trajlint.report.html", "render", samples=True),
}
ALIASES = {"text": "full"}
NAMES: tuple[str, ...] = (*FORMATS, *ALIASES)
DEFAULT = "full"


def names_help() -> str:
    """The formats as the CLI's help lists them: `full (default; alias text), concise, ...`."""
    aliases = {target: alias for alias, target in ALIASES.items()}
    words = [
        name + (f" ({'default; ' if name == DEFAULT else ''}alias {aliases[name]})" if name in aliases else "")
        for name in FORMATS
    ]
    return ", ".join(words[:-1]) + " or " + words[-1]


def renderer(name: str) -> Renderer:
    spec = FORMATS[ALIASES.get(name, name)]
    return getattr(importlib.import_module(spec.module), spec.function)


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

        return stats.render_json if name is not None and FORMATS[name].json else stats.render_text
    if name is None:
        return None
    return _summary_only if quiet else renderer(name)
