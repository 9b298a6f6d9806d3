"""Rollout rows of the three kinds a NeMo Gym run writes, from a simulated `Episode`.

- harness rows: `ng_agent_observations` from an agent harness (claude_code, codex, hermes, pi,
  openclaw), no trajectory of their own;
- simple-agent rows: a producer `ng_trajectory` whose turns reference `(model_ref, response_id)`;
- capture-only rows: only `ng_model_call_capture`.
Any of them may carry verifier evidence. With `persisted`, claims are written the way NeMo Gym's
join rewrites them (`persist` then builds the trajectory and strips the payloads).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from . import capture, dialects, tools
from .episode import Call, Compaction, Episode, Invocation
from .ids import Ids
from .text import Text

BASE_TIME = 1786032000.0


@dataclass(frozen=True, slots=True)
class Harness:
    agent: str
    dialects: tuple[str, ...]
    ref_style: str  # how the harness names the calls it claims: "id" or "response"
    session: bool  # sends x-session-id = invocation id on its model calls
    sandbox_rate: float


HARNESSES = {
    "claude_code": Harness("claude_code_agent", ("messages",), "response", True, 0.6),
    "codex": Harness("codex_agent", ("responses",), "id", True, 0.5),
    "hermes": Harness("hermes_agent", ("chat",), "id", False, 0.3),
    "pi": Harness("pi_agent", ("messages", "chat"), "response", True, 0.4),
    "openclaw": Harness("openclaw_agent", ("chat", "responses"), "id", False, 0.5),
}
VERIFIERS = ("llm_judge", "code_review_judge", "math_with_judge", "unit_tests")


@dataclass(slots=True)
class RowSpec:
    """What one line should hold; decided by `plan`, built here."""

    line: int
    task_index: int
    rollout_index: int
    kind: str  # harness | simple | capture_only
    source: str  # harness name, "simple_agent" or "tau2"
    dialect: str
    persisted: bool
    echo_task_id: bool
    category: str  # code | math | qa: which tools the agent offers
    prompt: str
    judges: int  # -1: no verifier evidence; 0: a verifier without model calls; n: judge calls
    compaction: bool | None = None  # None: decided by chance
    subagent_rate: float = 0.35


def ref(call: Call, style: str) -> dict[str, Any]:
    """A ModelCallRef naming `call` by its capture id, its (model_ref, response_id), or all three."""
    ex = call.exchange
    return {
        "model_call_id": ex["model_call_id"] if style in ("id", "canonical") else None,
        "model_ref": ex["model_ref"] if style in ("response", "canonical") else None,
        "response_id": call.response_id if style in ("response", "canonical") else None,
    }


def _n_calls(rng: random.Random) -> int:
    return rng.choices(range(1, 10), weights=(5, 10, 13, 12, 10, 7, 5, 3, 2))[0]


# -- sections ---------------------------------------------------------------------------------


def _verifier_section(ep: Episode, rng: random.Random) -> list[dict[str, Any]]:
    """`ng_verifier_invocations`; each judge call is claimed by a ref, a capture tag, or both."""
    out = []
    for v in ep.verifications:
        refs = []
        for call in v.judges:
            style = rng.choice(("both", "both", "ref", "tag"))
            if style in ("both", "tag"):
                call.exchange["verifier_invocation_id"] = v.invocation_id
            if style == "both":
                refs.append(ref(call, "id"))
            elif style == "ref":
                refs.append(ref(call, "canonical"))
        out.append(
            {
                "invocation_id": v.invocation_id,
                "verifier_name": v.verifier_name,
                "status": "completed",
                "model_calls": refs,
                "started_at": v.started,
                "completed_at": v.completed,
                "duration_ms": round((v.completed - v.started) * 1000, 2),
            }
        )
    return out


def _capture_section(ep: Episode, rollout_id: str) -> dict[str, Any]:
    calls = [capture.record(call.exchange, i) for i, call in enumerate(ep.calls)]
    return {"rollout_id": rollout_id, "metrics": capture.metrics(calls), "calls": calls}


def _invocation_record(inv: Invocation, refs: list[dict[str, Any]], persisted: bool) -> dict[str, Any]:
    return {
        "kind": "agent_invocation",
        "invocation_id": inv.invocation_id,
        "parent_invocation_id": inv.parent,
        "spawned_by_tool_call_id": inv.spawned_by,
        "status": "completed",
        "duration_ms": round((inv.completed - inv.started) * 1000, 2),
        "error_type": None,
        "model_calls": refs,
        "conversation": dialects.gym_conversation(inv.history, normalized=persisted),
    }


def _compaction_record(c: Compaction, style: str) -> dict[str, Any]:
    return {
        "kind": "context_compaction",
        "invocation_id": c.invocation_id,
        "observed_at": c.observed_at,
        "trigger": c.trigger,
        "tokens_before": c.tokens_before,
        "tokens_after": c.tokens_after,
        "outcome": "completed",
        "summary": c.summary,
        "first_kept_item_id": None,
        "before_model_call": ref(c.before, style),
        "model_calls": [ref(c.helper, style)],
        "after_model_call": ref(c.after, style) if c.after else None,
    }


def _sandbox_record(sandbox_id: str, ep: Episode, start: float, rng: random.Random) -> dict[str, Any]:
    wall = round(ep.clock - start + rng.uniform(1, 4), 3)
    return {
        "kind": "sandbox",
        "role": "agent",
        "provider": "docker",
        "sandbox_id": sandbox_id,
        "outcome": "completed",
        "exit_code": 0,
        "wall_time_s": wall,
        "cpu_time_s": round(wall * rng.uniform(0.02, 0.2), 3),
        "peak_memory_mib": round(rng.uniform(200, 4000), 1),
        "resource_usage_source": "cgroup_v2",
        "error_type": None,
    }


def _observations(spec: RowSpec, ep: Episode, harness: Harness, sandbox: dict | None, rng: random.Random) -> dict[str, Any]:
    style = "canonical" if spec.persisted else harness.ref_style
    records: list[dict[str, Any]] = []
    for inv in ep.invocations:
        claims = list(inv.claims)
        # Some harnesses leave a call to NeMo Gym's session auto-ownership instead of naming it;
        # the join then appends it at the end of the invocation's claims.
        session_only = []
        policy = [c for c in claims if c.kind == "policy"]
        if harness.session and len(policy) >= 2 and rng.random() < 0.2:
            session_only = [rng.choice(policy)]
            claims = [c for c in claims if c is not session_only[0]]
        refs = [ref(c, style) for c in claims]
        if spec.persisted:
            refs += [ref(c, "canonical") for c in session_only]
        records.append(_invocation_record(inv, refs, spec.persisted))
    records.extend(ep.tool_records)
    records.extend(_compaction_record(c, style) for c in ep.compactions)
    if sandbox:
        records.append(sandbox)
    rng.shuffle(records)  # a bundle's records are unordered
    gaps = []
    if sandbox is None and spec.source in ("claude_code", "hermes", "pi"):
        gaps.append({"code": "no_sandbox_runtime", "invocation_id": None, "detail": None})
    if spec.source in ("pi", "openclaw", "claude_code") and rng.random() < 0.15:
        gaps.append({"code": "agent_conversation_branching_unavailable", "invocation_id": ep.invocations[0].invocation_id, "detail": None})
    if spec.persisted:
        owned = {id(c) for inv in ep.invocations for c in inv.claims}
        for i, call in enumerate(ep.calls):
            if id(call) not in owned:
                gaps.append({"code": "model_call_ownership_unavailable", "invocation_id": None, "detail": f"capture:{call.model_call_id}:call_index={i}"})
    return {"source": spec.source, "records": records, "gaps": gaps}


def _producer_trajectory(spec: RowSpec, ep: Episode, root: Invocation, task_id: str, rollout_id: str, resolved: bool | None) -> dict[str, Any]:
    """What simple_agent returns as its own `ng_trajectory`: turns name calls by (model_ref, response_id)."""
    outputs = {e[1].call_id: e[2] for e in root.history.entries if e[0] == "tool"}
    turns, steps = [], 0
    for n, call in enumerate(root.claims, start=1):
        question, answer, reasoning = dialects.turn_content(ep.dialect, call.exchange["request"], call.exchange["response"])
        turns.append(
            {
                "invocation_id": "root",
                "task_id": task_id,
                "rollout_id": rollout_id,
                "turn_no": n,
                "timestamp": call.exchange["started_at"],
                "question": question,
                "answer": answer,
                "reasoning_content": reasoning,
                "resolved": None,
                "step_count": steps,
                "model_calls": [ref(call, "response")],
            }
        )
        steps += len(call.step.tool_calls) if call.step else 0
    if turns and resolved is not None:
        turns[-1]["resolved"] = resolved
    tool_calls = [dict(record, output=outputs.get(record["tool_call_id"])) for record in ep.tool_records]
    gaps = [] if resolved is not None else [{"code": "resolution_unavailable", "invocation_id": "root", "detail": None}]
    invocation = _invocation_record(root, [ref(c, "response") for c in root.claims], spec.persisted)
    invocation["duration_ms"] = None
    return {
        "schema_version": "1.0",
        "task_id": task_id,
        "rollout_id": rollout_id,
        "invocations": [invocation],
        "turns": turns,
        "model_calls": [],
        "tool_calls": tool_calls,
        "gaps": gaps,
    }


def _final_response(ep: Episode, calls: list[dict[str, Any]], ids: Ids) -> dict[str, Any]:
    """The agent's own result (`response`): its last message and usage summed over its calls."""
    mine = [c for c in calls if c["model_ref"]["name"] != "judge_model"]

    def total(name: str) -> int:
        return sum(c[name] or 0 for c in mine)

    return {
        "id": ids.response_id("responses"),
        "created_at": int(ep.clock),
        "model": ep.model,
        "object": "response",
        "output": [
            {
                "id": ids.item_id("msg"),
                "content": [{"annotations": [], "text": ep.final_text, "type": "output_text"}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "status": "completed",
        "usage": {
            "input_tokens": total("tokens_in"),
            "input_tokens_details": {"cached_tokens": total("cached_tokens")},
            "output_tokens": total("tokens_out"),
            "output_tokens_details": {"reasoning_tokens": total("tokens_reasoning")},
            "total_tokens": total("tokens_in") + total("tokens_out"),
        },
    }


# -- the row ----------------------------------------------------------------------------------


def build_row(spec: RowSpec, seed: int, scale: float) -> dict[str, Any]:
    """The row for one planned line; deterministic in (seed, line)."""
    rng = random.Random(f"{seed}:row:{spec.line}")
    ids, text = Ids(rng), Text(rng, scale)
    start = round(BASE_TIME + spec.line * 41.0 + rng.uniform(0, 30), 3)
    harness = HARNESSES.get(spec.source)
    sandbox_id = None
    if harness and rng.random() < harness.sandbox_rate:
        sandbox_id = "sbx-" + ids.hex(12)
    work_tools = tools.TOOLS_FOR_TASK[spec.category] or (tools.WORK_TOOLS if spec.compaction else ())
    ep = Episode(
        rng,
        ids,
        text,
        spec.dialect,
        start,
        work_tools=work_tools,
        spawn_tool=tools.SPAWN_TOOL.get(spec.source) if harness else None,
        session=bool(harness and harness.session),
        sandbox_id=sandbox_id,
        timing_source="harness" if harness else "executor",
        failures=harness is None,
    )
    compaction = spec.compaction if spec.compaction is not None else rng.random() < 0.15
    n_calls = max(_n_calls(rng), 4) if spec.compaction else _n_calls(rng)
    root = ep.run(
        spec.prompt,
        n_calls,
        root_id="root" if spec.kind == "simple" else None,
        subagent_rate=spec.subagent_rate if harness else 0.0,
        compaction=bool(harness and compaction),
    )
    correct = rng.random() < 0.6
    if spec.judges >= 0:
        ep.verify(rng.choice(VERIFIERS) if spec.judges else "unit_tests", spec.judges, correct)

    task_id = f"task-{spec.task_index:05d}" if spec.echo_task_id else str(spec.task_index)
    rollout_id = f"{spec.task_index}-{spec.rollout_index}"
    resolved: bool | None = correct if (spec.kind == "simple" and rng.random() < 0.8) or (harness and rng.random() < 0.5) else None

    row: dict[str, Any] = {"_ng_task_index": spec.task_index, "_ng_rollout_index": spec.rollout_index}
    if spec.echo_task_id:
        row["task_id"] = task_id
    agent = harness.agent if harness else spec.source
    row["agent_ref"] = {"type": "responses_api_agents", "name": agent}
    params: dict[str, Any] = {"input": [{"role": "user", "content": spec.prompt}]}
    if work_tools:
        params["tools"] = tools.declarations("responses", work_tools)
    params["temperature"] = 0.6
    row["responses_create_params"] = params
    verifiers = _verifier_section(ep, rng)  # before the capture: it tags judge exchanges
    cap = _capture_section(ep, rollout_id)
    row["response"] = _final_response(ep, cap["calls"], ids)
    row["reward"] = 1.0 if correct else 0.0
    if resolved is not None:
        row["resolved"] = resolved
    if verifiers:
        row["ng_verifier_invocations"] = verifiers
    row["ng_model_call_capture"] = cap
    if harness:
        sandbox = _sandbox_record(sandbox_id, ep, start, rng) if sandbox_id else None
        row["ng_agent_observations"] = _observations(spec, ep, harness, sandbox, rng)
    elif spec.kind == "simple":
        row["ng_trajectory"] = _producer_trajectory(spec, ep, root, task_id, rollout_id, resolved)
    return row
