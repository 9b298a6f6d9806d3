"""What kind of file each input is, decided once per file, before any of its rows is checked.

NeMo Gym writes JSONL files that hold no rollouts beside the ones that do, and a directory of a
run holds them all:

- `<output>_materialized_inputs.jsonl`: the rows a rollout collection dispatched, each stamped
  with `_ng_task_index` and `_ng_rollout_index` (`rollout_collection.py:2437-2439`; the name from
  `path_utils.py:22-24`). NeMo Gym's aggregator leaves it out by name
  (`rollout_collection.py:3652`).
- `<output>_reward_profiling.jsonl`: per-task reward statistics from `gym eval profile`
  (`reward_profile.py:488-499`), without `_ng_rollout_index` by design (`reward_profile.py:446-447`).
- task datasets, the input of a collection: rows with `responses_create_params`, or a
  materialized task (`task_id` and `task_input`, `episode_types.py:58-65`), and no rollout.
- `<output>_failures.jsonl`, the failures sidecar (`path_utils.py:18-19`), is rollouts: the
  collector writes a failed attempt's record there, stamped and built as a success's
  (`rollout_collection.py:2590-2707`), and reverification reads it back as rollouts.

A file's name decides as NeMo Gym's own names do; a name that says nothing leaves it to the
file's first row that is a JSON object (among its first few lines). Anything without a clear
sign of another kind is rollouts, so a damaged rollout file is still linted as one. The decision
is made in the process that plans the run, from the file's name and first lines, and travels
with every shard and batch of the file: it never depends on `--jobs`. The file whose first lines
decided is the file checked: a file replaced in between is reported as changed (`read.head`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trajlint.read import Line, Source, Unreadable

# The read stage (and `check.paths`, which imports it) is imported where it is used: the command
# line names the kinds in its options without loading it.

ROLLOUTS = "rollouts"
MATERIALIZED_INPUTS = "materialized-inputs"
TASK_DATASET = "task-dataset"
REWARD_PROFILING = "reward-profiling"
OTHER = "other"
KINDS = (ROLLOUTS, MATERIALIZED_INPUTS, TASK_DATASET, REWARD_PROFILING, OTHER)
#: Rows that are the input of a rollout collection, checked against that contract.
TASK_INPUTS = frozenset({MATERIALIZED_INPUTS, TASK_DATASET})

AUTO = "auto"
#: What a user may name: `auto` (recognise) or a kind ("other" is only ever recognised).
CHOICES = (AUTO, ROLLOUTS, MATERIALIZED_INPUTS, TASK_DATASET, REWARD_PROFILING)

#: What each kind is, for messages.
DESCRIPTIONS = {
    ROLLOUTS: "rollouts",
    MATERIALIZED_INPUTS: "NeMo Gym's materialized inputs (the rows a rollout collection dispatched)",
    TASK_DATASET: "a NeMo Gym task dataset (the input rows of a rollout collection)",
    REWARD_PROFILING: "NeMo Gym's reward profile (reward statistics per task, from `gym eval profile`)",
    OTHER: "data NeMo Gym does not write",
}


@dataclass(frozen=True, slots=True)
class FileKind:
    """A file's kind, and why (a clause for the message: "its name ends in ...")."""

    kind: str
    why: str = ""


ROLLOUT_FILE = FileKind(ROLLOUTS)


@dataclass(frozen=True, slots=True)
class Given:
    """The kinds the user gave: one for every input (`--file-kind`, `file-kind`), else the first
    `file-kinds` glob that names the file. `auto` leaves the file to recognition."""

    every: str = AUTO
    every_origin: str = ""
    patterns: tuple[tuple[str, str], ...] = ()  # (glob, kind), in the order written
    base: str = ""  # the directory the globs are relative to
    patterns_origin: str = ""

    def kind_of(self, path: str) -> FileKind | None:
        if self.every != AUTO:
            return FileKind(self.every, f"set by {self.every_origin}")
        from trajlint.check.paths import path_matches

        for pattern, kind in self.patterns:
            if path_matches(pattern, self.base, path):
                return None if kind == AUTO else FileKind(kind, f"set by {self.patterns_origin} ({pattern!r})")
        return None


# -- by name ---------------------------------------------------------------------------------------

# NeMo Gym's aggregator tests `Path(path).stem.endswith(("_failures", "_materialized_inputs"))`;
# trajlint also knows the stem under a compression suffix.
_NAMES = (
    ("_materialized_inputs", MATERIALIZED_INPUTS),
    ("_reward_profiling", REWARD_PROFILING),
    ("_failures", ROLLOUTS),
)


def _stem(path: str) -> str:
    name = os.path.basename(path)
    lowered = name.lower()
    for suffix in (".gz", ".zst"):
        if lowered.endswith(suffix):
            name, lowered = name[: -len(suffix)], lowered[: -len(suffix)]
            break
    for suffix in (".jsonl", ".json"):
        if lowered.endswith(suffix):
            return name[: -len(suffix)]
    return name


def by_name(path: str) -> FileKind | None:
    if path == "-":
        return None
    stem = _stem(path)
    for suffix, kind in _NAMES:
        if stem.endswith(suffix):
            return FileKind(kind, f"its name ends in `{suffix}`")
    return None


# -- by content ------------------------------------------------------------------------------------

# Keys that only a rollout record holds: the verifier's response, the sections rollout collection
# adds (`ng_model_call_capture`, `ng_agent_observations`, `ng_trajectory`, `ng_perf`; trajlint's
# `ng_verifier_invocations`), a failed attempt's `_ng_failure_*`, and what the collector stamps on
# an environment server's result (`rollout_collection.py:348-375`, `2613-2616`).
_RESULT_KEYS = frozenset({"response", "_ng_task_id", "_ng_result_type", "_ng_no_persist", "_ng_dispatch_drained"})
_NO_ROLLOUT = "and no rollout evidence (`response`, `ng_*` sections, `_ng_failure_*`)"


def rollout_evidence(row: dict[str, Any]) -> list[str]:
    """The keys of `row` that only a rollout record holds."""
    return [key for key in row if key in _RESULT_KEYS or key.startswith(("ng_", "_ng_failure_"))]


def is_task_input(row: dict[str, Any]) -> bool:
    """A request row (`responses_create_params`) or a materialized task (`episode_types.py:58-65`)."""
    return "responses_create_params" in row or (isinstance(row.get("task_id"), dict) and "task_input" in row)


def _nemo_gym_key(key: str) -> bool:
    return key.startswith(("_ng_", "ng_")) or key in ("agent_ref", "response", "responses_create_params", "task_input")


def by_content(row: dict[str, Any], line: int) -> FileKind | None:
    """The kind the first row shows, or None: rollouts, or nothing that says otherwise."""
    if rollout_evidence(row):
        return None
    first = f"its first row (line {line})"
    if is_task_input(row):
        holds = "`responses_create_params`" if "responses_create_params" in row else "`task_id` and `task_input`"
        if "_ng_task_index" in row and "_ng_rollout_index" in row:
            return FileKind(
                MATERIALIZED_INPUTS, f"{first} holds {holds}, `_ng_task_index` and `_ng_rollout_index` {_NO_ROLLOUT}"
            )
        return FileKind(TASK_DATASET, f"{first} holds {holds} {_NO_ROLLOUT}")
    if isinstance(row.get("sample"), dict) and any(key.startswith("mean/") for key in row):
        return FileKind(REWARD_PROFILING, f"{first} holds `sample` and `mean/...` statistics {_NO_ROLLOUT}")
    if row and not any(_nemo_gym_key(key) for key in row):
        return FileKind(
            OTHER,
            f"{first} holds none of the keys NeMo Gym writes (`_ng_*`, `ng_*`, `agent_ref`, `response`, "
            "`responses_create_params`, `task_input`)",
        )
    return None


# -- the decision ----------------------------------------------------------------------------------


def decide(path: str, lines: Iterable[Line], given: Given | None = None) -> FileKind:
    """The kind of the file at `path`, whose first lines are `lines` (`read.head`)."""
    from trajlint.read import parse

    stated = given.kind_of(path) if given is not None else None
    if stated is not None:
        return stated
    named = by_name(path)
    if named is not None:
        return ROLLOUT_FILE if named.kind == ROLLOUTS else named
    for line in lines:
        value = parse(line.raw)
        if isinstance(value, dict):
            return by_content(value, line.number) or ROLLOUT_FILE
    return ROLLOUT_FILE


def plan(
    sources: Sequence[Source | Unreadable], max_row_bytes: int, given: Given | None = None
) -> list[tuple[Source | Unreadable, FileKind]]:
    """Each input with its kind; a stream comes back as the source that reads it from its start."""
    from trajlint.read import Unreadable, head

    planned: list[tuple[Source | Unreadable, FileKind]] = []
    for source in sources:
        if isinstance(source, Unreadable):
            planned.append((source, ROLLOUT_FILE))
            continue
        stated = given.kind_of(source.path) if given is not None else None
        if stated is not None or by_name(source.path) is not None:
            planned.append((source, decide(source.path, (), given)))  # no need to look inside
            continue
        lines, source = head(source, max_row_bytes)
        planned.append((source, decide(source.path, lines, given)))
    return planned
