"""What rules look at: a file, a line, or a parsed row with the evidence it holds.

The read stage yields lines; here a line becomes a row (parsed, its evidence named, its rollout
identity derived), the one place where that happens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from trajlint.builder.identity import rollout_identity
from trajlint.check import fast
from trajlint.check.kinds import ROLLOUT_FILE, ROLLOUTS, FileKind
from trajlint.findings import Location, Rollout
from trajlint.read import Batch, Line, LineTally, OversizedLine, ParseError, Source, Unreadable, native, parse
from trajlint.row.sections import CAPTURE, SECTION_EVIDENCE, STATED

FILE = frozenset({"file"})
LINE = frozenset({"line"})


@dataclass(slots=True)
class Subject:
    """One thing rules look at: a file, a line, or a parsed row, with the evidence it holds, in a
    file of its kind (`trajlint.check.kinds`)."""

    path: str
    line: int
    evidence: frozenset[str]
    raw: bytes | None = None
    value: Any = None
    problem: Any = None
    rollout: Rollout | None = None
    _build: Any = None
    _memo: dict[str, Any] | None = None
    kind: FileKind = ROLLOUT_FILE
    #: The native core's strict-JSON verdict on a parsed line (`trajlint.read.native`: 0 proves
    #: it clean), or None where the core was not asked.
    strict: int | None = None
    #: The native core proved the line clean of every rule the run applies to it (`check.fast`):
    #: `value` then holds only the row's reduced row (`fast.reduced_row`), unless the run checks
    #: the core, when `reduced` is the subject the fast path would have made of the line.
    proved: bool = False
    reduced: Subject | None = None
    #: A proved row's health judgement (`fast.Judgement`), when the run's health report asked.
    judgement: Any = None
    #: The model calls no one owns on a proved row, as the core hands them back: (position in the
    #: stated `model_calls`, position in the capture's `calls`, model_call_id, response_id) of
    #: each, for `unowned-model-call` to report. None on any other subject.
    unowned: Any = None
    #: A proved row that carries no gap (`fast.gapless`): observation-gap has nothing to find.
    gapless: bool = False
    #: A row the core did not prove clean of every rule: the bits of the families it did prove
    #: it clean of (`fast.partly_proved`), whose rules need not run on it; 0 for none.
    clean_families: int = 0

    @property
    def row(self) -> dict[str, Any]:
        return self.value

    @property
    def build(self) -> Any:
        """The row's built trajectory and ownership ledger, built once, on first use."""
        if self._build is None:
            from trajlint.builder import build

            self._build = build(self.value)
        return self._build

    def release(self) -> None:
        """Drop what the rules derived from the row (its build, their memoized views) once they
        are done with it. A view refers back to its subject (`HealthView`), so without this a
        row that went the Python way lives on in a cycle, its parsed row and build with it,
        until the cyclic collector runs, which must then walk all of it."""
        self._memo = None
        self._build = None

    def memo(self, key: str, compute: Callable[[Subject], Any]) -> Any:
        """`compute(self)`, computed once per subject: what several rules derive from one row
        (an index of its ids, a walk of its counts) is derived once."""
        memo = self._memo
        if memo is None:
            memo = self._memo = {}
        elif key in memo:
            return memo[key]
        value = memo[key] = compute(self)
        return value

    def location(self, pointer: str = "") -> Location:
        return Location(self.path, self.line, pointer)




def _holds_model_calls(row: dict) -> bool:
    """Whether ownership can be judged at all: a captured call, or a call in the stated trajectory."""
    for key, part in ((CAPTURE, "calls"), (STATED, "model_calls")):
        section = row.get(key)
        if isinstance(section, dict) and isinstance(section.get(part), list) and section[part]:
            return True
    return False


#: `row_subject`'s `proof` when the core has not been asked yet.
ASK: Any = object()


def row_subject(
    path: str, number: int, raw: bytes, core: Any = None, checking: bool = False, prove: Any = None, proof: Any = ASK
) -> Subject:
    """The subject of one line; `core` is the native core's line verdict function, when it is to
    be asked, and `checking` compares its verdict with the Python path's. `prove` asks the core to
    prove the line clean of every rule the run applies (`check.fast`), unless `proof` is its
    answer already (`check.ahead`); a line it proves is not parsed here, unless `checking`, when
    the Python path checks it too."""
    clean_families = 0
    scanned = False  # the core read the line as a strict JSON object
    if proof is ASK and prove is not None:
        proof = prove(raw)
    if proof is not ASK:
        if type(proof) is int:
            # Not proved clean of every rule, but read as a row: it is not scanned again.
            clean_families, scanned = proof, True
            if not checking:
                core = None
        elif proof is not None:
            bits, pairs, parts, judged, unowned = proof
            value = fast.reduced_row(pairs, parts)
            reduced = Subject(
                path, number, fast.evidence(bits), raw=raw, value=value, rollout=rollout_identity(value), proved=True,
                judgement=fast.judgement(judged), unowned=unowned, gapless=fast.gapless(parts),
            )
            if checking:
                subject = row_subject(path, number, raw, core, checking)
                subject.proved = True
                subject.reduced = reduced
                fast.compare(subject, proof)
                return subject
            return reduced
    value = parse(raw)
    strict = 0 if scanned and core is None else None
    if core is not None:
        strict = core(raw)
        if checking:
            _compare(path, number, raw, value, strict)
        if strict & native.INVALID:
            strict = None  # the core proves nothing here: the Python path judges alone
    if isinstance(value, ParseError):
        return Subject(path, number, LINE, raw=raw, problem=value)
    if not isinstance(value, dict):
        return Subject(path, number, LINE, raw=raw, value=value, strict=strict)
    evidence = {"line", "row"}
    for key, name in SECTION_EVIDENCE.items():
        if value.get(key) is not None:
            evidence.add(name)
    if _holds_model_calls(value):
        evidence.add("model-calls")
    return Subject(
        path, number, frozenset(evidence), raw=raw, value=value, rollout=rollout_identity(value), strict=strict,
        clean_families=clean_families,
    )


def _compare(path: str, number: int, raw: bytes, value: Any, strict: int) -> None:
    """Raise `CoreMismatch` unless the core's verdict is the one the Python path reaches."""
    from trajlint.read.strict import scan

    accepted = not isinstance(value, ParseError)
    if accepted == bool(strict & native.INVALID):
        said = "invalid JSON" if strict & native.INVALID else "valid JSON"
        found = value.message if isinstance(value, ParseError) else "orjson reads it"
        raise native.mismatch(path, number, f"the core says {said}, Python: {found}")
    if not accepted:
        return
    found = scan(raw)
    for bit, name, python in (
        (native.REPEATED, "a repeated key", bool(found.repeated)),
        (native.OVERSIZED, "an integer beyond 64 bits", bool(found.oversized)),
    ):
        if bool(strict & bit) != python:
            raise native.mismatch(
                path, number, f"{name}: the core says {'yes' if strict & bit else 'no'}, Python {'yes' if python else 'no'}"
            )


def unit_subjects(
    unit: Source | Batch | Unreadable,
    max_row_bytes: int,
    tally: LineTally | None = None,
    kind: FileKind = ROLLOUT_FILE,
    prove: Any = None,
    prove_many: Any = None,
) -> Iterator[Subject]:
    """What the rules look at in one unit of input, a file of `kind`: the file (unless the unit
    is a later shard of it), then each of its lines. `prove`: see `row_subject` (rollout files
    only); with `prove_many` as well (`_core.check_rows`), the lines are proved a few batches
    ahead on a thread of their own (`check.ahead`)."""
    if isinstance(unit, Unreadable):
        yield Subject(unit.path, unit.line, FILE, problem=unit, kind=kind)
        return
    if unit.first_shard:
        yield Subject(unit.path, 0, FILE, kind=kind)
    core, checking = native.scanner(), native.mode() == "check"
    if kind.kind != ROLLOUTS:
        prove = None
    items = unit.lines(max_row_bytes, tally)
    if prove is not None and prove_many is not None:
        from trajlint.check.ahead import proved_ahead

        for item, proof in proved_ahead(items, prove_many):
            yield _item_subject(item, kind, core, checking, None, proof)
        return
    for item in items:
        yield _item_subject(item, kind, core, checking, prove, ASK)


def _item_subject(item: Any, kind: FileKind, core: Any, checking: bool, prove: Any, proof: Any) -> Subject:
    if isinstance(item, Line):
        subject = row_subject(item.path, item.number, item.raw, core, checking, prove, proof)
        if kind.kind != ROLLOUTS:
            # Not a rollout: its findings name no rollout (a baseline keys them on the file).
            subject.kind, subject.rollout = kind, None
        return subject
    if isinstance(item, OversizedLine):
        return Subject(item.path, item.number, LINE, problem=item, kind=kind)
    return Subject(item.path, item.line, FILE, problem=item, kind=kind)


def subjects(sources: Iterable[Source | Unreadable], max_row_bytes: int) -> Iterator[Subject]:
    """Everything the rules look at, in input order: each file, then each of its lines."""
    for source in sources:
        yield from unit_subjects(source, max_row_bytes)
