"""trajlint from Python: check rows or files, build a row's trajectory, read the rule catalog.

Every function takes the settings `trajlint check` takes, under the same names, and reads the
configuration file the command would read (`config=` names one, `isolated=True` reads none).
Checking calls the very function the command calls, so the API and the command give the same
findings, summary and exit status for the same input and settings; nothing is written
(no report file, no health report), and nothing is printed.

    import trajlint

    report = trajlint.check_paths(["rollouts/"], select=["TL1"])
    for finding in report.findings:
        print(finding.path, finding.line, finding.code, finding.message)

    report = trajlint.check_rows(rows)          # dicts, or JSON lines as str or bytes
    errors = {f.line for f in report.findings if f.severity == "error"}

    built = trajlint.build_row(row)             # the trajectory and the ownership ledger
    for rule in trajlint.rules(): print(rule.code, rule.name, rule.summary)

A setting that cannot be used (an unknown rule selector, a bad configuration file) raises
`SettingsError`, as the command exits 2 with one line.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from trajlint.findings import Finding, Location, Rollout

__all__ = [
    "Finding",
    "Location",
    "Report",
    "Rollout",
    "Rule",
    "SettingsError",
    "BuiltRow",
    "build_row",
    "check_paths",
    "check_rows",
    "rules",
]

Severity = Literal["error", "warning", "info"]
Runs = Literal["file", "directory", "all"]
Row = Mapping[str, Any] | str | bytes


class SettingsError(ValueError):
    """A setting the command would refuse with exit status 2: a bad configuration file, profile
    or rule selector, or an input that cannot be used. The message is the command's one line."""


@dataclass(frozen=True, slots=True)
class Report:
    """What one check found: what `trajlint check --output-format json` writes, as objects."""

    #: The findings the command lists, in its order (by path, line, pointer, code); each has
    #: `path`, `line` (1-based; 0 is the file as a whole), `code`, `name`, `severity`,
    #: `pointer` (a JSON pointer into the row) and `message`.
    findings: tuple[Finding, ...]
    #: The summary every format shows: counts by severity and rule, rule coverage, files, lines,
    #: rows, the baseline's use, hidden availability findings, health.
    summary: Mapping[str, Any]
    #: The exit status `trajlint check` would end with: 0 clean, 1 findings at or above the fail
    #: level, 2 an internal error.
    exit_code: int
    #: Every input, in reading order (`-` for rows given in memory).
    files: tuple[str, ...] = ()
    _document: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the command would exit 0."""
        return self.exit_code == 0

    @property
    def health(self) -> Mapping[str, Any] | None:
        """The rollout health numbers (NeMo Gym's health check), or None when no health rule ran."""
        health: Mapping[str, Any] | None = self.summary.get("health")
        return health

    def to_dict(self) -> dict[str, Any]:
        """The JSON report document (`schemas/report.schema.json`), as `--output-format json` writes it."""
        import copy

        return copy.deepcopy(dict(self._document))


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule of the catalog, with its severity under the settings it was listed with."""

    code: str
    name: str
    family: str
    severity: str
    default_severity: str
    summary: str
    rationale: str
    #: The rule explained in Markdown, with failing and passing examples (`trajlint rule CODE`).
    docs: str


@dataclass(frozen=True, slots=True)
class BuiltRow:
    """One row's canonical trajectory and its ownership ledger, as `trajlint build` writes them."""

    trajectory: dict[str, Any]
    #: Who claims which model call: what `trajlint build` writes under `trajlint.ledger`.
    ledger: dict[str, Any]
    #: Evidence left out of the build, by JSON pointer, because it contradicted itself.
    excluded: tuple[str, ...]
    #: The rollout the row records, when its keys determine it.
    rollout: Rollout | None


def check_paths(
    paths: str | Sequence[str] = (),
    *,
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    profile: str | None = None,
    runs: Runs | None = None,
    run_groups: Sequence[str] = (),
    fail_level: Severity | None = None,
    config: str | None = None,
    isolated: bool = False,
    baseline: str | None = None,
    show_availability: bool | None = None,
    max_row_bytes: int | None = None,
    jobs: int | None = None,
    file_kind: str | None = None,
    exit_zero: bool = False,
    cache: bool = False,
    cache_dir: str | None = None,
) -> Report:
    """Check files, directories or globs (default: the working directory), as `trajlint check`.

    `select`, `extend_select` and `ignore` take selectors (codes like `TL104`, prefixes like
    `TL1`, names, `ALL`); `runs` and `run_groups` say which files run-level rules judge together;
    `fail_level` decides `exit_code`. `cache=True` reuses the result cache the command uses
    (`cache_dir`, else the configuration's or `.trajlint_cache`); off by default, since a
    program calling trajlint may not expect it to write beside its data.
    """
    return _check(
        (paths,) if isinstance(paths, str) else tuple(paths),
        None,
        locals(),
    )


def check_rows(
    rows: Iterable[Row],
    *,
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    profile: str | None = None,
    fail_level: Severity | None = None,
    config: str | None = None,
    isolated: bool = False,
    baseline: str | None = None,
    show_availability: bool | None = None,
    max_row_bytes: int | None = None,
    jobs: int | None = None,
    file_kind: str | None = None,
    exit_zero: bool = False,
) -> Report:
    """Check rows held in memory, as `trajlint check -` checks them piped in: one run, its file
    named `-`, and row *n* of `rows` (from 1) on line *n*.

    Each row is a mapping (written as JSON) or one JSON line as `str` or `bytes`; a line that is
    not valid JSON is reported as the command reports it. `rows` is read lazily, once.
    """
    settings = dict(locals())
    del settings["rows"]
    return _check(("-",), io.BufferedReader(_RowStream(rows), 1 << 20), settings)


def build_row(row: Row) -> BuiltRow:
    """One row's canonical trajectory and ownership ledger (what `trajlint build` writes for it).

    Raises `ValueError` when the row is not a JSON object.
    """
    from trajlint.builder import build
    from trajlint.read import ParseError, parse

    value: object = row
    if isinstance(row, (str, bytes)):
        value = parse(row.encode("utf-8", "surrogatepass") if isinstance(row, str) else row)
        if isinstance(value, ParseError):
            raise ValueError(f"the row is not valid JSON: {value.message}")
    if not isinstance(value, Mapping):
        raise ValueError(f"a row is a JSON object, not {type(value).__name__}")
    built = build(dict(value))
    return BuiltRow(
        trajectory=built.trajectory,
        ledger=built.ledger.to_dict(),
        excluded=tuple(built.evidence.excluded),
        rollout=built.identity,
    )


def rules(
    *,
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    profile: str | None = None,
    config: str | None = None,
    isolated: bool = False,
) -> list[Rule]:
    """The rules a check with these settings runs, in code order, with their docs. With no
    settings and no configuration file (`isolated=True`), the rules a default check runs."""
    from trajlint.cli import execute
    from trajlint.report import rule_doc

    options = _lint_options((), locals())
    try:
        _, _, specs, _ = execute._lint_setup(options, {})
    except _click_errors() as exc:
        raise SettingsError(_message(exc)) from None
    return [
        Rule(
            code=spec.code,
            name=spec.name,
            family=spec.entry.family,
            severity=spec.severity,
            default_severity=spec.entry.severity,
            summary=spec.entry.summary,
            rationale=spec.entry.rationale,
            docs=rule_doc.explain(spec, "text"),
        )
        for spec in sorted(specs.values(), key=lambda s: s.code)
    ]


# -- internals ------------------------------------------------------------------------------


def _lint_options(paths: tuple[str, ...], given: Mapping[str, Any]) -> Any:
    from trajlint.cli.execute import LintOptions

    def tupled(value: Any) -> tuple[str, ...]:
        return (value,) if isinstance(value, str) else tuple(value or ())

    return LintOptions(
        paths=paths,
        config_file=given.get("config"),
        isolated=given.get("isolated", False),
        select=tupled(given.get("select")),
        extend_select=tupled(given.get("extend_select")),
        ignore=tupled(given.get("ignore")),
        profile=given.get("profile"),
        max_row_bytes=given.get("max_row_bytes"),
        jobs=given.get("jobs"),
        runs=given.get("runs"),
        run_group=tupled(given.get("run_groups")),
        file_kind=given.get("file_kind"),
        no_cache=not given.get("cache", False),
        cache_dir=given.get("cache_dir"),
    )


def _check(paths: tuple[str, ...], stdin: Any, given: Mapping[str, Any]) -> Report:
    from trajlint.cli import execute
    from trajlint.report.document import document

    request = execute.CheckRequest(
        _lint_options(paths, given),
        outputs=[],
        fail_level=given.get("fail_level"),
        exit_zero=given.get("exit_zero", False),
        show_availability=given.get("show_availability"),
        baseline=given.get("baseline"),
        stdin=stdin,
    )
    try:
        done = execute.checked(request)
    except _click_errors() as exc:
        raise SettingsError(_message(exc)) from None
    report = done.report
    return Report(
        findings=tuple(report.findings),
        summary=report.summary,
        exit_code=done.exit_status,
        files=tuple(report.files),
        _document=document(report),
    )


def _click_errors() -> tuple[type[BaseException], ...]:
    import click

    return (click.ClickException, click.exceptions.Exit)


def _message(exc: BaseException) -> str:
    import click

    if isinstance(exc, click.ClickException):
        return exc.format_message()
    return str(exc)


class _RowStream(io.RawIOBase):
    """Rows as the bytes of a JSONL stream, produced as they are read."""

    def __init__(self, rows: Iterable[Row]):
        self._rows: Iterator[Row] = iter(rows)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            row = next(self._rows, None)
            if row is None:
                return 0
            self._pending = _line(row)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _line(row: Row) -> bytes:
    if isinstance(row, bytes):
        line = row
    elif isinstance(row, str):
        line = row.encode("utf-8", "surrogateescape")
    else:
        import orjson

        line = orjson.dumps(row)
    return line if line.endswith(b"\n") else line + b"\n"
