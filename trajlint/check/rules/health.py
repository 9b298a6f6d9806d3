"""TL6xx: NeMo Gym 0.7.0's rollout health checks, one rule per check, on trajlint's build.

Each check finds its problems in the row's `HealthView` (computed once per row, shared with the
health report) and keeps NeMo Gym's locator and detail next to trajlint's pointer and message.
A rule whose evidence is absent from a row (no turns, no captured calls, no call the agent
owns) yields nothing there; the health report counts it as unobserved, in NeMo Gym's sense.
The task-level checks are in `health_tasks.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trajlint.builder.dialects import turn_content
from trajlint.builder.ledger import AGENT, OUTCOME_TURN, TURN, ref_key
from trajlint.row import walk
from trajlint.check import health_view as hv
from trajlint.check.health_view import HealthFinding, HealthView, check
from trajlint.row.values import hashable
from trajlint.check.subject import Subject
from trajlint.check.rule import Violation, row_rule
from trajlint.pointer import child, resolve

TOOL_CALL_TYPES = frozenset(
    {
        "function_call", "tool_call", "tool_use", "mcp_call", "mcp_list_tools", "mcp_approval_request",
        "file_search_call", "web_search_call", "computer_call", "image_generation_call",
        "code_interpreter_call", "local_shell_call", "custom_tool_call",
    }
)
# Keys whose values carry what a model said (NeMo Gym's list); trajlint adds Anthropic's `thinking`.
_SAYING_KEYS = (
    "text", "content", "output_text", "answer", "refusal", "encrypted_content",
    "reasoning", "reasoning_content", "summary",
)
_THINKING_KEYS = (*_SAYING_KEYS, "thinking")


def says_something(value: Any, keys: tuple[str, ...] = _THINKING_KEYS) -> bool:
    """Whether a value holds any text, recursively through the keys that carry it.

    With the default keys an Anthropic `thinking` block and a `redacted_thinking` block's data
    count, the way a Responses reasoning item's summary or encrypted content does. A stack, not
    recursion: a payload may nest as deep as the parser allows (1,024 levels), deeper than Python's
    recursion limit.
    """
    thinking = keys is _THINKING_KEYS
    stack: list[Any] = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if value and not value.isspace():  # `value.strip()`, without copying a long text
                return True
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            if thinking and value.get("type") == "redacted_thinking":
                stack.append(value.get("data"))
            stack.extend([value[key] for key in keys if key in value])
    return False


def has_tool_call(value: Any) -> bool:
    """A tool call item in `value` or in the lists it holds (a stack, as in `says_something`)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            kind = value.get("type")  # a malformed item's type may be an object, which cannot be looked up
            if (isinstance(kind, str) and kind in TOOL_CALL_TYPES) or value.get("tool_calls"):
                return True
    return False


def response_has_content(response: Any) -> bool:
    """Output text in a response, by NeMo Gym's definition: `output_text`, `content` (Chat and
    Anthropic alike), `output` items, or a choice's text or message content. A Chat message that
    is a string is read as its text (NeMo Gym's check raises on it)."""
    if not isinstance(response, dict):
        return False
    if any(says_something(response.get(key), _SAYING_KEYS) for key in ("output_text", "content", "output")):
        return True
    for choice in response.get("choices") or ():
        if isinstance(choice, dict):
            message = choice.get("message")
            content = message.get("content") if isinstance(message, dict) else message
            if says_something(choice.get("text"), _SAYING_KEYS) or says_something(content, _SAYING_KEYS):
                return True
    return False


def turn_says_something(view: HealthView, turn: dict[str, Any]) -> bool:
    """The turn, or the response of a call it references, holds a message, reasoning or tool call.

    A stated turn NeMo Gym 0.7.0 left hollow on an Anthropic Messages call is judged by that
    call's response, which trajlint reads.
    """
    answer = turn["answer"]
    if says_something(answer) or says_something(turn["reasoning_content"]) or has_tool_call(answer):
        return True
    for ref in turn["model_calls"]:
        for entry in view.index.match(ref) or ():
            call = view.calls[entry.index]
            content = turn_content(call["request"], call["response"])
            if content.tool_calls or says_something(content.answer) or says_something(content.reasoning):
                return True
            if has_tool_call(content.answer):
                return True
    return False


# -- where things are, and what they are called ------------------------------------------------


def call_pointer(view: HealthView, index: int, capture_key: str | None = None, stated_path: tuple[str, ...] = ()) -> str:
    """Where call `index` stands; with a field, the place that field's value came from.

    The build takes a value from the capture when the capture has one, else from the stated
    trajectory, so the pointer names the first of those that holds the field.
    """
    locations = view.entries[index].locations
    if capture_key is not None:
        for location in locations:
            if location.startswith("/ng_model_call_capture/") and _holds(view.row, location, (capture_key,)):
                return child(location, capture_key)
        for location in locations:
            if location.startswith("/ng_trajectory/") and _holds(view.row, location, stated_path):
                return child(location, *stated_path)
    return locations[0]


def _holds(row: dict[str, Any], location: str, path: tuple[str, ...]) -> bool:
    node = resolve(row, location, None)
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node is not None


def call_name(view: HealthView, index: int) -> str:
    call = view.calls[index]
    if call["model_call_id"]:
        return f"model call {call['model_call_id']!r}"
    response_id = call["response_metadata"].get("response_id")
    if response_id:
        return f"model call with response id {response_id!r}"
    return f"the model call at {view.entries[index].locations[0]}"


def call_locator(view: HealthView, index: int, fallback: int) -> dict[str, str]:
    call = view.calls[index]
    return {"call_id": str(call["model_call_id"] or call["response_metadata"].get("response_id") or fallback)}


def turn_pointers(view: HealthView) -> list[str]:
    """Where each built turn stands: the stated turn in the row, or the call it was built from."""
    if not view.build.stated:
        return [e.locations[0] for e in view.entries if e.outcome == OUTCOME_TURN]
    stated: dict[tuple[Any, Any], str] = {}
    for pointer, turn in walk.stated(view.subject, "turns"):
        key = (turn.get("invocation_id"), turn.get("turn_no"))
        if all(v is None or isinstance(v, (str, int, float)) for v in key):  # a damaged turn is not built
            stated.setdefault(key, pointer)
    return [stated.get((t["invocation_id"], t["turn_no"]), turns_pointer(view)) for t in view.turns]


def turns_pointer(view: HealthView) -> str:
    """The stated turns as a whole: the list when the trajectory has one, else the trajectory
    (a pointer always names a place the row has)."""
    stated = view.row.get("ng_trajectory")
    if not isinstance(stated, dict):
        return ""
    return "/ng_trajectory/turns" if "turns" in stated else "/ng_trajectory"


def reference_pointer(view: HealthView, ref: dict[str, Any]) -> str:
    """Where an unresolved reference stands in the row (the ledger kept its place)."""
    wanted = ref_key(ref)
    for unresolved in view.build.ledger.unresolved:
        if unresolved.claim.kind in (AGENT, TURN) and ref_key(unresolved.ref) == wanted:
            return unresolved.claim.pointer
    return "/ng_trajectory" if view.build.stated else ""


class GapPointers:
    """Where each gap stands: as the row states it, else the invocation it names.

    The row's gaps and invocations are indexed once: a search per gap is quadratic, and a row
    whose thousands of invocations claim one call has a join gap for each of them.
    """

    def __init__(self, view: HealthView):
        self._gaps: dict[tuple[Any, Any, Any], str] = {}
        for pointer, item in walk.gaps(view.subject):
            self._gaps.setdefault(_gap_key(item.get("code"), item.get("invocation_id"), item.get("detail")), pointer)
        self._invocations: dict[Any, str] = {}
        for pointer, record in walk.invocations(view.subject):
            self._invocations.setdefault(hashable(record.get("invocation_id")), pointer)

    def __call__(self, gap: dict[str, Any]) -> str:
        found = self._gaps.get(_gap_key(gap["code"], gap["invocation_id"], gap["detail"]))
        return found if found is not None else self._invocations.get(hashable(gap["invocation_id"]), "")


def _gap_key(code: Any, invocation_id: Any, detail: Any) -> tuple[Any, Any, Any]:
    return hashable(code), hashable(invocation_id), hashable(detail)


def failure_text(meta: dict[str, Any]) -> str:
    parts = [
        f"{name} {meta[key]!r}"
        for key, name in (("status_code", "status"), ("error_category", "error category"), ("response_status", "response status"))
        if meta.get(key) is not None
    ]
    return ", ".join(parts) or "failed"


# -- the checks ----------------------------------------------------------------------------------


@check(hv.MISSING_TURNS)
def _missing_turns(view: HealthView) -> Iterator[HealthFinding]:
    for turn in view.turns:
        if any(_usable(ref) for ref in turn["model_calls"]) or turn_says_something(view, turn):
            return
    how_many = len(view.turns)
    yield HealthFinding(
        hv.MISSING_TURNS,
        turns_pointer(view),
        "the rollout has no agent turn with model activity: "
        + (f"none of its {how_many} turns holds a message, reasoning, tool call or model call reference" if how_many else "it has no turns"),
        None,
        {"reason": "no agent turn with model activity"},
    )


def _usable(ref: Any) -> bool:
    """A reference that names a call: by id, or by model and response id."""
    key = ref_key(ref)
    return key is not None and hv.ref_label(key) is not None


@check(hv.HOLLOW_TURN)
def _hollow(view: HealthView) -> Iterator[HealthFinding]:
    pointers = None
    for position, turn in enumerate(view.turns):
        if turn_says_something(view, turn):
            continue
        pointers = pointers or turn_pointers(view)
        number = turn["turn_no"] if turn["turn_no"] is not None else position
        yield HealthFinding(
            hv.HOLLOW_TURN,
            pointers[position] if position < len(pointers) else "",
            f"turn {turn['invocation_id']!r}#{number} has no message, reasoning or tool call, and no "
            "response of a call it references has any",
            {"turn": number},
            {"reason": "agent turn has no message or tool calls"},
        )


@check(hv.ENDED_ON_FAILURE)
def _ended_on_failure(view: HealthView) -> Iterator[HealthFinding]:
    if not any(view.failed_calls()):
        return  # no chain of calls can end on a failure
    for key, chain in view.chains().items():
        if not hv.ended_on_failure(chain):
            continue
        last, position = hv.ordered(chain)[-1]
        meta = last["response_metadata"]
        model = "/".join(str(part) for part in key) if key else None
        successful = sum(hv.is_successful(call["response_metadata"]) for call, _ in chain)
        yield HealthFinding(
            hv.ENDED_ON_FAILURE,
            call_pointer(view, position),
            f"the last call to model {model or '(unnamed)'}, {call_name(view, position)}, failed "
            f"({failure_text(meta)}); {successful} of its {len(chain)} calls succeeded, so the rollout's "
            "reward cannot be told from a genuine zero",
            call_locator(view, position, position),
            {
                "model_ref": model,
                "status": meta.get("status_code"),
                "error_category": meta.get("error_category"),
                "observed_calls": len(chain),
                "successful_calls": successful,
            },
        )


@check(hv.ZERO_COMPLETION)
def _zero_completion(view: HealthView) -> Iterator[HealthFinding]:
    for position, index in enumerate(view.owned_bindings.matched):
        if view.tokens(index)[1] == 0:
            yield HealthFinding(
                hv.ZERO_COMPLETION,
                call_pointer(view, index, "tokens_out", ("token_stats", "completion_tokens")),
                f"{call_name(view, index)} generated 0 completion tokens",
                call_locator(view, index, position),
                {"completion_tokens": 0},
            )


@check(hv.MISSING_COUNTS)
def _missing_counts(view: HealthView) -> Iterator[HealthFinding]:
    for position, index in enumerate(view.owned_bindings.matched):
        prompt, completion = view.tokens(index)
        missing = [name for name, value in (("prompt_tokens", prompt), ("completion_tokens", completion)) if value is None]
        if missing:
            yield HealthFinding(
                hv.MISSING_COUNTS,
                call_pointer(view, index),
                f"{call_name(view, index)} has no usable {' and no '.join(missing)} (absent, null, negative "
                "or not an integer)",
                call_locator(view, index, position),
                {"missing": missing},
            )


@check(hv.CAPTURE_MISMATCH)
def _capture_mismatch(view: HealthView) -> Iterator[HealthFinding]:
    seen: set[tuple[str, str]] = set()
    owned = view.owned_bindings
    for kind, label, ref, detail in [
        *(("missing_captured_call", label, ref, {}) for label, ref in owned.missing),
        *(("duplicated_captured_call", label, ref, {"count": n}) for label, ref, n in owned.duplicated),
    ]:
        call_id = label.split(":")[-1]
        if (kind, call_id) in seen:
            continue
        seen.add((kind, call_id))
        matches = f"matches {detail['count']} captured calls" if detail else "matches no captured call"
        yield HealthFinding(
            hv.CAPTURE_MISMATCH,
            reference_pointer(view, ref),
            f"the trajectory references call {call_id!r}, which {matches}",
            {"call_id": call_id},
            {"kind": kind, **detail},
        )
    gap_pointer = GapPointers(view)
    for gap in view.reference_gaps:  # each join gap once, unless a reference reported its call already
        kind = hv.REFERENCE_GAPS[gap["code"]]
        call_id = str(gap["detail"] or "unknown").split(":")[-1]
        if (kind, call_id) in seen:
            continue
        owner = f" (invocation {gap['invocation_id']!r})" if gap["invocation_id"] else ""
        yield HealthFinding(
            hv.CAPTURE_MISMATCH,
            gap_pointer(gap),
            f"the join of observations and capture found {gap['code']} for call {call_id!r}{owner}",
            {"call_id": call_id},
            {"kind": kind, "observation_gap": gap["code"], "invocation_id": gap["invocation_id"]},
        )


@check(hv.CALL_FAILED)
def _call_failed(view: HealthView) -> Iterator[HealthFinding]:
    matched = view.owned_bindings.matched
    terminal = matched[-1] if matched else None
    for position, index in enumerate(matched):
        if view.failed(index):
            meta = view.calls[index]["response_metadata"]
            yield HealthFinding(
                hv.CALL_FAILED,
                call_pointer(view, index),
                f"{call_name(view, index)}, which the agent owns, failed ({failure_text(meta)})",
                call_locator(view, index, position),
                {
                    "status": meta.get("status_code"),
                    "error_category": meta.get("error_category"),
                    "terminal": view.owned_bindings.complete and index == terminal,
                },
            )


@check(hv.TOKEN_MISMATCH)
def _token_mismatch(view: HealthView) -> Iterator[HealthFinding]:
    prompt, completion = view.transcript
    spending = view.spending_calls()
    capture_prompt = sum(view.tokens(i)[0] or 0 for i in spending)
    capture_completion = sum(view.tokens(i)[1] or 0 for i in spending)
    if (prompt, completion) == (capture_prompt, capture_completion):
        return
    helpers = len(view.helper_calls)
    calls = f"{len(view.turn_bindings.matched)} captured calls its turns reference" + (
        f" and its {helpers} compaction helper call{'s' if helpers > 1 else ''}" if helpers else ""
    )
    yield HealthFinding(
        hv.TOKEN_MISMATCH,
        "/response/usage",
        f"the transcript's usage says {prompt} prompt and {completion} completion tokens, but the {calls} "
        f"add up to {capture_prompt} and {capture_completion}",
        None,
        {
            "transcript_prompt": prompt,
            "transcript_completion": completion,
            "capture_prompt": capture_prompt,
            "capture_completion": capture_completion,
        },
    )


@check(hv.RUNAWAY)
def _runaway(view: HealthView) -> Iterator[HealthFinding]:
    for position, index in enumerate(view.owned_bindings.matched):
        call = view.calls[index]
        reason = call["response_metadata"].get("finish_reason")
        if reason in hv.LENGTH_LIMITS and not response_has_content(call["response"]):
            yield HealthFinding(
                hv.RUNAWAY,
                call_pointer(view, index, "finish_reason", ("response_metadata", "finish_reason")),
                f"{call_name(view, index)} stopped at its length limit (finish_reason {reason!r}) without "
                "producing any output",
                call_locator(view, index, position),
                {"finish_reason": reason},
            )


# -- the rules -----------------------------------------------------------------------------------


def _report(subject: Subject, rule: str) -> Iterator[Violation]:
    for item in hv.view_of(subject).findings(rule) or ():
        yield Violation(item.pointer, item.message)


@row_rule(hv.MISSING_TURNS, reads=["row"])
def rollout_missing_agent_turns(subject: Subject) -> Iterator[Violation]:
    """No turn of the rollout shows model activity: no message, reasoning, tool call or call reference."""
    return _report(subject, hv.MISSING_TURNS)


@row_rule(hv.ENDED_ON_FAILURE, reads=["row", "model-calls"])
def rollout_ended_on_failed_model_call(subject: Subject) -> Iterator[Violation]:
    """Some model's last call of the rollout, in time, failed."""
    return _report(subject, hv.ENDED_ON_FAILURE)


@row_rule(hv.HOLLOW_TURN, reads=["row"])
def agent_turn_hollow(subject: Subject) -> Iterator[Violation]:
    """A turn with neither message, reasoning nor tool call, in the turn or in its call's response."""
    return _report(subject, hv.HOLLOW_TURN)


@row_rule(hv.ZERO_COMPLETION, reads=["row", "model-calls"])
def model_call_zero_completion_tokens(subject: Subject) -> Iterator[Violation]:
    """An agent-owned call that generated no completion tokens."""
    return _report(subject, hv.ZERO_COMPLETION)


@row_rule(hv.MISSING_COUNTS, reads=["row", "model-calls"])
def model_call_missing_token_counts(subject: Subject) -> Iterator[Violation]:
    """An agent-owned call without a usable prompt or completion token count."""
    return _report(subject, hv.MISSING_COUNTS)


@row_rule(hv.CAPTURE_MISMATCH, reads=["row"])
def trajectory_capture_mismatch(subject: Subject) -> Iterator[Violation]:
    """A reference that matches no captured call or several, or a join conflict the build recorded.

    Reads only the row: references that resolve to nothing are its subject, so a row whose
    capture holds no usable call is judged too.
    """
    return _report(subject, hv.CAPTURE_MISMATCH)


@row_rule(hv.CALL_FAILED, reads=["row", "model-calls"])
def model_call_failed(subject: Subject) -> Iterator[Violation]:
    """An agent-owned call that failed (HTTP status ≥ 400, an error category, or a failed response)."""
    return _report(subject, hv.CALL_FAILED)


@row_rule(hv.TOKEN_MISMATCH, reads=["row", "model-calls"])
def rollout_token_count_mismatch(subject: Subject) -> Iterator[Violation]:
    """The transcript's usage disagrees with the sum over the calls behind its turns."""
    return _report(subject, hv.TOKEN_MISMATCH)


@row_rule(hv.RUNAWAY, reads=["row", "model-calls"])
def model_call_runaway_generation(subject: Subject) -> Iterator[Violation]:
    """An agent-owned call that stopped at its length limit without any output."""
    return _report(subject, hv.RUNAWAY)
