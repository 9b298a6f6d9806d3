"""How NeMo Gym 0.7.0 reads a conversation item: which of its item models it validates the item as.

NeMo Gym does not pick an item's model by `type` alone (`nemo_gym/openai_utils.py`, the
discriminator of `NeMoGymResponseInputItem`):

- a `message` is an *input message* when its role is user, system or developer, its content a
  list and its status one of the three statuses; an *output message* when its role is anything
  else and its content a list that starts with an output part (or is empty, with a string `id`);
  otherwise an *easy message*, whose content may be a string;
- an item without `type` is read by its shape: a message when it has a message role and string or
  list content, then an output message, a function call (`arguments` and `name`, with `call_id`)
  or an MCP call (without it), a function call output, a reasoning item, and anything else as an
  MCP tool listing, whose fields are all optional — so a typeless object is accepted unless it
  looks like one of those and is wrong;
- where that reading compares a role, a status or a first content part's `type` that is an object
  or array against its lists, NeMo Gym raises instead: such an item is unreadable.

This module holds that reading and the names it uses, without pydantic, so that messages can name
what an item was read as; `trajlint.contract.conversation` holds the models and the JSON Schema.
"""

from __future__ import annotations

from typing import Any

# The readings of a message and of a typeless item; a typed item's reading is its `type`.
EASY, INPUT, OUTPUT = "message:easy", "message:input", "message:output"
FUNCTION_CALL, MCP_CALL, FUNCTION_OUTPUT, REASONING, LIST_TOOLS = (
    "function_call",
    "mcp_call",
    "function_call_output",
    "reasoning",
    "mcp_list_tools",
)

#: Every `type` NeMo Gym 0.7.0 knows.
ITEM_TYPES: tuple[str, ...] = (
    "message",
    FUNCTION_CALL,
    FUNCTION_OUTPUT,
    REASONING,
    MCP_CALL,
    LIST_TOOLS,
    "mcp_approval_request",
    "mcp_approval_response",
    "file_search_call",
    "web_search_call",
    "computer_call",
    "computer_call_output",
    "image_generation_call",
    "code_interpreter_call",
    "local_shell_call",
    "local_shell_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "compaction",
    "shell_call",
    "shell_call_output",
    "tool_search_call",
    "tool_search_output",
    "compaction_trigger",
    "additional_tools",
)

#: Token metadata a training rollout attaches to an item: all three or none (`routed_experts` optional).
TOKEN_FIELDS = ("prompt_token_ids", "generation_token_ids", "generation_log_probs")
TOKEN_KEYS = (*TOKEN_FIELDS, "routed_experts")

# The strings pydantic's lax mode reads as an integer (a sign, `_` between digits, blanks around and
# a zero fraction allowed) and as a boolean; an integer field also takes a bool and an integral float.
INT_TEXT = r"^\s*[+-]?[0-9]+(_[0-9]+)*(\.0*)?\s*$"
BOOL_TEXT = r"^([01]|[tT]([rR][uU][eE])?|[fF]([aA][lL][sS][eE])?|[yY]([eE][sS])?|[nN][oO]?|[oO][nN]|[oO][fF][fF])$"

STATUS_ROLES = frozenset({"user", "system", "developer"})  # roles whose list-content messages may be input messages
ROLES = STATUS_ROLES | {"assistant"}
STATUSES = frozenset({"in_progress", "completed", "incomplete"})
OUTPUT_KINDS = frozenset({"output_text", "refusal"})


class Unreadable(Exception):
    """NeMo Gym cannot even tell what the item is: it raises while comparing an object or array."""


def _member(value: Any, options: frozenset[str]) -> bool:
    if isinstance(value, (dict, list)):
        raise Unreadable
    return value in options


def _first_part_kind(content: Any) -> Any:
    """The kind NeMo Gym reads off a content list's first part: its `type`, else `refusal` for a refusal."""
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    part = content[0]
    return part.get("type") or ("refusal" if "refusal" in part else None)


def _message_reading(item: dict[str, Any]) -> str:
    content = item.get("content")
    if _member(item.get("role"), STATUS_ROLES):
        return INPUT if isinstance(content, list) and _member(item.get("status"), STATUSES) else EASY
    if isinstance(content, list):
        if content and _member(_first_part_kind(content), OUTPUT_KINDS):
            return OUTPUT
        if not content and isinstance(item.get("id"), str):
            return OUTPUT
    return EASY


def _typeless_reading(item: dict[str, Any]) -> str:
    content = item.get("content")
    if _member(item.get("role"), ROLES) and isinstance(content, (str, list)):
        read = _message_reading(item)
        if read == OUTPUT:
            return OUTPUT if isinstance(item.get("id"), str) else LIST_TOOLS
        return LIST_TOOLS if _member(_first_part_kind(content), OUTPUT_KINDS) else read
    roleless_output = "role" not in item and isinstance(item.get("id"), str) and isinstance(content, list)
    if roleless_output and (not content or _member(_first_part_kind(content), OUTPUT_KINDS)):
        return OUTPUT
    if "arguments" in item and "name" in item:
        return FUNCTION_CALL if "call_id" in item else MCP_CALL
    if isinstance(item.get("call_id"), str) and "output" in item:
        return FUNCTION_OUTPUT
    if isinstance(item.get("id"), str) and isinstance(item.get("summary"), list):
        return REASONING
    return LIST_TOOLS


def reading(item: Any) -> str | None:
    """What NeMo Gym reads `item` as: a reading above, or the item's `type` (known or not); None: it cannot tell."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    try:
        if kind == "message":
            return _message_reading(item)
        if kind is None and "type" not in item:
            return _typeless_reading(item)
    except Unreadable:
        return None
    # A null `type` is read as typeless by NeMo Gym, and then fails every model's literal: so here.
    return kind if isinstance(kind, str) else None
