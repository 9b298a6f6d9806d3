"""The click commands: each fills a request from its options and calls one function of `execute`.

Heavy modules are imported inside the commands so that `trajlint --help` starts fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from trajlint import __version__
from trajlint.check.kinds import CHOICES as FILE_KINDS
from trajlint.cli.signals import guarded as _guarded
from trajlint.findings import SEVERITIES
from trajlint.report import formats


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
            "--exclude",
            multiple=True,
            metavar="PATTERNS",
            help="Files and directories a directory search leaves out: gitignore-style patterns, "
            "comma-separated, repeatable; replaces the default list (.git, .venv, node_modules, build, "
            "dist, caches...).",
        ),
        click.option(
            "--extend-exclude", multiple=True, metavar="PATTERNS", help="Leave these out as well as `exclude`."
        ),
        click.option(
            "--include",
            multiple=True,
            metavar="PATTERNS",
            help="The files a directory search reads. [default: *.jsonl, *.jsonl.gz, *.jsonl.zst]",
        ),
        click.option(
            "--extend-include", multiple=True, metavar="PATTERNS", help="Read these as well, e.g. '*.ndjson'."
        ),
        click.option(
            "--respect-gitignore/--no-respect-gitignore",
            default=None,
            help="Leave out what .gitignore files and .git/info/exclude ignore. [default: respect]",
        ),
        click.option(
            "--force-exclude/--no-force-exclude",
            default=None,
            help="Apply the excludes to paths named on the command line too (for pre-commit, which "
            "names every staged file).",
        ),
        click.option(
            "--stdin-filename",
            metavar="PATH",
            help="The name standard input's rows carry in reports, baselines and per-file ignores, "
            "and that --force-exclude matches.",
        ),
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
            "--runs",
            type=click.Choice(["file", "directory", "all"]),
            help="Which input files run-level rules (duplicate identities, task health, the health report) "
            "judge together: each file on its own, as NeMo Gym's health check counts runs; the files of one "
            "directory; or all inputs. [default: file]",
        ),
        click.option(
            "--run-group",
            multiple=True,
            metavar="GLOB",
            help="Input files matching GLOB form one run (shards of one collection); repeatable.",
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
        click.option(
            "--executor",
            type=click.Choice(["local", "ray"]),
            help="Where units of input are checked: processes on this machine (--jobs), or tasks on a Ray "
            "cluster, whose workers read the files (a shared file system) or objects (URLs) themselves "
            "(--jobs then does not apply: the cluster's CPUs do). The report is the same either way. "
            "[default: local]",
        ),
        click.option(
            "--ray-address",
            metavar="ADDRESS",
            help="The Ray cluster for --executor ray (e.g. ray://head:10001 or head:6379). "
            "[default: RAY_ADDRESS, else a Ray started on this machine]",
        ),
        click.option(
            "--file-kind",
            type=click.Choice(FILE_KINDS),
            help="Check every input as this kind of file instead of recognising each one by its name "
            "and first rows (materialized inputs, reward profiles and task datasets are not linted as "
            "rollouts); `rollouts` lints them all as rollouts. [default: auto]",
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            help="Check every file, reading and writing no cached result (also TRAJLINT_NO_CACHE=1).",
        ),
        click.option(
            "--cache-dir",
            metavar="DIR",
            help="Keep cached results here (also TRAJLINT_CACHE_DIR, `cache-dir`). "
            "[default: .trajlint_cache in the project root]",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn

def _lint(options: dict[str, Any]) -> Any:
    from trajlint.cli.execute import LintOptions

    return LintOptions(**options)


@main.command()
@_lint_options
@click.option(
    "--output-format",
    "outputs",
    multiple=True,
    metavar="FORMAT[:PATH]",
    callback=_outputs,
    help=f"{formats.names_help()}. Repeat to write several reports in one run; FORMAT:PATH writes "
    "that one to a file. At most one goes to standard output.",
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
    help="Show how many findings each rule produced instead of the findings themselves: a table in "
    "full and concise, a JSON list in json, one object a line in jsonl (other formats refuse it).",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print the findings only: no summary line, no notes or progress on standard error (as ruff's -q).",
)
@click.option(
    "-s",
    "--silent",
    is_flag=True,
    help="Print nothing but errors; the exit status tells the result. Reports named with FORMAT:PATH "
    "are still written.",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the full and concise text on standard output. auto: on a terminal, unless NO_COLOR "
    "is set (FORCE_COLOR forces it).",
)
@click.option(
    "--show-availability",
    is_flag=True,
    help="Also list availability findings: observation gaps that only say which evidence the producer "
    "cannot observe. Without it they are counted in the summary but not listed, and never set the exit status.",
)
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
    silent: bool,
    color: str,
    show_availability: bool,
    show_files: bool,
    baseline: str | None,
    health_report: str | None,
    **options: Any,
) -> None:
    """Lint rollout files.

    PATHS are files, directories (searched recursively for *.jsonl, *.jsonl.gz, *.jsonl.zst),
    globs, or - for standard input; a *.json file named here holds one row. URLs (s3://bucket/run/,
    gs://, az://, and other fsspec URLs, globs too) are read from object storage. Default: the
    current directory.
    """
    from trajlint.cli import execute

    request = execute.CheckRequest(
        _lint({**options, "paths": paths}),
        outputs,
        output_file=output_file,
        fail_level=fail_level,
        exit_zero=exit_zero,
        statistics=statistics,
        quiet=quiet,
        silent=silent,
        color=color,
        show_availability=show_availability,
        show_files=show_files,
        baseline=baseline,
        health_report=health_report,
    )
    sys.exit(execute.check(request))


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
    from trajlint.cli import execute

    sys.exit(execute.record_baseline(_lint(options), output))


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
    from trajlint.cli import execute

    sys.exit(execute.build(paths, output, trajectory_only, max_row_bytes))


@main.command()
@click.argument("target", metavar="FILE:LINE | FILE")
@click.option("--rollout", metavar="ID", help="Show the row of this rollout (its rollout id, or TASK/ROLLOUT) instead of a line.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--max-row-bytes",
    type=click.IntRange(min=1),
    help="Lines longer than this are not read. [default: 268435456]",
)
@_guarded
def show(target: str, rollout: str | None, output_format: str, max_row_bytes: int | None) -> None:
    """Show one row's built trajectory and ownership ledger.

    FILE:LINE names the row by its line; with --rollout, FILE is searched for the row of that
    rollout. The text is a tree (coloured on a terminal); `--output-format json` gives the built
    trajectory, the ledger and the tree for tools. A row that cannot be shown (no such line,
    not JSON, not a rollout row) is one line on standard error, exit 2.
    """
    from trajlint.cli import execute

    sys.exit(execute.show(target, rollout, output_format, max_row_bytes))


@main.command()
@click.argument("name", required=False)
@click.option("--list", "list_", is_flag=True, help="List the packaged schemas.")
@click.option(
    "--write",
    is_flag=True,
    help="Regenerate schemas/ from the typed contract (in a source checkout).",
)
@click.option(
    "--bundle",
    is_flag=True,
    help="Print the schema as one standalone document: the schemas it refers to copied into its "
    "$defs, no $ref to another file, for validators and editors without trajlint's files "
    "(check-jsonschema --schemafile).",
)
@_guarded
def schema(name: str | None, list_: bool, write: bool, bundle: bool) -> None:
    """Print a packaged JSON Schema (default: the rollout row), or regenerate them all."""
    from trajlint.cli.signals import Failure
    from trajlint.contract import schemas

    if write:
        from trajlint.contract import generate as schemagen
        from trajlint.contract.data import checkout_dir

        root = checkout_dir()
        if root is None:
            raise Failure(
                "--write regenerates schemas/ in a source checkout, and this trajlint is installed "
                "from a wheel; in a clone, install it with `pip install -e .` and run it there"
            )
        for path in schemagen.write(root / "schemas"):
            click.echo(f"wrote {path.relative_to(root)}")
        return
    if list_:
        for schema_name in schemas.names():
            click.echo(schema_name)
        return
    try:
        document = (schemas.bundle if bundle else schemas.load)(name or "rollout-row")
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
    from trajlint.report import rule_doc

    click.echo(rule_doc.listing(load_rules().values(), output_format), nl=False)


@main.command()
@click.argument("rule")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_guarded
def rule(rule: str, output_format: str) -> None:
    """Explain one rule (by code or name), with its failing and passing examples."""
    import difflib

    from trajlint.check.registry import load_rules
    from trajlint.report import rule_doc

    specs = load_rules()
    match = next((s for s in specs.values() if rule in (s.code, s.name)), None)
    if match is None:
        match = next((s for s in specs.values() if rule.upper() == s.code or rule.lower() == s.name), None)
    if match is None:
        words = [word for s in specs.values() for word in (s.code, s.name)]
        close = difflib.get_close_matches(rule.upper() if rule[:2].lower() == "tl" else rule.lower(), words, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "see `trajlint rules`"
        raise click.BadParameter(f"no rule {rule!r}; {hint}", param_hint="RULE")
    click.echo(rule_doc.explain(match, output_format), nl=False)
