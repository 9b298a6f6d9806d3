"""What NeMo Gym's lax validation makes of a scalar that the contract types strictly.

NeMo Gym validates an observation bundle and a trajectory record with pydantic in lax mode: a
count written as `"12"`, `12.0` or `true` is read as 12 (or 1), a timestamp written as `"1.5"` as
1.5, a resolution written as 1 or `"true"` as true. Its own writers never write these forms (they
dump their models to JSON), so the schemas, which say what NeMo Gym writes, reject them; but
NeMo Gym reads them without loss. This module finds such values in those two sections and says
what NeMo Gym reads each one as, so that the build reads a row as NeMo Gym does and the lint
rules can tell a form NeMo Gym coerces from one it rejects.

Whether a value is read, and as what, is pydantic's answer on the contract model's own field
(bounds included), never a copy of pydantic's rules. pydantic is imported only for a value that
is not already in the form NeMo Gym writes, so clean rows never load it.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

from trajlint.pointer import child
from trajlint.row.sections import OBSERVATIONS, STATED

INTEGER, NUMBER, BOOLEAN = "integer", "number", "boolean"

#: The scalar fields of each observation and trajectory model, by the JSON type NeMo Gym writes.
#: A test checks this table against the models' own annotations.
SCALARS: dict[str, dict[str, str]] = {
    "AgentInvocation": {"duration_ms": NUMBER},
    "ToolCallObservation": {"started_at": NUMBER, "completed_at": NUMBER, "duration_ms": NUMBER},
    "SandboxObservation": {"exit_code": INTEGER, "wall_time_s": NUMBER, "cpu_time_s": NUMBER, "peak_memory_mib": NUMBER},
    "ContextCompactionObservation": {"observed_at": NUMBER, "tokens_before": INTEGER, "tokens_after": INTEGER},
    "TrajectoryTurn": {"turn_no": INTEGER, "timestamp": NUMBER, "resolved": BOOLEAN, "step_count": INTEGER},
    "TrajectoryModelCall": {"started_at": NUMBER, "completed_at": NUMBER, "duration_ms": NUMBER},
    "TrajectoryResponseMetadata": {
        "status_code": INTEGER, "upstream_attempted": BOOLEAN, "upstream_status_code": INTEGER, "latency_ttft_ms": NUMBER,
    },
    "TrajectoryTokenStats": dict.fromkeys(
        ("prompt_tokens", "completion_tokens", "reasoning_tokens", "total_tokens", "cached_tokens"), INTEGER
    ),
    "TrajectoryToolCall": {"started_at": NUMBER, "completed_at": NUMBER, "duration_ms": NUMBER},
}
_RECORD_MODELS = {
    "agent_invocation": "AgentInvocation",
    "tool_call": "ToolCallObservation",
    "sandbox": "SandboxObservation",
    "context_compaction": "ContextCompactionObservation",
}
_STATED_MODELS = {
    "invocations": "AgentInvocation",
    "turns": "TrajectoryTurn",
    "model_calls": "TrajectoryModelCall",
    "tool_calls": "TrajectoryToolCall",
}
_CALL_PARTS = (("response_metadata", "TrajectoryResponseMetadata"), ("token_stats", "TrajectoryTokenStats"))

# The Python types of the JSON values NeMo Gym writes for each kind (a bool is no integer to it).
_WRITTEN: dict[str, tuple[type, ...]] = {INTEGER: (int,), NUMBER: (int, float), BOOLEAN: (bool,)}
# Per model: (field, kind, the types written), made once; the scan runs on every row.
_FIELDS = {
    model: tuple((name, kind, _WRITTEN[kind]) for name, kind in fields.items()) for model, fields in SCALARS.items()
}


class Coerced(NamedTuple):
    """A value NeMo Gym reads only by coercing it: where it stands, as written, and as read."""

    pointer: str
    name: str  # the field
    kind: str  # the JSON type NeMo Gym writes there: INTEGER, NUMBER or BOOLEAN
    value: Any
    read_as: Any


_REJECTED = object()


@cache
def _adapter(model: str, name: str) -> Any:
    from typing import Annotated

    from pydantic import TypeAdapter

    import trajlint.contract as contract

    field = getattr(contract, model).model_fields[name]
    return TypeAdapter(Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation)


def read_as(model: str, name: str, value: Any) -> Any:
    """What NeMo Gym's validation of `model.name` makes of `value`, or `_REJECTED`."""
    try:
        return _adapter(model, name).validate_python(value)
    except ValueError:  # pydantic's ValidationError is one
        return _REJECTED


def _odd(item: dict[str, Any], model: str) -> bool:
    """Whether an item holds a scalar not in the form NeMo Gym writes (the per-row fast path)."""
    for name, _, written in _FIELDS[model]:
        value = item.get(name)
        if value is not None and type(value) not in written:
            return True
    return False


Found = list[tuple[tuple[Any, ...], Coerced]]  # (path within the section, the value)


def _scan(item: dict[str, Any], model: str, path: tuple[Any, ...], top: str, out: Found) -> None:
    if not _odd(item, model):
        return
    base = top + "".join(f"/{step}" for step in path)  # steps are plain field names and indices
    for name, kind, written in _FIELDS[model]:
        value = item.get(name)
        if value is None or type(value) in written:
            continue
        read = read_as(model, name, value)
        if read is not _REJECTED:
            out.append(((*path, name), Coerced(f"{base}/{name}", name, kind, value, read)))


def _items(section: dict[str, Any], key: str) -> Any:
    values = section.get(key)
    if not isinstance(values, list):
        return ()
    return ((index, item) for index, item in enumerate(values) if isinstance(item, dict))


def _found(key: str, section: dict[str, Any]) -> Found:
    out: Found = []
    top = child("", key)
    if key == OBSERVATIONS:
        for index, record in _items(section, "records"):
            kind = record.get("kind")
            model = _RECORD_MODELS.get(kind) if isinstance(kind, str) else None
            if model is not None:
                _scan(record, model, ("records", index), top, out)
        return out
    for part, model in _STATED_MODELS.items():
        for index, item in _items(section, part):
            _scan(item, model, (part, index), top, out)
            if part == "model_calls":
                for sub, sub_model in _CALL_PARTS:
                    if isinstance(item.get(sub), dict):
                        _scan(item[sub], sub_model, (part, index, sub), top, out)
    return out


def normalized(key: str, section: dict[str, Any]) -> tuple[dict[str, Any], list[Coerced]]:
    """The section (`ng_agent_observations` or `ng_trajectory`) as NeMo Gym reads it, and the
    values it coerced. The section itself when nothing is coerced; otherwise a copy that shares
    everything the coercion did not touch (the row is never changed)."""
    if key not in (OBSERVATIONS, STATED):
        raise ValueError(f"no lax reading is known for {key!r}")
    found = _found(key, section)
    if not found:
        return section, []
    copies: dict[tuple[Any, ...], Any] = {(): dict(section)}  # path -> its copy, each container copied once
    for path, coerced in found:
        node = copies[()]
        for depth in range(1, len(path)):
            prefix = path[:depth]
            if prefix not in copies:
                original = node[path[depth - 1]]
                copies[prefix] = node[path[depth - 1]] = list(original) if isinstance(original, list) else dict(original)
            node = copies[prefix]
        node[path[-1]] = coerced.read_as
    return copies[()], [coerced for _, coerced in found]
