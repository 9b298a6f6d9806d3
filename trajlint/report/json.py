"""The JSON report: the whole document, pretty-printed with sorted-stable key order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson


def render(doc: dict[str, Any]) -> Iterator[str]:
    yield orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
