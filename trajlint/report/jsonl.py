"""JSON Lines: one finding object per line and nothing else, for streaming consumers.

Each line has the shape of a finding in the JSON document; there is no summary line, so
`wc -l` counts findings and `cat` of several runs is still valid input.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from trajlint.report.document import Report


def render(report: Report) -> Iterator[str]:
    for finding in report.findings:
        yield orjson.dumps(finding.to_dict()).decode() + "\n"
