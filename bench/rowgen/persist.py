"""A raw row in the shape NeMo Gym's collector persists it (contract §1, collector steps 2–3).

The row's claims are already written as the join leaves them (`RowSpec.persisted`); here the
canonical `ng_trajectory` is built — with trajlint's own builder, used read-only — and the capture
payloads are stripped, as the collector does after a successful projection.
"""

from __future__ import annotations

from typing import Any

import orjson

PAYLOAD_KEYS = ("request", "response", "request_raw", "response_raw")


def persist(row: dict[str, Any]) -> dict[str, Any]:
    from trajlint.builder import build  # imported here: only persisted rows need trajlint

    # The builder gets its own copy: the generator shares sub-objects between payloads.
    row["ng_trajectory"] = build(orjson.loads(orjson.dumps(row))).trajectory
    for call in row["ng_model_call_capture"]["calls"]:
        for key in PAYLOAD_KEYS:
            call.pop(key, None)
    return row
