"""One run of the check stage: decide each input's kind, plan the units of input, check them here
or in workers, absorb their results in input order, and finish with the run-level rules and the
run's health."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from trajlint.check import kinds, parallel
from trajlint.check.engine import Coverage, Engine, Result
from trajlint.check.registry import INTERNAL_ERROR, RuleSpec
from trajlint.health.verdicts import health_run
from trajlint.read import Source, Unreadable


def run(
    sources: Iterable[Source | Unreadable],
    rules: dict[str, RuleSpec],
    *,
    max_row_bytes: int,
    jobs: int = 1,
    health_report: bool = False,
    file_kinds: kinds.Given | None = None,
) -> Result:
    """Check everything `sources` yields with `rules`.

    Each file's kind is decided first, here, from its name and first lines (`file_kinds` holds
    the kinds the user gave); rules check the files of the kinds they name. Files are cut into
    shards (`read.shards`) and checked by `jobs` processes; the result is the same for every
    number of jobs, down to the order of findings. When a health rule runs, or `health_report`
    asks for NeMo Gym's report, the run's health (`result.health`) judges every row of a rollout
    file; with `health_report` it keeps the verdict rows for `report.health.write_report`.
    """
    planned = kinds.plan(list(sources), max_row_bytes, file_kinds)
    rollout_files = [source.path for source, kind in planned if kind.kind == kinds.ROLLOUTS]
    health = health_run(rules.values(), rollout_files, report=health_report)
    internal = next((r for r in rules.values() if r.name == INTERNAL_ERROR), None)
    engine = Engine(
        [r for r in rules.values() if r.impl.check or r.impl.reduction or r.impl.observed],
        internal,
        [health] if health is not None else [],
    )
    if internal is not None:
        engine.result.coverage[internal.code] = Coverage(internal.name)
    units = parallel.plan_units(planned, jobs)
    lines_before = 0  # of the unit's file, when the unit is a later shard of it
    # Closed on the way out, whatever ends the loop, so that workers never outlive it.
    with contextlib.closing(parallel.check_units(engine.checker, units, max_row_bytes, jobs)) as checked:
        for unit, parts in checked:
            if isinstance(unit, Unreadable) or unit.first_shard:
                lines_before = 0
            for part in parts:
                engine.absorb(part, lines_before)
                lines_before += part.physical_lines
    result = engine.finish()
    if health is not None:
        judged = set(rollout_files)
        health.finish([finding for finding in result.findings if finding.path in judged])
        result.health = health
    return result
