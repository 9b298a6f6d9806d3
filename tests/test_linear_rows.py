"""The walks and lookups that are linear in a row's size give what the plain quadratic ones gave.

Each rewritten function is compared with the straightforward version it replaced, on random
small inputs, and checked on the long inputs that made the old one slow (bench/worst_cases.py
times those; nothing here asserts a time).
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from trajlint.builder import build
from trajlint.builder.evidence import Item, _bundle_invariants_hold
from trajlint.builder.ledger import AGENT, SESSION, CallEntry, CallIndex, Claim, ref_key
from trajlint.check.rules.structure import parent_cycle
from trajlint.check.subject import row_subject

from .rule_rows import call, invocation, row


def _violations(rule, data: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    subject = row_subject("t.jsonl", 1, orjson.dumps(data))
    return [(v.pointer, v.message, [loc.pointer for loc in v.related]) for v in rule(subject)]


def _parent_row(parents: dict[str, str | None]) -> dict[str, Any]:
    records = [invocation(i, **({"parent_invocation_id": p} if p is not None else {})) for i, p in parents.items()]
    return row([], records)


def _chain(n: int) -> dict[str, str | None]:
    return {f"inv{i}": (f"inv{i - 1}" if i else None) for i in range(n)}


# -- parent-cycle ----------------------------------------------------------------------------


def test_a_long_chain_without_a_cycle_has_no_parent_cycle():
    assert _violations(parent_cycle, _parent_row(_chain(3000))) == []


def test_a_cycle_at_the_end_of_a_long_chain_is_found_once():
    parents = _chain(3000)
    parents["inv0"] = "inv2"  # inv0 -> inv2 -> inv1 -> inv0, below 2,997 invocations leading into it
    found = _violations(parent_cycle, _parent_row(parents))
    assert len(found) == 1
    pointer, message, _ = found[0]
    assert pointer == "/ng_agent_observations/records/0/parent_invocation_id"
    assert "'inv0' → 'inv2' → 'inv1' → 'inv0'" in message


def test_a_cycle_through_a_whole_long_chain_is_found_once():
    parents = _chain(3000)
    parents["inv0"] = "inv2999"
    found = _violations(parent_cycle, _parent_row(parents))
    assert len(found) == 1
    assert len(found[0][2]) == 100  # the other 2,999 places, cited up to the cap


def _parent_cycles_walking_every_start(parents: dict[str, list[tuple[str, str]]]) -> list[tuple[str, list[str]]]:
    """The rule's former walk: every start to its end (cubic on a chain, but plainly right)."""
    reported: set[str] = set()
    out = []
    for start in parents:
        path: list[str] = []
        node: str | None = start
        while node in parents and node not in path and node not in reported:
            path.append(node)
            node = parents[node][0][0]
        if node is None or node not in path:
            continue
        cycle = path[path.index(node):]
        reported.update(cycle)
        out.append((parents[cycle[0]][0][1], cycle))
    return out


@pytest.mark.parametrize("seed", range(200))
def test_parent_cycle_finds_what_walking_every_start_finds(seed):
    rng = random.Random(seed)
    names = [f"i{k}" for k in range(rng.randrange(1, 12))]
    records = []
    for name in names * rng.choice((1, 1, 2)):  # an id may repeat, with another parent
        parent = rng.choice([*names, "gone", None])
        records.append(invocation(name, **({"parent_invocation_id": parent} if parent else {})))
    rng.shuffle(records)
    data = row([], records)
    parents: dict[str, list[tuple[str, str]]] = {}
    for k, record in enumerate(records):
        if "parent_invocation_id" in record:
            pointer = f"/ng_agent_observations/records/{k}/parent_invocation_id"
            parents.setdefault(record["invocation_id"], []).append((record["parent_invocation_id"], pointer))
    expected = _parent_cycles_walking_every_start(parents)
    found = _violations(parent_cycle, data)
    assert [(p, m.split(": ", 1)[1].split(";")[0]) for p, m, _ in found] == [
        (pointer, " → ".join(repr(m) for m in [*cycle, cycle[0]])) for pointer, cycle in expected
    ]


# -- the bundle's acyclic parents (NeMo Gym's invariant, which decides whether the bundle is valid) --


def _records(parents: dict[Any, Any]) -> list[Item]:
    return [Item(f"/r/{k}", {"kind": "agent_invocation", "invocation_id": i, "parent_invocation_id": p})
            for k, (i, p) in enumerate(parents.items())]


def test_bundle_invariants_on_a_long_chain_with_and_without_a_cycle_at_its_end():
    parents = _chain(5000)
    assert _bundle_invariants_hold(_records(parents))
    parents["inv0"] = "inv1"
    assert not _bundle_invariants_hold(_records(parents))


def _acyclic_walking_every_start(parents: dict[Any, Any]) -> bool:
    for start in parents:
        seen, node = set(), start
        while node in parents and node is not None:
            if node in seen:
                return False
            seen.add(node)
            node = parents[node]
    return True


@pytest.mark.parametrize("seed", range(200))
def test_bundle_invariants_agree_with_walking_every_start(seed):
    rng = random.Random(seed)
    names = [f"i{k}" for k in range(rng.randrange(1, 10))]
    parents = {name: rng.choice([*names, "gone", None, None]) for name in names}
    assert _bundle_invariants_hold(_records(parents)) == _acyclic_walking_every_start(parents)


# -- finding the calls a reference names ---------------------------------------------------------


def _match_by_filtering(calls: list[CallEntry], ref: Any) -> list[CallEntry] | None:
    """The former lookup: the calls of the id, filtered by the reference's other fields."""
    key = ref_key(ref)
    if key is None:
        return None
    call_id, model_ref, response_id = key
    if call_id is not None:
        return [e for e in calls if e.model_call_id == call_id
                and (model_ref is None or e.model_ref == model_ref)
                and (response_id is None or e.response_id == response_id)]
    if model_ref is not None and response_id is not None:
        return [e for e in calls if e.model_ref == model_ref and e.response_id == response_id]
    return None


@pytest.mark.parametrize("seed", range(100))
def test_call_index_matches_what_filtering_the_calls_matches(seed):
    rng = random.Random(seed)
    ids, servers, responses = ["a", "b", None], [("m", "p"), ("m", "q"), None], ["r1", "r2", None]
    calls = [CallEntry(k, rng.choice(ids), rng.choice(responses), rng.choice(servers), [f"/c/{k}"], True)
             for k in range(rng.randrange(0, 12))]
    index = CallIndex(calls)
    for _ in range(40):
        ref: Any = {}
        for name, values in (("model_call_id", [*ids, ""]), ("response_id", [*responses, ""]),
                             ("model_ref", [{"type": "m", "name": "p"}, {"type": "m", "name": "q"}, "x", None])):
            if rng.random() < 0.7:
                ref[name] = rng.choice(values)
        if rng.random() < 0.05:
            ref = "not a reference"
        expected = _match_by_filtering(calls, ref)
        found = index.match(ref)
        assert (None if found is None else list(found)) == expected, ref


def test_agent_owners_are_distinct_in_claim_order():
    entry = CallEntry(0, "c", None, None, ["/c/0"], True)
    owners = ["b", "a", "b", None, "c", "a"]
    entry.claims = [Claim(AGENT if k % 2 else SESSION, o, f"/p/{k}", valid=o != "c") for k, o in enumerate(owners)]
    assert entry.agent_owners(valid_only=False) == ["b", "a", "c"]
    assert entry.agent_owners() == ["b", "a"]


# -- the build's session ownership, looked up per invocation -----------------------------------


def test_session_ownership_goes_to_the_invocation_the_session_names():
    calls = [call(f"c{k}", k, client_session_id=f"inv{k % 3}") for k in range(9)]
    calls.append(call("c9", 9, client_session_id=["not", "an", "id"]))
    records = [invocation(f"inv{k}") for k in range(3)]
    built = build(row(calls, records))
    owners = {e.model_call_id: [(c.kind, c.owner) for c in e.claims] for e in built.ledger.calls}
    assert owners == {f"c{k}": [(SESSION, f"inv{k % 3}")] for k in range(9)} | {"c9": []}
    joined = {i["invocation_id"]: [r["model_call_id"] for r in i["model_calls"]]
              for i in built.trajectory["invocations"]}
    assert joined == {f"inv{j}": [f"c{k}" for k in range(j, 9, 3)] for j in range(3)}


def test_many_references_to_one_shared_id_share_one_candidate_tuple():
    built = build(row([call("x", k) for k in range(50)], [invocation("inv", *["x"] * 50)]))
    unresolved = built.ledger.unresolved
    assert len(unresolved) == 50 and all(u.reason == "ambiguous" for u in unresolved)
    assert unresolved[0].candidates == tuple(range(50))
    assert all(u.candidates is unresolved[0].candidates for u in unresolved)
