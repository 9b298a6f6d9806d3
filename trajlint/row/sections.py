"""The four evidence sections of a rollout row, and the evidence name each one gives a rule."""

from __future__ import annotations

CAPTURE = "ng_model_call_capture"
OBSERVATIONS = "ng_agent_observations"
STATED = "ng_trajectory"
VERIFIERS = "ng_verifier_invocations"

#: Section key -> the evidence a rule declares to read it (present and not null).
SECTION_EVIDENCE: dict[str, str] = {
    CAPTURE: "capture",
    OBSERVATIONS: "observations",
    STATED: "trajectory",
    VERIFIERS: "verifiers",
}
