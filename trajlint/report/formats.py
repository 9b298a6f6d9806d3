"""The output formats by name, and the `FORMAT[:PATH]` spelling of an output.

Formats are imported only when used, so a run pays for the formats it writes and nothing else.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    # Only named: the command line reads the table of formats for its help without loading the
    # report document (and the read stage under it).
    from trajlint.report.document import Report

Renderer = Callable[["Report"], Iterator[str]]

class Format(NamedTuple):
    """What a format is and where it lives (imported when used)."""

    module: str
    function: str
    #: How `--statistics` is shown in this format: a renderer in `report.statistics`, or None
    #: when the format has no place for it (a SARIF log or a JUnit file is not a table of counts).
    statistics: str | None = None
    #: With `$GITHUB_STEP_SUMMARY` set, the run's markdown summary is appended to it too.
    step_summary: bool = False
    #: The report shows sampled rows with their builds (`Report.samples`), read after the run.
    samples: bool = False
    #: Human text: ends with the summary line (`--quiet` leaves it out) and may be coloured.
    text: bool = False


# The one table of formats: the CLI's choices and help are read from it.
FORMATS: dict[str, Format] = {
    "full": Format("trajlint.report.text", "render_full", statistics="render_text", text=True),
    "concise": Format("trajlint.report.text", "render_concise", statistics="render_text", text=True),
    "json": Format("trajlint.report.json", "render", statistics="render_json"),
    "jsonl": Format("trajlint.report.jsonl", "render", statistics="render_jsonl"),
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


def statistics_problem(name: str | None) -> str | None:
    """Why `--statistics` cannot be shown in the format sent to standard output, or None."""
    if name is None or FORMATS[name].statistics is not None:
        return None
    shown = ", ".join(n for n, f in FORMATS.items() if f.statistics is not None)
    return f"--statistics has no {name} form; use it with {shown} (reports written to files stay whole)"


def console(name: str | None, *, statistics: bool = False, quiet: bool = False, color: bool = False) -> Renderer | None:
    """What standard output shows for the format sent there (None: no format was).

    `--statistics` replaces the report with counts by rule, in the format's own form;
    `--quiet` leaves the summary line out of a text format (as ruff's does: findings only);
    `color` paints a text format. Reports written to files are never changed.
    """
    if statistics:
        from trajlint.report import statistics as stats

        return getattr(stats, FORMATS[name].statistics if name is not None else "render_text")
    if name is None:
        return None
    if FORMATS[name].text:
        return functools.partial(renderer(name), summary=not quiet, color=color)
    return renderer(name)
