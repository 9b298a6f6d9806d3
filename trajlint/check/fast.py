"""The fast path: rows the native core proves clean skip the Python rules.

The core (`trajlint._core`) proves a line clean of whole families of rules (`FAMILIES`), or says
nothing. A run takes the fast path for a line only when the core proves it clean of *every* rule
the run would apply to it; the line then becomes a subject with its evidence and identity but
not its row, and no rule looks at it. Everything else goes the Python way, which stays the
reference and explains what it finds. Under ``TRAJLINT_CORE=check`` every line the core proves
clean is also checked the Python way, and a finding there stops the run (`native.CoreMismatch`).

What a proved row still owes the run is its identity (duplicate identities, shared capture keys)
and the findings of the rules that read only a few small parts of it (`REDUCED`): the core hands
back the JSON text of the row's identity keys (`IDENTITY_KEYS`) and of those parts (`EXTRACTS`),
and the row's subject holds a *reduced row* of only those, from which the Python functions derive
the identity and the reduced rules find exactly what they find on the whole row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import orjson

from trajlint.health.view import Digest
from trajlint.read import native

#: Bits of the core's families (src/families/mod.rs) -> the rules each proves a row clean of.
SCHEMA, COUNTS, STRUCTURE, OWNERSHIP, DRIFT, HEALTH = 1, 2, 4, 8, 16, 32
FAMILIES: dict[int, frozenset[str]] = {
    SCHEMA: frozenset({"TL101", "TL102", "TL103", "TL104", "TL105", "TL107"}),
    COUNTS: frozenset({"TL301", "TL302", "TL303", "TL304"}),
    STRUCTURE: frozenset({"TL402", "TL403", "TL404", "TL405", "TL406", "TL407", "TL408", "TL409", "TL410"}),
    OWNERSHIP: frozenset({"TL201", "TL202", "TL203", "TL204", "TL205", "TL206", "TL207", "TL208", "TL209"}),
    DRIFT: frozenset({"TL501", "TL502"}),
    HEALTH: frozenset({"TL601", "TL602", "TL603", "TL604", "TL605", "TL606", "TL607", "TL608", "TL609"}),
}
#: Rules about the line itself that a row the core parses cannot break: it is valid strict JSON
#: (no repeated key, no integer beyond 64 bits) and an object. (Too large a line never reaches it.)
STRICT = frozenset({"TL002", "TL003", "TL004", "TL005", "TL006"})
#: Rules of the whole run: they read a proved row's identity, which the fast path keeps.
RUN_LEVEL = frozenset({"TL401", "TL411"})
#: Rules that run on a proved row's reduced row, from what the core hands back of it:
#: observation-gap (TL503) reads parts of the row (`EXTRACTS`), for it lists every gap a row
#: carries, clean or not, so no proof can spare it; unowned-model-call (TL209) reads the calls the
#: core found no one owns (`Subject.unowned`), information that many clean rows of a real run hold
#: (a judge's call no verifier claims), so the core reports it rather than leave such rows to the
#: Python path.
REDUCED = frozenset({"TL503", "TL209"})
#: src/row.rs EXTRACTS: (section, key) of each part, and the bits of `check_row` asking for them.
EXTRACTS = (
    ("ng_agent_observations", "gaps"),
    ("ng_model_call_capture", "gaps"),
    ("ng_trajectory", "gaps"),
    ("ng_trajectory", "rollout_id"),
)
GAPS, STATED_ID = 1, 2
#: Rules of the whole run over the rows' health judgements (the task checks): a proved row hands
#: back its judgement.
JUDGED = frozenset({"TL610", "TL611"})
#: The row health rules, in the order of a judgement's unobserved bits (`health.checks.ROW_CHECKS`).
ROW_HEALTH = ("TL601", "TL602", "TL603", "TL604", "TL605", "TL606", "TL607", "TL608", "TL609")


@dataclass(frozen=True, slots=True)
class Judgement:
    """A proved row's health: the row health rules it leaves unobserved, and its digest."""

    unobserved: frozenset[str]
    digest: Digest


def judgement(raw: tuple[int, tuple[Any, ...]] | None) -> Judgement | None:
    """A judgement from the core's (unobserved bits, digest fields in `Digest` order)."""
    if raw is None:
        return None
    bits, fields = raw
    unobserved = _UNOBSERVED_SETS.get(bits)
    if unobserved is None:
        unobserved = _UNOBSERVED_SETS[bits] = frozenset(code for i, code in enumerate(ROW_HEALTH) if bits & (1 << i))
    if fields[3]:
        values = list(fields)
        values[3] = tuple((str(status), int(count)) for status, count in values[3])  # failed_by_status
        return Judgement(unobserved, Digest(*values))
    return Judgement(unobserved, Digest(*fields[:3], (), *fields[4:]))


#: One set of unobserved rules per combination of the core's bits: a few serve every row.
_UNOBSERVED_SETS: dict[int, frozenset[str]] = {}

#: Evidence bits of `check_row` (src/row.rs), in bit order.
EVIDENCE = ("capture", "observations", "trajectory", "verifiers", "model-calls")


def wanted_families(codes: Iterable[str], proved: int) -> int | None:
    """The family bits the core must prove for a run of rules `codes` (the rules that look at a
    line of a rollout file) to take the fast path, or None when some rule is beyond what the core
    proves (`proved`, its written families)."""
    wanted = 0
    for code in codes:
        if code in STRICT or code in RUN_LEVEL or code in JUDGED:
            continue
        bit = next((bit for bit, members in FAMILIES.items() if code in members), None)
        if bit is None and code in REDUCED:
            continue  # read from the parts the core hands back, whatever families it proves
        if bit is None or not bit & proved:
            return None
        wanted |= bit
    return wanted


_EVIDENCE_SETS: dict[int, frozenset[str]] = {}


def evidence(bits: int) -> frozenset[str]:
    """The evidence of a proved row, from the core's bits (one frozenset per combination)."""
    found = _EVIDENCE_SETS.get(bits)
    if found is None:
        names = {"line", "row"}
        names.update(name for i, name in enumerate(EVIDENCE) if bits & (1 << i))
        found = _EVIDENCE_SETS[bits] = frozenset(names)
    return found


def partly_proved(bits: int) -> frozenset[str]:
    """The rules a row is proved clean of when the core proves it clean of the families `bits`
    but not of every rule (`check_row`'s `partial` answer): never health's, which the Python
    path judges from the row's findings, nor the reduced rules, which find what they find on
    rows clean of the rest of their family."""
    found = _PARTLY_SETS.get(bits)
    if found is None:
        found = _PARTLY_SETS[bits] = frozenset().union(
            *(members - REDUCED for bit, members in FAMILIES.items() if bits & bit and bit != HEALTH)
        )
    return found


_PARTLY_SETS: dict[int, frozenset[str]] = {}


def wanted_extracts(codes: Iterable[str], judges: bool = False) -> int:
    """The parts of a proved row (bits of `check_row`'s `extracts`) the rules `codes` read, and
    with `judges` what the health report's verdict line reads (the stated rollout id)."""
    return (GAPS if "TL503" in codes else 0) | (STATED_ID if judges else 0)


def reduced_row(pairs: list[tuple[str, str]], parts: list[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """The row of a proved line's identity keys and extracted parts, from their JSON text."""
    row: dict[str, Any] = {key: orjson.loads(text) for key, text in pairs}
    for section, key, text in parts:
        row.setdefault(section, {})[key] = orjson.loads(text)
    return row


def gapless(parts: list[tuple[str, str, str]]) -> bool:
    """Whether a proved row's extracted gap lists (`EXTRACTS`) are all empty or absent: a rule
    that reads the gaps alone (observation-gap) finds nothing on the row, and the fast path does
    not run it (a run that checks the core still does, and compares)."""
    return all(text == "[]" for _, key, text in parts if key == "gaps")  # an empty list comes back as `[]`


def prover() -> Any:
    """The core's `check_row` and its proved families, or None when the Python path decides."""
    from trajlint.contract import validate

    if native.mode() == "off":
        validate.validate_through(None)
        return None
    module = native.module()
    proved = module.PROVED
    alike = validates_as_the_core(module)
    # The health judgement validates the stated trajectory as the schema family does.
    if proved & (SCHEMA | HEALTH) and not alike:
        proved &= ~(SCHEMA | HEALTH)
    # The Python rules validate with the core's compiled validators too, where they validate
    # alike: a process then holds one validation engine, not two (jsonschema-rs stays unloaded
    # unless a value cannot be handed to the core); check mode runs both and compares.
    validate.validate_through(module.schema_validator if alike else None, checked=native.mode() == "check")
    return module.check_row, proved


def validates_as_the_core(module: Any) -> bool:
    """Whether the schema rules of this process validate as the core does: with jsonschema-rs
    built on the `jsonschema` crate of the core's version, on the documents compiled into the
    core. Otherwise (the python-jsonschema backend, another jsonschema-rs, a core built before
    the schemas changed) a valid/invalid verdict could differ, and the core proves no row clean
    of them."""
    from trajlint.contract import validate

    return validate.backend() == "rust" and _same_validation(module)


@cache
def _same_validation(module: Any) -> bool:
    from trajlint.contract.data import schemas_dir

    installed = _jsonschema_rs_version()
    if installed is None:
        return False
    packaged = {path.name: path.read_bytes().decode("utf-8") for path in schemas_dir().glob("*.schema.json")}
    return installed == getattr(module, "JSONSCHEMA", None) and packaged == dict(getattr(module, "SCHEMA_DOCUMENTS", ()))


def _jsonschema_rs_version() -> str | None:
    """The installed jsonschema-rs's version, from the metadata of its distribution beside the
    package where there is one such (what `importlib.metadata` reads; importing that costs
    every run's start about 15 ms), else from `importlib.metadata`. The package is found, not
    imported: a process whose rows the core proves never needs it."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("jsonschema_rs")
    if spec is None or spec.origin is None:
        return None
    found = list(Path(spec.origin).parent.parent.glob("jsonschema_rs-*.dist-info/METADATA"))
    if len(found) == 1:
        with found[0].open(encoding="utf-8") as metadata:
            for line in metadata:
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip()
                if not line.strip():  # the headers end; the description follows
                    break
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jsonschema_rs")
    except PackageNotFoundError:
        return None


def compare(subject: Any, proof: tuple[Any, ...]) -> None:
    """Raise `native.CoreMismatch` unless a line the core proved has, the Python way, the
    evidence, the identity and the extracted parts the proof gives it (its findings are compared
    once its rules ran, `mismatched_findings`)."""
    from trajlint.builder.identity import rollout_identity

    bits, pairs, parts, _, _ = proof
    row = subject.value
    said = evidence(bits)
    if not isinstance(row, dict) or said != subject.evidence:
        raise native.mismatch(
            subject.path, subject.line, f"the core proves a row with evidence {sorted(said)}, Python finds {sorted(subject.evidence)}"
        )
    identity = reduced_row(pairs)
    if identity != {key: row[key] for key in identity} or set(identity) != {key for key in IDENTITY_KEYS if key in row}:
        raise native.mismatch(subject.path, subject.line, f"the core reads the identity keys as {identity}")
    if rollout_identity(identity) != subject.rollout:
        raise native.mismatch(subject.path, subject.line, "the row's identity differs on its identity keys alone")
    for section, key, text in parts:
        held = row.get(section)
        if not isinstance(held, dict) or key not in held or orjson.loads(text) != held[key]:
            raise native.mismatch(subject.path, subject.line, f"the core reads /{section}/{key} as {text}")


def mismatched_findings(subject: Any, findings: list[Any], unobserved: list[str] = ()) -> native.CoreMismatch:
    codes = sorted({finding.code for finding in findings})
    if not codes and unobserved:
        return native.mismatch(subject.path, subject.line, f"the core judges otherwise which rules are unobserved; Python: {', '.join(unobserved)}")
    return native.mismatch(subject.path, subject.line, f"the core proves the row clean, Python finds {', '.join(codes)}")


def mismatched_judgement(subject: Any, judged: Any, observed: Any) -> native.CoreMismatch:
    return native.mismatch(subject.path, subject.line, f"the core judges the row's health as {judged}, Python as {observed}")


def mismatched_partly(subject: Any, codes: Iterable[str]) -> native.CoreMismatch:
    return native.mismatch(
        subject.path, subject.line, f"the core proves the row clean of the families of {', '.join(sorted(codes))}, Python finds them"
    )


def mismatched_reduced(subject: Any, code: str) -> native.CoreMismatch:
    return native.mismatch(subject.path, subject.line, f"{code} finds otherwise on the reduced row than on the whole row")


#: src/row.rs IDENTITY_KEYS.
IDENTITY_KEYS = (
    "_ng_task_index",
    "_ng_rollout_index",
    "_ng_rollout_id",
    "_ng_attempt_index",
    "_ng_task_id",
    "task_id",
    "problem_id",
    "instance_id",
    "stage_index",
)
