"""What each command does, once its options are read: a request in, an exit status out.

`commands` only fills a request from the command line and calls one function here, so the run
itself can be driven (and tested) without click.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import click

from trajlint.cli.exit import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, exit_status
from trajlint.cli.signals import Failure

#: Set to anything but 0, false or no, no run takes or stores a cached result, as `--no-cache`.
#: Read here, not by the cache: a run without one never imports it (nor hashlib, nor OpenSSL).
ENV_NO_CACHE = "TRAJLINT_NO_CACHE"


@dataclass(frozen=True, slots=True)
class LintOptions:
    """What every command that lints takes: the inputs, the configuration, rule selection, limits."""

    paths: tuple[str, ...] = ()
    config_file: str | None = None
    isolated: bool = False
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    profile: str | None = None
    max_row_bytes: int | None = None
    jobs: int | None = None
    runs: str | None = None
    run_group: tuple[str, ...] = ()
    file_kind: str | None = None
    executor: str | None = None
    ray_address: str | None = None
    show_settings: bool = False
    no_cache: bool = False
    cache_dir: str | None = None
    include: tuple[str, ...] = ()
    extend_include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    stdin_filename: str | None = None


@dataclass(frozen=True, slots=True)
class CheckRequest:
    """`trajlint check`."""

    lint: LintOptions
    outputs: list[Any]
    output_file: str | None = None
    fail_level: str | None = None
    exit_zero: bool = False
    statistics: bool = False
    #: ruff's -q: the findings, without the summary line or notes on standard error.
    quiet: bool = False
    verbose: bool = False
    #: ruff's -s: nothing on standard output or error but a failure; the exit status says it.
    silent: bool = False
    color: str = "auto"
    show_availability: bool | None = None  # None: the configuration's, else off
    show_files: bool = False
    baseline: str | None = None
    health_report: str | None = None
    max_findings_per_run: int | None = None
    #: What `-` reads instead of standard input (the API's rows in memory).
    stdin: Any = None


@dataclass(frozen=True, slots=True)
class Checked:
    """What one `check` found, before anything is written: the report every format renders, the
    check stage's result, how the baseline was used, and the exit status the run ends with."""

    report: Any
    result: Any
    baseline: dict[str, Any] | None
    exit_status: int


@dataclass(frozen=True, slots=True)
class _Setup:
    found: Any
    settings: dict[str, Any]
    rules: dict[str, Any]
    ignores: list[Any]
    known: Any


def _check_setup(r: CheckRequest) -> _Setup:
    found, settings, rules, ignores = _lint_setup(
        r.lint,
        {
            "fail-level": r.fail_level,
            "baseline": r.baseline,
            "show-availability": r.show_availability or None,
            "max-findings-per-run": r.max_findings_per_run,
        },
    )
    if r.verbose:
        click.echo(f"trajlint: {configuration_line(found)}", err=True)
    known = None
    if settings["baseline"].value:
        # Imported only for a run with a baseline to apply.
        from trajlint.report.baseline import Baseline, BaselineError

        try:
            known = Baseline.load(settings["baseline"].value)
        except BaselineError as exc:
            raise Failure(str(exc)) from None
    return _Setup(found, settings, rules, ignores, known)


def checked(r: CheckRequest) -> Checked:
    """Read and check what `r` names and build its report, writing nothing: `check` without the
    outputs (what `trajlint.api` calls)."""
    setup = _check_setup(r)
    sources = _sources(r.lint.paths, r.stdin, _selection(r.lint, setup.found, setup.settings, []))
    _refuse_ignoring_everything(sources, setup.rules, setup.ignores, setup.found)
    return _checked(r, setup, sources)


def _checked(r: CheckRequest, setup: _Setup, sources: list[Any], progress: Any = None) -> Checked:
    import os

    from trajlint.check import select as selection
    from trajlint.report import document, formats

    settings = setup.settings
    result = _check(
        sources,
        setup.rules,
        setup.found,
        settings,
        health_report=r.health_report is not None,
        no_cache=r.lint.no_cache,
        progress=progress,
    )
    findings = selection.drop_ignored(result.findings, setup.ignores)
    baseline_use = None
    if setup.known is not None:
        findings, baseline_use = setup.known.apply(findings)
    # A format that shows rows (the HTML report) gets a bounded sample of them, read again now.
    drilldown = any(formats.FORMATS[o.format].samples for o in r.outputs)
    numbers = grid = None
    if result.health is not None:
        # Only a run that judged the rows' health (a health rule ran, or --health-report).
        from trajlint.report import health

        numbers = health.report_numbers([h.summary for _, h in result.health])
        grid = health.task_grid([(name, h.summary) for name, h in result.health]) if drilldown else None
    report = document.build(
        result,
        setup.rules.values(),
        findings=findings,
        files=[source.path for source in sources],
        root=os.getcwd(),
        baseline=baseline_use,
        health=numbers,
        show_availability=settings["show-availability"].value,
        fail_level=settings["fail-level"].value,
        configuration=str(setup.found.path) if setup.found.path is not None else None,
        max_per_run=settings["max-findings-per-run"].value,
        run_of=_runs(settings).run_of,
        samples=_samples(document.listed(findings, settings["show-availability"].value)[0], settings) if drilldown else (),
        task_grid=grid,
    )
    status = exit_status(
        (),
        failing=document.failing(report, settings["fail-level"].value),
        fail_level=settings["fail-level"].value,
        internal_errors=result.internal_errors,
        exit_zero=r.exit_zero,
    )
    return Checked(report, result, baseline_use, status)


def check(r: CheckRequest) -> int:
    """Read, check, report and write; the exit status."""
    import dataclasses
    import os

    from trajlint.read import Unreadable
    from trajlint.report import formats
    from trajlint.report import write as report_outputs

    setup = _check_setup(r)
    outputs = r.outputs
    if r.output_file is not None:
        outputs = [dataclasses.replace(o, path=r.output_file) if o.path is None else o for o in outputs]
    written = [o.path for o in outputs if o.path is not None]
    if r.health_report is not None:
        # NeMo Gym's health report: its writer only for a run that writes it (every use of
        # `health` below is under the same condition).
        from trajlint.report import health

        written += health.written_files(r.health_report)
    written = [path for path in written if report_outputs.own_output(path)]
    sources = _sources(r.lint.paths, r.stdin, _selection(r.lint, setup.found, setup.settings, written))
    inputs = [source.path for source in sources]
    if r.show_files:
        from trajlint.report.document import displayable

        for source in sources:
            if isinstance(source, Unreadable):
                click.echo(f"trajlint: warning: {source.path}: {source.reason}", err=True)
            else:
                click.echo(displayable(source.path))
        return EXIT_CLEAN
    _refuse_ignoring_everything(sources, setup.rules, setup.ignores, setup.found)
    stdout_format = next((o.format for o in outputs if o.path is None), None)
    problem = report_outputs.problem(outputs, inputs)
    if problem is None and r.health_report is not None:
        problem = health.report_problem(r.health_report, inputs)
    if problem:
        raise click.UsageError(problem)
    if r.statistics and not r.silent:
        refused = formats.statistics_problem(stdout_format)
        if refused:
            raise Failure(refused)
    quiet = r.quiet or r.silent  # what is left out of standard error is the same for both

    from trajlint.cli.progress import Progress

    with Progress.for_run(sources, enabled=not quiet) as progress:
        done = _checked(r, setup, sources, progress)
    report, result, baseline_use = done.report, done.result, done.baseline
    if r.health_report is not None:
        try:
            written = health.write_reports(r.health_report, result.health)
        except OSError as exc:
            raise Failure(f"cannot write the health report into {r.health_report}: {exc.strerror or exc}") from None
        if len(written) > 1 and not quiet:
            click.echo(
                f"trajlint: wrote {len(written):,} health reports into {r.health_report}, one per run, as NeMo "
                "Gym's health check takes one run at a time (--runs and --run-group say which files form a run)",
                err=True,
            )

    if r.silent:
        outputs = [o for o in outputs if o.path is not None]
        console = None
    else:
        color = stdout_format in (None, "full", "concise") and _color(r.color)
        console = formats.console(stdout_format, statistics=r.statistics, quiet=r.quiet, color=color)
        if console is not None and stdout_format is None:
            outputs = [*outputs, formats.Output("concise")]
    for output in outputs:
        try:
            report_outputs.write(report, output, sys.stdout, console if output.path is None else None)
        except BrokenPipeError:
            raise  # the reader went away: `signals.guarded` ends quietly
        except OSError as exc:  # a full disk, or standard output on one
            raise Failure(f"cannot write {output.path or 'standard output'}: {exc.strerror or exc}") from None
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary and any(formats.FORMATS[o.format].step_summary for o in outputs):
        try:
            report_outputs.append_step_summary(report, step_summary)
        except OSError as exc:
            click.echo(f"trajlint: warning: cannot write the step summary {step_summary}: {exc.strerror or exc}", err=True)
    if console is None and not quiet:
        click.echo(text_summary(report), err=True)
    if result.files == 0 and not result.findings and not quiet:
        click.echo("trajlint: warning: no rollout files found under the given paths", err=True)
    if baseline_use and baseline_use["stale"] and not quiet:
        stale = baseline_use["stale"]
        click.echo(
            f"trajlint: {stale:,} stale baseline {'entry' if stale == 1 else 'entries'} in "
            f"{baseline_use['path']}: recorded findings that no longer occur; "
            f"`trajlint baseline -o {baseline_use['path']}` rewrites it",
            err=True,
        )
    if result.internal_errors:
        click.echo(f"trajlint: {internal_error_line(result.findings, result.internal_errors)}", err=True)
    return done.exit_status


def _samples(findings: Any, settings: dict[str, Any]) -> Any:
    """The rows a report lets its reader open, read again now that the run is over."""
    from trajlint.check.samples import collect

    return collect(findings, max_row_bytes=settings["max-row-bytes"].value)


def show(target: str, rollout: str | None, output_format: str, max_row_bytes: int | None) -> int:
    """`trajlint show`: one row's build and ownership ledger; a row that cannot be shown is one
    line on standard error and exit 2."""
    import os

    import orjson

    from trajlint.builder import build as build_row
    from trajlint.builder.view import view
    from trajlint.check import samples
    from trajlint.read import DEFAULT_MAX_ROW_BYTES, ParseError, parse
    from trajlint.report import show as show_report
    from trajlint.report.document import displayable

    limit = max_row_bytes or DEFAULT_MAX_ROW_BYTES
    path, line = target, None
    if rollout is None:
        head, sep, tail = target.rpartition(":")
        if not sep or not tail.isdigit() or int(tail) < 1:
            raise Failure(f"{displayable(target)}: name a row as FILE:LINE (lines count from 1), or give --rollout ID")
        path, line = head, int(tail)
    if path == "-" or not os.path.isfile(path):
        raise Failure(f"{displayable(path)}: no such file")
    name = displayable(path)
    if line is not None:
        raw = samples.read_lines(path, [line], limit).get(line)
        if raw is None:
            raise Failure(f"{name} has no line {line} (or it is blank, or longer than --max-row-bytes)")
    else:
        found = samples.find_rollout(path, rollout, limit)
        if not found:
            raise Failure(f"{name} holds no row of rollout {rollout!r}")
        if len(found) > 1:
            lines = ", ".join(str(n) for n, _ in found[:10])
            click.echo(f"trajlint: {len(found):,} rows of {name} record rollout {rollout!r} (lines {lines}); showing the first", err=True)
        line, raw = found[0]
    value = parse(raw)
    if isinstance(value, ParseError):
        raise Failure(f"{name}:{line}: the line is not valid JSON: {value.message}")
    if not isinstance(value, dict):
        raise Failure(f"{name}:{line}: not a rollout row (a JSON {type(value).__name__ if value is not None else 'null'}, not an object)")
    built = build_row(value)
    described = view(built)
    if output_format == "json":
        document = {
            "path": name,
            "line": line,
            "rollout": built.identity.to_dict() if built.identity is not None else None,
            "trajectory": built.trajectory,
            "ledger": built.ledger.to_dict(),
            "excluded": list(built.evidence.excluded),
            "view": described,
        }
        sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
        sys.stdout.buffer.flush()
        return EXIT_CLEAN
    for text in show_report.render_text(name, line, described):
        click.echo(text)
    return EXIT_CLEAN


def record_baseline(lint: LintOptions, output: str | None, *, force: bool = False) -> int:
    """`trajlint baseline`: record today's findings into the baseline file."""
    from trajlint.check import select as selection
    from trajlint.report import baseline, formats
    from trajlint.report import document as document_module
    from trajlint.report import write as report_outputs

    found, settings, rules, ignores = _lint_setup(lint, {})
    path = output or settings["baseline"].value or baseline.DEFAULT_PATH
    refusal = _baseline_target_problem(path, force)
    if refusal:
        named = "" if output else f" (the `baseline` of {found.label})" if settings["baseline"].value else ""
        raise Failure(f"{path}{named} {refusal}")
    written = [path] if report_outputs.own_output(path) else []
    sources = _sources(lint.paths, selection=_selection(lint, found, settings, written))
    _refuse_ignoring_everything(sources, rules, ignores, found)
    problem = report_outputs.problem([formats.Output("json", path)], [s.path for s in sources])
    if problem:
        raise click.UsageError(problem)
    result = _check(sources, rules, found, settings, no_cache=lint.no_cache)
    if result.internal_errors:
        raise Failure(f"{internal_error_line(result.findings, result.internal_errors)}; {path} was not written")
    # The findings `check` would list with this configuration: a baseline of what it hides
    # would suppress the very findings a later `--show-availability` asks to see.
    listed, _ = document_module.listed(
        selection.drop_ignored(result.findings, ignores), settings["show-availability"].value
    )
    document = baseline.record(listed)
    try:
        report_outputs.write_file(path, [baseline.dumps(document)])
    except OSError as exc:
        raise Failure(f"cannot write {path}: {exc.strerror or exc}") from None
    entries = document["entries"]
    recorded = sum(entry["count"] for entry in entries)
    click.echo(
        f"trajlint: recorded {recorded:,} finding{'' if recorded == 1 else 's'} in {len(entries):,} "
        f"entr{'y' if len(entries) == 1 else 'ies'} to {path}",
        err=True,
    )
    return EXIT_CLEAN


def _baseline_target_problem(path: str, force: bool) -> str | None:
    """Why `trajlint baseline` must not write `path`, or None: it only ever replaces a baseline
    (so a path from a configuration file in a parent directory cannot overwrite any other file),
    and never writes into a FIFO or a device, `--force` or not."""
    import os
    import stat

    from trajlint.report.baseline import Baseline

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be written: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return "is not a regular file; a baseline is written only to a regular file"
    if force or Baseline.is_baseline(path):
        return None
    return "exists and is not a trajlint baseline; pass --force to replace it"


def _refuse_ignoring_everything(sources: list[Any], rules: dict[str, Any], ignores: list[Any], found: Any) -> None:
    """Stop the run (exit 2) when `per-file-ignores` leaves no rule on any file it would check:
    `{"**" = ["ALL"]}` in a parent directory's configuration passes everything, as a selection
    of no rule would."""
    from trajlint.check import select as selection
    from trajlint.report.escape import visible

    blinding = selection.leaving_no_rule([source.path for source in sources], rules, ignores)
    if not blinding:
        return
    patterns = ", ".join(visible(json.dumps(("!" if i.negated else "") + i.pattern, ensure_ascii=False)) for i in blinding)
    files = len({source.path for source in sources})
    raise Failure(
        f"{found.where('per-file-ignores')}: {patterns} leave{'s' if len(blinding) == 1 else ''} no rule to run "
        f"on any of the {files:,} file{'' if files == 1 else 's'} checked, so nothing would be checked "
        "(see --show-settings)"
    )


def configuration_line(found: Any) -> str:
    """Which configuration file is in force, for `--verbose`."""
    if found.path is None:
        return "no configuration file (defaults, and the options given)"
    return f"configuration {found.label}"


def build(paths: tuple[str, ...], output: str | None, trajectory_only: bool, max_row_bytes: int | None) -> int:
    """`trajlint build`: every row with its built trajectory and ledger; the exit status."""
    from trajlint.check.registry import INTERNAL_ERROR, load_rules
    from trajlint.cli.build_job import write_builds
    from trajlint.read import DEFAULT_MAX_ROW_BYTES
    from trajlint.report import formats
    from trajlint.report import write as report_outputs
    from trajlint.report.text import finding_line

    sources = _sources(paths)
    if output is not None:
        problem = report_outputs.problem([formats.Output("jsonl", output)], [s.path for s in sources])
        if problem:
            raise click.UsageError(problem)
    rules = load_rules()
    input_rules = [spec for spec in rules.values() if spec.entry.family == "input"]
    internal = next((spec for spec in rules.values() if spec.name == INTERNAL_ERROR), None)
    try:
        with report_outputs.replacing(output, binary=True) if output is not None else _stdout_bytes() as handle:
            result = write_builds(
                sources,
                input_rules,
                handle,
                internal,
                max_row_bytes=max_row_bytes or DEFAULT_MAX_ROW_BYTES,
                trajectory_only=trajectory_only,
            )
    except BrokenPipeError:
        raise  # the reader went away: `signals.guarded` ends quietly
    except OSError as exc:  # reading never raises (it reports); this is the output failing
        raise Failure(f"cannot write {output or 'standard output'}: {exc.strerror or exc}") from None
    for finding in result.failures:
        click.echo(finding_line(finding), err=True)
    if result.internal_errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if result.failures else EXIT_CLEAN




def _sources(paths: tuple[str, ...], stdin: Any = None, selection: Any = None) -> list[Any]:
    """The inputs, expanded, with paths in normal form (`./a/../b.jsonl` is `b.jsonl`), so one
    file is always spelled the same in reports and in baseline keys.

    A named input that is not there ends the run (exit 2) before anything is read, whatever
    rules are selected: a gate must not pass because the file it was asked to check is missing.
    """
    import dataclasses
    import os

    from trajlint.read import Selection, Unreadable, iter_sources, missing
    from trajlint.read.remote import is_url

    if selection is None:
        selection = Selection(root=os.getcwd())
    # As ruff: a name for standard input and no paths means standard input.
    named = list(paths) or (["-"] if selection.stdin_filename is not None else ["."])
    absent = missing(named)
    if absent is not None:
        raise Failure(absent)
    stdin_name = selection.stdin_filename
    sources = []
    for source in iter_sources(named, stdin=stdin, selection=selection):
        if is_url(source.path):
            # A store that cannot be listed, or a URL that names nothing, says nothing about the
            # data: the run stops before it reports on less than was asked for.
            if isinstance(source, Unreadable):
                raise Failure(f"{source.path}: {source.reason}")
        elif source.path not in ("-", "", stdin_name):  # normpath("") is ".", which exists
            source = dataclasses.replace(source, path=_normal(source.path))
        sources.append(source)
    return sources


def _normal(path: str) -> str:
    import os

    normal = os.path.normpath(path)
    # A file named `-` (given as `./-`) stays a file: `-` alone means standard input.
    return os.path.join(".", normal) if normal == "-" else normal


def _selection(options: LintOptions, found: Any, settings: dict[str, Any], written: list[str]) -> Any:
    """Which files a directory search reads (and, with `force-exclude`, which named ones):
    the configuration's and the command line's patterns, relative to the configuration's
    directory (the working directory when there is none), as ruff's are."""
    from trajlint.read import Selection

    def patterns(key: str) -> tuple[str, ...]:
        return tuple(settings[key].value) + tuple(settings[f"extend-{key}"].value)

    return Selection(
        root=found.directory,
        include=patterns("include"),
        exclude=patterns("exclude"),
        respect_gitignore=settings["respect-gitignore"].value,
        force_exclude=settings["force-exclude"].value,
        stdin_filename=options.stdin_filename,
        written=tuple(written),
    )



def _color(choice: str) -> bool:
    """Whether standard output is painted: `--color always|never`, else NO_COLOR and FORCE_COLOR
    (https://no-color.org, https://force-color.org), else whether it is a terminal."""
    import os

    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


def _check(
    sources: list[Any],
    rules: dict[str, Any],
    found: Any,
    settings: dict[str, Any],
    *,
    health_report: bool = False,
    no_cache: bool = False,
    progress: Any = None,
) -> Any:
    """The check stage's run with this invocation's settings; a lost worker is one line, exit 2."""
    from trajlint.check.executor import UnitFailed
    from trajlint.check.parallel import WorkerLost
    from trajlint.read import native

    executor = None
    if settings["executor"].value == "ray":
        from trajlint.check.ray_executor import RayExecutor, RayUnavailable

        executor = RayExecutor(settings["ray-address"].value)
    try:
        # A TRAJLINT_CORE this installation cannot honour ends the run before it starts; check
        # mode is there to run both paths, so it never takes a result from the cache.
        no_cache = native.mode() == "check" or no_cache or _cache_off_by_environment()
        options: dict[str, Any] = {
            "max_row_bytes": settings["max-row-bytes"].value,
            "jobs": _jobs(settings),
            "health_report": health_report,
            "runs": _runs(settings),
            "file_kinds": _file_kinds(found, settings),
            "progress": progress,
            "executor": executor,
        }
        if no_cache:
            # What `cached_run` does without a cache, without loading the cache (and hashlib).
            from trajlint.check.run import run

            with _young_objects_collected():
                return run(sources, rules, **options)
        from trajlint.check.cache import cached_run

        with _young_objects_collected():
            return cached_run(sources, rules, cache=_cache(found, settings), **options)
    except (WorkerLost, UnitFailed, native.CoreError, native.CoreMismatch) as exc:
        raise Failure(str(exc)) from None
    except Exception as exc:
        if executor is not None and isinstance(exc, RayUnavailable):
            raise Failure(str(exc)) from None
        raise
    finally:
        if executor is not None:
            executor.close()


@contextlib.contextmanager
def _young_objects_collected() -> Iterator[None]:
    """While the run lasts, what this process made before it (modules, rules, compiled schemas)
    is frozen out of the cyclic collector, so that full collections do not walk it again and
    again, and young objects are collected in larger batches. A row's objects are nearly all
    freed by their reference counts; the collections spent about 1.5% of a run's instructions
    walking the rest. Workers forked meanwhile inherit both. (Undone after the run, for a
    process that goes on: a test, a program calling the CLI.)"""
    import gc

    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _cache_off_by_environment() -> bool:
    return os.environ.get(ENV_NO_CACHE, "").strip().lower() not in ("", "0", "false", "no")


def _cache(found: Any, settings: dict[str, Any]) -> Any:
    """The result cache (`--cache-dir`, `TRAJLINT_CACHE_DIR`, `cache-dir`, `.trajlint_cache` in
    the project root)."""
    from trajlint.check import cache

    setting = settings["cache-dir"]
    given = setting.value if setting.origin.startswith("--") else None
    configured = setting.value if given is None else None
    root = str(found.path.parent) if found.path is not None else None
    return cache.ResultCache(cache.resolve_directory(given, configured, root))


def _runs(settings: dict[str, Any]) -> Any:
    from trajlint.check.run import RunPlan

    return RunPlan(settings["runs"].value, tuple(settings["run-groups"].value))


def _file_kinds(found: Any, settings: dict[str, Any]) -> Any:
    """The kinds of file the user gave (`--file-kind`, `file-kind`, `file-kinds`), with where each
    came from as a finding names it."""
    from trajlint.check.kinds import Given

    def origin(key: str) -> str:
        setting = settings[key]
        if setting.origin.startswith("--"):
            return f"`{setting.origin}`"
        return f"`{key}` in {found.path.name if found.path is not None else 'the configuration'}"

    return Given(
        every=settings["file-kind"].value,
        every_origin=origin("file-kind"),
        patterns=tuple(settings["file-kinds"].value.items()),
        base=found.directory,
        patterns_origin=origin("file-kinds"),
    )


def _jobs(settings: dict[str, Any]) -> int:
    from trajlint.check.parallel import usable_cores

    return settings["jobs"].value or usable_cores()


def _lint_setup(
    options: LintOptions, overrides: dict[str, Any]
) -> tuple[Any, dict[str, Any], dict[str, Any], list[Any]]:
    """(configuration file, resolved settings, the rules this run uses, per-file ignores).

    A bad configuration file, profile or rule selector ends the command here with exit 2,
    before anything is read.
    """
    from trajlint.check import select as selection
    from trajlint.check.registry import INTERNAL_ERROR, load_rules
    from trajlint.cli import config

    if options.isolated and options.config_file:
        raise click.UsageError("--isolated reads no configuration file; leave out --config")
    if options.profile is not None and options.profile not in selection.PROFILES:
        raise click.BadParameter(
            f"{options.profile!r} is not one of {', '.join(selection.PROFILES)}", param_hint="--profile"
        )
    cli = {
        key: selection.split(getattr(options, key.replace("-", "_"))) if getattr(options, key.replace("-", "_")) else None
        for key in ("select", "extend-select", "ignore")
    }
    try:
        found = config.find(options.config_file, isolated=options.isolated)
        settings = config.resolve(
            found,
            {
                "profile": options.profile,
                "max-row-bytes": options.max_row_bytes,
                "jobs": options.jobs,
                "runs": options.runs,
                "run-groups": list(options.run_group) or None,
                "file-kind": options.file_kind,
                "cache-dir": options.cache_dir,
                "include": _patterns(options.include),
                "exclude": _patterns(options.exclude),
                # extend-* add to the configuration's, as --extend-select does
                "extend-include": _extended(found, "extend-include", options.extend_include),
                "extend-exclude": _extended(found, "extend-exclude", options.extend_exclude),
                "respect-gitignore": options.respect_gitignore,
                "force-exclude": options.force_exclude,
                "executor": options.executor,
                "ray-address": options.ray_address,
                **overrides,
            },
        )
        every_rule = load_rules()
        layers = [
            selection.Layer(
                select=found.values.get("select"),
                extend_select=found.values.get("extend-select", ()),
                ignore=found.values.get("ignore", ()),
                origin={key: found.where(key) for key in ("select", "extend-select", "ignore")},
            ),
            selection.Layer(cli["select"], cli["extend-select"] or (), cli["ignore"] or ()),
        ]
        rules = selection.rule_set(
            every_rule,
            layers,
            profile=settings["profile"].value,
            severity=settings["severity"].value,
            severity_origin=found.where("severity"),
        )
        ignores = [
            selection.FileIgnore.parse(pattern, selectors, every_rule, found.directory, found.where("per-file-ignores"))
            for pattern, selectors in settings["per-file-ignores"].value.items()
        ]
    except (config.ConfigError, selection.SelectorError) as exc:
        raise Failure(str(exc)) from None
    if not options.show_settings and all(spec.name == INTERNAL_ERROR for spec in rules.values()):
        # A gate that checks nothing passes everything: a `select` or `ignore` that leaves no
        # rule (an `ignore = ["ALL"]` in a parent directory's pyproject.toml) is an error.
        raise Failure(f"no rule is selected, so nothing would be checked ({configuration_line(found)}; see --show-settings)")
    if options.show_settings:
        for line in config.show(found, settings, cli):
            click.echo(line)
        click.echo(f"rules = {len(rules)} selected")
        for row in selection.describe(rules):
            click.echo(f"  {row['code']}  {row['name']:<28} {row['severity']}")
        raise click.exceptions.Exit(EXIT_CLEAN)
    return found, settings, rules, ignores



def _patterns(values: tuple[str, ...]) -> list[str] | None:
    """Comma-separated, repeatable pattern options as one list (None: not given; `--exclude ''`
    is an empty list, which turns the default excludes off)."""
    items = [item.strip() for value in values for item in value.split(",") if item.strip()]
    return items if values else None


def _extended(found: Any, key: str, values: tuple[str, ...]) -> list[str] | None:
    given = _patterns(values)
    return None if given is None else [*found.values.get(key, []), *given]


@contextlib.contextmanager
def _stdout_bytes() -> Iterator[Any]:
    try:
        yield sys.stdout.buffer
    finally:
        sys.stdout.buffer.flush()


def internal_error_line(findings: list[Any], count: int) -> str:
    """One line for standard error: the first internal error, which names its rule and row and
    asks for a report, and how many more there were."""
    first = next((f for f in findings if f.name == "internal-error"), None)
    if first is None:
        text = "a rule raised while checking; this is a bug in trajlint, please report it"
    else:
        where = f"{first.path}:{first.line}" if first.line else first.path
        text = f"{where}: " + " ".join(first.message.split())  # an exception's message may span lines
    more = f" ({count - 1:,} more)" if count > 1 else ""
    return f"internal error: {text}{more}"


def text_summary(report: Any) -> str:
    from trajlint.report.text import summary_line

    return summary_line(report.summary)


