"""The JSON report: the whole document, pretty-printed, keys in the document's own order."""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from trajlint.report.document import Report, document


def render(report: Report) -> Iterator[str]:
    yield orjson.dumps(document(report), option=orjson.OPT_INDENT_2).decode() + "\n"
