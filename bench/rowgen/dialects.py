"""One conversation, rendered as each of the three model APIs carries it (contract §8).

An agent's history is kept dialect-neutral (`History`); each model call renders it as a Responses
API `input`, Chat Completions `messages` or Anthropic Messages `messages`, and renders the model's
reply (`Step`) as that API's response body with its `usage`. The same history also gives the
harness's conversation in NeMo Gym's Responses-item form (contract §3.13).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .text import dumps_arguments

DIALECTS = ("responses", "chat", "messages")


@dataclass(slots=True)
class ToolCall:
    call_id: str
    name: str
    arguments: dict[str, Any]
    item_id: str  # the Responses `function_call` item id


@dataclass(slots=True)
class Step:
    """What the model returned in one call: optional reasoning and text, and tool calls."""

    text: str | None
    reasoning: str | None
    tool_calls: list[ToolCall]
    message_id: str
    reasoning_id: str
    signature: str


@dataclass(slots=True)
class Usage:
    prompt: int  # every input token, cached and cache-written ones included
    completion: int
    reasoning: int
    cached: int  # prompt tokens read from the cache
    cache_written: int = 0  # Anthropic: prompt tokens written to the cache


@dataclass
class History:
    """A conversation as a list of entries: (system|user, text), (assistant, Step), (tool, ToolCall, output)."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)
    chars: int = 0

    def add(self, *entry: Any) -> None:
        self.entries.append(entry)
        kind = entry[0]
        if kind in ("system", "user"):
            self.chars += len(entry[1]) + 16
        elif kind == "assistant":
            step: Step = entry[1]
            self.chars += len(step.text or "") + len(step.reasoning or "") + 16
            self.chars += sum(len(dumps_arguments(tc.arguments)) + len(tc.name) + 40 for tc in step.tool_calls)
        else:
            self.chars += len(entry[2]) + 40

    def copy(self) -> History:
        return History(list(self.entries), self.chars)


# -- requests ---------------------------------------------------------------------------------


def _responses_step(step: Step) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if step.reasoning:
        items.append({"type": "reasoning", "id": step.reasoning_id, "summary": [{"type": "summary_text", "text": step.reasoning}]})
    if step.text:
        items.append(
            {
                "type": "message",
                "id": step.message_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    for tc in step.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": tc.call_id,
                "name": tc.name,
                "arguments": dumps_arguments(tc.arguments),
                "id": tc.item_id,
                "status": "completed",
            }
        )
    return items


def responses_input(history: History) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for entry in history.entries:
        kind = entry[0]
        if kind in ("system", "user"):
            items.append({"role": kind, "content": entry[1]})
        elif kind == "assistant":
            items.extend(_responses_step(entry[1]))
        else:
            items.append({"type": "function_call_output", "call_id": entry[1].call_id, "output": entry[2]})
    return items


def _chat_tool_calls(step: Step) -> list[dict[str, Any]]:
    return [
        {"id": tc.call_id, "type": "function", "function": {"name": tc.name, "arguments": dumps_arguments(tc.arguments)}}
        for tc in step.tool_calls
    ]


def _chat_assistant(step: Step, with_reasoning: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text}
    if step.tool_calls:
        message["tool_calls"] = _chat_tool_calls(step)
    if with_reasoning and step.reasoning:
        message["reasoning_content"] = step.reasoning
    return message


def chat_messages(history: History) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for entry in history.entries:
        kind = entry[0]
        if kind in ("system", "user"):
            messages.append({"role": kind, "content": entry[1]})
        elif kind == "assistant":
            messages.append(_chat_assistant(entry[1], with_reasoning=False))
        else:
            messages.append({"role": "tool", "tool_call_id": entry[1].call_id, "content": entry[2]})
    return messages


def _anthropic_blocks(step: Step) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.reasoning:
        blocks.append({"type": "thinking", "thinking": step.reasoning, "signature": step.signature})
    if step.text:
        blocks.append({"type": "text", "text": step.text})
    for tc in step.tool_calls:
        blocks.append({"type": "tool_use", "id": tc.call_id, "name": tc.name, "input": tc.arguments})
    return blocks


def anthropic_messages(history: History) -> tuple[str | None, list[dict[str, Any]]]:
    """(system, messages): consecutive tool results travel together in one user message."""
    system = None
    messages: list[dict[str, Any]] = []
    for entry in history.entries:
        kind = entry[0]
        if kind == "system":
            system = entry[1]
        elif kind == "user":
            messages.append({"role": "user", "content": [{"type": "text", "text": entry[1]}]})
        elif kind == "assistant":
            messages.append({"role": "assistant", "content": _anthropic_blocks(entry[1])})
        else:
            block = {"type": "tool_result", "tool_use_id": entry[1].call_id, "content": entry[2]}
            last = messages[-1] if messages else None
            if last and last["role"] == "user" and last["content"] and last["content"][-1]["type"] == "tool_result":
                last["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
    return system, messages


def request(dialect: str, model: str, history: History, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The request body of one model call."""
    if dialect == "responses":
        body: dict[str, Any] = {"model": model, "input": responses_input(history)}
        if tools:
            body["tools"] = tools
        body.update({"parallel_tool_calls": True, "max_output_tokens": 4096, "temperature": 0.6, "store": False})
        return body
    if dialect == "chat":
        body = {"model": model, "messages": chat_messages(history)}
        if tools:
            body["tools"] = tools
        body.update({"temperature": 0.6, "max_tokens": 4096})
        return body
    system, messages = anthropic_messages(history)
    body = {"model": model, "max_tokens": 8192}
    if system:
        body["system"] = system
    body["messages"] = messages
    if tools:
        body["tools"] = tools
    return body


# -- responses --------------------------------------------------------------------------------


def usage(dialect: str, u: Usage) -> dict[str, Any]:
    """The response's `usage` in the dialect's own field names."""
    if dialect == "responses":
        return {
            "input_tokens": u.prompt,
            "input_tokens_details": {"cached_tokens": u.cached},
            "output_tokens": u.completion,
            "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": u.prompt + u.completion,
        }
    if dialect == "chat":
        out: dict[str, Any] = {"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.prompt + u.completion}
        if u.cached:
            out["prompt_tokens_details"] = {"cached_tokens": u.cached}
        if u.reasoning:
            out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning}
        return out
    return {
        "input_tokens": u.prompt - u.cached - u.cache_written,
        "output_tokens": u.completion,
        "cache_read_input_tokens": u.cached,
        "cache_creation_input_tokens": u.cache_written,
    }


def response(dialect: str, response_id: str, model: str, step: Step, u: Usage, created: int) -> dict[str, Any]:
    """The response body of one successful model call."""
    if dialect == "responses":
        return {
            "id": response_id,
            "object": "response",
            "created_at": created,
            "status": "completed",
            "model": model,
            "output": _responses_step(step),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "incomplete_details": None,
            "error": None,
            "usage": usage(dialect, u),
        }
    if dialect == "chat":
        return {
            "id": response_id,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": _chat_assistant(step, with_reasoning=True),
                    "finish_reason": "tool_calls" if step.tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": usage(dialect, u),
        }
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_blocks(step),
        "stop_reason": "tool_use" if step.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": usage(dialect, u),
    }


def error_response(status: int) -> dict[str, Any]:
    """The body a model server returns for a rejected call (rate limit or overload)."""
    if status == 429:
        return {"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error", "code": None}}
    return {"error": {"message": "The server is overloaded", "type": "server_error", "code": None}}


# -- NeMo Gym's view of the conversation ------------------------------------------------------


def gym_conversation(history: History, normalized: bool) -> list[dict[str, Any]]:
    """The harness conversation as Responses items (`AgentInvocation.conversation`).

    `normalized` fills the defaults NeMo Gym's re-serialization writes (`phase`, `namespace`, …),
    as in a persisted row; an agent's own bundle leaves them out.
    """
    items: list[dict[str, Any]] = []
    for entry in history.entries:
        kind = entry[0]
        if kind == "system":
            continue
        if kind == "user":
            item: dict[str, Any] = {"role": "user", "content": entry[1], "type": "message"}
            if normalized:
                item["phase"] = None
            items.append(item)
        elif kind == "assistant":
            step: Step = entry[1]
            if step.reasoning:
                item = {"id": step.reasoning_id, "summary": [{"text": step.reasoning, "type": "summary_text"}], "type": "reasoning"}
                if normalized:
                    item.update({"encrypted_content": None, "content": None})
                items.append(item)
            if step.text:
                part: dict[str, Any] = {"annotations": [], "text": step.text, "type": "output_text"}
                if normalized:
                    part["logprobs"] = None
                item = {"id": step.message_id, "content": [part], "role": "assistant", "status": "completed", "type": "message"}
                if normalized:
                    item["phase"] = None
                items.append(item)
            for tc in step.tool_calls:
                item = {
                    "arguments": dumps_arguments(tc.arguments),
                    "call_id": tc.call_id,
                    "name": tc.name,
                    "type": "function_call",
                    "id": tc.call_id,
                    "status": "completed",
                }
                if normalized:
                    item["namespace"] = None
                items.append(item)
        else:
            item = {"call_id": entry[1].call_id, "output": entry[2], "type": "function_call_output"}
            if normalized:
                item.update({"id": None, "status": None})
            items.append(item)
    return items


def turn_content(dialect: str, req: dict[str, Any], resp: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(question, answer, reasoning) of a turn on this call, the way the newest builder splits them."""
    question = req.get("input", req.get("messages"))
    if isinstance(question, list):
        question = [dict(i, type="message") if isinstance(i, dict) and "role" in i and "type" not in i else i for i in question]
    if dialect == "responses":
        reasoning = [i for i in resp["output"] if i.get("type") == "reasoning"] or None
        return question, [i for i in resp["output"] if i.get("type") != "reasoning"], reasoning
    if dialect == "chat":
        message = dict(resp["choices"][0]["message"])
        reasoning = message.pop("reasoning_content", None)
        return question, message, reasoning
    reasoning = [b for b in resp["content"] if b.get("type") in ("thinking", "redacted_thinking")] or None
    return question, [b for b in resp["content"] if b.get("type") not in ("thinking", "redacted_thinking")], reasoning
