"""The core's proof of the structure family (TL402-TL410, src/families/structure.rs) against the
Python rules: what it proves clean, Python finds none of the family's rules on; what Python
flags, it does not prove; and the clean shapes it models, it proves.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajlint import api
from trajlint.check import fast

from .conftest import EXAMPLES, ROOT

CODES = sorted(fast.FAMILIES[fast.STRUCTURE])
BIT = fast.STRUCTURE


@pytest.fixture
def python_only(monkeypatch):
    monkeypatch.setenv("TRAJLINT_CORE", "off")


def _found(raw: bytes) -> set[str]:
    """The family's rules the Python path finds on the one row `raw`."""
    report = api.check_rows([raw], select=CODES, isolated=True)
    return {finding.code for finding in report.findings} & set(CODES)


def _proved(core, raw: bytes) -> bool:
    return core.clean_families(raw, BIT) == BIT


def _examples():
    for path in sorted((ROOT / "rules").glob("TL4*.toml")):
        entry = tomllib.loads(path.read_text())
        if entry["code"] not in CODES:
            continue
        for example in entry.get("example", []):
            for line in example["jsonl"].strip().splitlines():
                yield pytest.param(entry["code"], example["expect"], line.encode(), id=f"{entry['code']}-{example['expect']}")


@pytest.mark.parametrize(("code", "expect", "raw"), list(_examples()))
def test_catalog_examples(core, python_only, code, expect, raw):
    found = _found(raw)
    if expect == "fail":
        assert code in found
        assert not _proved(core, raw)
    else:
        assert not found
        assert _proved(core, raw)


def _row(**extra) -> dict:
    """A small clean row with a bundle, a trajectory and a capture, every id in use."""
    row = {
        "_ng_task_index": 3, "_ng_rollout_index": 1, "task_id": "t3",
        "ng_model_call_capture": {"rollout_id": "3-1", "calls": [{"model_call_id": "c1"}, {"model_call_id": "c2"}], "gaps": []},
        "ng_agent_observations": {"records": [
            {"kind": "agent_invocation", "invocation_id": "root"},
            {"kind": "agent_invocation", "invocation_id": "sub", "parent_invocation_id": "root"},
            {"kind": "tool_call", "invocation_id": "sub", "tool_call_id": "t1"},
            {"kind": "context_compaction", "invocation_id": "root"},
        ], "gaps": []},
        "ng_trajectory": {
            "task_id": "t3", "rollout_id": "3-1",
            "invocations": [{"invocation_id": "root"}, {"invocation_id": "sub", "parent_invocation_id": "root"}],
            "turns": [{"invocation_id": "root", "turn_no": 1, "task_id": "t3", "rollout_id": "3-1"},
                      {"invocation_id": "sub", "turn_no": 1, "task_id": "t3", "rollout_id": "3-1"}],
            "model_calls": [{"model_call_id": "c1"}, {"model_call_id": "c2"}],
            "tool_calls": [{"invocation_id": "sub", "tool_call_id": "t1"}],
            "gaps": [],
        },
        "ng_verifier_invocations": [{"invocation_id": "v1"}, {"invocation_id": "v2"}],
    }
    row.update(extra)
    return row


def _with(change) -> bytes:
    row = _row()
    change(row)
    return orjson.dumps(row)


def _set(path, value):
    def change(row):
        *parents, last = path
        node = row
        for key in parents:
            node = node[key]
        node[last] = value
    return change


def _del(*keys):
    def change(row):
        for key in keys:
            row.pop(key, None)
    return change


TRAJ, OBS, CAP = "ng_trajectory", "ng_agent_observations", "ng_model_call_capture"

#: (what, the row, the rules Python finds, whether the core proves it)
CASES = [
    ("clean", _with(lambda r: None), set(), True),
    ("empty model_call_ids repeat", _with(_set([CAP, "calls"], [{"model_call_id": ""}, {"model_call_id": ""}])), set(), True),
    ("non-string model_call_ids repeat", _with(_set([CAP, "calls"], [{"model_call_id": 1}, {"model_call_id": 1}])), set(), True),
    ("captured id repeats", _with(_set([CAP, "calls", 1, "model_call_id"], "c1")), {"TL402"}, False),
    ("stated call id repeats", _with(_set([TRAJ, "model_calls", 1, "model_call_id"], "c1")), {"TL402"}, False),
    ("verifier ids repeat", _with(_set(["ng_verifier_invocations", 1, "invocation_id"], "v1")), {"TL403"}, False),
    ("stated invocation repeats", _with(_set([TRAJ, "invocations", 1], {"invocation_id": "root"})), {"TL403"}, False),
    ("turn numbers repeat", _with(_set([TRAJ, "turns", 1, "invocation_id"], "root")), {"TL404"}, False),
    ("turn 1 and turn 1.0", _with(lambda r: r[TRAJ]["turns"].append({**r[TRAJ]["turns"][0], "turn_no": 1.0})), set(), True),
    ("turn true and turn 1", _with(lambda r: r[TRAJ]["turns"].append({**r[TRAJ]["turns"][0], "turn_no": True})), set(), True),
    ("turn 0 and turn -0", _with(lambda r: r[TRAJ]["turns"].extend([{**r[TRAJ]["turns"][0], "turn_no": 0},
                                                                     {**r[TRAJ]["turns"][0], "turn_no": "NEGZERO"}]))
     .replace(b'"NEGZERO"', b"-0"), {"TL404"}, False),
    ("bundle tool call repeats", _with(lambda r: r[OBS]["records"].append(dict(r[OBS]["records"][2]))), {"TL410"}, False),
    ("stated tool call repeats", _with(lambda r: r[TRAJ]["tool_calls"].append(dict(r[TRAJ]["tool_calls"][0]))), {"TL410"}, False),
    ("one tool call id, two invocations", _with(lambda r: r[TRAJ]["tool_calls"].append({"invocation_id": "root", "tool_call_id": "t1"})), set(), True),
    ("turn of another rollout", _with(_set([TRAJ, "turns", 0, "rollout_id"], "3-2")), {"TL405"}, False),
    ("turn of another task", _with(_set([TRAJ, "turns", 0, "task_id"], "t4")), {"TL405"}, False),
    ("turn ids not strings", _with(_set([TRAJ, "turns", 0, "task_id"], 3)), set(), True),
    ("capture of another rollout", _with(_set([CAP, "rollout_id"], "3-1-a1")), {"TL406"}, False),
    ("trajectory of another task", _with(_set([TRAJ, "task_id"], "t4")), {"TL406", "TL405"}, False),
    ("retry", _with(lambda r: (r.update(_ng_attempt_index=2), r[CAP].update(rollout_id="3-1-a2"),
                               r[TRAJ].update(rollout_id="3-1-a2"),
                               [t.update(rollout_id="3-1-a2") for t in r[TRAJ]["turns"]])), set(), True),
    ("retry unseen", _with(lambda r: r.update(_ng_attempt_index=2)), {"TL406"}, False),
    ("attempt true", _with(lambda r: (r.update(_ng_attempt_index=True), r[CAP].update(rollout_id="3-1-a1"),
                                      r[TRAJ].update(rollout_id="3-1-a1"),
                                      [t.update(rollout_id="3-1-a1") for t in r[TRAJ]["turns"]])), set(), True),
    ("attempt as a string", _with(lambda r: r.update(_ng_attempt_index="0")), set(), False),
    ("attempt as a list", _with(lambda r: r.update(_ng_attempt_index=[1])), set(), True),
    ("explicit rollout id", _with(lambda r: (r.update(_ng_rollout_id="run.7"), r[CAP].update(rollout_id="run.7"),
                                             r[TRAJ].update(rollout_id="run.7"),
                                             [t.update(rollout_id="run.7") for t in r[TRAJ]["turns"]])), set(), True),
    ("unusable explicit rollout id", _with(lambda r: r.update(_ng_rollout_id="-x")), set(), True),
    ("task id from the task index", _with(lambda r: (r.pop("task_id"), r[TRAJ].update(task_id="3"),
                                                     [t.update(task_id="3") for t in r[TRAJ]["turns"]])), set(), True),
    ("dispatched task id", _with(lambda r: r.update(_ng_task_id="d9")), {"TL406"}, False),
    ("dispatched task an object", _with(lambda r: (r.update(_ng_task_id={"taskset": "s", "task_id": "t3"}),
                                                   r[TRAJ].update(task_id={"taskset": "s", "task_id": "t3"}))), set(), True),
    ("dispatched task an object, stated as text", _with(lambda r: r.update(_ng_task_id={"taskset": "s", "task_id": "t3"})),
     {"TL406"}, False),
    ("task index a float", _with(lambda r: r.update(_ng_task_index=3.0)), {"TL406"}, False),
    ("no task index", _with(_del("_ng_task_index")), set(), True),
    ("self parent", _with(_set([OBS, "records", 0, "parent_invocation_id"], "root")), {"TL407"}, False),
    ("cycle across bundle and trajectory", _with(_set([TRAJ, "invocations", 0, "parent_invocation_id"], "sub")), {"TL407"}, False),
    ("second parent ignored by the walk", _with(lambda r: r[TRAJ]["invocations"].__setitem__(1, {"invocation_id": "sub", "parent_invocation_id": "sub"})), set(), True),
    ("empty ids in a cycle", _with(lambda r: r[TRAJ]["invocations"].append({"invocation_id": "", "parent_invocation_id": ""})), {"TL407"}, False),
    ("dangling parent", _with(_set([OBS, "records", 1, "parent_invocation_id"], "planner")), {"TL408"}, False),
    ("dangling parent explained", _with(lambda r: (_set([OBS, "records", 1, "parent_invocation_id"], "planner")(r),
                                                   r[CAP]["gaps"].append({"code": "subagent_parent_unavailable", "invocation_id": "sub"}))),
     set(), True),
    ("dangling parent, the tree incomplete", _with(lambda r: (_set([OBS, "records", 1, "parent_invocation_id"], "planner")(r),
                                                              r[TRAJ]["gaps"].append({"code": "subagent_hierarchy_incomplete"}))),
     set(), True),
    ("dangling parent, another invocation explained", _with(lambda r: (_set([OBS, "records", 1, "parent_invocation_id"], "planner")(r),
                                                                       r[OBS]["gaps"].append({"code": "subagent_parent_unavailable", "invocation_id": "root"}))),
     {"TL408"}, False),
    ("unknown tool call invocation", _with(_set([OBS, "records", 2, "invocation_id"], "worker")), {"TL409"}, False),
    ("unknown compaction invocation", _with(_set([OBS, "records", 3, "invocation_id"], "worker")), {"TL409"}, False),
    ("unknown turn invocation", _with(_set([TRAJ, "turns", 0, "invocation_id"], "worker")), {"TL409"}, False),
    ("empty tool call invocation", _with(_set([TRAJ, "tool_calls", 0, "invocation_id"], "")), set(), True),
    ("sections of other shapes", _with(lambda r: r.update({TRAJ: [], OBS: {"records": {}}, CAP: None, "ng_verifier_invocations": {}})), set(), True),
]


@pytest.mark.parametrize(("what", "raw", "found", "proved"), CASES, ids=[case[0] for case in CASES])
def test_states(core, python_only, what, raw, found, proved):
    assert _found(raw) == found
    assert _proved(core, raw) is proved


def test_long_chains_and_many_invocations(core, python_only):
    """Linear walks: a chain thousands deep is proved, the same chain closed into a cycle is not."""
    n = 5000
    records = [{"kind": "agent_invocation", "invocation_id": f"i{k}", **({"parent_invocation_id": f"i{k - 1}"} if k else {})}
               for k in range(n)]
    row = {"_ng_task_index": 0, "_ng_rollout_index": 0, "ng_agent_observations": {"records": records}}
    assert _proved(core, orjson.dumps(row))
    records[0]["parent_invocation_id"] = f"i{n - 1}"
    raw = orjson.dumps(row)
    assert not _proved(core, raw)
    assert _found(raw) == {"TL407"}


# --- mutations of real rows -------------------------------------------------------------------

_GENERATED: list[dict] = []


def _rows() -> list[dict]:
    if not _GENERATED:
        rows = [orjson.loads(raw) for raw in (EXAMPLES / "clean.jsonl").read_bytes().splitlines() if raw.strip()]
        with tempfile.TemporaryDirectory() as out:
            path = Path(out) / "generated.jsonl"
            subprocess.run(
                [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "12", "--defects", "0",
                 "--payload-kb", "1", "--seed", "11", "-o", str(path)],
                capture_output=True, check=True,
            )
            made = path.read_bytes()
        for raw in made.splitlines():
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
        _GENERATED.extend(rows)
    return _GENERATED


#: Lists the family reads, and the fields of their items it reads.
LISTS = {
    (CAP, "calls"): ("model_call_id",),
    (TRAJ, "model_calls"): ("model_call_id",),
    (TRAJ, "invocations"): ("invocation_id", "parent_invocation_id"),
    (TRAJ, "turns"): ("invocation_id", "turn_no", "task_id", "rollout_id"),
    (TRAJ, "tool_calls"): ("invocation_id", "tool_call_id"),
    (TRAJ, "gaps"): ("code", "invocation_id"),
    (OBS, "records"): ("kind", "invocation_id", "parent_invocation_id", "tool_call_id"),
    (OBS, "gaps"): ("code", "invocation_id"),
    (CAP, "gaps"): ("code", "invocation_id"),
    ("ng_verifier_invocations",): ("invocation_id",),
}
TOP = ("_ng_task_index", "_ng_rollout_index", "_ng_attempt_index", "_ng_rollout_id", "_ng_task_id", "task_id",
       "problem_id", "instance_id")
SECTION_IDS = ((TRAJ, "task_id"), (TRAJ, "rollout_id"), (CAP, "rollout_id"))
CODES_OF_GAPS = ("subagent_parent_unavailable", "subagent_hierarchy_incomplete")
KINDS = ("agent_invocation", "tool_call", "context_compaction", "sandbox")
_NEG_ZERO = "\x00negative zero\x00"


def _strings(row: dict) -> list[str]:
    found = []
    for path, fields in LISTS.items():
        for item in _list(row, path) or []:
            if isinstance(item, dict):
                found += [item[f] for f in fields if isinstance(item.get(f), str)]
    return found


def _list(row: dict, path: tuple[str, ...]):
    node = row
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node if isinstance(node, list) else None


@st.composite
def _value(draw, row: dict):
    known = _strings(row)
    return draw(st.one_of(
        st.sampled_from(known) if known else st.just("root"),
        st.sampled_from(["", "root", "0", "0-0", "1-0", "0-0-a1", "t", "é", "a b", *CODES_OF_GAPS, *KINDS]),
        st.integers(-3, 3), st.sampled_from([2**63, -(2**63), 2**64 - 1, 1.0, 0.5, -1.0, _NEG_ZERO]),
        st.booleans(), st.none(), st.just([]), st.just({}), st.just(["root"]),
    ))


@st.composite
def _mutated(draw):
    row = copy.deepcopy(draw(st.sampled_from(_rows())))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "drop-field", "duplicate", "drop-item", "add", "top", "section"]))
        if op == "top":
            key = draw(st.sampled_from(TOP))
            if draw(st.booleans()):
                row[key] = draw(_value(row))
            else:
                row.pop(key, None)
            continue
        if op == "section":
            section, key = draw(st.sampled_from(SECTION_IDS))
            if isinstance(row.get(section), dict):
                row[section][key] = draw(_value(row))
            continue
        path = draw(st.sampled_from(sorted(LISTS)))
        items = _list(row, path)
        if items is None:
            continue
        if op == "add" or not items:
            items.append({field: draw(_value(row)) for field in LISTS[path] if draw(st.booleans())})
            continue
        index = draw(st.integers(0, len(items) - 1))
        item = items[index]
        if op == "duplicate":
            items.insert(draw(st.integers(0, len(items))), copy.deepcopy(item))
        elif op == "drop-item":
            del items[index]
        elif isinstance(item, dict):
            field = draw(st.sampled_from(LISTS[path]))
            if op == "set":
                item[field] = draw(_value(row))
            else:
                item.pop(field, None)
    return orjson.dumps(row).replace(orjson.dumps(_NEG_ZERO), b"-0")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(raw=_mutated())
def test_a_proved_mutation_is_clean_in_python(core, raw):
    if _proved(core, raw):
        # a fixture's monkeypatch would not span hypothesis's examples
        with mock.patch.dict(os.environ, {"TRAJLINT_CORE": "off"}):
            assert not _found(raw)


# --- the identity's text, against Python's str() ----------------------------------------------

_TEXT = st.text(st.sampled_from(list("ab0-_.'\"\\ \t\n\r\x00\x1b\x7fé€")), max_size=6)
_SCALARS = st.one_of(_TEXT, st.integers(-(2**63), 2**64 - 1), st.booleans(), st.none(), st.sampled_from([1.5, -0.0, 2.0]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                       max_leaves=8)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES, key=st.sampled_from(["_ng_task_id", "task_id", "_ng_task_index"]), same=st.booleans())
def test_the_task_id_is_written_as_python_writes_it(core, value, key, same):
    """A row whose stated task id is `str()` of its task key is proved (when the key's text is
    modelled) and clean; one whose stated task id differs is never proved."""
    from trajlint.builder.identity import python_str

    text = python_str(value) if same else python_str(value) + "x"
    row = {"_ng_task_index": 0, "_ng_rollout_index": 0, key: value, "ng_trajectory": {"task_id": text}}
    raw = orjson.dumps(row)
    if not same:
        assert not _proved(core, raw)
        return
    if key != "_ng_task_index" and value is None:
        return  # not the task id: the next key is
    assert _proved(core, raw) is _modelled(value, top=True)
    with mock.patch.dict(os.environ, {"TRAJLINT_CORE": "off"}):
        assert not _found(raw)


def _modelled(value, top=False) -> bool:
    """Whether the core writes `str()` of the value: no float, no text beyond ASCII in a list or
    an object."""
    if isinstance(value, float):
        return False
    if isinstance(value, str):
        return top or value.isascii()
    if isinstance(value, list):
        return all(map(_modelled, value))
    if isinstance(value, dict):
        return all(_modelled(k) and _modelled(v) for k, v in value.items())
    return True


@pytest.mark.parametrize("value", [
    {"taskset": "arith:demo", "task_id": "arith-001"}, ["a'b", 'a"b', "a'\"b", "\\", "\t\x01\x7f"], [[], {}, None, True, -5],
    "é", 2**64 - 1,
])
def test_task_ids_of_every_modelled_shape_are_proved(core, value):
    from trajlint.builder.identity import python_str

    row = {"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_task_id": value, "ng_trajectory": {"task_id": python_str(value)}}
    assert _proved(core, orjson.dumps(row))
