"""Which rules run, at which severity, and on which files: ruff's selection model.

A selector is `ALL`, a code (`TL104`), a code prefix (`TL1`, `TL10`) or a rule name
(`trajectory-schema`). Selections come in layers (the configuration file, then the command
line): a layer with `select` starts over from its own selectors, otherwise it carries the
previous set over; `extend-select` adds and `ignore` removes. Within a layer the more specific
selector wins where a select and an ignore overlap (`--select TL104 --ignore TL1` keeps TL104),
and at equal specificity the ignore wins, as in ruff.

`internal-error` always runs: it is how a bug in trajlint reaches the user and sets exit 2.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajlint.check.paths import path_matches
from trajlint.check.registry import INTERNAL_ERROR, RuleSpec
from trajlint.findings import SEVERITIES, Finding
from trajlint.spill import Packed

ALL = "ALL"
DEFAULT_PROFILE = "latest"

#: Profile name -> {rule name: severity}, applied before the user's own `severity` table.
#: A profile changes severities only, never what is built or checked.
PROFILES: dict[str, dict[str, str]] = {
    "latest": {},
    # What NeMo Gym 0.7.0 does by design is not an error for data it wrote: it makes a
    # compaction helper call a policy turn, and it knows no verifier ownership, so an agent's
    # claim on a grader's call stands and can become a turn. (Its hollow Anthropic turns are
    # already information: trajectory-drift weighs content-only drift as info.) And a value it
    # reads without loss, though its writers never write it (a count written "12"), is accepted.
    "nemo-gym-0.7": {
        "compaction-call-as-turn": "warning",
        "verifier-call-as-turn": "warning",
        "verifier-call-claimed-by-agent": "warning",
        "noncanonical-value": "info",
    },
}

_PREFIX = re.compile(r"TL[0-9]{0,3}")


class SelectorError(ValueError):
    """A selector that names no rule (or a bad severity); the message says where it was written."""


@dataclass(frozen=True, slots=True)
class Selector:
    text: str
    codes: frozenset[str]
    #: ALL 0, TL 1, TL1 2, TL10 3, a full code or a name 4: the more specific wins.
    specificity: int


def _suggest(text: str, rules: Mapping[str, RuleSpec]) -> str:
    prefixes = {code[:n] for code in rules for n in (3, 4)}
    candidates = [ALL, *sorted(prefixes), *rules, *(spec.name for spec in rules.values())]
    close = difflib.get_close_matches(text, candidates, n=1, cutoff=0.6)
    if not close and text.upper() in candidates:
        close = [text.upper()]
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse(text: str, rules: Mapping[str, RuleSpec], where: str = "") -> Selector:
    """Resolve one selector against the rules; raise SelectorError naming `where` if it matches none."""
    text = text.strip()
    if text == ALL:
        return Selector(text, frozenset(rules), 0)
    if _PREFIX.fullmatch(text):
        codes = frozenset(code for code in rules if code.startswith(text))
        specificity = len(text) - 1
    else:
        codes = frozenset(code for code, spec in rules.items() if spec.name == text)
        specificity = 4
    if not codes:
        place = f" in {where}" if where else ""
        raise SelectorError(f"unknown rule selector {text!r}{place}{_suggest(text, rules)}")
    return Selector(text, codes, specificity)


def split(values: Iterable[str]) -> list[str]:
    """Selectors as the command line takes them: repeatable, each comma-separated."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@dataclass(frozen=True, slots=True)
class Layer:
    """One place that selects rules: `select` None means "keep what earlier layers chose"."""

    select: Sequence[str] | None = None
    extend_select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    #: Where the selectors were written, for error messages: a file and key, or an option.
    origin: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def where(self, key: str) -> str:
        return self.origin.get(key, f"--{key}")


def selected_codes(rules: Mapping[str, RuleSpec], layers: Iterable[Layer]) -> set[str]:
    """The codes of the rules to run, after every layer; unknown selectors raise SelectorError."""
    chosen = set(rules)  # no selection at all means every rule
    for layer in layers:
        adds = [parse(s, rules, layer.where("select")) for s in layer.select or ()]
        adds += [parse(s, rules, layer.where("extend-select")) for s in layer.extend_select]
        removes = [parse(s, rules, layer.where("ignore")) for s in layer.ignore]
        chosen = set() if layer.select is not None else chosen
        for level in range(5):
            for selector in adds:
                if selector.specificity == level:
                    chosen |= selector.codes
            for selector in removes:
                if selector.specificity == level:
                    chosen -= selector.codes
    chosen |= {code for code, spec in rules.items() if spec.name == INTERNAL_ERROR}
    return chosen


def severities(
    rules: Mapping[str, RuleSpec],
    profile: str = DEFAULT_PROFILE,
    overrides: Mapping[str, str] | None = None,
    where: str = "severity",
) -> dict[str, str]:
    """Each rule's severity: the catalog's, then the profile's, then the user's table, where
    a more specific selector beats a less specific one (`TL1 = "warning"`, `TL104 = "error"`)."""
    result = {code: spec.entry.severity for code, spec in rules.items()}
    by_name = {spec.name: code for code, spec in rules.items()}
    for name, severity in PROFILES[profile].items():
        if name in by_name:
            result[by_name[name]] = severity
    parsed = []
    for text, severity in (overrides or {}).items():
        if severity not in SEVERITIES:
            raise SelectorError(f"{where}: {text!r} must be one of {', '.join(SEVERITIES)}, not {severity!r}")
        parsed.append((parse(text, rules, where), severity))
    for selector, severity in sorted(parsed, key=lambda item: item[0].specificity):
        for code in selector.codes:
            result[code] = severity
    return result


def rule_set(
    rules: Mapping[str, RuleSpec],
    layers: Iterable[Layer] = (),
    *,
    profile: str = DEFAULT_PROFILE,
    severity: Mapping[str, str] | None = None,
    severity_origin: str = "severity",
) -> dict[str, RuleSpec]:
    """The rules a run uses, keyed by code, each at the severity this run gives it."""
    codes = selected_codes(rules, layers)
    levels = severities(rules, profile, severity, severity_origin)
    return {
        code: spec if spec.severity == levels[code] else dataclasses.replace(spec, severity=levels[code])
        for code, spec in rules.items()
        if code in codes
    }


# -- per-file ignores -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileIgnore:
    """`per-file-ignores`: findings of `codes` in files matching `pattern` (relative to `base`,
    the configuration file's directory) are dropped; `!pattern` means files *not* matching."""

    pattern: str
    codes: frozenset[str]
    base: str
    negated: bool = False

    @classmethod
    def parse(
        cls, pattern: str, selectors: Sequence[str], rules: Mapping[str, RuleSpec], base: str, where: str = ""
    ) -> FileIgnore:
        negated = pattern.startswith("!")
        codes = frozenset().union(*(parse(s, rules, where).codes for s in selectors))
        return cls(pattern[1:] if negated else pattern, codes, os.path.abspath(base), negated)

    def applies(self, path: str) -> bool:
        return path_matches(self.pattern, self.base, path) != self.negated


def drop_ignored(findings: Iterable[Finding], ignores: Sequence[FileIgnore]) -> Iterable[Finding]:
    """The findings `per-file-ignores` leaves (`findings` itself when nothing is ignored, else
    packed: `spill.Packed`); `internal-error` is never dropped."""
    if not ignores:
        return findings
    cache: dict[str, frozenset[str]] = {}
    kept: Packed[Finding] = Packed()
    for finding in findings:
        codes = cache.get(finding.path)
        if codes is None:
            codes = cache[finding.path] = frozenset().union(
                *(ignore.codes for ignore in ignores if ignore.applies(finding.path))
            )
        if finding.code not in codes or finding.name == INTERNAL_ERROR:
            kept.append(finding)
    return kept


def leaving_no_rule(
    paths: Sequence[str], rules: Mapping[str, RuleSpec], ignores: Sequence[FileIgnore]
) -> list[FileIgnore]:
    """The per-file ignores that together drop every rule of `rules` on every one of `paths`
    (`internal-error` aside, which is never dropped), or [] when some path keeps a rule to run.

    A gate whose configuration ignores everything on every file it checks passes anything, as a
    selection of no rule would, so the run treats the two alike."""
    checked = frozenset(code for code, spec in rules.items() if spec.name != INTERNAL_ERROR)
    if not paths or not ignores or not checked:
        return []
    used: set[int] = set()
    for path in dict.fromkeys(paths):
        applying = [n for n, ignore in enumerate(ignores) if ignore.applies(path)]
        if not checked <= frozenset().union(*(ignores[n].codes for n in applying)):
            return []
        used.update(applying)
    return [ignore for n, ignore in enumerate(ignores) if n in used]


def describe(rules: Mapping[str, RuleSpec]) -> list[dict[str, Any]]:
    """The selected rules as plain data, for `--show-settings`."""
    return [{"code": code, "name": spec.name, "severity": spec.severity} for code, spec in sorted(rules.items())]
