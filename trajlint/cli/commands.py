"""The click commands: options in, one call per stage, an exit status out.

Heavy modules are imported inside the commands so that `trajlint --help` starts fast.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from trajlint import __version__
from trajlint.cli.exit import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, exit_status
from trajlint.cli.signals import Failure
from trajlint.cli.signals import guarded as _guarded
from trajlint.findings import SEVERITIES


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="trajlint")
def main() -> None:
    """Build, validate and lint NeMo Gym rollout trajectories.

    trajlint reads rollout JSONL (.jsonl, .jsonl.gz, .jsonl.zst, or - for standard input),
    checks every row against the NeMo Gym data contract and reports each problem as a finding
    with file, line and JSON pointer. Exit status: 0 clean, 1 findings, 2 usage or internal error.
    """


def _outputs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[Any]:
    from trajlint.report.formats import DEFAULT, Output

    try:
        return [Output.parse(value) for value in values] or [Output(DEFAULT)]
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _sources(paths: tuple[str, ...]) -> list[Any]:
    """The inputs, expanded, with paths in normal form (`./a/../b.jsonl` is `b.jsonl`), so one
    file is always spelled the same in reports and in baseline keys."""
    import dataclasses
    import os

    from trajlint.read import iter_sources

    return [
        # normpath("") is ".", which exists: an empty argument is reported as itself
        source if source.path in ("-", "") else dataclasses.replace(source, path=os.path.normpath(source.path))
        for source in iter_sources(list(paths) or ["."])
    ]


def _lint_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that lints: configuration, rule selection, limits."""
    options = [
        click.argument("paths", nargs=-1),
        click.option(
            "--config",
            "config_file",
            metavar="PATH",
            help="Use this configuration file (pyproject.toml or trajlint.toml) instead of the nearest one.",
        ),
        click.option("--isolated", is_flag=True, help="Ignore every configuration file."),
        click.option(
            "--select",
            multiple=True,
            metavar="SELECTORS",
            help="Run only these rules: codes (TL104), code prefixes (TL1), names "
            "(trajectory-schema) or ALL; comma-separated, repeatable.",
        ),
        click.option("--extend-select", multiple=True, metavar="SELECTORS", help="Run these rules as well."),
        click.option("--ignore", multiple=True, metavar="SELECTORS", help="Do not run these rules."),
        click.option(
            "--profile",
            metavar="NAME",
            help="Severity profile: latest (default) or nemo-gym-0.7 (what NeMo Gym 0.7.0 accepts).",
        ),
        click.option(
            "--max-row-bytes",
            type=click.IntRange(min=1),
            help="Lines longer than this are reported (row-too-large) and skipped, never loaded. "
            "[default: 268435456]",
        ),
        click.option(
            "-j",
            "--jobs",
            type=click.IntRange(min=0),
            metavar="N",
            help="Check with N processes; large files are cut into shards at line ends, and "
            "compressed files and standard input are read here and handed out in batches of lines. "
            "The report is the same for every N. [default: 0, one per usable core]",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _run(run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    from trajlint.check.parallel import WorkerLost

    try:
        return run(*args, **kwargs)
    except WorkerLost as exc:
        raise Failure(str(exc)) from None


def _jobs(settings: dict[str, Any]) -> int:
    from trajlint.check.parallel import usable_cores

    return settings["jobs"].value or usable_cores()


def _lint_setup(
    options: dict[str, Any], overrides: dict[str, Any]
) -> tuple[Any, dict[str, Any], dict[str, Any], list[Any]]:
    """(configuration file, resolved settings, the rules this run uses, per-file ignores).

    A bad configuration file, profile or rule selector ends the command here with exit 2,
    before anything is read.
    """
    from trajlint.check import select as selection
    from trajlint.check.registry import load_rules
    from trajlint.cli import config

    if options["isolated"] and options["config_file"]:
        raise click.UsageError("--isolated reads no configuration file; leave out --config")
    if options["profile"] is not None and options["profile"] not in selection.PROFILES:
        raise click.BadParameter(
            f"{options['profile']!r} is not one of {', '.join(selection.PROFILES)}", param_hint="--profile"
        )
    cli = {
        key: selection.split(options[key.replace("-", "_")]) if options[key.replace("-", "_")] else None
        for key in ("select", "extend-select", "ignore")
    }
    try:
        found = config.find(options["config_file"], isolated=options["isolated"])
        settings = config.resolve(
            found, {"profile": options["profile"], "max-row-bytes": options["max_row_bytes"], "jobs": options["jobs"], **overrides}
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
    if options.get("show_settings"):
        for line in config.show(found, settings, cli):
            click.echo(line)
        click.echo(f"rules = {len(rules)} selected")
        for row in selection.describe(rules):
            click.echo(f"  {row['code']}  {row['name']:<28} {row['severity']}")
        sys.exit(EXIT_CLEAN)
    return found, settings, rules, ignores


@main.command()
@_lint_options
@click.option(
    "--output-format",
    "outputs",
    multiple=True,
    metavar="FORMAT[:PATH]",
    callback=_outputs,
    help="full (default; alias text), concise, json, jsonl, sarif, github or junit. Repeat to "
    "write several reports in one run; FORMAT:PATH writes that one to a file. At most one "
    "goes to standard output.",
)
@click.option(
    "-o",
    "--output-file",
    metavar="PATH",
    help="Write the report that would go to standard output to this file instead.",
)
@click.option(
    "--fail-level",
    type=click.Choice(SEVERITIES),
    help="Exit 1 when a finding is at or above this severity. [default: error]",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings (an internal error still exits 2).")
@click.option(
    "--statistics",
    is_flag=True,
    help="Show how many findings each rule produced instead of the findings themselves.",
)
@click.option("-q", "--quiet", is_flag=True, help="Show only the summary on standard output (files are unchanged).")
@click.option(
    "--baseline",
    metavar="FILE",
    help="Leave out the findings recorded in this baseline file (see `trajlint baseline`).",
)
@click.option(
    "--health-report",
    metavar="DIR",
    help="Also write NeMo Gym's rollout health report (quality_summary.json, rollout_verdicts.jsonl) "
    "into DIR, created if missing.",
)
@click.option("--show-files", is_flag=True, help="List the files that would be checked, and exit.")
@click.option("--show-settings", is_flag=True, help="Show the resolved configuration and the selected rules, and exit.")
@_guarded
def check(
    paths: tuple[str, ...],
    outputs: list[Any],
    output_file: str | None,
    fail_level: str | None,
    exit_zero: bool,
    statistics: bool,
    quiet: bool,
    show_files: bool,
    baseline: str | None,
    health_report: str | None,
    **options: Any,
) -> None:
    """Lint rollout files.

    PATHS are files, directories (searched recursively for *.jsonl, *.jsonl.gz, *.jsonl.zst),
    globs, or - for standard input; a *.json file named here holds one row. Default: the
    current directory.
    """
    import dataclasses
    import os

    from trajlint.check import select as selection
    from trajlint.check.run import run
    from trajlint.read import Unreadable
    from trajlint.report import document, formats, health
    from trajlint.report import write as report_outputs
    from trajlint.report.baseline import Baseline, BaselineError

    _, settings, rules, ignores = _lint_setup(options, {"fail-level": fail_level, "baseline": baseline})
    try:
        known = Baseline.load(settings["baseline"].value) if settings["baseline"].value else None
    except BaselineError as exc:
        raise Failure(str(exc)) from None
    if output_file is not None:
        outputs = [dataclasses.replace(o, path=output_file) if o.path is None else o for o in outputs]
    sources = _sources(paths)
    inputs = [source.path for source in sources]
    if show_files:
        from trajlint.report.context import displayable

        for source in sources:
            if isinstance(source, Unreadable):
                click.echo(f"trajlint: warning: {source.path}: {source.reason}", err=True)
            else:
                click.echo(displayable(source.path))
        return
    problem = report_outputs.problem(outputs, inputs)
    if problem is None and health_report is not None:
        problem = health.report_problem(health_report, inputs)
    if problem:
        raise click.UsageError(problem)

    result = _run(
        run,
        sources,
        rules,
        max_row_bytes=settings["max-row-bytes"].value,
        jobs=_jobs(settings),
        health_report=health_report is not None,
    )
    health_summary = result.health.summary if result.health else None
    findings = selection.drop_ignored(result.findings, ignores)
    baseline_use = None
    if known is not None:
        findings, baseline_use = known.apply(findings)
    report = document.build(
        result,
        rules.values(),
        findings=findings,
        files=inputs,
        root=os.getcwd(),
        baseline=baseline_use,
        health=health.report_numbers(health_summary) if health_summary else None,
    )
    if health_report is not None:
        try:
            health.write_report(health_report, result.health)
        except OSError as exc:
            raise Failure(f"cannot write the health report into {health_report}: {exc.strerror or exc}") from None

    stdout_format = next((o.format for o in outputs if o.path is None), None)
    console = formats.console(stdout_format, statistics=statistics, quiet=quiet)
    if console is not None and stdout_format is None:
        outputs = [*outputs, formats.Output("concise")]
    for output in outputs:
        try:
            report_outputs.write(report, output, sys.stdout, console if output.path is None else None)
        except BrokenPipeError:
            raise  # the reader went away: `_guarded` ends quietly
        except OSError as exc:  # a full disk, or standard output on one
            raise Failure(f"cannot write {output.path or 'standard output'}: {exc.strerror or exc}") from None
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary and any(o.format == "github" for o in outputs):
        try:
            report_outputs.append_step_summary(report, step_summary)
        except OSError as exc:
            click.echo(f"trajlint: warning: cannot write the step summary {step_summary}: {exc}", err=True)
    if console is None:
        click.echo(text_summary(report), err=True)
    if result.files == 0 and not result.findings:
        click.echo("trajlint: warning: no rollout files found under the given paths", err=True)
    if baseline_use and baseline_use["stale"]:
        stale = baseline_use["stale"]
        click.echo(
            f"trajlint: {stale:,} stale baseline {'entry' if stale == 1 else 'entries'} in "
            f"{baseline_use['path']}: recorded findings that no longer occur; "
            f"`trajlint baseline -o {baseline_use['path']}` rewrites it",
            err=True,
        )
    if result.internal_errors:
        click.echo(f"trajlint: {internal_error_line(result.findings, result.internal_errors)}", err=True)
    sys.exit(
        exit_status(
            report.findings,
            fail_level=settings["fail-level"].value,
            internal_errors=result.internal_errors,
            exit_zero=exit_zero,
        )
    )


@main.command("baseline")
@_lint_options
@click.option(
    "-o",
    "--output",
    "--output-file",
    "output",
    metavar="PATH",
    help="The baseline file to write. [default: the configuration's `baseline`, else "
    ".trajlint-baseline.json]",
)
@_guarded
def baseline_command(output: str | None, **options: Any) -> None:
    """Record today's findings, so that `trajlint check --baseline FILE` reports only new ones.

    Entries are keyed on rollout identity (or file and fingerprint), rule and JSON pointer, never
    on line numbers, and carry counts. Selection, configuration and per-file ignores apply as
    they do for `trajlint check`.
    """
    from trajlint.check import select as selection
    from trajlint.check.run import run
    from trajlint.report import baseline, formats
    from trajlint.report import write as report_outputs

    _, settings, rules, ignores = _lint_setup(options, {})
    path = output or settings["baseline"].value or baseline.DEFAULT_PATH
    sources = _sources(options["paths"])
    problem = report_outputs.problem([formats.Output("json", path)], [s.path for s in sources])
    if problem:
        raise click.UsageError(problem)
    result = _run(run, sources, rules, max_row_bytes=settings["max-row-bytes"].value, jobs=_jobs(settings))
    if result.internal_errors:
        raise Failure(f"{internal_error_line(result.findings, result.internal_errors)}; {path} was not written")
    document = baseline.record(selection.drop_ignored(result.findings, ignores))
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


@main.command("build")
@click.argument("paths", nargs=-1)
@click.option(
    "-o", "--output", "--output-file", "output", metavar="FILE", help="Write the rows to FILE instead of standard output."
)
@click.option("--trajectory-only", is_flag=True, help="Write only each row's built trajectory.")
@click.option(
    "--max-row-bytes",
    type=click.IntRange(min=1),
    help="Lines longer than this are reported (row-too-large) and skipped. [default: 268435456]",
)
@_guarded
def build_command(paths: tuple[str, ...], output: str | None, trajectory_only: bool, max_row_bytes: int | None) -> None:
    """Write every row with its built trajectory and ownership ledger, as JSONL.

    Each parseable row comes out with `ng_trajectory` replaced by the build and a `trajlint` key
    holding the ledger. Lines that cannot be built are reported on standard error and left out:
    exit 0 when every line was built, 1 otherwise, 2 on an internal error.
    """
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
        raise  # the reader went away: `_guarded` ends quietly
    except OSError as exc:  # reading never raises (it reports); this is the output failing
        raise Failure(f"cannot write {output or 'standard output'}: {exc.strerror or exc}") from None
    for finding in result.failures:
        click.echo(finding_line(finding), err=True)
    if result.internal_errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.failures else EXIT_CLEAN)


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


@main.command()
@click.argument("name", required=False)
@click.option("--list", "list_", is_flag=True, help="List the packaged schemas.")
@click.option(
    "--write",
    is_flag=True,
    help="Regenerate schemas/ from the typed contract (in a source checkout).",
)
@_guarded
def schema(name: str | None, list_: bool, write: bool) -> None:
    """Print a packaged JSON Schema (default: the rollout row), or regenerate them all."""
    from trajlint.contract import schemas

    if write:
        from trajlint.contract import generate as schemagen
        from trajlint.contract.data import checkout_dir

        root = checkout_dir()
        if root is None:
            raise click.ClickException("--write needs a source checkout of trajlint")
        for path in schemagen.write(root / "schemas"):
            click.echo(f"wrote {path.relative_to(root)}")
        return
    if list_:
        for schema_name in schemas.names():
            click.echo(schema_name)
        return
    try:
        document = schemas.load(name or "rollout-row")
    except (KeyError, FileNotFoundError):
        raise click.BadParameter(
            f"unknown schema {name!r}; choose from {', '.join(schemas.names())}", param_hint="NAME"
        ) from None
    import json

    click.echo(json.dumps(document, indent=2, ensure_ascii=False))


@main.command()
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_guarded
def rules(output_format: str) -> None:
    """List every rule: code, name, default severity, summary."""
    from trajlint.check.registry import load_rules

    specs = load_rules()
    if output_format == "json":
        import json

        click.echo(json.dumps([_rule_dict(s.entry, full=False) for s in specs.values()], indent=2))
        return
    width = max(len(spec.name) for spec in specs.values())
    for spec in specs.values():
        click.echo(f"{spec.code}  {spec.name:<{width}}  {spec.severity:<8} {spec.entry.summary}")


@main.command()
@click.argument("rule")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_guarded
def rule(rule: str, output_format: str) -> None:
    """Explain one rule (by code or name), with its failing and passing examples."""
    from trajlint.check.registry import load_rules

    specs = load_rules()
    match = next((s for s in specs.values() if rule in (s.code, s.name)), None)
    if match is None:
        raise click.BadParameter(f"no rule {rule!r}; see `trajlint rules`", param_hint="RULE")
    entry = match.entry
    if output_format == "json":
        import json

        click.echo(json.dumps({**_rule_dict(entry, full=True), **_implemented(match)}, indent=2, ensure_ascii=False))
        return
    click.echo(f"# {entry.name} ({entry.code})\n")
    from trajlint.check.select import PROFILES

    by_profile = ", ".join(f"{name} {table.get(entry.name, entry.severity)}" for name, table in PROFILES.items())
    click.echo(f"Family: {entry.family} · Default severity: {entry.severity} · By profile: {by_profile}")
    implemented = _implemented(match)
    reads = ", ".join(implemented["reads"]) or "nothing of a row (the engine reports it)"
    click.echo(f"Reads: {reads} · Implemented in: {implemented['module']}\n")
    click.echo(f"## What it checks\n\n{entry.summary}\n")
    click.echo(f"## Why\n\n{entry.rationale}\n")
    for example in entry.examples:
        title = "Fails" if example.expect == "fail" else "Passes"
        click.echo(f"## {title}: {example.description}\n")
        body = "(the file does not exist)" if example.missing else example.jsonl.rstrip("\n")
        click.echo(f"```jsonl\n{body}\n```\n")


def _implemented(spec: Any) -> dict[str, Any]:
    """What a rule reads (a row lacking it leaves the rule unobserved) and the file that registers it."""
    module = spec.impl.module
    reads = sorted(spec.impl.reads)
    check = getattr(spec.impl.check, "check", None)  # a NeMo Gym health check's rule
    if check is not None and check.find is not None:
        module = check.find.__module__
        reads += [f"health: {evidence}" for evidence in check.reads]
    return {"reads": reads, "module": module.replace(".", "/") + ".py" if module else ""}


def _rule_dict(entry: Any, *, full: bool) -> dict[str, Any]:
    data = {
        "code": entry.code,
        "name": entry.name,
        "family": entry.family,
        "severity": entry.severity,
        "summary": entry.summary,
    }
    if full:
        data["rationale"] = entry.rationale
        data["examples"] = [
            {"expect": e.expect, "description": e.description, "jsonl": e.jsonl, "missing": e.missing}
            for e in entry.examples
        ]
    return data
