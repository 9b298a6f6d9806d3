"""One row seen the way NeMo Gym 0.7.0's health checks see a persisted rollout — on trajlint's build.

NeMo Gym judges the persisted `ng_trajectory` alone. trajlint judges its own build of the row
(`subject.build.trajectory`), which reads every model-call dialect and keeps what validates, so
an Anthropic Messages turn is judged by what its response says and a damaged section is
reported by the rules that own it instead of hiding the rest of the row.

The view is computed once per row (kept on the row's subject) and shared by the TL6xx rules and
the health verdicts: the call bindings (which call each turn and invocation reference resolves
to), the evidence the checks read (a check whose evidence the row lacks is *unobserved*), each
check's findings, and the small digest the run keeps of the row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from trajlint.builder.ledger import CallIndex, ref_key
from trajlint.row.sections import CAPTURE
from trajlint.row.values import nonnegative_int as count

if TYPE_CHECKING:
    from trajlint.builder import Build
    from trajlint.health.checks import HealthCheck

FAILED_RESPONSE_STATUSES = frozenset({"failed", "error", "cancelled"})
LENGTH_LIMITS = frozenset({"length", "max_output_tokens", "max_tokens"})
# Gaps that say captured calls are missing from the row: call-based checks cannot run.
INCOMPLETE_CALL_GAPS = frozenset(
    {
        "model_calls_unavailable",
        "model_call_capture_incomplete",
        "model_call_capture_records_unreadable",
        "model_call_capture_unreadable",
    }
)
REFERENCE_GAPS = {
    "model_call_reference_unmatched": "missing_captured_call",
    "model_call_reference_ambiguous": "duplicated_captured_call",
    "model_call_reference_conflict": "conflicting_call_ownership",
}

@dataclass(frozen=True, slots=True)
class HealthFinding:
    """One check's finding: trajlint's pointer and message, NeMo Gym's locator and detail."""

    rule: str
    pointer: str
    message: str
    locator: dict[str, Any] | None
    detail: dict[str, Any]


Find = Callable[["HealthView"], Iterable[HealthFinding]]

# What a health check reads of a row, beyond the row itself (NeMo Gym's check inputs). A check
# reads a list of these; on a row that lacks one, the check is unobserved, never passed.
AGENT_TURNS = "agent-turns"  # the row's turns are known (built, or not reported unavailable)
CAPTURED_CALLS = "captured-calls"  # no gap says captured calls are missing from the row
MODEL_CALLS = "model-calls"  # captured calls known, and at least one
CALL_REFERENCES = "call-references"  # a call reference, or a join gap, to judge
OWNED_CALLS = "owned-calls"  # a call the agent owns, resolved from its references
TURN_USAGE = "turn-usage"  # every turn's call bound, the transcript's usage and each spending call's counts
KEPT_RESPONSES = "kept-responses"  # no owned call stopped at its length limit without its response kept
EVIDENCE = (AGENT_TURNS, CAPTURED_CALLS, MODEL_CALLS, CALL_REFERENCES, OWNED_CALLS, TURN_USAGE, KEPT_RESPONSES)


# -- calls -------------------------------------------------------------------------------------


def is_failed(meta: dict[str, Any]) -> bool:
    """HTTP status 400 or above, an error category, or a failed/errored/cancelled response."""
    status = meta.get("status_code")
    response_status = meta.get("response_status")
    return (
        (type(status) is int and status >= 400)
        or bool(meta.get("error_category"))
        or (isinstance(response_status, str) and response_status in FAILED_RESPONSE_STATUSES)
    )


def is_successful(meta: dict[str, Any]) -> bool:
    status = meta.get("status_code")
    return not is_failed(meta) and (status is None or (type(status) is int and 200 <= status < 400))


def model_key(meta: dict[str, Any]) -> tuple[Any, Any] | None:
    ref = meta.get("model_ref")
    return (ref.get("type"), ref.get("name")) if isinstance(ref, dict) else None


def _call_identity(call: dict[str, Any]) -> str | None:
    """What makes a call the same call twice: its id, else its model and response id."""
    if call.get("model_call_id"):
        return f"call:{call['model_call_id']}"
    meta = call["response_metadata"]
    key = model_key(meta)
    if key is not None and meta.get("response_id"):
        return f"response:{key[0]}:{key[1]}:{meta['response_id']}"
    if meta.get("response_id"):
        return f"response::{meta['response_id']}"
    return None


def nemo_gym_label(key: tuple[Any, Any, Any]) -> str | None:
    """NeMo Gym's name for a reference; its text after the last `:` is the finding's call id."""
    call_id, model_ref, response_id = key
    if call_id is not None:
        return f"call:{call_id}"
    if model_ref is not None and response_id is not None:
        return f"response:{model_ref[0]}:{model_ref[1]}:{response_id}"
    return None


# -- bindings ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Bindings:
    """References (deduplicated) and the calls they resolve to: exactly one, none, or several."""

    references: int = 0
    matched: list[int] = field(default_factory=list)  # call positions, in trajectory order
    missing: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (label, ref)
    duplicated: list[tuple[str, dict[str, Any], int]] = field(default_factory=list)  # (label, ref, matches)

    @property
    def complete(self) -> bool:
        return self.references > 0 and not self.missing and not self.duplicated


Reference = tuple[str, dict[str, Any], tuple[Any, Any, Any]]  # (label, ref, its ref_key)


def _refs(items: Iterable[dict[str, Any]], seen: dict[Any, tuple[str, dict[str, Any]]]) -> list[Reference]:
    """The usable references of the items, each signature once; `seen` is shared across calls."""
    out = []
    for item in items:
        for ref in item.get("model_calls") or ():
            key = ref_key(ref)
            label = nemo_gym_label(key) if key is not None else None
            if label is not None and key not in seen:
                seen[key] = (label, ref)
                out.append((label, ref, key))
    return out


def _bind(index: CallIndex, refs: list[Reference]) -> Bindings:
    bindings = Bindings(references=len(refs))
    matched: set[int] = set()
    for label, ref, key in refs:
        matches = index.match_key(key) or ()
        if not matches:
            bindings.missing.append((label, ref))
        elif len(matches) > 1:
            bindings.duplicated.append((label, ref, len(matches)))
        else:
            matched.add(matches[0].index)
    bindings.matched = sorted(matched)
    return bindings


def _usage(response: Any) -> tuple[int | None, int | None]:
    """The transcript's own token counts (`response.usage`, Responses or Chat names)."""
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return None, None
    prompt = usage.get("input_tokens", usage.get("prompt_tokens"))
    completion = usage.get("output_tokens", usage.get("completion_tokens"))
    return count(prompt), count(completion)


def _capture_damaged(capture: Any) -> bool:
    """The row holds a capture, but not in a shape the build could read every call of.

    Its calls are then damaged, not absent: the checks judge what is left, and the schema
    rules report the damage.
    """
    if capture is None:
        return False
    calls = capture.get("calls") if isinstance(capture, dict) else None
    return not isinstance(calls, list) or not all(isinstance(call, dict) for call in calls)


# -- the view ----------------------------------------------------------------------------------


class Digest(NamedTuple):
    """What the run-level reductions keep of a row: a few numbers, never the row.

    A tuple, not a frozen dataclass: one is made for every row, a proved one included (from the
    core's fields, `check.fast.judgement`), and a tuple costs a third as much to make."""

    calls: int
    successful_turn_calls: int
    policy_calls_observed: bool
    failed_by_status: tuple[tuple[str, int], ...]
    ended_on_error: bool
    duplicated_calls: int
    transcript_prompt: int
    transcript_completion: int
    capture_prompt: int
    capture_completion: int
    stated_invalid: bool  # NeMo Gym could not read the stated trajectory (its record_unreadable)

    @property
    def failed_calls(self) -> int:
        return sum(n for _, n in self.failed_by_status)


class Subject(Protocol):
    """A row as the check stage hands it over: the row, its build, and a memo of what is derived."""

    @property
    def row(self) -> dict[str, Any]: ...

    @property
    def build(self) -> Build: ...

    def memo(self, key: str, compute: Callable[[Any], Any]) -> Any: ...


def view_of(subject: Subject) -> HealthView:
    """The row's view, built once per row: every TL6xx rule and the row's verdict share it."""
    return subject.memo("health-view", HealthView)


class HealthView:
    """The health checks' view of one row, on trajlint's build of it."""

    def __init__(self, subject: Subject):
        self.subject = subject  # its walks are shared with the rules
        self.row = subject.row
        self.build = subject.build
        trajectory = self.build.trajectory
        self.turns: list[dict[str, Any]] = trajectory["turns"]
        self.calls: list[dict[str, Any]] = trajectory["model_calls"]
        self.entries = self.build.ledger.calls
        codes = set()
        self.reference_gaps = []
        for gap in trajectory["gaps"]:
            codes.add(gap["code"])
            if gap["code"] in REFERENCE_GAPS:
                self.reference_gaps.append(gap)
        self.turns_observed = bool(self.turns) or "turns_unavailable" not in codes
        incomplete = codes & INCOMPLETE_CALL_GAPS
        if incomplete == {"model_calls_unavailable"} and _capture_damaged(self.row.get(CAPTURE)):
            incomplete = set()  # the calls are there, only damaged
        self.calls_observed = not incomplete
        self.turn_scope_complete = "turn_model_call_scope_incomplete" not in codes
        index = self.build.call_index
        self.index = index if index is not None else CallIndex(self.entries)
        seen: dict[Any, tuple[str, dict[str, Any]]] = {}
        turn_refs = _refs(self.turns, seen)
        self.turn_bindings = _bind(self.index, turn_refs)
        invocation_refs = _refs(trajectory["invocations"], seen)
        self.owned_bindings = (
            _bind(self.index, turn_refs + invocation_refs) if invocation_refs else self.turn_bindings
        )
        self.transcript = _usage(self.row.get("response"))
        # The transcript's usage counts the agent's compaction helpers too, which are no turns.
        bound = set(self.turn_bindings.matched)
        self.helper_calls = [
            e.index for e in self.entries if e.index not in bound and e.is_helper and not e.is_verifier_owned
        ]
        self._results: dict[str, list[HealthFinding] | None] = {}
        self._digest: Digest | None = None
        self._tokens: list[tuple[int | None, int | None]] | None = None
        self._failed: list[bool] | None = None

    # -- gating: a check whose evidence is absent is unobserved -----------------------------

    def observed(self, evidence: str) -> bool:
        """Whether the row holds this evidence (one of `EVIDENCE`)."""
        if evidence == AGENT_TURNS:
            return self.turns_observed
        if evidence == CAPTURED_CALLS:
            return self.calls_observed
        if evidence == MODEL_CALLS:
            return self.calls_observed and bool(self.calls)
        if evidence == CALL_REFERENCES:
            return bool(self.owned_bindings.references or self.reference_gaps)
        if evidence == OWNED_CALLS:
            return bool(self.owned_bindings.matched)
        if evidence == TURN_USAGE:
            bound = self.turn_bindings
            return (
                bool(bound.matched)
                and self.turn_scope_complete
                and bound.complete
                and None not in self.transcript
                and not any(None in self.tokens(i) for i in self.spending_calls())
            )
        if evidence == KEPT_RESPONSES:
            return not any(
                self.calls[i]["response"] is None and self.calls[i]["response_metadata"].get("finish_reason") in LENGTH_LIMITS
                for i in self.owned_bindings.matched
            )
        raise ValueError(f"unknown health evidence {evidence!r}")

    def findings(self, check: HealthCheck) -> list[HealthFinding] | None:
        """The check's findings on this row, or None when it is unobserved (computed once)."""
        results = self._results
        if check.id not in results:
            observed = all(self.observed(evidence) for evidence in check.reads)
            results[check.id] = list(check.find(self)) if observed else None
        return results[check.id]

    # -- calls ------------------------------------------------------------------------------

    def tokens(self, index: int) -> tuple[int | None, int | None]:
        """Call `index`'s usable (prompt, completion) token counts."""
        if self._tokens is None:
            self._tokens = [
                (count(stats.get("prompt_tokens")), count(stats.get("completion_tokens")))
                for stats in (call["token_stats"] for call in self.calls)
            ]
        return self._tokens[index]

    def failed(self, index: int) -> bool:
        """Whether call `index` failed (`is_failed` of its metadata)."""
        return self.failed_calls()[index]

    def failed_calls(self) -> list[bool]:
        """`failed` of every call, in trajectory order; asked by several checks and the digest."""
        if self._failed is None:
            self._failed = [is_failed(call["response_metadata"]) for call in self.calls]
        return self._failed

    def spending_calls(self) -> list[int]:
        """The calls the transcript's usage counts: those its turns reference, and compaction helpers."""
        return sorted(self.turn_bindings.matched + self.helper_calls)

    def chains(self) -> dict[Any, list[tuple[dict[str, Any], int]]]:
        """(call, position) per model the calls went to: a judge's calls are not the policy's."""
        chains: dict[Any, list[tuple[dict[str, Any], int]]] = {}
        for position, call in enumerate(self.calls):
            chains.setdefault(model_key(call["response_metadata"]), []).append((call, position))
        return chains

    # -- the row's digest -------------------------------------------------------------------

    def digest(self) -> Digest:
        if self._digest is None:
            self._digest = self._make_digest()
        return self._digest

    def _make_digest(self) -> Digest:
        failed: dict[str, int] = {}
        identities: set[str] = set()
        duplicated = prompt_sum = completion_sum = 0
        for position, call in enumerate(self.calls):
            meta = call["response_metadata"]
            if self.failed(position):
                status = meta.get("status_code")
                key = str(status) if status is not None else "unknown"
                failed[key] = failed.get(key, 0) + 1
            identity = _call_identity(call)
            if identity is not None:
                duplicated += identity in identities
                identities.add(identity)
            prompt, completion = self.tokens(position)
            prompt_sum += prompt or 0
            completion_sum += completion or 0
        transcript_prompt, transcript_completion = self.transcript
        evidence = self.build.evidence
        return Digest(
            calls=len(self.calls),
            successful_turn_calls=sum(is_successful(self.calls[i]["response_metadata"]) for i in self.turn_bindings.matched),
            policy_calls_observed=self.turn_scope_complete and self.turn_bindings.complete,
            failed_by_status=tuple(sorted(failed.items())),
            ended_on_error=bool(failed) and any(ended_on_failure(chain) for chain in self.chains().values()),
            duplicated_calls=duplicated,
            transcript_prompt=transcript_prompt or 0,
            transcript_completion=transcript_completion or 0,
            capture_prompt=prompt_sum,
            capture_completion=completion_sum,
            stated_invalid=evidence.stated and not evidence.stated_valid,
        )


def ordered(chain: list[tuple[dict[str, Any], int]]) -> list[tuple[dict[str, Any], int]]:
    """A model's calls in time order (then trajectory order)."""
    return sorted(chain, key=lambda item: (item[0].get("started_at") or 0.0, item[1]))


def ended_on_failure(chain: list[tuple[dict[str, Any], int]]) -> bool:
    """Whether this model's own last call, in time, failed; a mixed chain that cannot be ordered says nothing."""
    failed = sum(1 for call, _ in chain if is_failed(call["response_metadata"]))
    if not failed:
        return False
    if failed == len(chain):
        return True
    if any(call.get("started_at") is None for call, _ in chain):
        return False
    return is_failed(ordered(chain)[-1][0]["response_metadata"])
