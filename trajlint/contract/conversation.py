"""The items of an invocation's `conversation`, as NeMo Gym 0.7.0 validates them (Responses API input items).

NeMo Gym types `AgentInvocation.conversation` as a list of Responses API input items: a union of
27 item types, each with its own required fields (`nemo_gym/openai_utils.py`, the union
`NeMoGymResponseInputItem`). One item that fits none of them makes the whole observation bundle
invalid (its collector drops the bundle with the gap `agent_observations_invalid`), or the whole
trajectory unreadable (`record_unreadable` in its health check, `producer_trajectory_invalid` in
its collector).

Which model an item is validated as is `trajlint.contract.items.reading` (by `type`, a message by
its role, content and status, a typeless item by its shape); here it is the discriminator of
`ConversationItem`, and the generated JSON Schema says the same with `if`/`then`, so a validation
error points into the model the item was read as. Any item carrying token metadata
(`prompt_token_ids`, `generation_token_ids`, `generation_log_probs`, `routed_experts`) must carry
the first three, typed.

Numbers and booleans are lax, as in pydantic: an integer field takes 7, 7.0, true or "7", a
boolean field 1 or "yes". The schema takes any string where a float belongs. The tool lists of
`additional_tools` and `tool_search_output` and a `computer_call`'s actions are checked as objects
only, not against every hosted tool's fields. Unknown keys are allowed everywhere, as NeMo Gym
allows or ignores them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    WithJsonSchema,
    model_validator,
)
from typing_extensions import TypeAliasType

from trajlint.contract.items import (
    BOOL_TEXT,
    EASY,
    FUNCTION_CALL,
    FUNCTION_OUTPUT,
    INPUT,
    INT_TEXT,
    ITEM_TYPES,
    LIST_TOOLS,
    MCP_CALL,
    OUTPUT,
    OUTPUT_KINDS,
    REASONING,
    ROLES,
    STATUS_ROLES,
    STATUSES,
    TOKEN_FIELDS,
    TOKEN_KEYS,
    reading,
)

# -- scalars as pydantic reads them ------------------------------------------------------------------

_LAX_INT = {"type": ["integer", "boolean", "string"], "pattern": INT_TEXT}
_LAX_FLOAT = {"type": ["number", "boolean", "string"]}

LaxInt = Annotated[int, WithJsonSchema(_LAX_INT)]
LaxIntOrNull = Annotated[int | None, WithJsonSchema({**_LAX_INT, "type": [*_LAX_INT["type"], "null"]})]
LaxFloat = Annotated[float, WithJsonSchema(_LAX_FLOAT)]
LaxFloatOrNull = Annotated[float | None, WithJsonSchema({"type": [*_LAX_FLOAT["type"], "null"]})]
LaxBool = Annotated[
    bool,
    WithJsonSchema({"anyOf": [{"type": "boolean"}, {"enum": [0, 1]}, {"type": "string", "pattern": BOOL_TEXT}]}),
]

Status = Literal["in_progress", "completed", "incomplete"]
MessageRole = Literal["user", "assistant", "system", "developer"]
Phase = Literal["commentary", "final_answer"]


class Part(BaseModel):
    """Base of every item and part: unknown keys are kept, as NeMo Gym keeps or ignores them."""

    model_config = ConfigDict(extra="allow")


# -- content parts -----------------------------------------------------------------------------------


class InputTextPart(Part):
    """Text the model reads."""

    type: Literal["input_text"]
    text: str


class InputImagePart(Part):
    """An image the model reads; `detail` is required in a message."""

    type: Literal["input_image"]
    detail: Literal["low", "high", "auto", "original"]
    file_id: str | None = None
    image_url: str | None = None


class InputFilePart(Part):
    """A file the model reads; in a message only `file_id` may be null."""

    type: Literal["input_file"]
    # A None default only marks a key that may be left out: an explicit null is still rejected.
    detail: Literal["low", "high"] = None
    file_data: str = None
    file_id: str | None = None
    file_url: str = None
    filename: str = None


def _has_url(source: Any) -> bool:
    url = source.get("url") if isinstance(source, dict) else source
    return isinstance(url, str) and bool(url.strip())


# A string with a non-blank character, or an object whose `url` is one.
_VIDEO_SOURCE = {
    "type": ["string", "object"],
    "pattern": r"\S",
    "required": ["url"],
    "properties": {"url": {"type": "string", "pattern": r"\S"}},
}


class InputVideoPart(Part):
    """A video the model reads: exactly one of `video_url` and `video`, a non-empty URL or an object with one."""

    model_config = ConfigDict(
json_schema_extra={"oneOf": [{"required": ["video_url"]}, {"required": ["video"]}]}
    )

    type: Literal["input_video"]
    video_url: Annotated[str | dict[str, Any], WithJsonSchema(_VIDEO_SOURCE)] = None
    video: Annotated[str | dict[str, Any], WithJsonSchema(_VIDEO_SOURCE)] = None

    @model_validator(mode="after")
    def _one_source(self) -> InputVideoPart:
        given = [name for name in ("video_url", "video") if name in self.model_fields_set]
        if len(given) != 1:
            raise ValueError("input_video needs exactly one of video_url and video")
        if not _has_url(getattr(self, given[0])):
            raise ValueError(f"input_video.{given[0]} holds no URL")
        return self


InputPart = Annotated[
    InputTextPart | InputImagePart | InputFilePart | InputVideoPart, Field(discriminator="type")
]


class UrlCitation(Part):
    type: Literal["url_citation"]
    url: str
    title: str
    start_index: LaxInt
    end_index: LaxInt


class FileCitation(Part):
    type: Literal["file_citation"]
    file_id: str
    filename: str
    index: LaxInt


class ContainerFileCitation(Part):
    type: Literal["container_file_citation"]
    container_id: str
    file_id: str
    filename: str
    start_index: LaxInt
    end_index: LaxInt


class FilePathAnnotation(Part):
    type: Literal["file_path"]
    file_id: str
    index: LaxInt


Annotation = Annotated[
    UrlCitation | FileCitation | ContainerFileCitation | FilePathAnnotation, Field(discriminator="type")
]


class TopLogprob(Part):
    token: str
    bytes: list[LaxInt]
    logprob: LaxFloat


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class OutputTextPart(Part):
    """Text the model wrote; `annotations` is required (an empty list when there are none)."""

    type: Literal["output_text"] = "output_text"
    text: str
    annotations: list[Annotation]
    logprobs: list[TokenLogprob] | None = None


class RefusalPart(Part):
    """A refusal the model wrote."""

    type: Literal["refusal"] = "refusal"
    refusal: str


class _RouteOutputPart:
    """An output part is read by its `type`; without one, as whichever of the two it fits."""

    __name__ = "route_output_part"

    def __call__(self, value: Any) -> str | None:
        if isinstance(value, (OutputTextPart, RefusalPart)):
            return value.type  # serializing a validated part
        if not isinstance(value, dict):
            return None
        if "type" not in value:
            return "untyped"
        kind = value["type"]
        return kind if isinstance(kind, str) else None

    def json_schema(self, branches: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"type": {"enum": ["output_text", "refusal"]}},
            "allOf": [
                _when({"properties": {"type": {"const": "output_text"}}, "required": ["type"]}, branches["output_text"]),
                _when({"properties": {"type": {"const": "refusal"}}, "required": ["type"]}, branches["refusal"]),
                _when({"not": {"required": ["type"]}}, branches["untyped"]),
            ],
        }


OutputPart = Annotated[
    Annotated[OutputTextPart, Tag("output_text")] | Annotated[RefusalPart, Tag("refusal")] | Annotated[OutputTextPart | RefusalPart, Tag("untyped")],
    Discriminator(_RouteOutputPart()),
]


class ToolOutputText(Part):
    type: Literal["input_text"]
    text: str


class ToolOutputImage(Part):
    """An image in a function's output; unlike in a message, `detail` may be left out or null."""

    type: Literal["input_image"]
    detail: Literal["low", "high", "auto", "original"] | None = None
    file_id: str | None = None
    image_url: str | None = None


class ToolOutputFile(Part):
    """A file in a function's output; every field but `type` may be null."""

    type: Literal["input_file"]
    detail: Literal["low", "high"] = None
    file_data: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    filename: str | None = None


ToolOutputPart = Annotated[ToolOutputText | ToolOutputImage | ToolOutputFile, Field(discriminator="type")]


class CustomOutputImage(Part):
    """An image in a custom tool's output: `detail` is required."""

    type: Literal["input_image"]
    detail: Literal["low", "high", "auto", "original"]
    file_id: str | None = None
    image_url: str | None = None


CustomOutputPart = Annotated[ToolOutputText | CustomOutputImage | ToolOutputFile, Field(discriminator="type")]


class SummaryText(Part):
    type: Literal["summary_text"]
    text: str


class ReasoningText(Part):
    type: Literal["reasoning_text"]
    text: str


# -- items -------------------------------------------------------------------------------------------


class EasyMessageItem(Part):
    """A message whose content may be a string: the reading of most messages."""

    type: Literal["message"] = "message"
    role: MessageRole
    content: str | list[InputPart]
    phase: Phase | None = None


class InputMessageItem(Part):
    """A user, system or developer message with list content and a status."""

    type: Literal["message"] = "message"
    role: Literal["user", "system", "developer"]
    content: list[InputPart]
    status: Status = "completed"


class OutputMessageItem(Part):
    """An assistant message as the model wrote it: an `id`, and output parts."""

    type: Literal["message"] = "message"
    id: str
    role: Literal["assistant"] = "assistant"
    content: list[OutputPart]
    status: Status = "completed"
    phase: Phase | None = None


class FunctionCallItem(Part):
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str = Field(description="The arguments as JSON text, not as an object.")
    id: str | None = None
    status: Status | None = None
    namespace: str | None = None


class FunctionCallOutputItem(Part):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str | list[ToolOutputPart]
    id: str | None = None
    status: Status | None = None


class ReasoningItem(Part):
    type: Literal["reasoning"] = "reasoning"
    id: str
    summary: list[SummaryText]
    encrypted_content: str | None = None
    content: list[ReasoningText] | None = None


class McpCallItem(Part):
    type: Literal["mcp_call"] = "mcp_call"
    name: str
    arguments: str
    id: str | None = None
    server_label: str | None = None
    approval_request_id: str | None = None
    error: str | None = None
    output: str | None = None
    status: str | None = None


class McpListToolsItem(Part):
    """An MCP server's tool listing; also how NeMo Gym reads a typeless object that looks like nothing else."""

    type: Literal["mcp_list_tools"] = "mcp_list_tools"
    tools: list[Any] = Field(default_factory=list)
    id: str | None = None
    server_label: str | None = None
    error: str | None = None


class McpApprovalRequestItem(Part):
    type: Literal["mcp_approval_request"] = "mcp_approval_request"
    name: str
    arguments: str
    id: str | None = None
    server_label: str | None = None


class McpApprovalResponseItem(Part):
    type: Literal["mcp_approval_response"]
    approval_request_id: str
    approve: LaxBool
    id: str | None = None
    reason: str | None = None


class FileSearchResult(Part):
    attributes: dict[str, str | float | bool] | None = None
    file_id: str | None = None
    filename: str | None = None
    score: LaxFloatOrNull = None
    text: str | None = None


class FileSearchCallItem(Part):
    type: Literal["file_search_call"]
    id: str
    queries: list[str]
    status: Literal["in_progress", "searching", "completed", "incomplete", "failed"]
    results: list[FileSearchResult] | None = None


class SearchSource(Part):
    type: Literal["url"]
    url: str


class SearchAction(Part):
    type: Literal["search"]
    query: str | None = None
    queries: list[str] | None = None
    sources: list[SearchSource] | None = None


class OpenPageAction(Part):
    type: Literal["open_page"]
    url: str | None = None


class FindInPageAction(Part):
    type: Literal["find_in_page"]
    pattern: str
    url: str


class WebSearchCallItem(Part):
    type: Literal["web_search_call"]
    id: str
    action: Annotated[SearchAction | OpenPageAction | FindInPageAction, Field(discriminator="type")]
    status: Literal["in_progress", "searching", "completed", "failed"]


class SafetyCheck(Part):
    id: str
    code: str | None = None
    message: str | None = None


class ComputerCallItem(Part):
    type: Literal["computer_call"]
    id: str
    call_id: str
    pending_safety_checks: list[SafetyCheck]
    status: Status
    action: dict[str, Any] | None = Field(default=None, description="One computer action (checked as an object).")
    actions: list[dict[str, Any]] | None = Field(default=None, description="Computer actions (checked as objects).")


class Screenshot(Part):
    type: Literal["computer_screenshot"]
    file_id: str | None = None
    image_url: str | None = None


class ComputerCallOutputItem(Part):
    type: Literal["computer_call_output"]
    call_id: str
    output: Screenshot
    id: str | None = None
    acknowledged_safety_checks: list[SafetyCheck] | None = None
    status: Status | None = None


class ImageGenerationCallItem(Part):
    type: Literal["image_generation_call"]
    id: str
    status: Literal["in_progress", "completed", "generating", "failed"]
    result: str | None = None


class InterpreterLogs(Part):
    type: Literal["logs"]
    logs: str


class InterpreterImage(Part):
    type: Literal["image"]
    url: str


class CodeInterpreterCallItem(Part):
    type: Literal["code_interpreter_call"]
    id: str
    container_id: str
    status: Literal["in_progress", "completed", "incomplete", "interpreting", "failed"]
    code: str | None = None
    outputs: list[Annotated[InterpreterLogs | InterpreterImage, Field(discriminator="type")]] | None = None


class LocalShellAction(Part):
    type: Literal["exec"]
    command: list[str]
    env: dict[str, str]
    timeout_ms: LaxIntOrNull = None
    user: str | None = None
    working_directory: str | None = None


class LocalShellCallItem(Part):
    type: Literal["local_shell_call"]
    id: str
    call_id: str
    action: LocalShellAction
    status: Status


class LocalShellCallOutputItem(Part):
    type: Literal["local_shell_call_output"]
    id: str
    output: str
    status: Status | None = None


class CustomToolCallItem(Part):
    type: Literal["custom_tool_call"]
    call_id: str
    name: str
    input: str
    id: str | None = None
    namespace: str | None = None


class CustomToolCallOutputItem(Part):
    type: Literal["custom_tool_call_output"]
    call_id: str
    output: str | list[CustomOutputPart]
    id: str | None = None


class CreateFileOperation(Part):
    type: Literal["create_file"]
    path: str
    diff: str


class UpdateFileOperation(Part):
    type: Literal["update_file"]
    path: str
    diff: str


class DeleteFileOperation(Part):
    type: Literal["delete_file"]
    path: str


class ApplyPatchCallItem(Part):
    type: Literal["apply_patch_call"]
    id: str
    call_id: str
    operation: Annotated[
        CreateFileOperation | UpdateFileOperation | DeleteFileOperation, Field(discriminator="type")
    ]
    status: Literal["in_progress", "completed"]
    created_by: str | None = None


class ApplyPatchCallOutputItem(Part):
    type: Literal["apply_patch_call_output"]
    id: str
    call_id: str
    status: Literal["completed", "failed"]
    output: str | None = None
    created_by: str | None = None


class CompactionItem(Part):
    type: Literal["compaction"]
    id: str
    encrypted_content: str
    created_by: str | None = None


class ShellAction(Part):
    commands: list[str]
    max_output_length: LaxIntOrNull = None
    timeout_ms: LaxIntOrNull = None


class LocalEnvironment(Part):
    type: Literal["local"]


class ContainerReference(Part):
    type: Literal["container_reference"]
    container_id: str


class ShellCallItem(Part):
    type: Literal["shell_call"]
    id: str
    call_id: str
    action: ShellAction
    status: Status
    environment: Annotated[LocalEnvironment | ContainerReference, Field(discriminator="type")] | None = None
    created_by: str | None = None


class ExitOutcome(Part):
    type: Literal["exit"]
    exit_code: LaxInt


class TimeoutOutcome(Part):
    type: Literal["timeout"]


class ShellOutput(Part):
    stdout: str
    stderr: str
    outcome: Annotated[ExitOutcome | TimeoutOutcome, Field(discriminator="type")]
    created_by: str | None = None


class ShellCallOutputItem(Part):
    type: Literal["shell_call_output"]
    id: str
    call_id: str
    output: list[ShellOutput]
    status: Status
    max_output_length: LaxIntOrNull = None
    created_by: str | None = None


class ToolSearchCallItem(Part):
    type: Literal["tool_search_call"]
    id: str
    arguments: Any = Field(description="Required, of any JSON type.")
    execution: Literal["server", "client"]
    status: Status
    call_id: str | None = None
    created_by: str | None = None


class ToolSearchOutputItem(Part):
    type: Literal["tool_search_output"]
    id: str
    execution: Literal["server", "client"]
    status: Status
    tools: list[dict[str, Any]] = Field(description="Tool definitions (checked as objects).")
    call_id: str | None = None
    created_by: str | None = None


class CompactionTriggerItem(Part):
    type: Literal["compaction_trigger"]


class AdditionalToolsItem(Part):
    type: Literal["additional_tools"]
    role: Literal["developer"]
    tools: list[dict[str, Any]] = Field(description="Tool definitions (checked as objects).")
    id: str | None = None


# -- the model of each reading----------------------------------------------------------------------------

#: The model each reading stands for; the readings of a typed item are its `type`.
MODELS: dict[str, type[Part]] = {
    EASY: EasyMessageItem,
    INPUT: InputMessageItem,
    OUTPUT: OutputMessageItem,
    FUNCTION_CALL: FunctionCallItem,
    FUNCTION_OUTPUT: FunctionCallOutputItem,
    REASONING: ReasoningItem,
    MCP_CALL: McpCallItem,
    LIST_TOOLS: McpListToolsItem,
    "mcp_approval_request": McpApprovalRequestItem,
    "mcp_approval_response": McpApprovalResponseItem,
    "file_search_call": FileSearchCallItem,
    "web_search_call": WebSearchCallItem,
    "computer_call": ComputerCallItem,
    "computer_call_output": ComputerCallOutputItem,
    "image_generation_call": ImageGenerationCallItem,
    "code_interpreter_call": CodeInterpreterCallItem,
    "local_shell_call": LocalShellCallItem,
    "local_shell_call_output": LocalShellCallOutputItem,
    "custom_tool_call": CustomToolCallItem,
    "custom_tool_call_output": CustomToolCallOutputItem,
    "apply_patch_call": ApplyPatchCallItem,
    "apply_patch_call_output": ApplyPatchCallOutputItem,
    "compaction": CompactionItem,
    "shell_call": ShellCallItem,
    "shell_call_output": ShellCallOutputItem,
    "tool_search_call": ToolSearchCallItem,
    "tool_search_output": ToolSearchOutputItem,
    "compaction_trigger": CompactionTriggerItem,
    "additional_tools": AdditionalToolsItem,
}
_TAG_OF = {model: tag for tag, model in MODELS.items()}


# -- token metadata ------------------------------------------------------------------------------------


class TokenMetadata(BaseModel):
    """Token ids and log probabilities a training rollout attaches to an item; all three or none."""

    prompt_token_ids: list[LaxInt]
    generation_token_ids: list[LaxInt]
    generation_log_probs: list[LaxFloat]
    routed_experts: str | list[list[list[LaxInt]]] | None = None


_TOKENS = TypeAdapter(TokenMetadata)


def _check_tokens(value: Any) -> Any:
    if isinstance(value, dict) and any(key in value for key in TOKEN_KEYS):
        missing = [key for key in TOKEN_FIELDS if key not in value]
        if missing:
            raise ValueError(f"token metadata without {', '.join(missing)}")
        _TOKENS.validate_python({key: value[key] for key in TOKEN_KEYS if key in value})
    return value


_TOKEN_SCHEMA = {
    "properties": {
        "prompt_token_ids": {"type": "array", "items": _LAX_INT},
        "generation_token_ids": {"type": "array", "items": _LAX_INT},
        "generation_log_probs": {"type": "array", "items": _LAX_FLOAT},
        "routed_experts": {
            "type": ["string", "array", "null"],
            "items": {"type": "array", "items": {"type": "array", "items": _LAX_INT}},
        },
    },
    "dependentRequired": {key: list(TOKEN_FIELDS) for key in TOKEN_KEYS},
}


# -- the reading as JSON Schema --------------------------------------------------------------------------


def _when(condition: dict[str, Any], then: Any) -> dict[str, Any]:
    return {"if": condition, "then": then}


def _chain(cases: list[tuple[dict[str, Any], Any]], otherwise: Any) -> Any:
    """`if c1 then t1 else if c2 then t2 … else otherwise`, the first condition that holds deciding."""
    schema = otherwise
    for condition, then in reversed(cases):
        schema = {"if": condition, "then": then, "else": schema}
    return schema


def _has(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": [name], "properties": {name: schema}}


def _all(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"allOf": list(conditions)}


_OBJECT_OR_ARRAY = {"type": ["object", "array"]}
_ROLE_UNREADABLE = _has("role", _OBJECT_OR_ARRAY)
_STATUS_ROLE = _has("role", {"enum": sorted(STATUS_ROLES)})
_OTHER_ROLE = {"not": _STATUS_ROLE}
_LIST_CONTENT = _has("content", {"type": "array"})
_STATUS_UNREADABLE = _has("status", _OBJECT_OR_ARRAY)
_KNOWN_STATUS = _has("status", {"enum": sorted(STATUSES)})
_ID = _has("id", {"type": "string"})
# What `_first_part_kind` reads, as conditions on `content` (a first part without `type`, or with a
# falsy one, counts as a refusal when it has `refusal`; a non-empty object or array `type` is unreadable).
_FALSY = [None, "", 0, False, [], {}]
_FIRST_UNREADABLE = _has(
    "content",
    {
        "type": "array",
        "minItems": 1,
        "prefixItems": [{"type": "object", **_has("type", {"type": ["object", "array"], "minItems": 1, "minProperties": 1})}],
    },
)
_FIRST_OUTPUT = _has(
    "content",
    {
        "type": "array",
        "minItems": 1,
        "prefixItems": [
            {
                "type": "object",
                "anyOf": [
                    _has("type", {"enum": sorted(OUTPUT_KINDS)}),
                    {"required": ["refusal"], "properties": {"type": {"enum": _FALSY}}},
                ],
            }
        ],
    },
)
_EMPTY_CONTENT = _has("content", {"type": "array", "maxItems": 0})


class _RouteItem:
    """`reading` for pydantic (a callable discriminator) and as JSON Schema (`json_schema`)."""

    __name__ = "route_item"

    def __call__(self, value: Any) -> str | None:
        if isinstance(value, Part):
            return _TAG_OF.get(type(value))  # serializing a validated item
        return reading(value)

    def json_schema(self, branches: dict[str, Any]) -> dict[str, Any]:
        unreadable = False
        message = _chain(
            [
                (_ROLE_UNREADABLE, unreadable),
                (_all(_STATUS_ROLE, _LIST_CONTENT, _STATUS_UNREADABLE), unreadable),
                (_all(_STATUS_ROLE, _LIST_CONTENT, _KNOWN_STATUS), branches[INPUT]),
                (_STATUS_ROLE, branches[EASY]),
                (_FIRST_UNREADABLE, unreadable),
                (_FIRST_OUTPUT, branches[OUTPUT]),
                (_all(_EMPTY_CONTENT, _ID), branches[OUTPUT]),
            ],
            branches[EASY],
        )
        message_like = _chain(
            [
                (_FIRST_UNREADABLE, unreadable),
                (_all(_STATUS_ROLE, _LIST_CONTENT, _STATUS_UNREADABLE), unreadable),
                (_all(_STATUS_ROLE, _FIRST_OUTPUT), branches[LIST_TOOLS]),
                (_FIRST_OUTPUT, _chain([(_ID, branches[OUTPUT])], branches[LIST_TOOLS])),
                (_all(_STATUS_ROLE, _LIST_CONTENT, _KNOWN_STATUS), branches[INPUT]),
                (_all(_OTHER_ROLE, _EMPTY_CONTENT, _ID), branches[OUTPUT]),
            ],
            branches[EASY],
        )
        roleless = _all({"not": {"required": ["role"]}}, _ID)
        typeless = _chain(
            [
                (_ROLE_UNREADABLE, unreadable),
                (_all(_has("role", {"enum": sorted(ROLES)}), _has("content", {"type": ["string", "array"]})), message_like),
                (_all(roleless, _FIRST_UNREADABLE), unreadable),
                (_all(roleless, _EMPTY_CONTENT), branches[OUTPUT]),
                (_all(roleless, _FIRST_OUTPUT), branches[OUTPUT]),
                ({"required": ["arguments", "name", "call_id"]}, branches[FUNCTION_CALL]),
                ({"required": ["arguments", "name"]}, branches[MCP_CALL]),
                (_all(_has("call_id", {"type": "string"}), {"required": ["output"]}), branches[FUNCTION_OUTPUT]),
                (_all(_ID, _has("summary", {"type": "array"})), branches[REASONING]),
            ],
            branches[LIST_TOOLS],
        )
        # A chain, commonest types first, rather than one `if` per type: an item stops at its own.
        typed = _chain(
            [({"properties": {"type": {"const": kind}}}, message if kind == "message" else branches[kind]) for kind in ITEM_TYPES],
            _when(_has("type", {"type": "string"}), {"properties": {"type": {"enum": list(ITEM_TYPES)}}}),
        )
        return {
            "description": (
                "A Responses API input item as NeMo Gym 0.7.0 reads it: by `type`, a `message` by its role,"
                " content and status, an item without `type` by its shape (anything unrecognised is accepted)."
            ),
            "type": "object",
            "properties": {"type": {"type": "string"}, **_TOKEN_SCHEMA["properties"]},
            "dependentRequired": _TOKEN_SCHEMA["dependentRequired"],
            "dependentSchemas": {"type": typed},
            "if": {"not": {"required": ["type"]}},
            "then": typeless,
        }


_ROUTED = Union[tuple(Annotated[model, Tag(tag)] for tag, model in MODELS.items())]  # noqa: UP007 (built from the table)

ConversationItem = TypeAliasType(
    "ConversationItem",
    Annotated[_ROUTED, Discriminator(_RouteItem()), BeforeValidator(_check_tokens)],
)
