"""The tools an agent offers the model, written the way each of the three APIs declares them."""

from __future__ import annotations

from typing import Any

# (name, description, argument) — every tool takes one string argument.
TOOLS = (
    ("bash", "Run a shell command in the sandbox.", "command"),
    ("read_file", "Read a file from the workspace.", "path"),
    ("python", "Execute a Python snippet and return stdout.", "code"),
    ("search", "Search the repository for a pattern.", "pattern"),
)
WORK_TOOLS = tuple(name for name, _, _ in TOOLS)
# Which tools an agent offers, by kind of task: questions get none, maths a Python sandbox.
TOOLS_FOR_TASK = {"qa": (), "math": ("python",), "code": WORK_TOOLS}

# The tool a harness uses to start a subagent, by harness.
SPAWN_TOOL = {"claude_code": "Task", "pi": "subagent", "codex": "spawn_agent"}
_SPAWN_DESCRIPTION = "Start a subagent with its own context to work on a subtask."


def _schema(argument: str) -> dict[str, Any]:
    return {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}


def _spawn_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"description": {"type": "string"}, "prompt": {"type": "string"}},
        "required": ["description", "prompt"],
    }


def _specs(names: tuple[str, ...], spawn_tool: str | None) -> list[tuple[str, str, dict[str, Any]]]:
    specs = [(name, description, _schema(argument)) for name, description, argument in TOOLS if name in names]
    if spawn_tool:
        specs.append((spawn_tool, _SPAWN_DESCRIPTION, _spawn_schema()))
    return specs


def declarations(dialect: str, names: tuple[str, ...] = WORK_TOOLS, spawn_tool: str | None = None) -> list[dict[str, Any]]:
    """The request's `tools` list in the dialect's own shape."""
    out = []
    for name, description, schema in _specs(names, spawn_tool):
        if dialect == "responses":
            out.append({"type": "function", "name": name, "description": description, "parameters": schema, "strict": False})
        elif dialect == "chat":
            out.append({"type": "function", "function": {"name": name, "description": description, "parameters": schema}})
        else:
            out.append({"name": name, "description": description, "input_schema": schema})
    return out
