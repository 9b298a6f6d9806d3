"""TL610-TL611: NeMo Gym's task-level health checks, over all the repeats of a task.

The run's health (`health.verdicts.HealthRun`) reduces each row's verdict into its task's
repeats and reports the flagged tasks at the end of the run, at each task's first row; these
rules stand for those flags. A repeat is judged by the rollout health checks the run selects,
as `gym eval health-check --ignore-checks` judges it.
"""

from __future__ import annotations

from trajlint.check.rule import observed_rule
from trajlint.health.checks import CHECKS, TASK_CHECKS

for _check in CHECKS:
    if _check.id in TASK_CHECKS:
        observed_rule(_check.rules[0], reads=["row"], module=__name__)
