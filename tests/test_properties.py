"""Property tests of the whole engine: rows shaped like the contract's, then damaged at random
(keys dropped, values retyped or negated, items duplicated, ids swapped, keys written twice),
checked with every rule. Whatever the damage: no internal error, the same report twice, and
every pointer (of a finding and of what it cites) resolves in its row or is "" (the line)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint.check.run import run
from trajlint.pointer import resolve
from trajlint.read import Source
from trajlint.report import document
from trajlint.report.formats import renderer

from .rule_rows import value_paths
from .test_build_properties import rows as contract_rows

ROOT = Path(__file__).resolve().parent.parent


def _real_rows() -> list[dict]:
    out = []
    for path in (ROOT / "examples" / "clean.jsonl", ROOT / "examples" / "broken.jsonl"):
        for line in path.read_bytes().splitlines():
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # broken.jsonl has lines that are no JSON at all
            if isinstance(row, dict):
                out.append(row)
    return out


REAL_ROWS = _real_rows()
JUNK = (None, "", "7", -1, 0, 1.5, -2.5, True, False, [], {}, [None], {"model_call_id": "a"}, "a/b~c", 2**64)
OPS = ("drop", "retype", "duplicate", "negate", "swap-ids", "repeat-key")
MISSING = object()



def _parent(row, path):
    node = row
    for key in path[:-1]:
        node = node[key]
    return node


def _ids(row):
    """(path, value) of every string id: the values whose swap confuses joins and ownership."""
    return [
        (path, _parent(row, path)[path[-1]])
        for path in value_paths(row)
        if path and isinstance(path[-1], str) and path[-1].endswith("_id") and isinstance(_parent(row, path)[path[-1]], str)
    ]


def damage(row: dict, ops: list[tuple[str, int, object]]) -> bytes:
    """Apply `ops` (each: what, a number that picks the place, a junk value); the row as text."""
    repeated: list[tuple[str, object]] = []
    for op, pick, junk in ops:
        places = [p for p in value_paths(row) if p]
        if not places:
            break
        path = places[pick % len(places)]
        parent, last = _parent(row, path), path[-1]
        if op == "drop":
            del parent[last]
        elif op == "retype":
            # A copy: JUNK's lists and dicts are shared by every example. Put in the row itself,
            # later ops edit them in place (or put one inside itself: a cycle, on which the
            # strategy raises part-way), so the same choices give other rows later in the process.
            parent[last] = copy.deepcopy(junk)
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(last, json.loads(json.dumps(parent[last])))
        elif op == "negate" and type(parent[last]) in (int, float):
            parent[last] = -parent[last]
        elif op == "swap-ids":
            ids = _ids(row)
            if len(ids) > 1:
                (a, x), (b, y) = ids[pick % len(ids)], ids[(pick // len(ids)) % len(ids)]
                _parent(row, a)[a[-1]], _parent(row, b)[b[-1]] = y, x
        elif op == "repeat-key":
            repeated.append((str(path[0]), junk))
    text = json.dumps(row)  # json, not orjson: it writes integers beyond 64 bits as they are
    for key, value in repeated:  # an earlier copy of a top-level key: JSON readers keep the last
        pair = json.dumps(key) + ": " + json.dumps(value)
        text = "{" + pair + ("}" if text == "{}" else ", " + text[1:])
    return text.encode()


def _ops():
    return st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 10**6), st.sampled_from(JUNK)), max_size=6)


@st.composite
def damaged_files(draw):
    bases = draw(st.lists(st.one_of(contract_rows(), st.sampled_from(REAL_ROWS)), min_size=1, max_size=3))
    return [damage(json.loads(json.dumps(base)), draw(_ops())) for base in bases]


def _report(rows: list[bytes], rules) -> tuple[object, str]:
    source = Source("damaged.jsonl", stream=io.BytesIO(b"\n".join(rows) + b"\n"))
    result = run([source], rules, max_row_bytes=1 << 28)
    report = document.build(result, rules.values(), files=["damaged.jsonl"])
    return result, "".join(renderer("json")(report))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_files())
def test_any_damage_is_reported_deterministically_at_places_that_exist(rules, rows):
    result, first = _report(rows, rules)
    assert result.internal_errors == 0, [f.message for f in result.findings if f.name == "internal-error"]
    _, second = _report(rows, rules)
    assert first == second

    parsed = {number: orjson.loads(raw) for number, raw in enumerate(rows, 1)}  # damage keeps JSON valid
    for finding in result.findings:
        for place in (finding, *finding.related):
            if place.pointer == "":
                continue
            assert place.line in parsed, (finding.name, place)
            assert resolve(parsed[place.line], place.pointer, MISSING) is not MISSING, (finding.name, place.pointer)
