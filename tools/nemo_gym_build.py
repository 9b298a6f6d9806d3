"""Build trajectories with NeMo Gym 0.7.0 itself, for comparison with trajlint's build.

Runs under a Python that has NeMo Gym installed (see ../shared/tools/nemo-gym-0.7-venv.sh), never
under trajlint's: it imports no trajlint code. It emulates what NeMo Gym's collector does to one
finished rollout that already carries its capture: join the agent's observations to the captured
calls, then build and attach the trajectory. Reads JSONL rows on stdin; writes, per row,
`{"ng_trajectory": ..., "error": ...}` on stdout.

    /tmp/nemo-gym-0.7-venv/bin/python tools/nemo_gym_build.py < rows.jsonl
"""

from __future__ import annotations

import copy
import sys

import orjson
from nemo_gym.base_responses_api_model import ModelCallRecord
from nemo_gym.rollout_collection import _attach_trajectory_record
from nemo_gym.rollout_observability import AgentObservationBundle, join_model_call_observations

EVIDENCE = ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory")


def persist(row: dict) -> dict:
    """The whole row as NeMo Gym's collector writes it: observations joined to the capture, then
    the trajectory built and attached (only when the row carries any evidence, as the collector
    does), capture payloads stripped."""
    result = copy.deepcopy(row)
    capture = result.get("ng_model_call_capture")
    bundle = result.get("ng_agent_observations")
    if isinstance(capture, dict) and isinstance(bundle, dict):
        try:
            records = [ModelCallRecord.model_validate(call) for call in capture.get("calls", [])]
            joined = join_model_call_observations(AgentObservationBundle.model_validate(bundle), records)
            result["ng_agent_observations"] = joined.model_dump(mode="json")
        except Exception as error:  # noqa: BLE001 - the collector logs and records a gap
            capture.setdefault("gaps", []).append({"code": "agent_observation_join_failed", "detail": type(error).__name__})
    if any(key in result for key in EVIDENCE):
        _attach_trajectory_record(copy.deepcopy(row), result)
    return result


def collect(row: dict) -> dict:
    result = persist(row)
    return {"ng_trajectory": result.get("ng_trajectory"), "ng_agent_observations": result.get("ng_agent_observations")}


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            built = collect(orjson.loads(line))
        except Exception as error:  # noqa: BLE001
            built = {"ng_trajectory": None, "error": f"{type(error).__name__}: {error}"}
        out.write(orjson.dumps(built) + b"\n")


if __name__ == "__main__":
    main()
