"""Split one captured model call into a turn's question, answer, reasoning and tool-call count.

Three dialects reach NeMo Gym's model servers: the Responses API (`output` items), Chat
Completions (`choices[0].message`) and Anthropic Messages (`content` blocks). NeMo Gym 0.7.0
knows only the first two, so every Anthropic turn it builds is hollow; trajlint reads all three.
Nothing here raises on malformed payloads: an unrecognized shape is a hollow turn, as in NeMo Gym.
"""

from __future__ import annotations

from typing import Any, NamedTuple

_ANTHROPIC_REASONING = frozenset({"thinking", "redacted_thinking"})


class TurnContent(NamedTuple):
    question: Any
    answer: Any
    reasoning: Any
    tool_calls: int
    dialect: str | None  # which shape was recognized: "responses", "chat", "messages", or None


def question_of(request: Any) -> Any:
    """The model-visible input: `input` (Responses) else `messages` (Chat, Anthropic).

    Typeless `{role, content}` input items are Responses "easy" messages; NeMo Gym writes them
    with `type: "message"`, so the copy does too (the row itself is never modified).
    """
    if not isinstance(request, dict):
        return request
    question = request["input"] if "input" in request else request.get("messages")
    if isinstance(question, list) and "input" in request:
        return [
            {**item, "type": "message"} if isinstance(item, dict) and "role" in item and "type" not in item else item
            for item in question
        ]
    return question


def _responses(output: list[Any]) -> tuple[Any, Any, int]:
    items = [item for item in output if isinstance(item, dict)]
    reasoning = [item for item in items if item.get("type") == "reasoning"]
    answer = [item for item in items if item.get("type") != "reasoning"]
    tools = sum(1 for item in items if item.get("type") == "function_call")
    return answer, reasoning or None, tools


def _chat(choice: dict[str, Any]) -> tuple[Any, Any, int]:
    message = choice.get("message") or {}
    if not isinstance(message, dict):
        # NeMo Gym raises here and loses the whole trajectory; trajlint keeps a hollow turn.
        return None, None, 0
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    answer = {k: v for k, v in message.items() if k not in ("reasoning_content", "reasoning")}
    tool_calls = message.get("tool_calls")
    return answer, reasoning, len(tool_calls) if isinstance(tool_calls, list) else 0


def _is_reasoning(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    return isinstance(kind, str) and kind in _ANTHROPIC_REASONING


def _messages(content: list[Any]) -> tuple[Any, Any, int]:
    blocks = [block for block in content if isinstance(block, dict)]
    reasoning = [b for b in blocks if _is_reasoning(b)]
    answer = [b for b in blocks if not _is_reasoning(b)]
    tools = sum(1 for b in blocks if b.get("type") == "tool_use")
    return answer, reasoning or None, tools


def turn_content(request: Any, response: Any) -> TurnContent:
    question = question_of(request)
    if isinstance(response, dict):
        output = response.get("output")
        if isinstance(output, list):
            return TurnContent(question, *_responses(output), "responses")
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            return TurnContent(question, *_chat(choices[0]), "chat")
        content = response.get("content")
        if isinstance(content, list):
            return TurnContent(question, *_messages(content), "messages")
    return TurnContent(question, None, None, 0, None)
