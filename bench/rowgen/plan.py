"""What each line of a generated file holds: the mix of a real run, repeats per task, defects.

A run is a sequence of tasks, each rolled out several times (`_ng_rollout_index` 0..R-1) by one
agent. Row kinds, harnesses and dialects come in fixed proportions; about a third of the rows are
in the collector's persisted shape. Defective lines are chosen at `defect_rate`, cycling through
every defect kind so that even a small file has each of them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from . import defects
from .rows import HARNESSES, RowSpec
from .text import Text

# (kind, source) -> share of tasks.
MIX = (
    (("harness", "claude_code"), 0.14),
    (("harness", "codex"), 0.10),
    (("harness", "hermes"), 0.10),
    (("harness", "pi"), 0.10),
    (("harness", "openclaw"), 0.06),
    (("simple", "simple_agent"), 0.30),
    (("capture_only", "tau2"), 0.20),
)
PERSISTED_SHARE = 0.3
_REPEATS = (1, 2, 3, 4, 5, 6, 8)
_REPEAT_WEIGHTS = (1, 2, 3, 5, 2, 2, 1)
# judge calls of the verifier: -1 no verifier evidence, 0 a verifier that asked no model
_JUDGES = (-1, 0, 1, 2)
_JUDGE_WEIGHTS = (45, 15, 30, 10)


@dataclass(slots=True)
class Planned:
    spec: RowSpec
    defect: str | None


@dataclass(slots=True)
class _Task:
    index: int
    kind: str
    source: str
    dialect: str
    repeats: int
    echo_task_id: bool
    category: str
    prompt: str
    judges: int


def _task(seed: int, index: int) -> _Task:
    rng = random.Random(f"{seed}:task:{index}")
    (kind, source), = rng.choices([m for m, _ in MIX], weights=[w for _, w in MIX])
    if kind == "harness":
        dialect = rng.choice(HARNESSES[source].dialects)
    elif kind == "simple":
        dialect = "responses"
    else:
        dialect = rng.choice(("responses", "chat", "messages"))
    category, prompt = Text(rng).task()
    return _Task(
        index,
        kind,
        source,
        dialect,
        rng.choices(_REPEATS, weights=_REPEAT_WEIGHTS)[0],
        rng.random() < 0.5,
        category,
        prompt,
        rng.choices(_JUDGES, weights=_JUDGE_WEIGHTS)[0],
    )


def plan(seed: int, defect_rate: float) -> Iterator[Planned]:
    """An endless, deterministic sequence of planned lines (line numbers from 1)."""
    line = 0
    cycle = 0
    task_index = 0
    while True:
        task = _task(seed, task_index)
        for rollout in range(task.repeats):
            line += 1
            rng = random.Random(f"{seed}:plan:{line}")
            persisted = task.kind != "capture_only" and rng.random() < PERSISTED_SHARE
            spec = RowSpec(
                line,
                task.index,
                rollout,
                task.kind,
                task.source,
                task.dialect,
                persisted,
                task.echo_task_id,
                task.category,
                task.prompt,
                task.judges,
            )
            defect = None
            if defect_rate > 0 and rng.random() < defect_rate:
                for step in range(len(defects.DEFECTS)):
                    candidate = defects.DEFECTS[(cycle + step) % len(defects.DEFECTS)]
                    if defects.applies(candidate, task.kind, rollout):
                        defect = candidate
                        cycle += step + 1
                        break
                _require(spec, defects.requirements(defect, task.kind) if defect else {})
                if defect == "duplicate-rollout-identity":
                    spec.rollout_index = rollout - 1
            yield Planned(spec, defect)
        task_index += 1


def _require(spec: RowSpec, needs: dict) -> None:
    if needs.get("persisted"):
        spec.persisted = True
    if needs.get("compaction"):
        spec.compaction = True
    if needs.get("min_judges"):
        spec.judges = max(spec.judges, needs["min_judges"])
