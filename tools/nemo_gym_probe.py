"""Judge rows the way NeMo Gym 0.7.0 does: its section models, its collector's builder, its health check.

Runs under a Python that has NeMo Gym installed (see ../shared/tools/nemo-gym-0.7-venv.sh), never
under trajlint's: it imports no trajlint code. Reads JSONL rows on stdin and writes, per row, one
JSON object on stdout:

- `capture`, `observations`, `trajectory`: "ok", "rejects" or "absent" — each present section
  validated with NeMo Gym's own model (`ModelCallRecord` for every captured call,
  `AgentObservationBundle`, `TrajectoryRecord`); a null section is "absent", as NeMo Gym reads it;
- `build`: the gap codes of `_build_trajectory_record(row, row)`, or "raises <exception>";
- `health`: the verdict of `run_health_checks` on a file holding the row alone, with the checks
  that found something (`"unhealthy: record_unreadable"`), or "raises <exception>";
- `routing`: what the collector's aggregation groups the row under (`_routing_identity`: the
  agent's name, else the environment server), or "raises <exception>";
- `episode_id`: "ok" or "rejects" for the row's `_ng_rollout_id` as an environment-server episode
  id (`EpisodeId`, which every materialized task is dispatched with), "absent" without one.

    /tmp/nemo-gym-0.7-venv/bin/python tools/nemo_gym_probe.py < rows.jsonl
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from nemo_gym.base_responses_api_model import ModelCallRecord
from nemo_gym.episode_types import EpisodeId
from nemo_gym.rollout_collection import _build_trajectory_record, _routing_identity
from nemo_gym.rollout_health import run_health_checks
from nemo_gym.rollout_observability import AgentObservationBundle, TrajectoryRecord


def _model(row: dict[str, Any], key: str, validate: Any) -> str:
    value = row.get(key)
    if value is None:
        return "absent"
    try:
        validate(value)
    except Exception:  # noqa: BLE001 - any failure is a rejection
        return "rejects"
    return "ok"


def _calls(capture: Any) -> None:
    for call in capture["calls"]:
        ModelCallRecord.model_validate(call)


def _build(row: dict[str, Any]) -> Any:
    try:
        record = _build_trajectory_record(row, row)
    except Exception as error:  # noqa: BLE001
        return f"raises {type(error).__name__}"
    return [gap.code for gap in record.gaps]


def _health(row: dict[str, Any], work: Path) -> str:
    rollouts = work / "rollouts.jsonl"
    rollouts.write_bytes(orjson.dumps(row) + b"\n")
    try:
        result = run_health_checks([rollouts], output_dir=work / "report", workers=1)
    except Exception as error:  # noqa: BLE001
        return f"raises {type(error).__name__}"
    (digest,) = result.rollouts
    checks = sorted({finding.check for finding in digest.findings})
    return f"{digest.verdict}: {', '.join(checks)}" if checks else str(digest.verdict)


def _routing(row: dict[str, Any]) -> Any:
    try:
        return _routing_identity(row)
    except Exception as error:  # noqa: BLE001
        return f"raises {type(error).__name__}"


def _episode_id(row: dict[str, Any]) -> str:
    return _model(row, "_ng_rollout_id", lambda rollout_id: EpisodeId(rollout_id=rollout_id))


def judge(row: dict[str, Any], work: Path) -> dict[str, Any]:
    return {
        "capture": _model(row, "ng_model_call_capture", _calls),
        "observations": _model(row, "ng_agent_observations", AgentObservationBundle.model_validate),
        "trajectory": _model(row, "ng_trajectory", TrajectoryRecord.model_validate),
        "build": _build(row),
        "health": _health(row, work),
        "routing": _routing(row),
        "episode_id": _episode_id(row),
    }


def main() -> None:
    out = sys.stdout.buffer
    with tempfile.TemporaryDirectory() as tmp:
        for number, line in enumerate(sys.stdin.buffer):
            if line.strip():
                work = Path(tmp) / str(number)
                work.mkdir()
                out.write(orjson.dumps(judge(orjson.loads(line), work)) + b"\n")


if __name__ == "__main__":
    main()
