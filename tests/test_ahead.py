"""Lines proved ahead on a helper thread (`trajlint.check.ahead`): the answers and the report are
the ones of proving each line as it is taken."""

from __future__ import annotations

import threading

import pytest

from trajlint import api
from trajlint.check import ahead, engine, parallel
from trajlint.check.registry import load_rules
from trajlint.read import Line, OversizedLine

from .conftest import EXAMPLES


def _items(n: int) -> list:
    items = []
    for i in range(n):
        items.append(Line("f", i + 1, b'{"i": %d}' % i))
        if i % 7 == 3:
            items.append(OversizedLine("f", i + 100, 10**9))
    return items


@pytest.mark.parametrize("lines, size", [(1, 10**9), (3, 10**9), (64, 10**9), (10**6, 20)])
@pytest.mark.parametrize("count", [0, 1, 5, 64, 200])
def test_every_item_comes_once_in_order_with_its_own_answer(monkeypatch, lines, size, count):
    monkeypatch.setattr(ahead, "BATCH_LINES", lines)
    monkeypatch.setattr(ahead, "BATCH_BYTES", size)
    batches: list[int] = []
    threads: set[str] = set()

    def prove_many(raws):
        batches.append(len(raws))
        threads.add(threading.current_thread().name)
        return [("proof", raw) for raw in raws]

    items = _items(count)
    got = list(ahead.proved_ahead(iter(items), prove_many))
    assert [item for item, _ in got] == items
    assert [proof for item, proof in got] == [("proof", item.raw) if isinstance(item, Line) else None for item in items]
    assert sum(batches) == count and all(0 < n <= lines for n in batches)
    # Proved on the helper, unless the lines do not fill one batch: no thread is started for that.
    raws = [item.raw for item in items if isinstance(item, Line)]
    full = len(raws) >= lines or any(sum(map(len, raws[: n + 1])) >= size for n in range(min(len(raws), lines)))
    assert threads == (set() if not raws else {"trajlint-prove"} if full else {threading.current_thread().name})
    assert not any(t.name.startswith("trajlint-prove") for t in threading.enumerate())  # and joined


@pytest.mark.parametrize("line_bytes", [10, 40, 1000])
def test_no_more_than_a_few_lines_are_held_ahead(monkeypatch, line_bytes):
    """At most `BATCHES_AHEAD` batches and `BYTES_AHEAD` bytes beyond the batch being taken: a
    file of very long rows holds one batch (of one row) at a time."""
    monkeypatch.setattr(ahead, "BATCH_LINES", 2)
    monkeypatch.setattr(ahead, "BATCH_BYTES", 100)
    monkeypatch.setattr(ahead, "BATCHES_AHEAD", 3)
    monkeypatch.setattr(ahead, "BYTES_AHEAD", 200)
    read = 0

    def lines():
        nonlocal read
        for i in range(40):
            read += 1
            yield Line("f", i + 1, b"x" * line_bytes)

    per_batch = 1 if line_bytes >= 100 else 2
    batches_ahead = min(3, max(1, 200 // (per_batch * line_bytes)))
    for taken, _ in enumerate(ahead.proved_ahead(lines(), lambda raws: [None] * len(raws)), start=1):
        batch_end = -(-taken // per_batch) * per_batch
        assert read <= min(40, batch_end + batches_ahead * per_batch), (taken, read)


def test_a_failing_proof_reaches_the_reader_and_the_helper_is_joined(monkeypatch):
    monkeypatch.setattr(ahead, "BATCH_LINES", 2)

    def prove_many(raws):
        raise MemoryError("no room")

    with pytest.raises(MemoryError, match="no room"):
        list(ahead.proved_ahead(iter(_items(10)), prove_many))
    assert not any(t.name.startswith("trajlint-prove") for t in threading.enumerate())


def test_without_a_thread_to_be_had_the_lines_are_proved_here(monkeypatch):
    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(ahead.threading.Thread, "start", refuse)
    monkeypatch.setattr(ahead, "BATCH_LINES", 4)
    items = _items(30)
    got = list(ahead.proved_ahead(iter(items), lambda raws: [(threading.current_thread().name, raw) for raw in raws]))
    assert [item for item, _ in got] == items
    here = threading.current_thread().name
    assert [proof for _, proof in got] == [(here, item.raw) if isinstance(item, Line) else None for item in items]


def test_a_reader_that_stops_early_leaves_no_thread(monkeypatch):
    monkeypatch.setattr(ahead, "BATCH_LINES", 1)
    taken = ahead.proved_ahead(iter(_items(50)), lambda raws: [None] * len(raws))
    next(taken)
    taken.close()
    assert not any(t.name.startswith("trajlint-prove") for t in threading.enumerate())


def test_the_cores_list_proof_is_its_line_proof(core):
    rules = [r for r in load_rules().values() if r.impl.check or r.impl.reduction or r.impl.observed]
    checker = engine.RowChecker(rules)
    raws = [raw for path in sorted(EXAMPLES.glob("*.jsonl")) for raw in path.read_bytes().splitlines() if raw.strip()]
    raws += [b"{", b"[]", b'{"a": 1, "a": 2}', b"\xff"]
    assert checker.prove_many(raws) == [checker.prove(raw) for raw in raws]
    with pytest.raises(TypeError):
        checker.prove_many(["not bytes"])


@pytest.mark.parametrize("mode", ["on", "check"])
def test_reports_are_the_same_proved_ahead_or_not(core, monkeypatch, mode):
    from trajlint.read import native

    monkeypatch.setattr(native, "mode", lambda: mode)
    monkeypatch.setattr(ahead, "BATCH_LINES", 3)
    data = EXAMPLES.parent / "tests" / "data"
    paths = [str(p) for p in [*sorted(EXAMPLES.glob("*.jsonl")), data / "nemo-gym-0.7-persisted.jsonl", *sorted((data / "hostile").glob("*"))]]
    reports = {}
    real = engine.RowChecker.check_parts
    for cores in (1, 2):
        monkeypatch.setattr(parallel, "usable_cores", lambda cores=cores: cores)
        asked: list[bool] = []

        def spy(self, *args, asked=asked, **kwargs):
            asked.append(bool(args[4] if len(args) > 4 else kwargs.get("ahead")))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(engine.RowChecker, "check_parts", spy)
        result = api.check_paths(paths, isolated=True, jobs=1)
        assert asked and set(asked) == {cores > 1}
        reports[cores] = [(f.path, f.line, f.code, f.pointer, f.message, f.related) for f in result.findings]
    assert reports[1] == reports[2] and reports[1]
