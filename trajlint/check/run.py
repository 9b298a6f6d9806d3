"""One run of the check stage: decide each input's kind, plan the units of input, check them here
or in workers, absorb their results in input order, and finish with the run-level rules and each
run's health.

Run-level rules (duplicate identities, task repeats, rollout health) judge the rows of one *run*
together. NeMo Gym's health check takes one file per run, and its aggregator numbers the tasks
of separate runs from 0 each, so by default every input file is a run of its own. Shards of one
collection are one run: `RunPlan` groups files by directory, into one run, or by glob.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from trajlint.check import kinds, parallel
from trajlint.check.engine import Coverage, Engine, Result, UnitResult
from trajlint.check.executor import Executor, LocalPool
from trajlint.check.registry import INTERNAL_ERROR, RuleSpec
from trajlint.health.verdicts import health_runs
from trajlint.read import Source, Unreadable

RUN_MODES = ("file", "directory", "all")


@dataclass(frozen=True, slots=True)
class RunPlan:
    """How input files group into runs: `mode` for every file, unless it matches one of `groups`
    (globs), which makes every file it matches one run named after the glob."""

    mode: str = "file"
    groups: tuple[str, ...] = ()

    def run_of(self, path: str) -> str:
        for pattern in self.groups:
            if fnmatch.fnmatch(path, pattern):
                return pattern
        if self.mode == "directory":
            return os.path.dirname(path) or "."
        if self.mode == "all":
            return "all inputs"
        return path


def run(
    sources: Iterable[Source | Unreadable],
    rules: dict[str, RuleSpec],
    *,
    max_row_bytes: int,
    jobs: int = 1,
    health_report: bool = False,
    runs: RunPlan = RunPlan(),
    file_kinds: kinds.Given | None = None,
    progress: Callable[[Any, UnitResult | None], None] | None = None,
    executor: Executor | None = None,
) -> Result:
    """Check everything `sources` yields with `rules`.

    Each file's kind is decided first, here, from its name and first lines (`file_kinds` holds
    the kinds the user gave); rules check the files of the kinds they name. Files are cut into
    shards (`read.shards`) and checked by `jobs` processes, or by `executor` (a Ray cluster,
    say); the result is the same for every number of jobs and every executor, down to the
    order of findings. When a health rule runs, or `health_report`
    asks for NeMo Gym's report, each run's health (`result.health`) judges the rows of its rollout
    files; with `health_report` it keeps the verdict rows for `report.health.write_report`.
    `progress`, when given, hears of each part of a unit as it is absorbed and of the unit's end
    (with None); it only watches.
    """
    planned = kinds.plan(list(sources), max_row_bytes, file_kinds)
    paths_of: dict[str, list[str]] = {}  # the rollout files of each run
    for source, kind in planned:
        if kind.kind == kinds.ROLLOUTS:
            paths_of.setdefault(runs.run_of(source.path), []).append(source.path)
    health = health_runs(rules.values(), report=health_report)
    internal = next((r for r in rules.values() if r.name == INTERNAL_ERROR), None)
    engine = Engine(
        [r for r in rules.values() if r.impl.check or r.impl.reduction or r.impl.observed],
        internal,
        digesters=[health.digester()] if health is not None else [],
        observers_for=(lambda name: [health.for_run(paths_of[name])] if name in paths_of else []) if health else None,
        run_of=runs.run_of,
    )
    if internal is not None:
        engine.result.coverage[internal.code] = Coverage(internal.name)
    executor = executor if executor is not None else LocalPool(jobs)
    units = parallel.plan_units(planned, executor.workers())
    lines_before = 0  # of the unit's file, when the unit is a later shard of it
    # Closed on the way out, whatever ends the loop, so that workers never outlive it.
    with contextlib.closing(executor.check_units(engine.checker, units, max_row_bytes)) as checked:
        for unit, parts in checked:
            if isinstance(unit, Unreadable) or unit.first_shard:
                lines_before = 0
            for part in parts:
                engine.absorb(part, lines_before)
                lines_before += part.physical_lines
                if progress is not None:
                    progress(unit, part)
            if progress is not None:
                progress(unit, None)
    result = engine.finish()
    if health is not None:
        result.health = []
        for name, state in engine.runs.items():
            if state.observers:  # a run of rollout files
                (run_health,) = state.observers
                run_health.finish(result.findings)
                result.health.append((name, run_health))
    return result

