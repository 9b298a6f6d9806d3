"""`trajlint rules` and `trajlint rule NAME`: the catalog as text or JSON, with what each rule
reads and where it is implemented."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from trajlint.check.catalog import DEFAULT_FILENAME
from trajlint.check.kinds import KINDS
from trajlint.check.select import PROFILES

_FILES = {"rollouts": "rollout files"}


def listing(specs: Iterable[Any], output_format: str) -> str:
    """Every rule: code, name, severity, summary (one line each, or a JSON list)."""
    specs = list(specs)
    if output_format == "json":
        return json.dumps([_rule_dict(s.entry, full=False) for s in specs], indent=2) + "\n"
    width = max(len(spec.name) for spec in specs)
    return "".join(f"{spec.code}  {spec.name:<{width}}  {spec.severity:<8} {spec.entry.summary}\n" for spec in specs)


def explain(spec: Any, output_format: str) -> str:
    """One rule explained, with its failing and passing examples."""
    entry = spec.entry
    if output_format == "json":
        return json.dumps({**_rule_dict(entry, full=True), **_implemented(spec)}, indent=2, ensure_ascii=False) + "\n"
    by_profile = ", ".join(f"{name} {table.get(entry.name, entry.severity)}" for name, table in PROFILES.items())
    implemented = _implemented(spec)
    reads = ", ".join(implemented["reads"]) or "nothing of a row (the engine reports it)"
    kinds = implemented["kinds"]
    files = "every file" if set(kinds) == set(KINDS) else ", ".join(_FILES.get(kind, f"{kind} files") for kind in kinds)
    parts = [
        f"# {entry.name} ({entry.code})\n\n",
        f"Family: {entry.family} · Default severity: {entry.severity} · By profile: {by_profile}\n",
        f"Reads: {reads} · Checks: {files} · Implemented in: {implemented['module']}\n\n",
        f"## What it checks\n\n{entry.summary}\n\n",
        f"## Why\n\n{entry.rationale}\n\n",
        *_gap_table(entry.gaps),
    ]
    for example in entry.examples:
        title = "Fails" if example.expect == "fail" else "Passes"
        parts.append(f"## {title}: {example.description}\n\n")
        if example.filename != DEFAULT_FILENAME:  # the name is part of the example
            parts.append(f"In a file named `{example.filename}`:\n\n")
        body = "(the file does not exist)" if example.missing else example.jsonl.rstrip("\n")
        parts.append(f"```jsonl\n{body}\n```\n\n")
    return "".join(parts)


_GAP_GROUPS = (
    ("Warning", lambda g: g.severity == "warning"),
    ("Info", lambda g: g.severity == "info" and not g.availability),
    ("Info, availability (counted; listed only with --show-availability)", lambda g: g.availability),
)


def _gap_table(gaps: Iterable[Any]) -> list[str]:
    """The rule's gap codes (only `observation-gap` has them), grouped by how they are reported."""
    gaps = sorted(gaps, key=lambda g: g.code)
    if not gaps:
        return []
    parts = [f"## Gap codes ({len(gaps)})\n\n"]
    for title, belongs in _GAP_GROUPS:
        group = [g for g in gaps if belongs(g)]
        if group:
            parts.append(f"### {title}\n\n")
            parts.extend(f"- `{g.code}`: {g.meaning}\n" for g in group)
            parts.append("\n")
    return parts


def _implemented(spec: Any) -> dict[str, Any]:
    """What a rule reads (a row lacking it leaves the rule unobserved) and the file that registers it."""
    module = spec.impl.module
    reads = sorted(spec.impl.reads)
    check = getattr(spec.impl.check, "check", None)  # a NeMo Gym health check's rule
    if check is not None and check.find is not None:
        module = check.find.__module__
        reads += [f"health: {evidence}" for evidence in check.reads]
    kinds = [kind for kind in KINDS if kind in spec.impl.kinds]
    return {"reads": reads, "kinds": kinds, "module": module.replace(".", "/") + ".py" if module else ""}


def _rule_dict(entry: Any, *, full: bool) -> dict[str, Any]:
    data = {
        "code": entry.code,
        "name": entry.name,
        "family": entry.family,
        "severity": entry.severity,
        "summary": entry.summary,
    }
    if full:
        data["rationale"] = entry.rationale
        data["examples"] = [
            {"expect": e.expect, "description": e.description, "filename": e.filename, "jsonl": e.jsonl, "missing": e.missing}
            for e in entry.examples
        ]
        if entry.gaps:
            data["gaps"] = [
                {"code": g.code, "severity": g.severity, "availability": g.availability, "meaning": g.meaning}
                for g in entry.gaps
            ]
    return data
