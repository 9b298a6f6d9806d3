"""Run the rules over everything the read stage yields and collect findings and coverage.

The engine owns the bookkeeping every rule would otherwise repeat: which rules a subject's
evidence allows, counting evaluated and unobserved rules, turning violations into findings with
identity and fingerprint, and containing a rule that raises (`internal-error`) so the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trajlint.check import fast
from trajlint.check.kinds import ROLLOUT_FILE, ROLLOUTS, FileKind
from trajlint.check.registry import RuleSpec
from trajlint.check.rule import UNOBSERVED, Reduction, RowDigester, RowObserver, Violation
from trajlint.check.subject import FILE, Subject, unit_subjects
from trajlint.contract.validate import CoreDisagrees
from trajlint.findings import SEVERITIES, Finding, Location, Rollout, fingerprint
from trajlint.read import Batch, LineTally, Source, Unreadable, native
from trajlint.spill import Packed, Sorted


@dataclass(slots=True)
class Coverage:
    name: str
    evaluated: int = 0
    unobserved: int = 0


@dataclass(slots=True)
class Result:
    #: Sorted by `Finding.sort_key` once the run is finished; kept on disk past a budget.
    findings: Any = field(default_factory=list)
    coverage: dict[str, Coverage] = field(default_factory=dict)
    files: int = 0
    lines: int = 0
    rows: int = 0
    internal_errors: int = 0
    #: (run, its `health.verdicts.HealthRun`) for every run when health was judged, else None.
    health: list[tuple[str, Any]] | None = None


@dataclass(slots=True)
class UnitResult:
    """What checking one unit of input (a file, or a shard of one) hands to the run.

    Line numbers count from the unit's first line: a shard does not know how many lines come
    before it, so the run adds them (`Engine.absorb`). `physical_lines` is how many the unit
    held, blank ones included. `folds` holds, per part of the unit whose rows a reduction or
    observer saw, what each of them keeps of those rows, folded where the rows were checked
    (`RowChecker.end_unit`), so that the run takes a part in one step per reduction and
    observer rather than one per row.
    """

    path: str
    findings: Any = field(default_factory=list)  # a list, or `Packed` from a worker
    coverage: dict[str, list[int]] = field(default_factory=dict)  # code -> [evaluated, unobserved]
    folds: Any = field(default_factory=list)  # [(summary per reduction, summary per observer)], or `Packed`
    files: int = 0
    lines: int = 0
    row_count: int = 0
    internal_errors: int = 0
    physical_lines: int = 0

    def add(self, part: UnitResult) -> None:
        """Fold in the next part of the same unit (its lines count from the unit's first)."""
        self.findings.extend(part.findings)
        self.folds.extend(part.folds)
        for code, (evaluated, unobserved) in part.coverage.items():
            counts = self.coverage.setdefault(code, [0, 0])
            counts[0] += evaluated
            counts[1] += unobserved
        self.files += part.files
        self.lines += part.lines
        self.row_count += part.row_count
        self.internal_errors += part.internal_errors
        self.physical_lines += part.physical_lines


class Unfolded(list):
    """The (line, digest) of each row, for a reduction or observer that folds no rows of its own
    (it has no `fold`), or whose `fold` raised: the run absorbs them one by one."""

    __slots__ = ()


def _fold(folder: Any, rows: list[tuple[int, Any]]) -> Any:
    """What the run absorbs of a part's rows for one reduction or observer (None: no row)."""
    if not rows:
        return None
    fold = getattr(folder, "fold", None)
    if fold is not None:
        try:
            return fold(rows)
        except Exception:  # noqa: BLE001 - absorbed row by row, the rule's error is reported at its row
            pass
    return Unfolded(rows)


@dataclass(frozen=True, slots=True, eq=False)  # a dict key by identity: one per combination
class _ProvedPlan:
    """What a row the core proved clean costs the run, the same for every such row of one kind,
    evidence and health judgement: worked out once, so that a proved row allocates nothing it
    need not (see `RowChecker._visit_proved`)."""

    key: tuple[str, frozenset[str]]  # the row's plan (`RowChecker._plan`)
    rules: tuple[RuleSpec, ...]  # the reduced rules, the only ones that run
    #: Those of them that may find something on a row that carries no gap (`fast.gapless`).
    gapless_rules: tuple[RuleSpec, ...]
    judged: tuple[str, ...]  # the health rules the core judged unobserved, in plan order
    #: The codes the digesters are told the row left unobserved: the plan's, then the judged ones.
    unobserved: tuple[str, ...]
    digesting: tuple[tuple[int, RuleSpec, Reduction], ...]  # (index, spec, reduction) that digest it
    keeps: bool  # the run keeps something of its rows (it has reductions or digesters)
    rollout: bool  # a row of a rollout file, which the digesters judge


def _reads_gaps_alone(spec: RuleSpec) -> bool:
    """Whether a reduced rule is trajlint's observation-gap, which reads nothing but a row's gap
    lists (`fast.gapless`); a run may put another implementation under its code."""
    from trajlint.check.rules.drift import observation_gap

    return spec.impl.check is observation_gap


#: Evidence of a line of input: the rules that read it look at every line (or row).
LINE_EVIDENCE = frozenset({"line", "row"})


def _proof_codes(rules: Sequence[RuleSpec]) -> list[str]:
    """The codes of the rules a run applies to a line of a rollout file (or reads run-level
    digests or judgements of): what the core must prove a line clean of for the fast path."""
    codes = [r.code for r in rules if ROLLOUTS in r.impl.kinds and r.impl.reads & LINE_EVIDENCE]
    codes += [r.code for r in rules if r.impl.reduction is not None or r.impl.observed]
    return codes

# Rows per part of a unit checked in the reporting process (see `RowChecker.check_parts`).
PART_ROWS = 1000


class RowChecker:
    """The half of the run that looks at rows: runs the row rules and takes each row's digests.

    One lives in every process that checks rows; it holds no state across units.
    """

    def __init__(
        self,
        rules: Sequence[RuleSpec],
        internal_error: RuleSpec | None = None,
        digesters: Sequence[RowDigester] = (),
    ):
        self._row_rules = [r for r in rules if r.impl.check is not None]
        # Instances of their own: only their (stateless) `digest` half runs here.
        self._reductions: list[tuple[RuleSpec, Reduction]] = [
            (r, r.impl.reduction()) for r in rules if r.impl.reduction is not None
        ]
        self._digesters = list(digesters)
        self._internal = internal_error
        self._checking_core = native.mode() == "check"
        # A proved row gives the digesters its health judgement in place of its row: only
        # digesters that take one (the health report's) let the run take the fast path.
        judges = bool(digesters)
        self._proving = (_proof_codes(rules), judges) if all(getattr(d, "takes_judgement", False) for d in digesters) else None
        self.prove, self.prove_many = self._provers(*self._proving) if self._proving is not None else (None, None)
        self._plans: dict[tuple[str, frozenset[str]], tuple[list[RuleSpec], list[RuleSpec], list[RuleSpec]]] = {}
        # How many subjects each plan served: coverage is counted per plan, not per rule and row.
        self._uses: dict[tuple[str, frozenset[str]], int] = {}
        # Rules a row left unobserved that its plan counts as evaluated (see `UNOBSERVED`).
        self._unobserved: dict[str, int] = {}
        self._judged: dict[tuple[tuple[str, frozenset[str]], frozenset[str]], tuple[str, ...]] = {}
        self._plan_unobserved: dict[tuple[str, frozenset[str]], list[str]] = {}
        # Per plan: the reductions that digest its subjects (indices into `_reductions`).
        self._digesting: dict[tuple[str, frozenset[str]], tuple[tuple[int, RuleSpec, Reduction], ...]] = {}
        # Per (kind, evidence, unobserved health rules) of a proved row: its plan, and how many
        # rows of the unit took it (their coverage is counted at the end of the part).
        self._proved_plans: dict[tuple[str, frozenset[str], frozenset[str] | None], _ProvedPlan] = {}
        self._proved_uses: dict[_ProvedPlan, int] = {}
        # Per (plan, families proved) of a row proved clean of some families only: its rules.
        self._partly: dict[tuple[tuple[str, frozenset[str]], int], list[RuleSpec]] = {}
        self.unit = UnitResult("")
        self._start_rows()

    def _start_rows(self) -> None:
        # The (line, digest) of the part's rows, per reduction and per digester.
        self._digested: list[list[tuple[int, Any]]] = [[] for _ in self._reductions]
        self._observed: list[list[tuple[int, Any]]] = [[] for _ in self._digesters]
        self._kept = 0  # rows the part keeps something of

    def __getstate__(self) -> dict[str, Any]:
        # The core's proof is the process's own (`__setstate__`): a worker elsewhere (a Ray
        # cluster's) may lack the native core, or have another build of it.
        return {**self.__dict__, "prove": None, "prove_many": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.prove, self.prove_many = self._provers(*self._proving) if self._proving is not None else (None, None)

    def _provers(self, codes: list[str], judges: bool = False) -> tuple[Callable[[bytes], Any] | None, Callable[[list[bytes]], Any] | None]:
        """The core's proof for a line of a rollout file when it can prove the line clean of every
        rule this run applies to one (`codes`, `_proof_codes`; `check.fast`), and its proof of
        each line of a list at once (`_core.check_rows`, for `check.ahead`); (None, None) when
        the core cannot. With `judges`, a line is proved only with its health judgement."""
        core = fast.prover()
        if core is None:
            return None, None
        check_row, proved = core
        wanted = fast.wanted_families(codes, proved)
        if wanted is None:
            return None, None
        extracts = fast.wanted_extracts(codes, judges)
        # A row proved less comes back as the families it is proved clean of (`partial`).
        prove = lambda raw: check_row(raw, wanted, extracts, judges, True)  # noqa: E731
        # The core's own `check_rows` when the line proof is its own `check_row` (a function of
        # the extension module); another line proof (a fuzzer's, a test's stand-in for the core)
        # proves a list line by line.
        module = native.module()
        if getattr(check_row, "__self__", None) is module and check_row is getattr(module, "check_row", None):
            check_rows = module.check_rows
            return prove, lambda raws: check_rows(raws, wanted, extracts, judges, True)
        return prove, lambda raws: [prove(raw) for raw in raws]

    def _plan(self, key: tuple[str, frozenset[str]]) -> tuple[list[RuleSpec], list[RuleSpec], list[RuleSpec]]:
        """(rules to run, rules unobserved, rules to run on a proved row's reduced row) for a
        subject holding this evidence in a file of this kind, memoized. A rule that does not
        check the kind of file is none of these."""
        plan = self._plans.get(key)
        if plan is None:
            kind, evidence = key
            rules = [r for r in self._row_rules if kind in r.impl.kinds]
            applicable = [r for r in rules if r.impl.reads <= evidence]
            # Only a row can leave a rule unobserved: a file or an unparsable line does not
            # hold row evidence in the first place, so row rules do not apply to it.
            unobserved = [r for r in rules if not r.impl.reads <= evidence] if "row" in evidence else []
            reduced = [r for r in applicable if r.code in fast.REDUCED]
            plan = self._plans[key] = (applicable, unobserved, reduced)
        return plan

    def check_unit(
        self, unit: Source | Batch | Unreadable, max_row_bytes: int, kind: FileKind = ROLLOUT_FILE
    ) -> UnitResult:
        """The whole unit's result in one piece (what a worker hands back): its findings and
        rows packed (`spill.Packed`), so that a unit of millions of lines hands back a few
        compressed blocks, and is built from parts that each hold a few rows."""
        # A part's folds are packed on their own: they hold what is kept of up to `PART_ROWS` rows.
        whole = UnitResult(unit.path, Packed(spill=False), folds=Packed(spill=False, block=1))
        for part in self.check_parts(unit, max_row_bytes, PART_ROWS, kind):
            whole.add(part)
        return whole

    def check_parts(
        self,
        unit: Source | Batch | Unreadable,
        max_row_bytes: int,
        rows_per_part: int | None,
        kind: FileKind = ROLLOUT_FILE,
        ahead: bool = False,
    ) -> Iterator[UnitResult]:
        """The unit's result in parts of `rows_per_part` rows, so that a caller that absorbs each
        part at once holds a few rows' digests, however long a file that cannot be cut (a
        compressed one) is. Only the last part counts the unit's physical lines. The unit is
        (a part of) a file of `kind`. With `ahead`, the core proves lines a few batches ahead on
        a thread of its own (`check.ahead`): for a process that has a core to spare."""
        self.start_unit(unit.path)
        tally = LineTally()
        prove_many = self.prove_many if ahead else None
        for subject in unit_subjects(unit, max_row_bytes, tally, kind, self.prove, prove_many):
            self.visit(subject)
            subject.release()
            if rows_per_part is not None and (
                self._kept >= rows_per_part or len(self.unit.findings) >= rows_per_part
            ):
                yield self.end_unit()
                self.start_unit(unit.path)
        self.unit.physical_lines = tally.lines
        yield self.end_unit()

    def start_unit(self, path: str) -> None:
        self.unit = UnitResult(path)
        self._uses = {}
        self._unobserved = {}
        self._proved_uses = {}
        self._start_rows()

    def end_unit(self) -> UnitResult:
        if self._kept:
            self.unit.folds.append(
                (
                    tuple(_fold(reduction, rows) for (_, reduction), rows in zip(self._reductions, self._digested)),
                    tuple(_fold(digester, rows) for digester, rows in zip(self._digesters, self._observed)),
                )
            )
        self._start_rows()
        for proved, uses in self._proved_uses.items():
            self._uses[proved.key] = self._uses.get(proved.key, 0) + uses
            for code in proved.judged:
                self._unobserved[code] = self._unobserved.get(code, 0) + uses
        self._proved_uses = {}
        coverage = self.unit.coverage
        for key, uses in self._uses.items():
            applicable, unobserved, _ = self._plans[key]
            for spec in applicable:
                coverage.setdefault(spec.code, [0, 0])[0] += uses
            for spec in unobserved:
                coverage.setdefault(spec.code, [0, 0])[1] += uses
        for code, rows in self._unobserved.items():
            counts = coverage[code]
            counts[0] -= rows
            counts[1] += rows
        return self.unit

    def visit(self, subject: Subject) -> None:
        if subject.proved and not self._checking_core:
            self._visit_proved(subject)
            return
        unit = self.unit
        evidence = subject.evidence
        if evidence is FILE:
            unit.files += subject.problem is None
        else:
            unit.lines += 1
            unit.row_count += "row" in evidence
        kind = subject.kind.kind
        key = (kind, evidence)
        applicable, unobserved, _ = self._plan(key)
        self._uses[key] = self._uses.get(key, 0) + 1
        partly = subject.clean_families
        if partly and not self._checking_core:
            # Rules of families the core proved the row clean of find nothing on it; they still
            # count as evaluated (the plan's coverage), as on a row proved clean of every rule.
            applicable = self._partly_plan(key, partly)
        findings = unit.findings
        first = len(findings)
        unobserved_now: list[str] = []
        raised: dict[str, str] = {}
        checking_proof = subject.proved and self._checking_core
        reduced_found: list[Finding] = []  # under check, the findings of the reduced rules
        for spec in applicable:
            found = self._apply(spec, subject, unobserved_now, raised)
            if found is None:
                continue
            if checking_proof and spec.code in fast.REDUCED:
                self._compare_reduced(spec, subject, found)
                reduced_found.extend(found)
            else:
                findings.extend(found)
        if partly and self._checking_core:
            self._compare_partly(subject, findings[first:], raised)
        if checking_proof:
            judged = subject.reduced.judgement
            if len(findings) > first or raised or set(unobserved_now) != set(self._judged_unobserved(key, judged)):
                raise fast.mismatched_findings(subject, findings[first:], unobserved_now)
            findings.extend(reduced_found)
        for code in unobserved_now:
            self._unobserved[code] = self._unobserved.get(code, 0) + 1
        if "row" not in subject.evidence or not (self._reductions or self._digesters):
            return
        if checking_proof:
            self._compare_digests(subject)
        digesting = self._digesting.get(key)
        if digesting is None:
            digesting = self._digesting[key] = tuple(
                (i, spec, reduction)
                for i, (spec, reduction) in enumerate(self._reductions)
                if spec.impl.reads <= evidence and kind in spec.impl.kinds
            )
        kept = self._digest(subject, digesting)
        if kind != ROLLOUTS:
            # Health judges rollouts only: a row of task inputs is no rollout to give a verdict.
            self._kept += kept
            return
        self._kept += 1
        if self._digesters:
            row_findings = findings[first:]
            unobserved_codes = self._unobserved_codes(key, unobserved) + unobserved_now
            observed = tuple(d.digest(subject, row_findings, unobserved_codes, raised) for d in self._digesters)
            if checking_proof:
                judged = tuple(d.digest(subject.reduced, [], unobserved_codes, {}) for d in self._digesters)
                if judged != observed:
                    raise fast.mismatched_judgement(subject, judged, observed)
            for rows, judgement in zip(self._observed, observed):
                rows.append((subject.line, judgement))

    def _apply(self, spec: RuleSpec, subject: Subject, unobserved_now: list[str], raised: dict[str, str]) -> list[Finding] | None:
        """The findings of one row rule on `subject`; None when the rule leaves it unobserved
        (its code joins `unobserved_now`) or raises (an internal error, named in `raised`)."""
        try:
            violations = spec.impl.check(subject)  # type: ignore[misc]
            if violations is UNOBSERVED:
                unobserved_now.append(spec.code)
                return None
            return [_finding(spec, subject.path, subject.line, subject.rollout, subject.raw, violation) for violation in violations]
        except CoreDisagrees as exc:
            raise native.mismatch(subject.path, subject.line, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a rule bug must not stop the run
            self._internal_error(spec, subject, exc)
            raised[spec.name] = type(exc).__name__
            return None

    def _visit_proved(self, subject: Subject) -> None:
        """A row the core proved clean of every rule but the reduced ones (and the run does not
        check the core): those run, unless the row carries nothing they read; the rest is the
        row's counts and digests. It is what `visit` does with such a row, without the work
        that is the same for every row of its plan (`_ProvedPlan`)."""
        unit = self.unit
        unit.lines += 1
        unit.row_count += 1
        judgement = subject.judgement
        memo_key = (subject.kind.kind, subject.evidence, None if judgement is None else judgement.unobserved)
        plan = self._proved_plans.get(memo_key)
        if plan is None:
            plan = self._proved_plans[memo_key] = self._proved_plan(memo_key, judgement)
        self._proved_uses[plan] = self._proved_uses.get(plan, 0) + 1
        findings = unit.findings
        first = len(findings)
        unobserved: Sequence[str] = plan.unobserved
        raised: dict[str, str] = {}
        rules = plan.gapless_rules if subject.gapless else plan.rules
        if rules:
            unobserved_now: list[str] = []
            for spec in rules:
                found = self._apply(spec, subject, unobserved_now, raised)
                if found:
                    findings.extend(found)
            for code in unobserved_now:
                self._unobserved[code] = self._unobserved.get(code, 0) + 1
            if unobserved_now:
                unobserved = [*unobserved, *unobserved_now]
        if not plan.keeps:
            return
        kept = self._digest(subject, plan.digesting)
        if not plan.rollout:
            self._kept += kept
            return
        self._kept += 1
        if self._digesters:
            row_findings = findings[first:]
            for digester, rows in zip(self._digesters, self._observed):
                rows.append((subject.line, digester.digest(subject, row_findings, unobserved, raised)))

    def _proved_plan(self, memo_key: tuple[str, frozenset[str], frozenset[str] | None], judgement: Any) -> _ProvedPlan:
        kind, evidence, _ = memo_key
        key = (kind, evidence)
        _, unobserved, reduced = self._plan(key)
        judged = self._judged_unobserved(key, judgement)
        digesting = tuple(
            (i, spec, reduction)
            for i, (spec, reduction) in enumerate(self._reductions)
            if spec.impl.reads <= evidence and kind in spec.impl.kinds
        )
        return _ProvedPlan(
            key,
            tuple(reduced),
            tuple(spec for spec in reduced if not _reads_gaps_alone(spec)),
            judged,
            (*self._unobserved_codes(key, unobserved), *judged),
            digesting,
            bool(self._reductions or self._digesters),
            kind == ROLLOUTS,
        )

    def _digest(self, subject: Subject, digesting: tuple[tuple[int, RuleSpec, Reduction], ...]) -> bool:
        """Take the row's digest for each (index, spec, reduction) of `digesting`; whether any
        kept one (a reduction that raises is an internal error, and the run goes on)."""
        line = subject.line
        kept = False
        for i, spec, reduction in digesting:
            try:
                digest = reduction.digest(subject)
            except CoreDisagrees as exc:
                raise native.mismatch(subject.path, subject.line, str(exc)) from None
            except Exception as exc:  # noqa: BLE001
                self._internal_error(spec, subject, exc)
                continue
            if digest is not None:
                self._digested[i].append((line, digest))
                kept = True
        return kept

    def _unobserved_codes(self, key: tuple[str, frozenset[str]], unobserved: list[RuleSpec]) -> list[str]:
        """The codes of the rules a plan leaves unobserved (a new list, memoized per plan)."""
        codes = self._plan_unobserved.get(key)
        if codes is None:
            codes = self._plan_unobserved[key] = [spec.code for spec in unobserved]
        return list(codes)

    def _judged_unobserved(self, key: tuple[str, frozenset[str]], judgement: Any) -> tuple[str, ...]:
        """The rules of a plan a proved row's health judgement leaves unobserved, in plan order
        (memoized: a few combinations serve every row of a run)."""
        if judgement is None:
            return ()
        memo_key = (key, judgement.unobserved)
        codes = self._judged.get(memo_key)
        if codes is None:
            codes = self._judged[memo_key] = tuple(spec.code for spec in self._plan(key)[0] if spec.code in judgement.unobserved)
        return codes

    def _partly_plan(self, key: tuple[str, frozenset[str]], bits: int) -> list[RuleSpec]:
        """The rules of a plan that run on a row the core proved clean of the families `bits`
        (`fast.partly_proved`), memoized: a few combinations serve every such row."""
        plan = self._partly.get((key, bits))
        if plan is None:
            proved = fast.partly_proved(bits)
            plan = self._partly[key, bits] = [spec for spec in self._plan(key)[0] if spec.code not in proved]
        return plan

    def _compare_partly(self, subject: Subject, found: list[Finding], raised: dict[str, str]) -> None:
        """The rules of the families the core proved a row clean of find nothing on it (and do
        not raise), where the run checks the core and so ran them all."""
        proved = fast.partly_proved(subject.clean_families)
        wrong = {finding.code for finding in found if finding.code in proved}
        wrong.update(spec.code for spec in self._row_rules if spec.name in raised and spec.code in proved)
        if wrong:
            raise fast.mismatched_partly(subject, wrong)

    def _compare_reduced(self, spec: RuleSpec, subject: Subject, found: list[Finding]) -> None:
        """A reduced rule finds the same on a proved row's reduced row as on the whole row: the
        whole row's findings are kept only when they are."""
        reduced = subject.reduced
        try:
            again = [_finding(spec, reduced.path, reduced.line, reduced.rollout, reduced.raw, v) for v in spec.impl.check(reduced)]
        except Exception:  # noqa: BLE001 - it did not raise on the whole row
            again = None
        # The fast path does not run a rule that reads the gaps alone on a row without one.
        if again != found or (found and reduced.gapless and _reads_gaps_alone(spec)):
            raise fast.mismatched_reduced(subject, spec.code)

    def _compare_digests(self, subject: Subject) -> None:
        """A proved row's run-level digests are the same from its reduced row alone."""
        alone = subject.reduced
        for spec, reduction in self._reductions:
            applies = spec.impl.reads <= subject.evidence and subject.kind.kind in spec.impl.kinds
            if applies and reduction.digest(alone) != reduction.digest(subject):
                raise native.mismatch(subject.path, subject.line, f"{spec.code}'s digest differs on the identity keys alone")

    def _internal_error(self, spec: RuleSpec, subject: Subject, exc: Exception) -> None:
        self.unit.internal_errors += 1
        if self._internal is not None:
            self.unit.findings.append(_internal_finding(self._internal, spec, subject.path, subject.line, subject.rollout, subject.raw, exc))


#: Rules whose findings mark a line that never became a row.
UNREADABLE = frozenset({"invalid-json", "row-not-object", "row-too-large"})


class RunObservers(Protocol):
    """Makes the observers of one run (a group of input files, see `check.run`)."""

    def __call__(self, run: str) -> Sequence[RowObserver]: ...


@dataclass(slots=True)
class _RunState:
    """What the run-level rules and observers of one run keep: an instance each."""

    reductions: list[tuple[RuleSpec, Reduction]]
    observers: Sequence[RowObserver]
    #: (path, line, rule name) of the run's lines that never became rows, for its health.
    unreadable: Packed[tuple[str, int, str]] = field(default_factory=Packed)


class Engine:
    """The whole run: checks units of input (or takes units checked elsewhere) in input order,
    feeds the reductions and observers of each unit's run, and reports at the end.

    A run is a group of input files that run-level rules judge together (duplicate identities,
    task repeats, health): `run_of(path)` names it (default: every file is a run of its own,
    as NeMo Gym counts runs). Each run has reductions and observers of its own.
    """

    def __init__(
        self,
        rules: Sequence[RuleSpec],
        internal_error: RuleSpec | None = None,
        digesters: Sequence[RowDigester] = (),
        observers_for: RunObservers | None = None,
        run_of: Callable[[str], str] | None = None,
    ):
        self.checker = RowChecker(rules, internal_error, digesters)
        self._reducing = [r for r in rules if r.impl.reduction is not None]
        self._observed = [r for r in rules if r.impl.observed]
        self._observers_for = observers_for
        self._run_of = run_of or (lambda path: path)
        self.runs: dict[str, _RunState] = {}  # in the order their first unit came
        self._internal = internal_error
        self.result = Result(Sorted(Finding.sort_key), coverage={r.code: Coverage(r.name) for r in rules})
        self._finished: set[str] = set()

    def _run(self, path: str) -> _RunState:
        name = self._run_of(path)
        state = self.runs.get(name)
        if state is None:
            state = self.runs[name] = _RunState(
                [(r, r.impl.reduction()) for r in self._reducing],  # type: ignore[misc]
                self._observers_for(name) if self._observers_for is not None else (),
            )
        return state

    def visit(self, subject: Subject) -> None:
        """Check one subject here and now (no shard: its line is its line)."""
        self.checker.start_unit(subject.path)
        self.checker.visit(subject)
        subject.release()
        self.absorb(self.checker.end_unit(), 0)

    def absorb(self, unit: UnitResult, lines_before: int) -> None:
        """Take a checked unit, whose lines follow `lines_before` others of its file."""
        result = self.result
        result.files += unit.files
        result.lines += unit.lines
        result.rows += unit.row_count
        result.internal_errors += unit.internal_errors
        for code, (evaluated, unobserved) in unit.coverage.items():
            entry = result.coverage[code]
            entry.evaluated += evaluated
            entry.unobserved += unobserved
        state = self._run(unit.path)
        unreadable = state.unreadable if state.observers else None
        for finding in unit.findings:
            if lines_before:
                finding = _shifted(finding, unit.path, lines_before)
            result.findings.append(finding)
            if unreadable is not None and finding.name in UNREADABLE:
                unreadable.append((finding.path, finding.line, finding.name))
        for digested, observed in unit.folds:
            for (spec, reduction), summary in zip(state.reductions, digested):
                if summary is None:
                    continue
                if isinstance(summary, Unfolded):
                    for line, digest in summary:
                        location = Location(unit.path, line + lines_before)
                        try:
                            reduction.absorb(location, digest)
                        except Exception as exc:  # noqa: BLE001
                            self._internal_error(spec, location, exc)
                    continue
                try:
                    reduction.absorb_folded(unit.path, lines_before, summary)  # type: ignore[attr-defined]
                except Exception as exc:  # noqa: BLE001
                    self._internal_error(spec, Location(unit.path, 0), exc)
            for observer, summary in zip(state.observers, observed):
                if summary is None:
                    continue
                if isinstance(summary, Unfolded):
                    for line, digest in summary:
                        observer.absorb(Location(unit.path, line + lines_before), digest)
                else:
                    observer.absorb_folded(unit.path, lines_before, summary)  # type: ignore[attr-defined]

    def finish_run(self, name: str) -> _RunState | None:
        """Judge one run whose files are all absorbed: its run-level findings join the result,
        and what its reductions kept is dropped. Returns the run's state (its observers hold
        its health), or None for a run that was never seen or is finished already."""
        state = self.runs.get(name)
        if state is None or name in self._finished:
            return None
        self._finished.add(name)
        by_name = {spec.name: spec for spec in self._observed}
        for spec, reduction in state.reductions:
            try:
                found = [
                    _finding(spec, location.path, location.line, rollout, None, violation)
                    for location, rollout, violation in reduction.finish()
                ]
            except Exception as exc:  # noqa: BLE001
                self._internal_error(spec, Location("<run>", 0), exc)
                continue
            self.result.coverage[spec.code].evaluated += 1
            self.result.findings.extend(found)
        state.reductions = []
        for observer in state.observers:
            for rule, location, rollout, pointer, message in observer.run_findings():
                spec = by_name.get(rule)
                if spec is not None:
                    self.result.findings.append(
                        _finding(spec, location.path, location.line, rollout, None, Violation(pointer, message))
                    )
        if state.observers:
            for spec in self._observed:
                self.result.coverage[spec.code].evaluated += 1
        return state

    def finish(self) -> Result:
        """Finish every run not finished yet; the result, its findings in report order."""
        for name in list(self.runs):
            self.finish_run(name)
        return self.result

    def _internal_error(self, spec: RuleSpec, location: Location, exc: Exception) -> None:
        self.result.internal_errors += 1
        if self._internal is not None:
            self.result.findings.append(_internal_finding(self._internal, spec, location.path, location.line, None, None, exc))


# -- findings -------------------------------------------------------------------------------


def _finding(
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
        related=_in_order(violation.related),
        rollout=rollout,
        fingerprint=fingerprint(spec.code, violation.pointer, rollout, path, content, native.sha256_hex()),
        availability=violation.availability,
    )


def _in_order(related: tuple[Location, ...]) -> tuple[Location, ...]:
    """The places a finding cites, in file, line and pointer order (most findings cite one or none)."""
    return tuple(sorted(related, key=_place)) if len(related) > 1 else tuple(related)


def _place(location: Location) -> tuple[str, int, str]:
    return location.path, location.line, location.pointer


def _internal_finding(
    internal: RuleSpec, spec: RuleSpec, path: str, line: int, rollout: Rollout | None, content: bytes | None, exc: Exception
) -> Finding:
    # The finding's location says where; the message holds no line number, so a row checked in
    # a shard says the same as in a whole file.
    message = (
        f"rule {spec.code} {spec.name} raised {type(exc).__name__}: {exc} while checking "
        f"{'this row' if line else path}; this is a bug in trajlint, please report it with this row"
    )
    return _finding(internal, path, line, rollout, content, Violation("", message))


def _shifted(finding: Finding, path: str, lines_before: int) -> Finding:
    """`finding` of a shard of `path`, at its line in the whole file (a row rule only ever
    cites places in its own row, or the file itself at line 0)."""
    related = finding.related
    if related:
        related = tuple(
            Location(loc.path, loc.line + lines_before, loc.pointer) if loc.line and loc.path == path else loc
            for loc in related
        )
    # Made directly: `dataclasses.replace` costs several times as much, once per finding of a shard.
    return Finding(
        finding.code,
        finding.name,
        finding.severity,
        finding.message,
        finding.path,
        finding.line + lines_before if finding.line else 0,
        finding.pointer,
        related,
        finding.rollout,
        finding.fingerprint,
        finding.availability,
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
