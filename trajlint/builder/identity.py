"""Rollout identity, re-derived from the row keys the way NeMo Gym's collector derives it.

NeMo Gym raises (and loses the trajectory) when a key it needs is missing; trajlint instead
returns None so the caller can report "identity not derivable" and carry on.
"""

from __future__ import annotations

import re
from typing import Any

from trajlint.findings import Rollout

_EXPLICIT_ROLLOUT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TASK_ID_KEYS = ("task_id", "problem_id", "instance_id")


def python_str(value: Any) -> str:
    """`str()` of a JSON value as Python would print it: NeMo Gym formats ids with `str()`."""
    if isinstance(value, str):
        return value
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    try:
        return str(value)
    except RecursionError:  # a pathologically nested value: no usable identity
        return "<nested too deeply>"


def task_id(row: dict[str, Any]) -> str | None:
    # An Environment Server row keeps the dispatched task's id, which NeMo Gym's collector names
    # the trajectory after (`str()` of its {taskset, task_id} object), as `_ng_task_id`; the
    # result's own keys come after it.
    dispatched = row.get("_ng_task_id")
    if dispatched is not None:
        return python_str(dispatched)
    for key in _TASK_ID_KEYS:
        value = row.get(key)
        if value is not None:
            return python_str(value)
    if "_ng_task_index" in row:
        return python_str(row["_ng_task_index"])
    return None


def _attempt_suffix(row: dict[str, Any]) -> str | None:
    """`-a{n}` for a retry, "" for the first attempt, None when the attempt index is unusable."""
    attempt = row.get("_ng_attempt_index")
    if attempt is None:
        return ""
    if isinstance(attempt, bool):
        attempt = int(attempt)
    if isinstance(attempt, float) and attempt.is_integer():
        attempt = int(attempt)
    elif isinstance(attempt, str):
        try:
            attempt = int(attempt.strip())
        except ValueError:
            return None
    if not isinstance(attempt, int):
        return None
    return f"-a{attempt}" if attempt > 0 else ""


def rollout_id(row: dict[str, Any]) -> str | None:
    suffix = _attempt_suffix(row)
    if suffix is None:
        return None
    explicit = row.get("_ng_rollout_id")
    if explicit is not None:
        if isinstance(explicit, str) and _EXPLICIT_ROLLOUT_ID.fullmatch(explicit):
            return explicit + suffix
        return None
    if "_ng_task_index" not in row or "_ng_rollout_index" not in row:
        return None
    return f"{python_str(row['_ng_task_index'])}-{python_str(row['_ng_rollout_index'])}{suffix}"


def rollout_identity(row: dict[str, Any]) -> Rollout | None:
    """(task_id, rollout_id) as NeMo Gym's collector derives them, or None when NeMo Gym could not derive it either."""
    if "_ng_task_index" not in row:
        # NeMo Gym evaluates the index fallback eagerly, so a row without it has no identity
        # even when it names its task.
        return None
    task = task_id(row)
    rollout = rollout_id(row)
    if task is None or rollout is None:
        return None
    return Rollout(task, rollout)
