"""TL601-TL609: NeMo Gym 0.7.0's rollout health checks, one rule per check of `health.checks`.

Each rule reports its check's findings on the row's `HealthView` (made once per row and shared
with the row's verdict). A check whose evidence the row lacks leaves its rule unobserved for the
row, as a missing section does. The task checks are in `health_tasks.py`.
"""

from __future__ import annotations

from typing import Any

from trajlint.check.rule import UNOBSERVED, Violation, row_rule
from trajlint.check.subject import Subject
from trajlint.health.checks import ROW_CHECKS, HealthCheck
from trajlint.health.view import view_of


class _CheckRule:
    """The rule of one health check. A class, not a closure, so that a worker started by spawn
    gets it by pickling (it pickles as the check's id)."""

    __slots__ = ("check",)

    def __init__(self, check: HealthCheck):
        self.check = check

    def __call__(self, subject: Subject) -> list[Violation] | object:
        found = view_of(subject).findings(self.check)
        if found is None:
            return UNOBSERVED
        return [Violation(item.pointer, item.message) for item in found]

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return _rule_of, (self.check.id,)


def _rule_of(check_id: str) -> _CheckRule:
    return _RULES[check_id]


_RULES = {check.id: _CheckRule(check) for check in ROW_CHECKS}
for _check in ROW_CHECKS:
    row_rule(_check.rules[0], reads=_check.row_reads)(_RULES[_check.id])
