"""The JSON report: the whole document, pretty-printed, keys in the document's own order.

The findings are written one at a time into the document around them, so a report of millions
of findings never holds them all; the text is what `orjson` with `OPT_INDENT_2` makes of the
whole document.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from trajlint.report.document import Report, document


def render(report: Report) -> Iterator[str]:
    doc = document(_without_findings(report))
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
    head, tail = text.split('"findings": []', 1)  # the first such key: the document's own
    yield head + '"findings": '
    yield from indented_array((f.to_dict() for f in report.findings), 2)
    yield tail + "\n"


def indented_array(items: Iterable[Any], depth: int) -> Iterator[str]:
    """A JSON array as `orjson` with `OPT_INDENT_2` writes it at nesting `depth` (in spaces),
    one item at a time: no closing newline."""
    pad = " " * depth
    first = True
    for item in items:
        body = orjson.dumps(item, option=orjson.OPT_INDENT_2).decode().replace("\n", "\n  " + pad)
        yield ("[\n" if first else ",\n") + pad + "  " + body
        first = False
    yield "[]" if first else "\n" + pad + "]"


def _without_findings(report: Report) -> Report:
    import dataclasses

    return dataclasses.replace(report, findings=[])
