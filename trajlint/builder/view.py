"""One built row as people read it: the invocation tree (turns, model calls, tool calls under the
invocation that made them) and the ownership ledger as a graph of owners and the calls they claim.

Plain data only (JSON-ready), so that the HTML report draws it in a browser and `trajlint show`
prints it in a terminal from the same description, and neither needs to know how a build works.
Large rows are cut to `max_calls` calls and `max_tools` tool calls; what was cut is counted.
"""

from __future__ import annotations

from typing import Any

from trajlint.builder.ledger import (
    AGENT_KINDS,
    COMPACTION,
    OUTCOME_HELPER,
    OUTCOME_TURN,
    OUTCOME_VERIFIER,
    TURN,
    VERIFIER,
    CallEntry,
    call_label,
    ref_key,
)
from trajlint.builder.steps import Build

MAX_CALLS = 200
MAX_TOOLS = 200


def call_name(entry: CallEntry) -> str:
    """A call's short name: its capture id, else its response id, else its place in the row."""
    return entry.model_call_id or entry.response_id or entry.locations[0]


def conflict(entry: CallEntry) -> str | None:
    """Why the claims on a call disagree, or None when they do not."""
    agents = entry.agent_owners(valid_only=False)
    verifiers = {c.owner for c in entry.claims_of(VERIFIER)}
    if len(agents) > 1:
        return f"claimed by {len(agents)} agent invocations"
    if len(verifiers) > 1:
        return f"claimed by {len(verifiers)} verifier invocations"
    others = sorted({c.kind for c in entry.claims_of(*AGENT_KINDS, COMPACTION, TURN)})
    if verifiers and others:
        return f"owned by a verifier, claimed as {' and '.join(others)}"
    if entry.is_helper and any(entry.claims_of(TURN)):
        return "a compaction helper that a stated turn references"
    return None


def view(built: Build, *, max_calls: int = MAX_CALLS, max_tools: int = MAX_TOOLS) -> dict[str, Any]:
    trajectory = built.trajectory
    calls = built.ledger.calls
    return {
        "task_id": trajectory.get("task_id"),
        "rollout_id": trajectory.get("rollout_id"),
        "tree": _tree(built, max_calls, max_tools),
        "graph": _graph(built, max_calls),
        "gaps": [dict(gap) for gap in trajectory.get("gaps") or []][:50],
        "counts": {
            "invocations": len(trajectory.get("invocations") or []),
            "turns": len(trajectory.get("turns") or []),
            "model_calls": len(calls),
            "tool_calls": len(trajectory.get("tool_calls") or []),
            "unresolved": len(built.ledger.unresolved),
        },
    }


def _call_node(entry: CallEntry) -> dict[str, Any]:
    return {
        "type": "call",
        "label": call_label(entry),
        "outcome": entry.outcome,
        "owner": entry.owner,
        "conflict": conflict(entry),
    }


def _tree(built: Build, max_calls: int, max_tools: int) -> list[dict[str, Any]]:
    """Invocations nested by parent; each with its turns (and their calls) and tool calls. Calls
    no turn took (helpers, verifier calls, unowned ones) and tool calls of no known invocation
    come last."""
    trajectory = built.trajectory
    invocations = [i for i in trajectory.get("invocations") or [] if isinstance(i, dict)]
    index = built.call_index
    shown_calls = 0
    placed: set[int] = set()
    nodes: dict[Any, dict[str, Any]] = {}
    for inv in invocations:
        nodes.setdefault(inv.get("invocation_id"), {
            "type": "invocation",
            "label": f"invocation {inv.get('invocation_id')!r}",
            "detail": " ".join(
                str(part) for part in (inv.get("kind"), inv.get("status")) if part
            ),
            "children": [],
        })
    for turn in trajectory.get("turns") or []:
        if not isinstance(turn, dict):
            continue
        node = nodes.get(turn.get("invocation_id"))
        turn_node = {"type": "turn", "label": f"turn {turn.get('turn_no')}", "children": []}
        for ref in turn.get("model_calls") or []:
            matched = index.match_key(ref_key(ref)) if index is not None else None
            if matched and len(matched) == 1:
                entry = matched[0]
                placed.add(entry.index)
                if shown_calls < max_calls:
                    turn_node["children"].append(_call_node(entry))
                    shown_calls += 1
            else:
                turn_node["children"].append({
                    "type": "call",
                    "label": f"reference {ref!r}",
                    "outcome": "ambiguous" if matched else "unmatched",
                    "owner": None,
                    "conflict": None,
                })
        if node is None:
            turn_node["label"] += f" of unknown invocation {turn.get('invocation_id')!r}"
            node = nodes.setdefault(None, {"type": "group", "label": "turns of no known invocation", "children": []})
        node["children"].append(turn_node)
    tools = [t for t in trajectory.get("tool_calls") or [] if isinstance(t, dict)]
    for tool in tools[:max_tools]:
        leaf = {
            "type": "tool",
            "label": f"tool call {tool.get('tool_call_id')!r}" + (f" {tool['tool_name']}" if tool.get("tool_name") else ""),
            "detail": tool.get("status"),
        }
        owner = nodes.get(tool.get("invocation_id"))
        if owner is None:
            owner = nodes.setdefault(("tools",), {"type": "group", "label": "tool calls of no known invocation", "children": []})
        owner["children"].append(leaf)
    roots: list[dict[str, Any]] = []
    for inv in invocations:
        node = nodes[inv.get("invocation_id")]
        if node.get("_placed"):
            continue
        node["_placed"] = True
        parent = inv.get("parent_invocation_id")
        if parent is not None and parent in nodes and parent != inv.get("invocation_id") and not _under(nodes, inv, invocations):
            nodes[parent]["children"].append(node)
        else:
            if parent is not None and parent not in nodes:
                node["detail"] = (node["detail"] + f"; parent {parent!r} is missing").lstrip("; ")
            roots.append(node)
    for key in (None, ("tools",)):
        if key in nodes:
            roots.append(nodes[key])
    rest = [e for e in built.ledger.calls if e.index not in placed]
    if rest:
        group = {"type": "group", "label": "model calls no turn took", "children": []}
        for entry in rest:
            if shown_calls >= max_calls:
                break
            group["children"].append(_call_node(entry))
            shown_calls += 1
        roots.append(group)
    left = len(built.ledger.calls) - shown_calls + max(len(tools) - max_tools, 0)
    if left > 0:
        roots.append({"type": "group", "label": f"{left:,} more calls not shown", "children": []})
    for node in nodes.values():
        node.pop("_placed", None)
    return roots


def _under(nodes: dict[Any, dict[str, Any]], inv: dict[str, Any], invocations: list[dict[str, Any]]) -> bool:
    """Whether attaching `inv` to its parent would close a cycle of parents."""
    parents = {i.get("invocation_id"): i.get("parent_invocation_id") for i in invocations}
    seen = {inv.get("invocation_id")}
    current = inv.get("parent_invocation_id")
    while current is not None and current in parents:
        if current in seen:
            return True
        seen.add(current)
        current = parents[current]
    return False


def _graph(built: Build, max_calls: int) -> dict[str, Any]:
    """Owners (invocations and verifiers), calls, and one edge per claim, coloured by its kind."""
    owners: dict[str, dict[str, Any]] = {}
    calls: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []

    def owner_node(owner: str | None, kind: str) -> int:
        key = f"{'verifier' if kind == VERIFIER else 'invocation'}:{owner}"
        if key not in owners:
            owners[key] = {
                "id": len(owners),
                "label": ("verifier " if kind == VERIFIER else "invocation ") + repr(owner),
                "kinds": [],
            }
        if kind not in owners[key]["kinds"]:
            owners[key]["kinds"].append(kind)
        return owners[key]["id"]

    def edge(claim: Any, call: int, conflict: bool) -> dict[str, Any]:
        return {
            "owner": owner_node(claim.owner, claim.kind),
            "call": call,
            "kind": claim.kind,
            "pointer": claim.pointer,
            "valid": claim.valid,
            "conflict": conflict,
        }

    for entry in built.ledger.calls[:max_calls]:
        why = conflict(entry)
        node = {
            "id": len(calls),
            "label": call_name(entry),
            "title": call_label(entry),
            "outcome": entry.outcome,
            "conflict": why,
        }
        calls.append(node)
        for claim in entry.claims:
            edges.append(edge(claim, node["id"], why is not None and not _agrees(entry, claim)))
    for unresolved in built.ledger.unresolved[:max_calls]:
        node = {
            "id": len(calls),
            "label": f"{unresolved.reason}: {_ref_text(unresolved.ref)}",
            "title": f"reference {_ref_text(unresolved.ref)!r}, which matches "
            + ("several calls" if unresolved.reason == "ambiguous" else "no call"),
            "outcome": unresolved.reason,
            "conflict": unresolved.reason,
        }
        calls.append(node)
        edges.append(edge(unresolved.claim, node["id"], True))
    return {
        "owners": list(owners.values()),
        "calls": calls,
        "edges": edges,
        "calls_left_out": max(len(built.ledger.calls) - max_calls, 0),
    }


def _agrees(entry: CallEntry, claim: Any) -> bool:
    """Whether a claim on a call in conflict is one the build followed (the others are marked)."""
    if entry.outcome == OUTCOME_TURN:
        return claim.kind in (*AGENT_KINDS, TURN) and claim.owner == entry.owner
    if entry.outcome == OUTCOME_VERIFIER:
        return claim.kind == VERIFIER and len({c.owner for c in entry.claims_of(VERIFIER)}) == 1
    if entry.outcome == OUTCOME_HELPER:
        return claim.kind == COMPACTION
    return False


def _ref_text(ref: Any) -> str:
    if isinstance(ref, dict):
        for key in ("model_call_id", "response_id"):
            if isinstance(ref.get(key), str) and ref[key]:
                return ref[key]
    return repr(ref)[:80]
