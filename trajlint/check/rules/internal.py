"""TL9xx: trajlint's own failures, reported as findings so one bad rule never stops a run."""

from trajlint.check.rule import engine_rule

engine_rule("internal-error", module=__name__)
