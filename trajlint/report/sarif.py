"""SARIF 2.1.0, the format GitHub code scanning and other static-analysis dashboards ingest.

Choices that matter to those consumers:
- locations are URIs relative to the report's root (the working directory), marked with the
  `%SRCROOT%` base id, which `originalUriBaseIds` resolves, so a checkout anywhere gives the same
  report and GitHub can link the file;
- every location has a region: a finding about a file as a whole points at its line 1, as GitHub
  needs a `startLine` to show an alert;
- each result carries trajlint's own fingerprint in `partialFingerprints`. GitHub keys alerts on
  `primaryLocationLineHash`, which its upload action computes from the text of the line; other
  consumers may match on trajlint's;
- a rule's `fullDescription` stays within GitHub's 1,024 characters, cut at a sentence or a word;
  `help` keeps the whole text;
- GitHub rejects a run of more than 25,000 results, a result of more than 1,000 locations and a
  file of more than 10 MB (gzip-compressed), and shows 5,000 results and 100 locations each. So
  a result cites at most 100 related locations, a run at most `MAX_RELATED` in all, and the
  results stop before the file passes `MAX_BYTES` (uncompressed, so it fits however well it
  compresses), keeping the most severe; a tool notification counts what was left out (the JSON
  formats keep everything).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trajlint import __version__
from trajlint.findings import Finding, Location, severity_rank
from trajlint.read.remote import is_url
from trajlint.report.document import Report, RuleInfo

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
MAX_RESULTS = 25_000
#: Related locations per result: GitHub accepts 1,000 locations per result and shows 100.
MAX_RELATED_PER_RESULT = 100
#: Related locations in a run: the results of one duplicated rollout all cite each other, and
#: 25,000 results of 100 locations each would be a file of about a gigabyte.
MAX_RELATED = 10_000
#: The file's size, uncompressed: GitHub's limit is 10 MB gzip-compressed.
MAX_BYTES = 10_000_000
#: GitHub's limit on `fullDescription.text`.
MAX_DESCRIPTION = 1024
FINGERPRINT_KEY = "trajlintFingerprint/v1"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _artifact(report: Report, path: str) -> dict[str, Any]:
    relative = report.relative(path)
    if is_url(path):
        return {"uri": path}
    if relative is None:
        # abspath, not resolve(): resolving follows symlinks, and a symlink loop (a path that
        # could not be read, and so has a finding) makes it raise.
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": urllib.parse.quote(relative), "uriBaseId": SRCROOT}


def _physical(report: Report, path: str, line: int) -> dict[str, Any]:
    # Line 0 is the file as a whole; GitHub shows no alert without a start line, so it is line 1.
    return {"artifactLocation": _artifact(report, path), "region": {"startLine": line or 1}}


def _logical(pointer: str) -> list[dict[str, Any]]:
    if not pointer:
        return []
    name = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
    return [{"name": name, "fullyQualifiedName": pointer, "kind": "value"}]


def _related(report: Report, index: int, loc: Location) -> dict[str, Any]:
    related: dict[str, Any] = {"id": index, "physicalLocation": _physical(report, loc.path, loc.line)}
    if loc.pointer:
        related["logicalLocations"] = _logical(loc.pointer)
    where = f"{loc.path}:{loc.line}" if loc.line else loc.path
    related["message"] = {"text": f"{where} {loc.pointer}".rstrip()}
    return related


def _result(report: Report, f: Finding, rule_index: dict[str, int], related: int) -> dict[str, Any]:
    """The result of `f`, citing at most `related` of its related locations."""
    location: dict[str, Any] = {"physicalLocation": _physical(report, f.path, f.line)}
    if f.pointer:
        location["logicalLocations"] = _logical(f.pointer)
    result: dict[str, Any] = {
        "ruleId": f.code,
        "level": LEVELS[f.severity],
        "message": {"text": f.message},
        "locations": [location],
    }
    if f.code in rule_index:
        result["ruleIndex"] = rule_index[f.code]
    if f.related and related:
        result["relatedLocations"] = [_related(report, i, loc) for i, loc in enumerate(f.related[:related], 1)]
    if f.fingerprint:
        result["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    properties: dict[str, Any] = {"name": f.name, "severity": f.severity, "pointer": f.pointer}
    if f.availability:
        properties["availability"] = True
    if f.rollout is not None:
        properties["rollout"] = f.rollout.to_dict()
    if len(f.related) > related:
        properties["relatedLocationsLeftOut"] = len(f.related) - related
    result["properties"] = properties
    return result


def shortened(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """`text` within `limit` characters: whole if it fits, else up to its last sentence that fits
    (or, when that would drop most of it, its last word), followed by an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[: limit - 2]  # room for " …"
    ends = [m.end() for m in re.finditer(r"[.!?;:][)\"'`]*(?=\s)", head)]
    if ends and ends[-1] >= limit // 2:
        return head[: ends[-1]] + " …"
    words = head.rsplit(None, 1)[0] if len(head.split()) > 1 else head
    return words.rstrip() + " …"


def _rule(info: RuleInfo) -> dict[str, Any]:
    text = f"{info.summary}\n\n{info.rationale}".strip()
    markdown = f"{text}\n\nRun `trajlint rule {info.code}` for failing and passing examples."
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": shortened(info.summary)},
        "fullDescription": {"text": shortened(text)},
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[info.default_severity]},
        "properties": {"severity": info.severity},
    }


def _size(value: Any) -> int:
    return len(orjson.dumps(value))


def _results(report: Report, rule_index: dict[str, int], base: int, limit: int) -> tuple[list[dict[str, Any]], int, int]:
    """(the results, how many findings were left out, how many related locations were).

    The most severe findings are chosen first, so budgets run out on the least severe; the
    results keep report order. `base` is the size of the file without its results.
    """
    findings = report.findings
    order = sorted(range(len(findings)), key=lambda i: (severity_rank(findings[i].severity), i))
    chosen: dict[int, dict[str, Any]] = {}
    size, related_left, related_cut = base, MAX_RELATED, 0
    for i in order:
        if len(chosen) >= limit:
            break
        f = findings[i]
        cite = min(len(f.related), MAX_RELATED_PER_RESULT, related_left)
        result = _result(report, f, rule_index, cite)
        grown = size + _size(result) + 1  # the comma
        if grown > MAX_BYTES:
            break
        chosen[i] = result
        size = grown
        related_left -= cite
        related_cut += len(f.related) - cite
    return [chosen[i] for i in sorted(chosen)], len(findings) - len(chosen), related_cut


def _notification(report: Report, left_out: int, related_cut: int, limit: int) -> dict[str, Any]:
    parts = []
    if left_out:
        parts.append(
            f"{left_out:,} of {len(report.findings):,} findings were left out: GitHub code scanning "
            f"accepts at most {limit:,} results per run and 10 MB per file (gzip-compressed; trajlint "
            "keeps the file under 10 MB uncompressed). The most severe were kept."
        )
    if related_cut:
        parts.append(
            f"{related_cut:,} related locations were left out: a result cites at most "
            f"{MAX_RELATED_PER_RESULT:,} and the run at most {MAX_RELATED:,} (a result's "
            "`relatedLocationsLeftOut` property counts its own)."
        )
    parts.append("Use --output-format json or jsonl for every finding and location.")
    return {"level": "warning", "message": {"text": " ".join(parts)}}


def sarif_log(report: Report, limit: int = MAX_RESULTS) -> dict[str, Any]:
    rules = list(report.rules)
    known = {info.code for info in rules}
    # A finding of a rule the run did not list (it cannot happen today) still gets a descriptor.
    for f in report.findings:
        if f.code not in known:
            known.add(f.code)
            rules.append(RuleInfo(f.code, f.name, f.severity, f.severity, f.name, ""))
    rules.sort(key=lambda info: info.code)
    rule_index = {info.code: i for i, info in enumerate(rules)}
    invocation: dict[str, Any] = {"executionSuccessful": not report.summary.get("internal_errors")}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "trajlint",
                "version": __version__,
                "semanticVersion": __version__,
                # No informationUri: trajlint has no public page to point at, and the field is optional.
                "rules": [_rule(info) for info in rules],
            }
        },
        # A base URI must end in a slash for relative URIs to resolve under it.
        "originalUriBaseIds": {SRCROOT: {"uri": Path(os.path.abspath(report.root)).as_uri().rstrip("/") + "/"}},
        "invocations": [invocation],
        "results": [],
        "properties": {
            "findings": len(report.findings),
            "leftOut": len(report.findings),
            "relatedLocationsLeftOut": sum(len(f.related) for f in report.findings),
            "availabilityNotShown": (report.summary.get("hidden") or {}).get("availability", 0),
        },
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    # Room for the notification (its numbers are not known yet) and the final counts' digits.
    base = _size(log) + _size(_notification(report, len(report.findings), 10**9, limit)) + 64
    results, left_out, related_cut = _results(report, rule_index, base, limit)
    run["results"] = results
    run["properties"]["leftOut"] = left_out
    run["properties"]["relatedLocationsLeftOut"] = related_cut
    if left_out or related_cut:
        invocation["toolExecutionNotifications"] = [_notification(report, left_out, related_cut, limit)]
    return log


def render(report: Report) -> Iterator[str]:
    # Compact: the file is read by programs, and indenting would add a third to its size.
    yield orjson.dumps(sarif_log(report)).decode() + "\n"
