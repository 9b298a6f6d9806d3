"""SARIF 2.1.0, the format GitHub code scanning and other static-analysis dashboards ingest.

Choices that matter to those consumers:
- locations are URIs relative to the report's root (the working directory), marked with the
  `%SRCROOT%` base id, so a checkout anywhere gives the same report and GitHub can link the file;
- a JSONL row has no useful line hash, so each result carries trajlint's own fingerprint in
  `partialFingerprints`, which is what matches an alert across runs;
- GitHub accepts at most 25,000 results per run, so a bigger report keeps the most severe ones
  and says in a tool notification how many it left out (the JSON formats keep everything).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from trajlint import __version__
from trajlint.findings import Finding, Location, severity_rank
from trajlint.report.document import Report, RuleInfo

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/trajlint/"
MAX_RESULTS = 25_000
FINGERPRINT_KEY = "trajlintFingerprint/v1"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _artifact(report: Report, path: str) -> dict[str, Any]:
    relative = report.relative(path)
    if relative is None:
        # abspath, not resolve(): resolving follows symlinks, and a symlink loop (a path that
        # could not be read, and so has a finding) makes it raise.
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": urllib.parse.quote(relative), "uriBaseId": SRCROOT}


def _physical(report: Report, path: str, line: int) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": _artifact(report, path)}
    if line:  # line 0 is the file as a whole: no region
        physical["region"] = {"startLine": line}
    return physical


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


def _result(report: Report, f: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
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
    if f.related:
        result["relatedLocations"] = [_related(report, i, loc) for i, loc in enumerate(f.related, 1)]
    if f.fingerprint:
        result["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    properties: dict[str, Any] = {"name": f.name, "severity": f.severity, "pointer": f.pointer}
    if f.availability:
        properties["availability"] = True
    if f.rollout is not None:
        properties["rollout"] = f.rollout.to_dict()
    result["properties"] = properties
    return result


def _rule(info: RuleInfo) -> dict[str, Any]:
    markdown = f"{info.summary}\n\n{info.rationale}\n\nRun `trajlint rule {info.code}` for failing and passing examples."
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": f"{info.summary}\n\n{info.rationale}"},
        "help": {"text": f"{info.summary}\n\n{info.rationale}", "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[info.default_severity]},
        "properties": {"severity": info.severity},
    }


def kept(findings: Sequence[Finding], limit: int = MAX_RESULTS) -> list[Finding]:
    """At most `limit` findings, the most severe first chosen, in report order."""
    if len(findings) <= limit:
        return list(findings)
    ranked = sorted(range(len(findings)), key=lambda i: (severity_rank(findings[i].severity), i))
    return [findings[i] for i in sorted(ranked[:limit])]


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
    shown = kept(report.findings, limit)
    left_out = len(report.findings) - len(shown)
    invocation: dict[str, Any] = {"executionSuccessful": not report.summary.get("internal_errors")}
    if left_out:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "warning",
                "message": {
                    "text": f"{left_out:,} of {len(report.findings):,} findings were left out: SARIF "
                    f"consumers accept at most {limit:,} results per run. The most severe were kept; "
                    "use --output-format json or jsonl for every finding."
                },
            }
        ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "trajlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(info) for info in rules],
            }
        },
        "invocations": [invocation],
        "results": [_result(report, f, rule_index) for f in shown],
        "properties": {
            "findings": len(report.findings),
            "leftOut": left_out,
            "availabilityNotShown": (report.summary.get("hidden") or {}).get("availability", 0),
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(report: Report) -> Iterator[str]:
    yield orjson.dumps(sarif_log(report), option=orjson.OPT_INDENT_2).decode() + "\n"
