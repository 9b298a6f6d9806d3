"""Baselines: adopt trajlint on data that already has defects, and fail only on new ones.

`trajlint baseline` records today's findings; `trajlint check --baseline FILE` then drops the
findings the file covers. An entry is keyed on what survives rows being appended, moved or
re-sharded, never on a line number: the rollout identity when the row has one, else the file
and the finding's fingerprint (which hashes the line's own bytes), plus the rule code and the
JSON pointer. Entries carry counts, so two recorded and three found leaves one reported, and
a recorded defect that is gone is counted as stale so the file can be shrunk.

The file is sorted JSON with one entry per key and no run-specific data (no trajlint version, no
date, no line numbers), so it diffs cleanly and only changes when the defects do.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trajlint.findings import Finding
from trajlint.spill import Packed

SCHEMA_VERSION = 1
DEFAULT_PATH = ".trajlint-baseline.json"
#: A baseline is read whole, so no bigger than this (a million entries take about 150 MB).
MAX_BYTES = 1024 * 1024 * 1024
#: Never recorded nor dropped: a crash in trajlint is not a defect of the data to live with.
_NEVER = "internal-error"

# ("rollout", task_id, rollout_id, code, pointer) or ("file", path, fingerprint, code, pointer)
Key = tuple[str, str, str, str, str]


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names it."""


def key(finding: Finding) -> Key:
    if finding.rollout is not None:
        return ("rollout", finding.rollout.task_id, finding.rollout.rollout_id, finding.code, finding.pointer)
    return ("file", finding.path, finding.fingerprint, finding.code, finding.pointer)


def _entry(k: Key, name: str, count: int) -> dict[str, Any]:
    kind, first, second, code, pointer = k
    entry: dict[str, Any] = {"code": code, "name": name}
    if kind == "rollout":
        entry["rollout"] = {"task_id": first, "rollout_id": second}
    else:
        entry["path"], entry["fingerprint"] = first, second
    entry["pointer"] = pointer
    entry["count"] = count
    return entry


def record(findings: Iterable[Finding]) -> dict[str, Any]:
    """The baseline document for these findings."""
    counts: Counter[Key] = Counter()
    names: dict[Key, str] = {}
    for finding in findings:
        if finding.name == _NEVER:
            continue
        k = key(finding)
        counts[k] += 1
        names[k] = finding.name
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "trajlint",
        "entries": [_entry(k, names[k], counts[k]) for k in sorted(counts)],
    }


def dumps(document: dict[str, Any]) -> str:
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A file name that is not UTF-8 (held as lone surrogates): \u escapes carry it
            # exactly, so the key still matches when the baseline is loaded again.
            text = json.dumps(document, indent=2) + "\n"
    return text


def _parse_entry(raw: Any) -> tuple[Key, int]:
    if not isinstance(raw, dict):
        raise ValueError("an entry is not an object")
    code, pointer, count = raw.get("code"), raw.get("pointer"), raw.get("count", 1)
    if not isinstance(code, str) or not isinstance(pointer, str):
        raise ValueError(f"entry {raw!r} needs a string code and pointer")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"entry {raw!r} has a bad count")
    rollout = raw.get("rollout")
    if isinstance(rollout, dict):
        task_id, rollout_id = rollout.get("task_id"), rollout.get("rollout_id")
        if isinstance(task_id, str) and isinstance(rollout_id, str):
            return ("rollout", task_id, rollout_id, code, pointer), count
    elif isinstance(raw.get("path"), str) and isinstance(raw.get("fingerprint"), str):
        return ("file", raw["path"], raw["fingerprint"], code, pointer), count
    raise ValueError(f"entry {raw!r} needs a rollout or a path and fingerprint")


@dataclass(frozen=True, slots=True)
class Baseline:
    path: str
    counts: Counter[Key]

    @classmethod
    def load(cls, path: str) -> Baseline:
        from trajlint.read import Refused, read_regular_file

        try:
            document = json.loads(read_regular_file(path, MAX_BYTES).decode("utf-8"))
        except Refused as exc:
            if exc.reason == "no such file or directory":
                raise BaselineError(
                    f"baseline {path} does not exist; create it with `trajlint baseline -o {path}`"
                ) from None
            raise BaselineError(f"baseline {path} cannot be read: {exc.reason}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BaselineError(f"baseline {path} is not valid JSON: {exc}") from None
        except RecursionError:
            raise BaselineError(f"baseline {path} is not a trajlint baseline (nested too deeply to read)") from None
        if not isinstance(document, dict) or document.get("schema_version") != SCHEMA_VERSION:
            raise BaselineError(f"baseline {path} is not a trajlint baseline (schema_version {SCHEMA_VERSION})")
        if not isinstance(document.get("entries", []), list):
            raise BaselineError(f"baseline {path}: `entries` must be a list")
        counts: Counter[Key] = Counter()
        try:
            for raw in document.get("entries", []):
                k, count = _parse_entry(raw)
                counts[k] += count
        except ValueError as exc:
            raise BaselineError(f"baseline {path}: {exc}") from None
        return cls(path, counts)

    @staticmethod
    def is_baseline(path: str) -> bool:
        """Whether `path` holds a trajlint baseline (one that `load` would read)."""
        try:
            Baseline.load(path)
        except BaselineError:
            return False
        return True

    def apply(self, findings: Iterable[Finding]) -> tuple[Packed[Finding], dict[str, Any]]:
        """(the findings the baseline does not cover, packed, {path, suppressed, stale})."""
        remaining = Counter(self.counts)
        kept: Packed[Finding] = Packed()
        total = 0
        for finding in findings:
            total += 1
            k = key(finding)
            if remaining[k] > 0 and finding.name != _NEVER:
                remaining[k] -= 1
            else:
                kept.append(finding)
        stale = sum(remaining.values())
        return kept, {"path": self.path, "suppressed": total - len(kept), "stale": stale}
