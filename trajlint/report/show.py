"""`trajlint show`: one row's drill-down in a terminal, or as JSON for tools.

The text is a tree: the built trajectory (invocations, their turns and model calls, tool
calls), then the ownership ledger (each call, who claims it and where, what it became). Every
line goes through `escape.text_line`, since ids and labels come from the data; colour is added
by click only when standard output is a terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from trajlint.report.escape import text_line

_KIND_COLOURS = {
    "agent": "blue",
    "session": "cyan",
    "compaction": "magenta",
    "compaction-before": "magenta",
    "compaction-after": "magenta",
    "verifier": "bright_magenta",
    "turn": "green",
}


def _tree(nodes: list[dict[str, Any]], prefix: str = "") -> Iterator[str]:
    for i, node in enumerate(nodes):
        last = i == len(nodes) - 1
        branch = "└── " if last else "├── "
        label = text_line(str(node["label"]))
        if node["type"] == "invocation":
            label = click.style(label, bold=True)
        elif node["type"] == "turn":
            label = click.style(label, fg="green")
        elif node["type"] == "tool":
            label = click.style(label, fg="magenta")
        elif node["type"] == "group":
            label = click.style(label, dim=True)
        notes = []
        if node.get("detail"):
            notes.append(text_line(str(node["detail"])))
        if node["type"] == "call":
            notes.append(text_line(str(node["outcome"]) + (f" of {node['owner']!r}" if node.get("owner") else "")))
        tail = click.style(f"  [{'; '.join(notes)}]", dim=True) if notes else ""
        if node.get("conflict"):
            tail += "  " + click.style("✗ " + text_line(str(node["conflict"])), fg="red", bold=True)
        yield prefix + branch + label + tail
        if node.get("children"):
            yield from _tree(node["children"], prefix + ("    " if last else "│   "))


def _ledger(graph: dict[str, Any]) -> Iterator[str]:
    owners = {o["id"]: o for o in graph["owners"]}
    edges: dict[int, list[dict[str, Any]]] = {}
    for edge in graph["edges"]:
        edges.setdefault(edge["call"], []).append(edge)
    for call in graph["calls"]:
        head = click.style(text_line(str(call["title"])), bold=True) + "  → " + text_line(str(call["outcome"]))
        if call.get("conflict"):
            head += "  " + click.style("✗ " + text_line(str(call["conflict"])), fg="red", bold=True)
        yield head
        claims = edges.get(call["id"], [])
        width = max((len(edge["kind"]) for edge in claims), default=0)
        for i, edge in enumerate(claims):
            branch = "└── " if i == len(claims) - 1 else "├── "
            kind = click.style(edge["kind"].ljust(width), fg=_KIND_COLOURS.get(edge["kind"]))
            mark = click.style(" ✗", fg="red", bold=True) if edge["conflict"] else ""
            invalid = click.style(" (record fails its schema)", dim=True) if not edge["valid"] else ""
            yield (
                branch + kind + " " + text_line(str(owners[edge["owner"]]["label"]))
                + click.style("  " + text_line(edge["pointer"]), dim=True) + invalid + mark
            )
    if graph.get("calls_left_out"):
        yield f"… {graph['calls_left_out']:,} more calls not shown"


def _counted(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def render_text(path: str, line: int, view: dict[str, Any]) -> Iterator[str]:
    counts = view["counts"]
    title = f"{path}:{line}"
    if view.get("rollout_id"):
        title += f"  rollout {view['rollout_id']!r} of task {view['task_id']!r}"
    yield click.style(text_line(title), bold=True)
    yield ", ".join(
        _counted(counts[key], noun)
        for key, noun in (
            ("invocations", "invocation"),
            ("turns", "turn"),
            ("model_calls", "model call"),
            ("tool_calls", "tool call"),
            ("unresolved", "unresolved claim"),
        )
    )
    yield ""
    yield click.style("Trajectory", underline=True)
    yield from _tree(view["tree"]) if view["tree"] else iter(["(nothing was built)"])
    yield ""
    yield click.style("Ownership ledger", underline=True)
    yield from _ledger(view["graph"]) if view["graph"]["calls"] else iter(["(no model calls and no claims)"])
    if view.get("gaps"):
        yield ""
        yield click.style("Gaps", underline=True)
        for gap in view["gaps"]:
            yield text_line(f"{gap.get('code')}  invocation={gap.get('invocation_id')!r}  {gap.get('detail') or ''}".rstrip())
