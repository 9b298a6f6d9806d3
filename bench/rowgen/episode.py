"""One rollout as it happens: an agent's model calls, tool calls, subagents, compactions, judges.

`Episode` simulates the run on a clock and records every captured exchange in capture order,
who claims each call, the tool timings and the compaction boundaries. `rows` then writes that
evidence in the shape of a harness bundle, a producer trajectory or a bare capture.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from . import dialects, tools
from .dialects import History, Step, ToolCall, Usage
from .ids import Ids, model_ref
from .text import SYSTEM_PROMPT, Text

POLICY_SERVER = "policy_model"
JUDGE_SERVER = "judge_model"
POLICY_MODELS = {
    "responses": "gpt-4.1-2025-04-14",
    "chat": "Qwen/Qwen3-32B",
    "messages": "claude-sonnet-4-5-20250929",
}
JUDGE_MODELS = {"chat": "meta/llama-3.3-70b-instruct", "responses": "gpt-4.1-mini-2025-04-14"}
_REASONING_RATE = {"responses": 0.25, "chat": 0.5, "messages": 0.4}
_COMPACTION_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
    "user's explicit requests and your previous actions."
)


@dataclass(slots=True)
class Call:
    """One captured model call and the evidence about who made it."""

    exchange: dict[str, Any]
    kind: str  # policy | helper | judge | failed
    owner: str | None = None  # the agent invocation that made it
    verifier: str | None = None  # the verifier invocation that made it
    step: Step | None = None

    @property
    def model_call_id(self) -> str:
        return self.exchange["model_call_id"]

    @property
    def response_id(self) -> str | None:
        resp = self.exchange["response"]
        return resp.get("id") if isinstance(resp, dict) else None


@dataclass
class Invocation:
    invocation_id: str
    parent: str | None
    spawned_by: str | None
    started: float
    completed: float = 0.0
    claims: list[Call] = field(default_factory=list)
    history: History = field(default_factory=History)  # everything the harness saw, never compacted


@dataclass(slots=True)
class Compaction:
    invocation_id: str
    observed_at: float
    trigger: str
    tokens_before: int
    tokens_after: int
    summary: str
    before: Call
    helper: Call
    after: Call | None = None


@dataclass
class Verification:
    invocation_id: str
    verifier_name: str
    started: float
    completed: float
    judges: list[Call]


class Episode:
    """Runs an agent on a task and keeps every piece of evidence a rollout row can carry."""

    def __init__(
        self,
        rng: random.Random,
        ids: Ids,
        text: Text,
        dialect: str,
        start: float,
        *,
        work_tools: tuple[str, ...] = tools.WORK_TOOLS,
        spawn_tool: str | None = None,
        session: bool = False,
        sandbox_id: str | None = None,
        timing_source: str = "harness",
        failures: bool = False,
    ):
        self.rng, self.ids, self.text = rng, ids, text
        self.dialect = dialect
        self.model = POLICY_MODELS[dialect]
        self.clock = start
        self.work_tools = work_tools
        self.spawn_tool = spawn_tool if work_tools else None
        self.session = session
        self.sandbox_id = sandbox_id
        self.timing_source = timing_source
        self.failures = failures
        self.tools = tools.declarations(dialect, work_tools, self.spawn_tool)
        self.calls: list[Call] = []
        self.invocations: list[Invocation] = []
        self.tool_records: list[dict[str, Any]] = []
        self.compactions: list[Compaction] = []
        self.verifications: list[Verification] = []
        self.final_text = ""

    # -- time -------------------------------------------------------------------------------

    def _tick(self, low: float, high: float) -> float:
        self.clock = round(self.clock + self.rng.uniform(low, high), 3)
        return self.clock

    # -- model calls ------------------------------------------------------------------------

    def _usage(self, history: History, step: Step, previous_prompt: int) -> Usage:
        rng = self.rng
        prompt = int(history.chars / 3.8) + 55 * len(self.tools) + rng.randint(0, 30)
        reasoning = int(len(step.reasoning) / 4) + rng.randint(1, 40) if step.reasoning else 0
        body = len(step.text or "") + sum(len(str(tc.arguments)) + 24 for tc in step.tool_calls)
        completion = int(body / 4) + reasoning + rng.randint(1, 20)
        cached = 0
        if previous_prompt and rng.random() < 0.7:  # the previous prompt is a cached prefix of this one
            cached = min(previous_prompt, prompt - 1) // 64 * 64
        written = 0
        if self.dialect == "messages" and rng.random() < 0.5:
            written = max(0, prompt - cached - rng.randint(1, 60))
        return Usage(prompt, completion, reasoning if self.dialect != "messages" else 0, cached, written)

    def _exchange(self, dialect: str, server: str, model: str, request: dict[str, Any], session: str | None) -> dict[str, Any]:
        ex: dict[str, Any] = {
            "model_call_id": self.ids.model_call_id(),
            "dialect": dialect,
            "model_ref": model_ref(server),
            "started_at": self._tick(0.05, 0.6),
            "request": request,
        }
        if session:
            ex["client_session_id"] = session
        return ex

    def _finish(self, ex: dict[str, Any], completion_tokens: int) -> None:
        rng = self.rng
        ttft = round(rng.uniform(60, 1800), 2)
        latency = round(ttft + completion_tokens * rng.uniform(8, 25), 2)
        ex["latency_ttft_ms"] = ttft
        ex["latency_ms"] = latency
        ex["completed_at"] = round(ex["started_at"] + latency / 1000, 3)
        self.clock = ex["completed_at"]

    def model_call(self, history: History, step: Step, kind: str, owner: str | None, previous_prompt: int = 0) -> tuple[Call, Usage]:
        """One successful policy (or compaction helper) call of the agent."""
        session = owner if self.session else None
        if self.failures and self.rng.random() < 0.05:
            self.failed_call(history)
        request = dialects.request(self.dialect, self.model, history, self.tools)
        ex = self._exchange(self.dialect, POLICY_SERVER, self.model, request, session)
        u = self._usage(history, step, previous_prompt)
        self._finish(ex, u.completion)
        ex["status_code"] = 200
        response_id = self.ids.response_id(self.dialect)
        ex["response"] = dialects.response(self.dialect, response_id, self.model, step, u, int(ex["started_at"]))
        call = Call(ex, kind, owner=owner, step=step)
        self.calls.append(call)
        return call, u

    def failed_call(self, history: History) -> Call:
        """A rate-limited attempt the agent retried; nobody claims it (no response id to claim)."""
        request = dialects.request(self.dialect, self.model, history, self.tools)
        ex = self._exchange(self.dialect, POLICY_SERVER, self.model, request, None)
        status = self.rng.choice((429, 429, 503))
        ex["latency_ms"] = round(self.rng.uniform(200, 1500), 2)
        ex["latency_ttft_ms"] = None
        ex["completed_at"] = round(ex["started_at"] + ex["latency_ms"] / 1000, 3)
        ex["status_code"] = status
        ex["error_category"] = "rate_limit" if status == 429 else "upstream_error"
        ex["response"] = dialects.error_response(status)
        self.clock = ex["completed_at"]
        self._tick(0.5, 3.0)  # back-off
        call = Call(ex, "failed")
        self.calls.append(call)
        return call

    # -- the agent loop ---------------------------------------------------------------------

    def _step(self, final: bool, spawn: bool) -> Step:
        rng, ids, text = self.rng, self.ids, self.text
        reasoning = text.reasoning() if rng.random() < _REASONING_RATE[self.dialect] else None
        calls: list[ToolCall] = []
        body = None
        if final:
            body = text.answer()
        else:
            if spawn:
                calls.append(self._tool_call(self.spawn_tool, {"description": "investigate failing test", "prompt": text.words(text.length(160))}))
            else:
                for _ in range(2 if rng.random() < 0.15 else 1):
                    name = rng.choice(self.work_tools)
                    calls.append(self._tool_call(name, text.tool_arguments(name)))
            if rng.random() < 0.2:
                body = text.short_remark()
        return Step(body, reasoning, calls, ids.item_id("msg"), ids.item_id("rs", 24), ids.base62(40))

    def _tool_call(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(self.ids.tool_call_id(self.dialect), name, arguments, self.ids.item_id("fc"))

    def _tool_record(self, invocation_id: str, tc: ToolCall, started: float, completed: float) -> None:
        failed = self.rng.random() < 0.04
        self.tool_records.append(
            {
                "kind": "tool_call",
                "invocation_id": invocation_id,
                "tool_call_id": tc.call_id,
                "sandbox_id": self.sandbox_id,
                "tool_name": tc.name,
                "started_at": started,
                "completed_at": completed,
                "duration_ms": round((completed - started) * 1000, 2),
                "timing_source": self.timing_source,
                "status": "failed" if failed else "completed",
                "error_type": "CalledProcessError" if failed else None,
            }
        )

    def run(
        self, prompt: str, n_calls: int, *, root_id: str | None = None, subagent_rate: float = 0.0, compaction: bool = False
    ) -> Invocation:
        """The root invocation; returns it with every subagent already recorded."""
        root_id = root_id or self.ids.uuid()
        if not self.work_tools:
            n_calls = 1  # nothing to call: the model answers at once
        compact_at = self.rng.randint(1, n_calls - 3) if compaction and n_calls >= 4 else None
        spawn_at = self.rng.randrange(0, n_calls - 1) if self.spawn_tool and n_calls >= 2 and self.rng.random() < subagent_rate else None
        return self._invocation(root_id, None, None, prompt, n_calls, spawn_at, compact_at)

    def _invocation(
        self, inv_id: str, parent: str | None, spawned_by: str | None, prompt: str, n_calls: int, spawn_at: int | None, compact_at: int | None
    ) -> Invocation:
        inv = Invocation(inv_id, parent, spawned_by, started=self.clock)
        self.invocations.append(inv)
        context = History()
        if self.dialect != "responses":
            context.add("system", SYSTEM_PROMPT)
        context.add("user", prompt)
        inv.history = context.copy()
        previous_prompt = 0
        pending: Compaction | None = None
        for k in range(n_calls):
            step = self._step(final=k == n_calls - 1, spawn=k == spawn_at)
            call, u = self.model_call(context, step, "policy", inv_id, previous_prompt)
            previous_prompt = u.prompt
            inv.claims.append(call)
            if pending is not None:
                pending.after, pending = call, None
            context.add("assistant", step)
            inv.history.add("assistant", step)
            for tc in step.tool_calls:
                output = self._execute(inv_id, tc)
                context.add("tool", tc, output)
                inv.history.add("tool", tc, output)
            if k == compact_at:
                pending = self._compact(inv, context, call)
                context = pending_context(self.dialect, prompt, pending.summary)
                pending.tokens_after = int(context.chars / 3.8)
                previous_prompt = 0  # a new context: nothing of it is cached yet
        self.final_text = step.text or ""
        inv.completed = self.clock
        return inv

    def _execute(self, inv_id: str, tc: ToolCall) -> str:
        """Run one tool call (a subagent, for the spawn tool) and record its timing; returns its output."""
        started = self._tick(0.02, 0.4)
        if tc.name == self.spawn_tool:
            child_id = self.ids.uuid() if self.dialect != "messages" else "agent-" + self.ids.hex(8)
            child = self._invocation(child_id, inv_id, tc.call_id, tc.arguments["prompt"], self.rng.randint(1, 3), None, None)
            output = child.history.entries[-1][1].text or ""
            self._tick(0.05, 0.3)
        else:
            output = self.text.tool_output(tc.name)
            self._tick(0.05, 8.0 if tc.name == "bash" else 2.0)
        self._tool_record(inv_id, tc, started, self.clock)
        return output

    def _compact(self, inv: Invocation, context: History, before: Call) -> Compaction:
        """The harness summarises the history with a helper call of the same model."""
        ask = context.copy()
        ask.add("user", _COMPACTION_PROMPT)
        summary = self.text.summary()
        step = Step(summary, None, [], self.ids.item_id("msg"), self.ids.item_id("rs", 24), self.ids.base62(40))
        helper, u = self.model_call(ask, step, "helper", inv.invocation_id)
        inv.claims.append(helper)
        record = Compaction(
            inv.invocation_id,
            observed_at=round(helper.exchange["completed_at"] + 0.01, 3),
            trigger=self.rng.choice(("auto", "manual")),
            tokens_before=u.prompt,
            tokens_after=0,
            summary=summary,
            before=before,
            helper=helper,
        )
        self.compactions.append(record)
        self._tick(0.01, 0.1)
        return record

    # -- verification -----------------------------------------------------------------------

    def verify(self, verifier_name: str, judges: int, correct: bool) -> Verification:
        """A verify() execution after the agent finished, with its own judge model calls."""
        verifier_id = self.ids.uuid()
        started = self._tick(0.2, 1.5)
        made: list[Call] = []
        for _ in range(judges):
            dialect = "chat" if self.rng.random() < 0.8 else "responses"
            model = JUDGE_MODELS[dialect]
            history = History()
            if dialect == "chat":
                history.add("system", SYSTEM_PROMPT)
            history.add("user", self.text.judge_prompt(self.final_text))
            request = dialects.request(dialect, model, history, None)
            ex = self._exchange(dialect, JUDGE_SERVER, model, request, None)
            step = Step(self.text.judge_verdict(correct), None, [], self.ids.item_id("msg"), self.ids.item_id("rs", 24), "")
            u = Usage(int(history.chars / 3.8) + self.rng.randint(5, 40), self.rng.randint(8, 40), 0, 0)
            self._finish(ex, u.completion)
            ex["status_code"] = 200
            ex["response"] = dialects.response(dialect, self.ids.response_id(dialect), model, step, u, int(ex["started_at"]))
            call = Call(ex, "judge", verifier=verifier_id, step=step)
            self.calls.append(call)
            made.append(call)
        completed = self._tick(0.005, 0.05)
        verification = Verification(verifier_id, verifier_name, started, completed, made)
        self.verifications.append(verification)
        return verification


def pending_context(dialect: str, prompt: str, summary: str) -> History:
    """The context an agent continues with after a compaction: the task and the summary."""
    context = History()
    if dialect != "responses":
        context.add("system", SYSTEM_PROMPT)
    context.add("user", prompt)
    context.add("user", summary)
    return context
