"""A bounded sample of the rows that findings point at, each with its build, for reports that let
a reader open a row (the HTML report's drill-down).

The check stage never holds its rows: a run of any size keeps memory flat. So the sample is taken
after the run, from the findings (the first `per_rule` rows of each rule, in report order, which
is the same for every `--jobs`), and only those lines are read again, in one pass per file that
stops at the last line wanted. Each sampled row is shortened (long strings, long lists) so that
a report stays small whatever the rows hold; a row from standard input cannot be read again and
is left out, as is a file that went away.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from trajlint.builder import build
from trajlint.builder.view import view
from trajlint.findings import Finding
from trajlint.read import DEFAULT_MAX_ROW_BYTES, Line, ParseError, Source, Unreadable, parse

PER_RULE = 20
MAX_ROWS = 200
#: Bytes of JSON the samples of one report may take in all; rows beyond it are left out.
BUDGET = 2_500_000
MAX_STRING = 400
MAX_ITEMS = 60
MAX_FINDINGS_PER_ROW = 40


def pick(findings: Iterable[Finding], per_rule: int = PER_RULE, max_rows: int = MAX_ROWS) -> list[tuple[str, int]]:
    """The rows to sample, as (path, line), in the order their findings first come."""
    taken: dict[str, int] = {}
    chosen: dict[tuple[str, int], None] = {}
    for finding in findings:
        if finding.line <= 0 or finding.path == "-":
            continue
        key = (finding.path, finding.line)
        if key in chosen or taken.get(finding.code, 0) >= per_rule:
            continue
        if len(chosen) >= max_rows:
            break
        taken[finding.code] = taken.get(finding.code, 0) + 1
        chosen[key] = None
    return list(chosen)


def read_lines(path: str, numbers: Iterable[int], max_row_bytes: int = DEFAULT_MAX_ROW_BYTES) -> dict[int, bytes]:
    """The raw bytes of the given lines of one file (those it has), read in one pass that stops
    at the last of them. Lines too long to hold are left out."""
    wanted = set(numbers)
    if not wanted:
        return {}
    last = max(wanted)
    found: dict[int, bytes] = {}
    lines = Source(path).lines(max_row_bytes)
    try:
        for item in lines:
            if isinstance(item, Unreadable):
                break
            if isinstance(item, Line) and item.number in wanted:
                found[item.number] = item.raw
            if item.number >= last:
                break
    finally:
        lines.close()
    return found


def shorten(value: Any, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS) -> Any:
    """`value` with long strings cut (the cut said in the string) and long lists and objects cut,
    their last entry saying how many were left out. Pointers into what remains still resolve."""
    if isinstance(value, str):
        if len(value) > max_string:
            return value[:max_string] + f"… [{len(value) - max_string:,} more characters]"
        return value
    if isinstance(value, list):
        head = [shorten(v, max_string, max_items) for v in value[:max_items]]
        if len(value) > max_items:
            head.append(f"… [{len(value) - max_items:,} more items]")
        return head
    if isinstance(value, dict):
        out = {}
        for i, (key, item) in enumerate(value.items()):
            if i == max_items:
                out["…"] = f"[{len(value) - max_items:,} more keys]"
                break
            out[key] = shorten(item, max_string, max_items)
        return out
    return value


def collect(
    findings: Sequence[Finding],
    *,
    max_row_bytes: int = DEFAULT_MAX_ROW_BYTES,
    per_rule: int = PER_RULE,
    max_rows: int = MAX_ROWS,
    budget: int = BUDGET,
) -> tuple[dict[str, Any], ...]:
    """The sampled rows: path, line, the row (shortened), its built view, and its findings."""
    chosen = pick(findings, per_rule, max_rows)
    by_path: dict[str, list[int]] = {}
    for path, line in chosen:
        by_path.setdefault(path, []).append(line)
    raw: dict[tuple[str, int], bytes] = {}
    for path, numbers in by_path.items():
        for number, data in read_lines(path, numbers, max_row_bytes).items():
            raw[(path, number)] = data
    on_row: dict[tuple[str, int], list[Finding]] = {}
    for finding in findings:
        key = (finding.path, finding.line)
        if key in raw:
            on_row.setdefault(key, []).append(finding)
    samples: list[dict[str, Any]] = []
    spent = 0
    for key in chosen:
        if key not in raw:
            continue
        sample = _sample(key, raw[key], on_row.get(key, []))
        size = len(orjson.dumps(sample, option=orjson.OPT_NON_STR_KEYS))
        if spent + size > budget:
            continue
        spent += size
        samples.append(sample)
    return tuple(samples)


def _sample(key: tuple[str, int], raw: bytes, findings: list[Finding]) -> dict[str, Any]:
    path, line = key
    value = parse(raw)
    sample: dict[str, Any] = {
        "path": _text(path),
        "line": line,
        "findings": [
            {"code": f.code, "name": f.name, "severity": f.severity, "message": f.message[:MAX_STRING], "pointer": f.pointer}
            for f in findings[:MAX_FINDINGS_PER_ROW]
        ],
        "findings_left_out": max(len(findings) - MAX_FINDINGS_PER_ROW, 0),
        "row": None,
        "view": None,
        "problem": None,
    }
    if isinstance(value, ParseError):
        sample["problem"] = f"the line is not JSON: {value.message}"
        sample["row"] = shorten(raw.decode("utf-8", "replace"), 4000)
        return sample
    sample["row"] = shorten(value)
    if not isinstance(value, dict):
        sample["problem"] = "the line is not a JSON object, so no rollout is built from it"
        return sample
    try:
        sample["view"] = shorten(view(build(value)), max_items=400)
    except Exception as exc:  # noqa: BLE001 - a row the build cannot take is shown without one
        sample["problem"] = f"the row could not be built ({type(exc).__name__})"
    return sample


def _text(path: str) -> str:
    """A file name as reports spell it: an undecodable byte (a lone surrogate here) as `\\xNN`."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def find_rollout(path: str, rollout_id: str, max_row_bytes: int = DEFAULT_MAX_ROW_BYTES) -> list[tuple[int, bytes]]:
    """The lines of `path` whose row records the rollout `rollout_id` (as NeMo Gym derives it;
    `TASK/ROLLOUT` names the task too), with their bytes, in file order."""
    from trajlint.builder.identity import rollout_identity

    task, _, rollout = rollout_id.rpartition("/") if "/" in rollout_id else ("", "", rollout_id)
    found: list[tuple[int, bytes]] = []
    for item in Source(path).lines(max_row_bytes):
        if isinstance(item, Unreadable):
            break
        if not isinstance(item, Line):
            continue
        value = parse(item.raw)
        if not isinstance(value, dict):
            continue
        identity = rollout_identity(value)
        if identity is not None and identity.rollout_id == rollout and (not task or identity.task_id == task):
            found.append((item.number, item.raw))
    return found
