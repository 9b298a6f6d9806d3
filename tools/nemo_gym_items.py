"""Judge conversation items with NeMo Gym 0.7.0's own item union, for comparison with trajlint's.

Runs under a Python that has NeMo Gym installed (see ../shared/tools/nemo-gym-0.7-venv.sh), never
under trajlint's: it imports no trajlint code. Reads JSONL cases `{"note": ..., "item": ...}` and
writes each back with `"nemo_gym": "ok"` or `"rejected"` — the verdict of validating the item as
one element of `AgentInvocation.conversation` — and, when rejected, NeMo Gym's first error line.

    /tmp/nemo-gym-0.7-venv/bin/python tools/nemo_gym_items.py < cases.jsonl > judged.jsonl

tests/data/conversation-items.jsonl is such a file; tests/test_conversation_items.py checks
trajlint's model and schema against its verdicts, and re-judges it here when NeMo Gym is present.
"""

from __future__ import annotations

import sys

import orjson
from nemo_gym.openai_utils import NeMoGymResponseInputItem
from pydantic import TypeAdapter

ITEM = TypeAdapter(NeMoGymResponseInputItem)


def judge(item: object) -> tuple[str, str | None]:
    try:
        ITEM.validate_python(item)
    except Exception as error:  # noqa: BLE001 - any exception is a rejection, as in NeMo Gym's collector
        lines = str(error).splitlines()
        return "rejected", (lines[1] if len(lines) > 1 else lines[0] if lines else type(error).__name__).strip()
    return "ok", None


def main() -> int:
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        case = orjson.loads(line)
        case["nemo_gym"], why = judge(case["item"])
        case.pop("nemo_gym_error", None)
        if why is not None:
            case["nemo_gym_error"] = why
        sys.stdout.buffer.write(orjson.dumps(case) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
