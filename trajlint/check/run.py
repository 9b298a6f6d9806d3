"""One run of the check stage: plan the units of input, check them here or in workers, absorb
their results in input order, and finish with the run-level rules."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

from trajlint.check import parallel
from trajlint.check.engine import Coverage, Engine, Result
from trajlint.check.registry import INTERNAL_ERROR, RuleSpec
from trajlint.check.rule import RowObserver
from trajlint.read import Source, Unreadable


def run(
    sources: Iterable[Source | Unreadable],
    rules: dict[str, RuleSpec],
    *,
    max_row_bytes: int,
    observers: Sequence[RowObserver] = (),
    jobs: int = 1,
) -> Result:
    """Check everything `sources` yields; `observers` see each row's findings.

    Files are cut into shards (`read.shards`) and checked by `jobs` processes; the result is
    the same for every number of jobs, down to the order of findings.
    """
    internal = next((r for r in rules.values() if r.name == INTERNAL_ERROR), None)
    engine = Engine([r for r in rules.values() if r.impl.check or r.impl.reduction], internal, observers)
    if internal is not None:
        engine.result.coverage[internal.code] = Coverage(internal.name)
    units = parallel.plan_units(sources, jobs)
    lines_before = 0  # of the unit's file, when the unit is a later shard of it
    # Closed on the way out, whatever ends the loop, so that workers never outlive it.
    with contextlib.closing(parallel.check_units(engine.checker, units, max_row_bytes, jobs)) as checked:
        for unit, parts in checked:
            if isinstance(unit, Unreadable) or unit.first_shard:
                lines_before = 0
            for part in parts:
                engine.absorb(part, lines_before)
                lines_before += part.physical_lines
    return engine.finish()
