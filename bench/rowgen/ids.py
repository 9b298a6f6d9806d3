"""Identifiers shaped like the ones NeMo Gym and the model APIs emit, drawn from the row's RNG.

Drawing them from the row's own seeded RNG (never from uuid4 or the clock) keeps a generated file
byte-identical across runs.
"""

from __future__ import annotations

import random
import string

_BASE62 = string.ascii_letters + string.digits

MODEL_REF_TYPE = "responses_api_models"


def model_ref(name: str) -> dict[str, str]:
    return {"type": MODEL_REF_TYPE, "name": name}


class Ids:
    """Random identifiers in the formats of capture ids, response ids, tool-call ids and items."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def hex(self, digits: int) -> str:
        return f"{self.rng.getrandbits(4 * digits):0{digits}x}"

    def base62(self, length: int) -> str:
        return "".join(self.rng.choices(_BASE62, k=length))

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def model_call_id(self) -> str:
        return self.hex(32)  # the capture middleware's uuid4 hex

    def response_id(self, dialect: str) -> str:
        if dialect == "responses":
            return "resp_" + self.hex(48)
        if dialect == "chat":
            return "chatcmpl-" + self.base62(29)
        return "msg_01" + self.base62(22)

    def tool_call_id(self, dialect: str) -> str:
        return "toolu_01" + self.base62(22) if dialect == "messages" else "call_" + self.base62(24)

    def item_id(self, prefix: str, digits: int = 40) -> str:
        return f"{prefix}_{self.hex(digits)}"
