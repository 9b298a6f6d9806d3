"""The rules of trajlint: each catalog entry in `rules/` joined with the function that implements it.

The catalog says what a rule is (code, name, severity, documentation); `check/rules/` registers
how it checks. `load_rules` joins the two and refuses a rule that has only one half.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajlint.check.catalog import Entry, packaged
from trajlint.check.rule import IMPLEMENTATIONS, Implementation

INTERNAL_ERROR = "internal-error"


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """A catalog entry joined with its implementation, at the severity this run uses."""

    entry: Entry
    impl: Implementation
    severity: str

    @property
    def code(self) -> str:
        return self.entry.code

    @property
    def name(self) -> str:
        return self.entry.name


def load_rules() -> dict[str, RuleSpec]:
    """Every packaged rule keyed by code; a catalog entry without implementation is a bug."""
    import trajlint.check.rules  # noqa: F401  (registers the implementations)

    catalog = packaged()
    by_name = {entry.name: entry for entry in catalog.values()}
    missing = sorted(set(by_name) - set(IMPLEMENTATIONS))
    orphans = sorted(set(IMPLEMENTATIONS) - set(by_name))
    if missing or orphans:
        raise RuntimeError(
            f"rule catalog and implementations disagree: no implementation for {missing}, "
            f"no catalog entry for {orphans}"
        )
    return {
        code: RuleSpec(entry, IMPLEMENTATIONS[entry.name], entry.severity)
        for code, entry in catalog.items()
    }
