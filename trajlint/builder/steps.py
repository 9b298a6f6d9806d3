"""Build one rollout's canonical trajectory from the evidence in its row.

The steps follow NeMo Gym's builder (docs/build.md describes each): identity from the row keys,
the stated trajectory's precedence, the merge of observed invocations and tool calls, the
projection and merge of captured calls, the join of ownership claims, turn synthesis, and the
availability gaps. Where NeMo Gym resolves a conflict by dropping evidence, the build keeps it
in the ownership ledger instead; and the ownership rules decide which calls become policy
turns: compaction helpers and verifier-owned calls never do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trajlint.builder import canonical
from trajlint.builder.dialects import turn_content
from trajlint.builder.evidence import Evidence, Item, read
from trajlint.builder.identity import rollout_identity
from trajlint.builder.ledger import (
    AGENT,
    AGENT_KINDS,
    COMPACTION,
    COMPACTION_AFTER,
    COMPACTION_BEFORE,
    OUTCOME_HELPER,
    OUTCOME_NO_RESPONSE,
    OUTCOME_TURN,
    OUTCOME_UNOWNED,
    OUTCOME_VERIFIER,
    SESSION,
    TURN,
    VERIFIER,
    CallEntry,
    CallIndex,
    Claim,
    Ledger,
    Unresolved,
    ref_key,
    server_key,
)
from trajlint.builder.project import merge_into, project_call
from trajlint.findings import Rollout
from trajlint.pointer import child
from trajlint.row.sections import CAPTURE, STATED

SCHEMA_VERSION = "1.0"
# Where the stated trajectory's lists stand; the build's other pointers extend the pointers
# of items (which end in an index) by plain field names, so none needs escaping.
_STATED_INVOCATIONS = child("", STATED, "invocations")
_STATED_TURNS = child("", STATED, "turns")
# Gaps the join writes; a re-join replaces them, which is what makes it idempotent.
_JOIN_GAP_CODES = frozenset(
    {"model_call_reference_ambiguous", "model_call_reference_conflict", "model_call_reference_unmatched"}
)


@dataclass(slots=True)
class Build:
    """A row's built trajectory, the ledger of who claims which call, and what was left out."""

    trajectory: dict[str, Any]
    ledger: Ledger
    expected_turns: list[dict[str, Any]]  # the turns the evidence supports, stated or not
    evidence: Evidence
    compactions: list[Item] = field(default_factory=list)
    identity: Rollout | None = None  # None: the row keys do not determine the rollout identity
    call_index: CallIndex | None = None  # finds the ledger's calls by reference (rules reuse it)

    @property
    def stated(self) -> bool:
        return self.evidence.stated

    def record(self) -> Any:
        """The trajectory as NeMo Gym's typed `TrajectoryRecord` (validates; may raise)."""
        from trajlint.contract import TrajectoryRecord

        return TrajectoryRecord.model_validate(self.trajectory)

    def trajlint_section(self) -> dict[str, Any]:
        """What `trajlint build` writes under the row's `trajlint` key."""
        return {"ledger": self.ledger.to_dict(), "excluded": list(self.evidence.excluded)}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _gap(code: str, invocation_id: str | None = None, detail: str | None = None) -> dict[str, Any]:
    return {"code": code, "invocation_id": invocation_id, "detail": detail}


def _dedupe(gaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[tuple[Any, Any, Any]] = set()
    out = []
    for gap in gaps:
        key = (gap["code"], gap["invocation_id"], gap["detail"])
        if key not in seen:
            seen.add(key)
            out.append(gap)
    return out


def _identity(row: dict[str, Any], ev: Evidence) -> tuple[Rollout | None, str, str]:
    identity = rollout_identity(row)
    if identity is not None:
        return identity, identity.task_id, identity.rollout_id
    # NeMo Gym could not build this row at all; keep going with the best names available.
    task, rollout = ev.stated_ids
    return None, task if isinstance(task, str) else "", rollout if isinstance(rollout, str) else ""


def _merge_tools(tools: list[dict[str, Any]], observed: list[dict[str, Any]], invocations: list[dict[str, Any]]) -> None:
    """Overlay observed tool timing on the stated tool calls (docs/build.md, "Steps"), outputs from conversations."""
    outputs: dict[tuple[Any, Any], Any] = {}
    for inv in invocations:
        for item in inv["conversation"]:
            if isinstance(item, dict) and item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str):
                outputs[(inv["invocation_id"], item["call_id"])] = item.get("output")
    position = {(t["invocation_id"], t["tool_call_id"]): i for i, t in enumerate(tools)}
    for record in observed:
        key = (record.get("invocation_id"), record.get("tool_call_id"))
        base = tools[position[key]] if key in position else canonical.tool_call({})
        merged = dict(base)
        for name, value in canonical.tool_call(record).items():
            if value is None or name == "output":
                continue
            if name == "status" and value == "unknown" and base.get("status") not in (None, "unknown"):
                continue  # an unknown observation never erases a status the agent knew
            merged[name] = value
        if key in outputs:
            merged["output"] = outputs[key]
        if key in position:
            tools[position[key]] = merged
        else:
            position[key] = len(tools)
            tools.append(merged)


class _Builder:
    def __init__(self, row: dict[str, Any]):
        self.row = row
        self.ev = read(row)
        self.identity, self.task_id, self.rollout_id = _identity(row, self.ev)
        self.invocations: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.model_calls: list[dict[str, Any]] = []
        self.locations: list[list[str]] = []
        self.capture_of: list[dict[str, Any] | None] = []  # the raw capture call behind each model call
        self.stated_turns: list[dict[str, Any]] = []
        self.compactions: list[Item] = []
        self.observed_invocations: list[Item] = []
        self.gaps_head: list[dict[str, Any]] = []
        self.gaps_stated: list[dict[str, Any]] = []
        self.gaps_bundle: list[dict[str, Any]] = []
        self.gaps_join: list[dict[str, Any]] = []
        self.gaps_capture: list[dict[str, Any]] = []
        self.call_index: CallIndex | None = None
        # The candidates of a reference that names several calls, one tuple per reference form:
        # thousands of references to one id shared by thousands of calls share one tuple.
        self.candidates: dict[Any, tuple[int, ...]] = {}

    # -- evidence into lists -----------------------------------------------------------------

    def take_stated(self) -> None:
        ev = self.ev
        if not ev.stated:
            return
        if not ev.stated_valid:
            self.gaps_head.append(_gap("producer_trajectory_invalid", detail="ValidationError"))
        else:
            differs = [
                name
                for name, stated, canon in (("task_id", ev.stated_ids[0], self.task_id), ("rollout_id", ev.stated_ids[1], self.rollout_id))
                if stated != canon
            ]
            if differs:
                self.gaps_head.append(_gap("producer_trajectory_identity_mismatch", detail=",".join(differs)))
        parts = ev.stated_parts
        self.invocations = [canonical.invocation(i.data, ev.conversation(i)) for i in parts["invocations"]]
        self.tool_calls = [canonical.tool_call(i.data) for i in parts["tool_calls"]]
        for item in parts["model_calls"]:
            self.model_calls.append(canonical.model_call(item.data))
            self.locations.append([item.pointer])
            self.capture_of.append(None)
        self.gaps_stated = [canonical.gap(g.data) for g in parts["gaps"]]
        turns = []
        for item in parts["turns"]:
            turn = canonical.turn(item.data)
            turn["task_id"], turn["rollout_id"] = self.task_id, self.rollout_id
            turns.append(turn)
        turns.sort(key=lambda t: (t["timestamp"], t["invocation_id"], t["turn_no"]))
        self.stated_turns = turns

    def take_observations(self) -> None:
        ev = self.ev
        if not ev.observations:
            return
        if not ev.observations_valid:
            self.gaps_bundle.append(_gap("agent_observations_invalid", detail="ValidationError"))
        joined_again = isinstance(self.row.get(CAPTURE), dict)
        for item in ev.observation_gaps:
            gap = canonical.gap(item.data)
            if joined_again and (
                gap["code"] in _JOIN_GAP_CODES
                or (
                    gap["code"] == "model_call_ownership_unavailable"
                    and gap["invocation_id"] is None
                    and str(gap["detail"] or "").startswith("capture:")
                )
            ):
                continue
            self.gaps_bundle.append(gap)
        known = {inv["invocation_id"] for inv in self.invocations}
        tools = []
        for item in ev.records:
            kind = item.data.get("kind")
            if kind == "agent_invocation":
                self.observed_invocations.append(item)
                if item.data["invocation_id"] not in known:
                    known.add(item.data["invocation_id"])
                    self.invocations.append(canonical.invocation(item.data, ev.conversation(item)))
            elif kind == "tool_call":
                tools.append(item.data)
            elif kind == "context_compaction":
                self.compactions.append(item)
        if tools:
            _merge_tools(self.tool_calls, tools, self.invocations)

    def take_capture(self) -> None:
        by_id = {call["model_call_id"]: i for i, call in enumerate(self.model_calls) if call["model_call_id"] is not None}
        consumed: set[str] = set()
        for item in self.ev.capture_calls:
            projected = project_call(item.data)
            call_id = projected["model_call_id"]
            if call_id is not None and call_id in by_id and call_id not in consumed:
                consumed.add(call_id)
                index = by_id[call_id]
                self.model_calls[index] = merge_into(self.model_calls[index], projected)
                self.locations[index].append(item.pointer)
                self.capture_of[index] = item.data
            else:
                self.model_calls.append(projected)
                self.locations.append([item.pointer])
                self.capture_of.append(item.data)
        self.gaps_capture = [canonical.gap(g.data) for g in self.ev.capture_gaps]
        if self.ev.invalid_capture_gaps:
            self.gaps_capture.append(_gap("model_call_capture_gap_invalid"))

    # -- the ledger ----------------------------------------------------------------------------

    def entries(self) -> list[CallEntry]:
        entries = []
        for index, call in enumerate(self.model_calls):
            meta = call["response_metadata"]
            entries.append(
                CallEntry(
                    index=index,
                    model_call_id=call["model_call_id"] or None,
                    response_id=meta.get("response_id") or None,
                    model_ref=server_key(meta.get("model_ref")),
                    locations=self.locations[index],
                    has_response=call["response"] is not None,
                )
            )
        return entries

    def claim(
        self, ledger: Ledger, index: CallIndex, ref: Any, kind: str, owner: str | None, pointer: str, valid: bool = True
    ) -> None:
        key = ref_key(ref)
        claim = Claim(kind, owner, pointer, valid, key is not None and key[0] is not None)
        matches = index.match_key(key)
        if matches is None:
            ledger.unresolved.append(Unresolved(claim, ref, (), "unjoinable"))
        elif len(matches) != 1:
            reason = "unmatched" if not matches else "ambiguous"
            candidates = self.candidates.get(key)
            if candidates is None:
                candidates = self.candidates[key] = tuple(e.index for e in matches)
            ledger.unresolved.append(Unresolved(claim, ref, candidates, reason))
        else:
            matches[0].claims.append(claim)

    def ledger(self) -> Ledger:
        ledger = Ledger(self.entries())
        index = self.call_index = CallIndex(ledger.calls)
        valid_records = {id(item.data) for item in self.ev.records}
        by_id = {e.model_call_id: e for e in ledger.calls if e.model_call_id}
        sessions = _sessions(self.capture_of)

        def agent_claims(owner: Any, refs: Any, base: str, valid: bool) -> None:
            owner = owner if isinstance(owner, str) else None
            for j, ref in enumerate(refs if isinstance(refs, list) else []):
                self.claim(ledger, index, ref, AGENT, owner, f"{base}/model_calls/{j}", valid)
            # NeMo Gym's session auto-ownership: a call whose client session names this invocation.
            for position in sessions.get(owner, ()):
                raw = self.capture_of[position]
                entry = by_id.get(raw.get("model_call_id")) if isinstance(raw.get("model_call_id"), str) else None
                if entry is not None and entry.index == position:
                    pointer = f"{self.locations[position][-1]}/client_session_id"
                    entry.claims.append(Claim(SESSION, owner, pointer, valid, True))

        stated = self.ev.stated_section
        stated_valid = {id(i.data) for part in self.ev.stated_parts.values() for i in part}
        if stated is not None:
            for i, inv in enumerate(_list(stated.get("invocations"))):
                if isinstance(inv, dict):
                    base = f"{_STATED_INVOCATIONS}/{i}"
                    agent_claims(inv.get("invocation_id"), inv.get("model_calls"), base, id(inv) in stated_valid)
        for item in self.ev.record_claims:
            data = item.data
            valid = id(data) in valid_records
            kind = data.get("kind")
            if kind == "agent_invocation":
                agent_claims(data.get("invocation_id"), data.get("model_calls"), item.pointer, valid)
            elif kind == "context_compaction":
                owner = data.get("invocation_id") if isinstance(data.get("invocation_id"), str) else None
                for j, ref in enumerate(data.get("model_calls") if isinstance(data.get("model_calls"), list) else []):
                    self.claim(ledger, index, ref, COMPACTION, owner, f"{item.pointer}/model_calls/{j}", valid)
                for name, kind_ in (("before_model_call", COMPACTION_BEFORE), ("after_model_call", COMPACTION_AFTER)):
                    if data.get(name) is not None:
                        self.claim(ledger, index, data[name], kind_, owner, f"{item.pointer}/{name}", valid)
        for item in self.ev.verifiers:
            owner = item.data.get("invocation_id") if isinstance(item.data.get("invocation_id"), str) else None
            refs = item.data.get("model_calls")
            for j, ref in enumerate(refs if isinstance(refs, list) else []):
                self.claim(ledger, index, ref, VERIFIER, owner, f"{item.pointer}/model_calls/{j}")
        for position, raw in enumerate(self.capture_of):
            verifier = raw.get("verifier_invocation_id") if raw is not None else None
            if isinstance(verifier, str) and verifier:
                pointer = f"{self.locations[position][-1]}/verifier_invocation_id"
                ledger.calls[position].claims.append(Claim(VERIFIER, verifier, pointer))
        if stated is not None:
            for t, turn in enumerate(_list(stated.get("turns"))):
                if not isinstance(turn, dict):
                    continue
                owner = turn.get("invocation_id") if isinstance(turn.get("invocation_id"), str) else None
                refs = turn.get("model_calls")
                for j, ref in enumerate(refs if isinstance(refs, list) else []):
                    pointer = f"{_STATED_TURNS}/{t}/model_calls/{j}"
                    self.claim(ledger, index, ref, TURN, owner, pointer, id(turn) in stated_valid)
        return ledger

    # -- the join of ownership claims, for rows whose capture and observations meet here ------------

    def join(self, ledger: Ledger) -> None:
        if not (self.ev.observations and isinstance(self.row.get(CAPTURE), dict)):
            return
        captured = [e for e in ledger.calls if self.capture_of[e.index] is not None]
        index = CallIndex(captured)
        owned: dict[int, str] = {}
        gaps = self.gaps_join
        built = {inv["invocation_id"]: inv for inv in self.invocations}
        sessions = _sessions(self.capture_of)
        # A built invocation is the observed record's copy unless the stated trajectory holds it.
        stated_ids = {i.data.get("invocation_id") for i in self.ev.stated_parts.get("invocations", [])}

        def label(ref: Any) -> str | None:
            key = ref_key(ref)
            return None if key is None else (key[0] or key[2])

        def call_label(entry: CallEntry) -> str | None:
            return entry.model_call_id or entry.response_id

        for item in self.observed_invocations:
            owner = item.data["invocation_id"]
            refs = [r for r in item.data.get("model_calls") or [] if isinstance(r, dict)]
            referenced = _named(index, refs)  # calls the refs name
            for position in sessions.get(owner, ()):
                entry = ledger.calls[position]
                if entry.model_call_id and entry.index not in referenced:
                    ref = {"model_call_id": entry.model_call_id, "model_ref": None, "response_id": None}
                    refs.append(ref)
                    referenced.update(e.index for e in index.match(ref) or ())
            rewritten = []
            for ref in refs:
                matches = index.match(ref)
                if not matches:
                    gaps.append(_gap("model_call_reference_unmatched", owner, label(ref)))
                elif len(matches) > 1:
                    gaps.append(_gap("model_call_reference_ambiguous", owner, label(ref)))
                elif matches[0].index in owned:
                    gaps.append(_gap("model_call_reference_conflict", owner, call_label(matches[0])))
                else:
                    entry = matches[0]
                    owned[entry.index] = owner
                    model_ref = {"type": entry.model_ref[0], "name": entry.model_ref[1]} if entry.model_ref else None
                    ref = {"model_call_id": entry.model_call_id, "model_ref": model_ref, "response_id": entry.response_id}
                rewritten.append(canonical.ref(ref))
            target = built.get(owner)
            if target is not None and target["invocation_id"] not in stated_ids:
                target["model_calls"] = rewritten
        for item in self.compactions:
            owner = item.data["invocation_id"]
            for ref in item.data.get("model_calls") or []:
                matches = index.match(ref)
                detail = f"model_calls:{label(ref)}"
                if not matches:
                    gaps.append(_gap("model_call_reference_unmatched", owner, detail))
                elif len(matches) > 1:
                    gaps.append(_gap("model_call_reference_ambiguous", owner, detail))
                elif matches[0].index not in owned:
                    gaps.append(_gap("model_call_ownership_unavailable", owner, detail))
                elif owned[matches[0].index] != owner:
                    gaps.append(_gap("model_call_reference_conflict", owner, detail))
            for name in ("before_model_call", "after_model_call"):
                ref = item.data.get(name)
                if ref is None:
                    continue
                matches = index.match(ref)
                detail = f"{name}:{label(ref)}"
                if not matches:
                    gaps.append(_gap("model_call_reference_unmatched", owner, detail))
                elif len(matches) > 1:
                    gaps.append(_gap("model_call_reference_ambiguous", owner, detail))
                elif owned.get(matches[0].index, owner) != owner:
                    gaps.append(_gap("model_call_reference_conflict", owner, detail))
        for entry in captured:
            if entry.index not in owned:
                raw = self.capture_of[entry.index]
                call_index = raw.get("call_index")
                detail = f"capture:{entry.model_call_id or entry.response_id or 'unknown'}:call_index={call_index}"
                gaps.append(_gap("model_call_ownership_unavailable", None, detail))

    # -- turns ---------------------------------------------------------------------------------

    def turns(self, ledger: Ledger) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = []
        per_invocation: dict[str, tuple[int, int]] = {}  # invocation -> (turns so far, tool calls so far)
        for entry in ledger.calls:
            owner = _turn_owner(entry)
            if entry.is_verifier_owned:
                entry.outcome = OUTCOME_VERIFIER
            elif entry.is_helper:
                entry.outcome = OUTCOME_HELPER
            elif owner is None:
                entry.outcome = OUTCOME_UNOWNED
            elif not entry.has_response:
                entry.outcome = OUTCOME_NO_RESPONSE
            else:
                entry.outcome = OUTCOME_TURN
                entry.owner = owner
                call = self.model_calls[entry.index]
                content = turn_content(call["request"], call["response"])
                count, steps = per_invocation.get(owner, (0, 0))
                meta = call["response_metadata"]
                turns.append(
                    {
                        "invocation_id": owner,
                        "task_id": self.task_id,
                        "rollout_id": self.rollout_id,
                        "turn_no": count + 1,
                        "timestamp": call["started_at"] or call["completed_at"] or 0.0,
                        "question": content.question,
                        "answer": content.answer,
                        "reasoning_content": content.reasoning,
                        "resolved": None,
                        "step_count": steps,
                        "model_calls": [
                            {
                                "model_call_id": call["model_call_id"],
                                "model_ref": meta.get("model_ref"),
                                "response_id": meta.get("response_id"),
                            }
                        ],
                    }
                )
                per_invocation[owner] = (count + 1, steps + content.tool_calls)
        resolved = self.row.get("resolved")
        if turns and isinstance(resolved, bool):
            turns[-1]["resolved"] = resolved
        return turns

    def run(self) -> Build:
        self.take_stated()
        self.take_observations()
        self.take_capture()
        ledger = self.ledger()
        self.join(ledger)
        expected = self.turns(ledger)
        turns = self.stated_turns if self.ev.stated else expected
        gaps = self.gaps_head + self.gaps_stated + self.gaps_bundle + self.gaps_join + self.gaps_capture
        if not self.model_calls:
            gaps.append(_gap("model_calls_unavailable"))
        if not turns and not (self.ev.stated and self.ev.stated_valid):
            gaps.append(_gap("turns_unavailable"))
        if not any(inv["conversation"] for inv in self.invocations):
            gaps.append(_gap("conversation_unavailable"))
        trajectory = {
            "schema_version": SCHEMA_VERSION,
            "task_id": self.task_id,
            "rollout_id": self.rollout_id,
            "invocations": self.invocations,
            "turns": turns,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "gaps": _dedupe(gaps),
        }
        return Build(trajectory, ledger, expected, self.ev, self.compactions, self.identity, self.call_index)


def _named(index: CallIndex, refs: list[dict[str, Any]]) -> set[int]:
    """The positions of the calls the references match, each form of reference looked up once
    (thousands of references may name one id that thousands of calls share)."""
    named: set[int] = set()
    keys: set[Any] = set()
    for ref in refs:
        key = ref_key(ref)
        if key not in keys:
            keys.add(key)
            named.update(e.index for e in index.match_key(key) or ())
    return named


def _sessions(capture_of: list[dict[str, Any] | None]) -> dict[str, list[int]]:
    """client_session_id -> the positions of the captured calls carrying it, in order.

    Looked up per invocation; scanning every call for every invocation is quadratic.
    """
    sessions: dict[str, list[int]] = {}
    for position, raw in enumerate(capture_of):
        session = raw.get("client_session_id") if raw is not None else None
        if isinstance(session, str):
            sessions.setdefault(session, []).append(position)
    return sessions


def _turn_owner(entry: CallEntry) -> str | None:
    """Which agent invocation a call's turn belongs to, when several claim it.

    Deterministic and the same as NeMo Gym 0.7.0: the first claimant wins the join, and a later
    claimant takes the turn only if its own reference names the call's `model_call_id`. Only
    claims standing in records that passed their schema can own a turn.
    """
    owner = None
    for position, claim in enumerate(c for c in entry.claims if c.kind in AGENT_KINDS and c.valid and c.owner):
        if position == 0 or claim.names_id:
            owner = claim.owner
    return owner


def build(row: dict[str, Any]) -> Build:
    """The canonical trajectory of one rollout row, and the ledger behind it. Never raises on data."""
    return _Builder(row).run()
