"""The rule catalog: one TOML file per rule in `rules/`, readable with the standard library.

Each entry holds what a user reads about a rule (code, name, default severity, summary,
rationale) and the example rows that show it failing and passing; the test suite runs every
example. The catalog is the source of truth for codes and severities; implementations only
name the rule they check. `observation-gap` also keeps its table of NeMo Gym gap codes here
(`[[gap]]`), so that what `trajlint rule` shows is what the rule applies.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from trajlint.contract.data import rules_dir
from trajlint.findings import SEVERITIES

FAMILIES: dict[str, str] = {
    "0": "input",
    "1": "schema",
    "2": "ownership",
    "3": "counts",
    "4": "identity",
    "5": "build",
    "6": "health",
    "9": "internal",
}

_CODE = re.compile(r"TL[0-9]{3}")
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_GAP = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
_ENTRY_KEYS = {"code", "name", "severity", "summary", "rationale", "example", "gap"}
_EXAMPLE_KEYS = {"expect", "description", "jsonl", "filename", "missing", "max_row_bytes"}
_GAP_KEYS = {"code", "severity", "availability", "meaning"}
#: The name an example's file gets unless it gives one (a name can decide a file's kind).
DEFAULT_FILENAME = "example.jsonl"


class CatalogError(ValueError):
    """The packaged catalog is malformed: a bug in trajlint, reported before any data is read."""


@dataclass(frozen=True, slots=True)
class Example:
    expect: str  # "fail" or "pass"
    description: str
    jsonl: str  # the file content the example is run on: one or more JSONL lines
    filename: str = DEFAULT_FILENAME
    missing: bool = False  # the file is not created (for rules about unreadable paths)
    max_row_bytes: int | None = None  # run with this limit instead of the default


@dataclass(frozen=True, slots=True)
class GapCode:
    """A NeMo Gym observation-gap code that `observation-gap` knows: how it weighs and what it means.

    `availability` marks a note that only says which evidence the producer cannot observe (its
    harness never records it, or the run was configured without it): an info a user cannot act
    on, on nearly every row of such runs, so reports count it but list it only on request.
    """

    code: str
    severity: str  # "warning" or "info"
    meaning: str
    availability: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    code: str
    name: str
    severity: str
    summary: str
    rationale: str
    examples: tuple[Example, ...]
    source: str
    #: The gap codes the rule knows, in catalog order (`[[gap]]`; only `observation-gap` has them).
    gaps: tuple[GapCode, ...] = ()

    @property
    def family(self) -> str:
        return FAMILIES[self.code[2]]


def _fail(path: Path, message: str) -> CatalogError:
    return CatalogError(f"{path.name}: {message}")


def _example(path: Path, raw: object) -> Example:
    if not isinstance(raw, dict) or raw.keys() - _EXAMPLE_KEYS:
        raise _fail(path, f"an example has unknown keys or is not a table: {raw!r}")
    if raw.get("expect") not in ("fail", "pass"):
        raise _fail(path, "example.expect must be 'fail' or 'pass'")
    jsonl = raw.get("jsonl", "")
    if not isinstance(jsonl, str) or (not jsonl and not raw.get("missing")):
        raise _fail(path, "example.jsonl must be the non-empty text of the example file")
    return Example(
        expect=raw["expect"],
        description=str(raw.get("description", "")),
        jsonl=jsonl,
        filename=str(raw.get("filename", DEFAULT_FILENAME)),
        missing=bool(raw.get("missing", False)),
        max_row_bytes=raw.get("max_row_bytes"),
    )


def _gaps(path: Path, raw: object) -> tuple[GapCode, ...]:
    if not isinstance(raw, list):
        raise _fail(path, "`gap` must be an array of tables ([[gap]])")
    gaps: dict[str, GapCode] = {}
    for item in raw:
        if not isinstance(item, dict) or item.keys() - _GAP_KEYS:
            raise _fail(path, f"a gap has unknown keys or is not a table: {item!r}")
        code, severity, meaning = item.get("code"), item.get("severity"), item.get("meaning")
        availability = item.get("availability", False)
        if not isinstance(code, str) or not _GAP.fullmatch(code):
            raise _fail(path, f"bad gap code {code!r} (snake_case)")
        if code in gaps:
            raise _fail(path, f"gap code {code} is listed twice")
        if severity not in ("warning", "info"):
            raise _fail(path, f"gap {code}: severity must be warning or info")
        if not isinstance(meaning, str) or not meaning.strip():
            raise _fail(path, f"gap {code}: `meaning` must be a non-empty string")
        if not isinstance(availability, bool) or (availability and severity != "info"):
            raise _fail(path, f"gap {code}: `availability` is true or false, and true only for an info")
        gaps[code] = GapCode(code, severity, " ".join(meaning.split()), availability)
    return tuple(gaps.values())


def load_entry(path: Path) -> Entry:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _fail(path, f"cannot be read: {exc}") from exc
    unknown = data.keys() - _ENTRY_KEYS
    if unknown:
        raise _fail(path, f"unknown keys {sorted(unknown)}")
    for key in ("code", "name", "severity", "summary", "rationale"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise _fail(path, f"`{key}` must be a non-empty string")
    if not _CODE.fullmatch(data["code"]) or data["code"][2] not in FAMILIES:
        raise _fail(path, f"bad code {data['code']!r} (TL + 3 digits of a known family)")
    if not _NAME.fullmatch(data["name"]):
        raise _fail(path, f"bad name {data['name']!r} (kebab-case)")
    if data["severity"] not in SEVERITIES:
        raise _fail(path, f"severity must be one of {SEVERITIES}")
    if path.stem != f"{data['code']}-{data['name']}":
        raise _fail(path, f"file must be named {data['code']}-{data['name']}.toml")
    examples = tuple(_example(path, raw) for raw in data.get("example", []))
    return Entry(
        code=data["code"],
        name=data["name"],
        severity=data["severity"],
        summary=data["summary"].strip(),
        rationale=data["rationale"].strip(),
        examples=examples,
        source=path.name,
        gaps=_gaps(path, data["gap"]) if "gap" in data else (),
    )


def load(directory: Path | None = None) -> dict[str, Entry]:
    """All entries keyed by code, in code order; duplicate codes or names are an error."""
    directory = directory or rules_dir()
    entries: dict[str, Entry] = {}
    names: dict[str, str] = {}
    for path in sorted(directory.glob("*.toml")):
        entry = load_entry(path)
        if entry.code in entries:
            raise _fail(path, f"code {entry.code} is also used by {entries[entry.code].source}")
        if entry.name in names:
            raise _fail(path, f"name {entry.name} is also used by {names[entry.name]}")
        entries[entry.code] = entry
        names[entry.name] = entry.code
    return dict(sorted(entries.items()))


@cache
def packaged() -> dict[str, Entry]:
    return load()
