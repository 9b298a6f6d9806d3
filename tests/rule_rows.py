"""Small rollout rows for the rule tests, and a way to lint one row with every rule."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from trajlint.check.run import run
from trajlint.check.subject import row_subject
from trajlint.pointer import resolve
from trajlint.read import iter_sources


def value_paths(node: Any, path: tuple = ()) -> Any:
    """The path (keys and indices) of every value in a JSON document, the document's own first."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from value_paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from value_paths(value, (*path, index))


POLICY = {"type": "responses_api_models", "name": "policy"}
JUDGE = {"type": "responses_api_models", "name": "judge"}


def call(call_id: str, index: int = 0, *, ref: dict = POLICY, tools: int = 0, **extra: Any) -> dict[str, Any]:
    output = [{"type": "function_call", "call_id": f"{call_id}-{i}", "name": "bash", "arguments": "{}"} for i in range(tools)]
    output = output or [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]
    return {
        "model_call_id": call_id, "response_id": f"resp_{call_id}", "call_index": index, "model_ref": ref,
        "dialect": "responses", "status_code": 200, "started_at": 100.0 + index, "completed_at": 100.5 + index,
        "tokens_in": 10, "tokens_out": 5, "tokens_total": 15, "latency_total_ms": 500.0,
        "request": {"input": [{"role": "user", "content": "go"}]},
        "response": {"id": f"resp_{call_id}", "status": "completed", "output": output},
        **extra,
    }


def invocation(invocation_id: str, *call_ids: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "agent_invocation", "invocation_id": invocation_id, "status": "completed",
            "model_calls": [{"model_call_id": c} for c in call_ids],
            "conversation": [{"role": "user", "content": "go"}], **extra}


def compaction(invocation_id: str, *helpers: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "context_compaction", "invocation_id": invocation_id, "outcome": "completed",
            "tokens_before": 900, "tokens_after": 100, "model_calls": [{"model_call_id": h} for h in helpers], **extra}


def turn(invocation_id: str, turn_no: int, *call_ids: str, **extra: Any) -> dict[str, Any]:
    return {"invocation_id": invocation_id, "task_id": "3", "rollout_id": "3-1", "turn_no": turn_no,
            "timestamp": 100.0 + turn_no, "question": None, "answer": None, "reasoning_content": None,
            "resolved": None, "step_count": 0, "model_calls": [{"model_call_id": c} for c in call_ids], **extra}


def trajectory(turns: list[dict], invocations: list[dict] = (), **extra: Any) -> dict[str, Any]:
    return {"schema_version": "1.0", "task_id": "3", "rollout_id": "3-1", "invocations": list(invocations),
            "turns": turns, "model_calls": [], "tool_calls": [], "gaps": [], **extra}


def row(calls: list[dict], records: list[dict] = (), **sections: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"_ng_task_index": 3, "_ng_rollout_index": 1}
    if calls:
        out["ng_model_call_capture"] = {"rollout_id": "3-1", "metrics": {"num_calls": len(calls)}, "calls": calls}
    if records:
        out["ng_agent_observations"] = {"source": "test", "records": list(records), "gaps": []}
    out.update(sections)
    return copy.deepcopy(out)


def findings(rows: list[dict], rules, tmp_path, name: str = "rows.jsonl"):
    """Lint rows written as one JSONL file; every finding's pointers must resolve in their row."""
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    result = run(iter_sources([str(path)]), rules, max_row_bytes=1 << 28)
    assert result.internal_errors == 0, [f.message for f in result.findings if f.name == "internal-error"]
    assert_pointers_resolve(path, result.findings)
    return result.findings


def assert_pointers_resolve(path, found) -> None:
    """A finding's pointer, and each related pointer into a row of the same file, names a value."""
    lines = path.read_bytes().split(b"\n")
    for f in found:
        places = [(f.line, f.pointer), *((r.line, r.pointer) for r in f.related if r.path == f.path)]
        for line, pointer in places:
            if not pointer:
                continue
            subject = row_subject(str(path), line, lines[line - 1])
            resolve(subject.row, pointer)  # raises KeyError when the pointer does not resolve


def of(found, name: str):
    return [f for f in found if f.name == name]
