"""How a rule is declared: the name it implements and the evidence it reads.

The catalog entry in `rules/` says what a rule is (code, severity, documentation); the function
registered here says how it checks. A rule reads named evidence; when a row lacks that evidence
the rule is *unobserved* for the row (counted, never passed silently) and its function is not
called at all, so a rule never has to guard against evidence that is not there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from trajlint.check.kinds import KINDS, ROLLOUTS
from trajlint.check.subject import Subject
from trajlint.findings import Finding, Location, Rollout

#: Evidence a rule may read. "file": a path that was opened or failed to open; "line": a
#: non-blank physical line; "row": a line that parsed to a JSON object (its build, `subject.build`,
#: is then available too); "model-calls": the row holds at least one model call (captured, or in
#: the stated trajectory), so ownership can be judged; the others: that section of the row is
#: present and not null.
EVIDENCE: frozenset[str] = frozenset(
    {"file", "line", "row", "model-calls", "capture", "observations", "trajectory", "verifiers"}
)

#: The kinds of file a rule checks (`trajlint.check.kinds`) unless it names others: a rule about
#: a rollout has nothing to say about a file of task inputs. Rules about the input itself (is it
#: readable, is each line JSON) name every kind.
ROLLOUT_FILES: frozenset[str] = frozenset({ROLLOUTS})
EVERY_FILE: frozenset[str] = frozenset(KINDS)

@dataclass(frozen=True, slots=True)
class Violation:
    """What a rule function yields: where and what. The engine adds code, severity and identity.

    `severity` is for rules whose findings differ in weight (drift in the set of turns against
    drift in one turn's content); None means the rule's own. A severity the user or a profile
    sets for the rule overrides it for every finding of that rule. `availability` marks a
    finding that only restates which evidence the producer cannot observe (see
    `Finding.availability`).
    """

    pointer: str
    message: str
    related: tuple[Location, ...] = ()
    severity: str | None = None
    availability: bool = False


class _Unobserved:
    """What a row rule returns instead of violations when the row lacks what it judges.

    For evidence a rule can tell only once it looks (health checks: are the turns known, does
    the agent own a call?); the engine counts the rule unobserved for the row, exactly as when a
    section it declares is missing.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNOBSERVED"


UNOBSERVED: Any = _Unobserved()

RowCheck = Callable[[Subject], Iterable[Violation]]


class Reduction(Protocol):
    """A run-level rule: keeps a small digest of every row and reports at the end of the run.

    It works in two halves so that rows can be checked in parallel. `digest` sees the row where
    it is checked (perhaps a worker process, with an instance of its own) and returns a small
    picklable summary that holds no line number; `absorb` receives those summaries in input
    order, with the row's location, in the one instance that reports.

    A reduction may also fold the digests of a part of a unit where they are made, so that the
    reporting process takes the part in one step instead of one per row: `fold(rows)` (static,
    `rows` the part's (line, digest), lines counted from the unit's first) returns one picklable
    summary, and `absorb_folded(path, lines_before, summary)` takes it as `absorb` would take
    each row at line `line + lines_before` of `path`. Without them (or when `fold` raises), the
    run absorbs row by row.
    """

    def digest(self, subject: Subject) -> Any: ...

    def absorb(self, location: Location, digest: Any) -> None: ...

    def finish(self) -> Iterable[tuple[Location, Rollout | None, Violation]]: ...


class RowDigester(Protocol):
    """The half of a `RowObserver` that sees each row where it is checked; must pickle."""

    def digest(
        self, subject: Subject, findings: list[Finding], unobserved: list[str], raised: dict[str, str]
    ) -> Any:
        """`findings` the row's; `unobserved` the codes of the rules the row left unobserved;
        `raised` the name of each rule that raised on the row, with the exception's type name."""
        ...


class RowObserver(Protocol):
    """Sees every row once its rules have run: its findings and the rules it left unobserved.

    For run-level views that need a row's outcome rather than its evidence (health verdicts).
    Split like a `Reduction`: `digester().digest(...)` where the row is checked, `absorb` in
    input order where the run is reported; a digester's `fold` and the observer's
    `absorb_folded` take a part's rows at once, as a reduction's do. At the end it may report findings for the rules it
    stands for (`observed_rule`): (rule name, location, rollout, pointer, message).
    """

    def digester(self) -> RowDigester: ...

    def run_findings(self) -> Iterable[tuple[str, Location, Rollout | None, str, str]]: ...

    def absorb(self, location: Location, digest: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Implementation:
    name: str
    reads: frozenset[str]
    check: RowCheck | None = None
    reduction: Callable[[], Reduction] | None = None
    observed: bool = False  # its findings come from the run's observer (see `observed_rule`)
    kinds: frozenset[str] = ROLLOUT_FILES  # the kinds of file it checks
    doc: str = field(default="", compare=False)
    module: str = field(default="", compare=False)  # where it is registered, for `trajlint rule`


IMPLEMENTATIONS: dict[str, Implementation] = {}


def _register(impl: Implementation) -> None:
    unknown = impl.reads - EVIDENCE
    if unknown:
        raise ValueError(f"rule {impl.name} reads unknown evidence {sorted(unknown)}")
    if not impl.kinds or impl.kinds - EVERY_FILE:
        raise ValueError(f"rule {impl.name} checks unknown kinds of file {sorted(impl.kinds - EVERY_FILE)}")
    if impl.name in IMPLEMENTATIONS:
        raise ValueError(f"rule {impl.name} is implemented twice")
    IMPLEMENTATIONS[impl.name] = impl


def row_rule(
    name: str, *, reads: Iterable[str], kinds: Iterable[str] = ROLLOUT_FILES
) -> Callable[[RowCheck], RowCheck]:
    """Register `fn(subject) -> Iterable[Violation]` as the check of rule `name`, run on the
    files of `kinds`."""

    def decorate(fn: RowCheck) -> RowCheck:
        module = fn.__module__ if isinstance(fn, type(_register)) else type(fn).__module__
        _register(
            Implementation(
                name, frozenset(reads), check=fn, kinds=frozenset(kinds), doc=fn.__doc__ or "", module=module
            )
        )
        return fn

    return decorate


def run_rule(name: str, *, reads: Iterable[str]) -> Callable[[type], type]:
    """Register a `Reduction` class; the engine makes one instance per run."""

    def decorate(cls: type) -> type:
        _register(Implementation(name, frozenset(reads), reduction=cls, doc=cls.__doc__ or "", module=cls.__module__))
        return cls

    return decorate


def observed_rule(name: str, *, reads: Iterable[str], module: str) -> None:
    """A run-level rule whose findings the run's observer reports at the end (task health)."""
    _register(Implementation(name, frozenset(reads), observed=True, module=module))


def engine_rule(name: str, *, module: str) -> None:
    """A rule whose findings the engine itself produces (it has no evidence of its own)."""
    _register(Implementation(name, frozenset(), kinds=EVERY_FILE, module=module))
