"""NeMo Gym 0.7.0's health checks: one registry, each check declaring what it reads and how it finds.

`CHECKS` lists every check of NeMo Gym's `CHECK_REGISTRY`, in its order: its id, the trajlint
rules that cover it, the evidence it reads (`health.view.EVIDENCE`; a row lacking any is
unobserved for the check), and, for the nine rollout checks trajlint runs on a row, the function
that finds its problems in the row's `HealthView`. The TL6xx rules are made from this table
(`check/rules/health.py`), and the verdicts (`health.verdicts`) read it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from trajlint.builder.dialects import turn_content
from trajlint.builder.ledger import AGENT, OUTCOME_TURN, TURN, call_label, ref_key
from trajlint.health import view as hv
from trajlint.health.tasks import TASK_NO_SUCCESS, TASK_UNHEALTHY
from trajlint.health.view import (
    AGENT_TURNS,
    CALL_REFERENCES,
    CAPTURED_CALLS,
    KEPT_RESPONSES,
    MODEL_CALLS,
    OWNED_CALLS,
    TURN_USAGE,
    Find,
    HealthFinding,
    HealthView,
)
from trajlint.pointer import child, resolve
from trajlint.row import walk
from trajlint.row.sections import STATED
from trajlint.row.values import hashable

# Rule names, one per NeMo Gym rollout check.
MISSING_TURNS = "rollout-missing-agent-turns"
ENDED_ON_FAILURE = "rollout-ended-on-failed-model-call"
HOLLOW_TURN = "agent-turn-hollow"
ZERO_COMPLETION = "model-call-zero-completion-tokens"
MISSING_COUNTS = "model-call-missing-token-counts"
CAPTURE_MISMATCH = "trajectory-capture-mismatch"
CALL_FAILED = "model-call-failed"
TOKEN_MISMATCH = "rollout-token-count-mismatch"
RUNAWAY = "model-call-runaway-generation"

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


def turn_says_something(view: HealthView, turn: dict[str, Any], *, recorded: bool = False) -> bool:
    """The turn holds a message, reasoning or tool call; unless the turn is `recorded`, the
    response of a call it references counts too.

    A recorded turn (the row's stated trajectory) is what training reads, so it is judged as it
    stands, as NeMo Gym judges it. A turn trajlint built from the evidence is judged by the calls
    behind it, whatever their dialect.
    """
    answer = turn["answer"]
    if says_something(answer) or says_something(turn["reasoning_content"]) or has_tool_call(answer):
        return True
    if recorded:
        return False
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
    return call_label(view.entries[index])


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
    stated = view.row.get(STATED)
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


def _missing_turns(view: HealthView) -> Iterator[HealthFinding]:
    recorded = view.build.stated
    for turn in view.turns:
        if any(_usable(ref) for ref in turn["model_calls"]) or turn_says_something(view, turn, recorded=recorded):
            return
    how_many = len(view.turns)
    yield HealthFinding(
        MISSING_TURNS,
        turns_pointer(view),
        "the rollout has no agent turn with model activity: "
        + (f"none of its {how_many} turns holds a message, reasoning, tool call or model call reference" if how_many else "it has no turns"),
        None,
        {"reason": "no agent turn with model activity"},
    )


def _usable(ref: Any) -> bool:
    """A reference that names a call: by id, or by model and response id."""
    key = ref_key(ref)
    return key is not None and hv.nemo_gym_label(key) is not None


def _hollow(view: HealthView) -> Iterator[HealthFinding]:
    pointers = None
    recorded = view.build.stated
    for position, turn in enumerate(view.turns):
        if turn_says_something(view, turn, recorded=recorded):
            continue
        pointers = pointers or turn_pointers(view)
        number = turn["turn_no"] if turn["turn_no"] is not None else position
        name = f"turn {turn['invocation_id']!r}#{number}"
        if not recorded:
            message = f"{name} has no message, reasoning or tool call, and no response of a call it references has any"
        elif turn_says_something(view, turn):
            message = (
                f"{name} has no message, reasoning or tool call in the recorded trajectory, which training "
                "reads, though the response of a call it references has one (trajectory-drift compares them)"
            )
        else:
            message = f"{name} has no message, reasoning or tool call, and no response of a call it references has any"
        yield HealthFinding(
            HOLLOW_TURN,
            pointers[position] if position < len(pointers) else "",
            message,
            {"turn": number},
            {"reason": "agent turn has no message or tool calls"},
        )


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
            ENDED_ON_FAILURE,
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


def _zero_completion(view: HealthView) -> Iterator[HealthFinding]:
    for position, index in enumerate(view.owned_bindings.matched):
        if view.tokens(index)[1] == 0:
            yield HealthFinding(
                ZERO_COMPLETION,
                call_pointer(view, index, "tokens_out", ("token_stats", "completion_tokens")),
                f"{call_name(view, index)} generated 0 completion tokens",
                call_locator(view, index, position),
                {"completion_tokens": 0},
            )


def _missing_counts(view: HealthView) -> Iterator[HealthFinding]:
    for position, index in enumerate(view.owned_bindings.matched):
        prompt, completion = view.tokens(index)
        missing = [name for name, value in (("prompt_tokens", prompt), ("completion_tokens", completion)) if value is None]
        if missing:
            yield HealthFinding(
                MISSING_COUNTS,
                call_pointer(view, index),
                f"{call_name(view, index)} has no usable {' and no '.join(missing)} (absent, null, negative "
                "or not an integer)",
                call_locator(view, index, position),
                {"missing": missing},
            )


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
            CAPTURE_MISMATCH,
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
            CAPTURE_MISMATCH,
            gap_pointer(gap),
            f"the join of observations and capture found {gap['code']} for call {call_id!r}{owner}",
            {"call_id": call_id},
            {"kind": kind, "observation_gap": gap["code"], "invocation_id": gap["invocation_id"]},
        )


def _call_failed(view: HealthView) -> Iterator[HealthFinding]:
    matched = view.owned_bindings.matched
    terminal = matched[-1] if matched else None
    for position, index in enumerate(matched):
        if view.failed(index):
            meta = view.calls[index]["response_metadata"]
            yield HealthFinding(
                CALL_FAILED,
                call_pointer(view, index),
                f"{call_name(view, index)}, which the agent owns, failed ({failure_text(meta)})",
                call_locator(view, index, position),
                {
                    "status": meta.get("status_code"),
                    "error_category": meta.get("error_category"),
                    "terminal": view.owned_bindings.complete and index == terminal,
                },
            )


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
        TOKEN_MISMATCH,
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


def _runaway(view: HealthView) -> Iterator[HealthFinding]:
    for position, index in enumerate(view.owned_bindings.matched):
        call = view.calls[index]
        reason = call["response_metadata"].get("finish_reason")
        if reason in hv.LENGTH_LIMITS and not response_has_content(call["response"]):
            yield HealthFinding(
                RUNAWAY,
                call_pointer(view, index, "finish_reason", ("response_metadata", "finish_reason")),
                f"{call_name(view, index)} stopped at its length limit (finish_reason {reason!r}) without "
                "producing any output",
                call_locator(view, index, position),
                {"finish_reason": reason},
            )


# -- the registry ---------------------------------------------------------------------------------


class HealthCheck(NamedTuple):
    """One NeMo Gym check: what trajlint calls it, what it reads, and how it finds (None: the
    check's findings are other rules' findings, or a reduction over the run's verdicts)."""

    id: str
    rules: tuple[str, ...]
    reads: tuple[str, ...] = ()
    find: Find | None = None
    # What the trajlint rule reads of the row (`check.rule.EVIDENCE`), before the view is made.
    row_reads: tuple[str, ...] = ("row",)


CHECK_EXECUTION_ERROR = "check_execution_error"
RECORD_UNREADABLE = "record_unreadable"
DUPLICATE_IDENTITY = "rollout_duplicate_identity"

_CALLS = ("row", "model-calls")

#: Every NeMo Gym 0.7.0 check, in its registry order.
CHECKS: tuple[HealthCheck, ...] = (
    HealthCheck(CHECK_EXECUTION_ERROR, ("internal-error",)),
    HealthCheck(RECORD_UNREADABLE, ("invalid-json", "row-not-object", "trajectory-schema")),
    HealthCheck(DUPLICATE_IDENTITY, ("duplicate-rollout-identity",)),
    HealthCheck("rollout_missing_agent_turns", (MISSING_TURNS,), (AGENT_TURNS,), _missing_turns),
    HealthCheck("rollout_ended_on_failed_model_call", (ENDED_ON_FAILURE,), (MODEL_CALLS,), _ended_on_failure, _CALLS),
    HealthCheck("agent_turn_hollow", (HOLLOW_TURN,), (AGENT_TURNS,), _hollow),
    HealthCheck("model_call_zero_completion_tokens", (ZERO_COMPLETION,), (CAPTURED_CALLS, OWNED_CALLS), _zero_completion, _CALLS),
    HealthCheck("model_call_missing_token_counts", (MISSING_COUNTS,), (CAPTURED_CALLS, OWNED_CALLS), _missing_counts, _CALLS),
    # Reads only the row: references that resolve to nothing are its subject, so a row whose
    # capture holds no usable call is judged too.
    HealthCheck("trajectory_capture_mismatch", (CAPTURE_MISMATCH,), (CAPTURED_CALLS, CALL_REFERENCES), _capture_mismatch),
    HealthCheck("model_call_failed", (CALL_FAILED,), (CAPTURED_CALLS, OWNED_CALLS), _call_failed, _CALLS),
    HealthCheck("rollout_token_count_mismatch", (TOKEN_MISMATCH,), (CAPTURED_CALLS, TURN_USAGE), _token_mismatch, _CALLS),
    HealthCheck("model_call_runaway_generation", (RUNAWAY,), (CAPTURED_CALLS, OWNED_CALLS, KEPT_RESPONSES), _runaway, _CALLS),
    HealthCheck(TASK_UNHEALTHY, ("task-consistently-unhealthy",)),
    HealthCheck(TASK_NO_SUCCESS, ("task-no-successful-model-calls",)),
)
#: The nine checks trajlint runs on each row, in NeMo Gym's order.
ROW_CHECKS = tuple(check for check in CHECKS if check.find is not None)
TASK_CHECKS = (TASK_UNHEALTHY, TASK_NO_SUCCESS)
#: NeMo Gym's rollout-level checks (all but the task checks).
ROLLOUT_CHECKS = tuple(check.id for check in CHECKS if check.id not in TASK_CHECKS)
