"""The JSON report: the whole document, pretty-printed, keys in the document's own order."""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from trajlint.report.context import Report
from trajlint.report.document import document


def render(report: Report) -> Iterator[str]:
    yield orjson.dumps(document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
