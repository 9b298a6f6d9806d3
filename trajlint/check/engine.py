"""Run the rules over everything the read stage yields and collect findings and coverage.

The engine owns the bookkeeping every rule would otherwise repeat: which rules a subject's
evidence allows, counting evaluated and unobserved rules, turning violations into findings with
identity and fingerprint, and containing a rule that raises (`internal-error`) so the run goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from trajlint.build.identity import rollout_identity
from trajlint.check.catalog import Entry, packaged
from trajlint.check.spec import (
    IMPLEMENTATIONS,
    SECTION_EVIDENCE,
    Implementation,
    Reduction,
    RowObserver,
    Subject,
    Violation,
)
from trajlint.findings import SEVERITIES, Finding, Location, Rollout, fingerprint
from trajlint.read import Line, OversizedLine, ParseError, Source, Unreadable, parse

INTERNAL_ERROR = "internal-error"
_FILE = frozenset({"file"})
_LINE = frozenset({"line"})


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


@dataclass(slots=True)
class Coverage:
    name: str
    evaluated: int = 0
    unobserved: int = 0


@dataclass(slots=True)
class Result:
    findings: list[Finding] = field(default_factory=list)
    coverage: dict[str, Coverage] = field(default_factory=dict)
    files: int = 0
    lines: int = 0
    rows: int = 0
    internal_errors: int = 0


class Engine:
    def __init__(
        self,
        rules: Sequence[RuleSpec],
        internal_error: RuleSpec | None = None,
        observers: Sequence[RowObserver] = (),
    ):
        self._observers = list(observers)
        self._row_rules = [r for r in rules if r.impl.check is not None]
        self._reductions: list[tuple[RuleSpec, Reduction]] = [
            (r, r.impl.reduction()) for r in rules if r.impl.reduction is not None
        ]
        self._internal = internal_error
        self._plans: dict[frozenset[str], tuple[list[RuleSpec], list[RuleSpec]]] = {}
        self.result = Result(coverage={r.code: Coverage(r.name) for r in rules})

    # -- dispatch --------------------------------------------------------------------------

    def _plan(self, evidence: frozenset[str]) -> tuple[list[RuleSpec], list[RuleSpec]]:
        """(rules to run, rules unobserved) for a subject holding this evidence, memoized."""
        plan = self._plans.get(evidence)
        if plan is None:
            applicable = [r for r in self._row_rules if r.impl.reads <= evidence]
            # Only a row can leave a rule unobserved: a file or an unparsable line does not
            # hold row evidence in the first place, so row rules do not apply to it.
            unobserved = (
                [r for r in self._row_rules if not r.impl.reads <= evidence]
                if "row" in evidence
                else []
            )
            plan = self._plans[evidence] = (applicable, unobserved)
        return plan

    def visit(self, subject: Subject) -> None:
        coverage = self.result.coverage
        applicable, unobserved = self._plan(subject.evidence)
        for spec in unobserved:
            coverage[spec.code].unobserved += 1
        first = len(self.result.findings)
        for spec in applicable:
            coverage[spec.code].evaluated += 1
            try:
                found = [
                    self._finding(spec, subject.path, subject.line, subject.rollout, subject.raw, violation)
                    for violation in spec.impl.check(subject)  # type: ignore[misc]
                ]
            except Exception as exc:  # noqa: BLE001 - a rule bug must not stop the run
                self._internal_error(spec, subject, exc)
                continue
            self.result.findings.extend(found)
        if self._observers and "row" in subject.evidence:
            row_findings = self.result.findings[first:]
            unobserved_codes = [spec.code for spec in unobserved]
            for observer in self._observers:
                observer.row_done(subject, row_findings, unobserved_codes)
        for spec, reduction in self._reductions:
            if spec.impl.reads <= subject.evidence:
                try:
                    reduction.observe(subject)
                except Exception as exc:  # noqa: BLE001
                    self._internal_error(spec, subject, exc)

    def finish(self) -> Result:
        for spec, reduction in self._reductions:
            try:
                found = [
                    self._finding(spec, location.path, location.line, rollout, None, violation)
                    for location, rollout, violation in reduction.finish()
                ]
            except Exception as exc:  # noqa: BLE001
                self._internal_error(spec, Subject("<run>", 0, frozenset()), exc)
                continue
            self.result.coverage[spec.code].evaluated += 1
            self.result.findings.extend(found)
        self.result.findings.sort(key=Finding.sort_key)
        return self.result

    # -- findings --------------------------------------------------------------------------

    def _finding(
        self,
        spec: RuleSpec,
        path: str,
        line: int,
        rollout: Rollout | None,
        content: bytes | None,
        violation: Violation,
    ) -> Finding:
        return Finding(
            code=spec.code,
            name=spec.name,
            severity=finding_severity(spec, violation),
            message=violation.message,
            path=path,
            line=line,
            pointer=violation.pointer,
            related=tuple(sorted(violation.related, key=lambda loc: (loc.path, loc.line, loc.pointer))),
            rollout=rollout,
            fingerprint=fingerprint(spec.code, violation.pointer, rollout, path, content),
        )

    def _internal_error(self, spec: RuleSpec, subject: Subject, exc: Exception) -> None:
        self.result.internal_errors += 1
        if self._internal is None:
            return
        where = f"{subject.path}:{subject.line}" if subject.line else subject.path
        message = (
            f"rule {spec.code} {spec.name} raised {type(exc).__name__}: {exc} while checking "
            f"{where}; this is a bug in trajlint, please report it with this row"
        )
        self.result.findings.append(
            self._finding(self._internal, subject.path, subject.line, subject.rollout, subject.raw, Violation("", message))
        )


def finding_severity(spec: RuleSpec, violation: Violation) -> str:
    """The violation's own severity, unless this run overrides the rule's catalog severity.

    A user or profile severity is a decision about the whole rule, so it wins over the weights a
    rule gives its findings; a run that keeps the catalog severity keeps those weights.
    """
    if violation.severity is None or spec.severity != spec.entry.severity:
        return spec.severity
    if violation.severity not in SEVERITIES:
        raise ValueError(f"rule {spec.name} gave a finding the unknown severity {violation.severity!r}")
    return violation.severity


# -- subjects from the read stage -----------------------------------------------------------


def _holds_model_calls(row: dict) -> bool:
    """Whether ownership can be judged at all: a captured call, or a call in the stated trajectory."""
    for key, part in (("ng_model_call_capture", "calls"), ("ng_trajectory", "model_calls")):
        section = row.get(key)
        if isinstance(section, dict) and isinstance(section.get(part), list) and section[part]:
            return True
    return False


def row_subject(path: str, number: int, raw: bytes) -> Subject:
    value = parse(raw)
    if isinstance(value, ParseError):
        return Subject(path, number, _LINE, raw=raw, problem=value)
    if not isinstance(value, dict):
        return Subject(path, number, _LINE, raw=raw, value=value)
    evidence = {"line", "row"}
    for key, name in SECTION_EVIDENCE.items():
        if value.get(key) is not None:
            evidence.add(name)
    if _holds_model_calls(value):
        evidence.add("model-calls")
    return Subject(
        path, number, frozenset(evidence), raw=raw, value=value, rollout=rollout_identity(value)
    )


def subjects(sources: Iterable[Source | Unreadable], max_row_bytes: int) -> Iterator[Subject]:
    """Everything the rules look at, in input order: each file, then each of its lines."""
    for source in sources:
        if isinstance(source, Unreadable):
            yield Subject(source.path, source.line, _FILE, problem=source)
            continue
        yield Subject(source.path, 0, _FILE)
        for item in source.lines(max_row_bytes):
            if isinstance(item, Line):
                yield row_subject(item.path, item.number, item.raw)
            elif isinstance(item, OversizedLine):
                yield Subject(item.path, item.number, _LINE, problem=item)
            else:
                yield Subject(item.path, item.line, _FILE, problem=item)


def run(
    sources: Iterable[Source | Unreadable],
    rules: dict[str, RuleSpec],
    *,
    max_row_bytes: int,
    observers: Sequence[RowObserver] = (),
) -> Result:
    """Check everything `sources` yields; `observers` see each row's findings as it is done."""
    internal = next((r for r in rules.values() if r.name == INTERNAL_ERROR), None)
    engine = Engine([r for r in rules.values() if r.impl.check or r.impl.reduction], internal, observers)
    if internal is not None:
        engine.result.coverage[internal.code] = Coverage(internal.name)
    result = engine.result
    for subject in subjects(sources, max_row_bytes):
        if subject.evidence is _FILE:
            if subject.problem is None:
                result.files += 1
        else:
            result.lines += 1
            if "row" in subject.evidence:
                result.rows += 1
        engine.visit(subject)
    return engine.finish()
