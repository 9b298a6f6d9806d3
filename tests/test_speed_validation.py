"""A checker remembers the last instance it found valid; asking for its errors then costs nothing."""

from __future__ import annotations

import pytest

from trajlint.contract import validate as validation


@pytest.fixture(params=["rust", "python"])
def backend(request, monkeypatch):
    if request.param == "rust":
        pytest.importorskip("jsonschema_rs")
    monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", request.param)
    validation._backend.cache_clear()
    yield request.param
    validation._backend.cache_clear()


def test_errors_of_an_instance_found_valid_or_invalid(backend):
    checker = validation.part_checker("common.schema.json#/$defs/ObservationGap")
    good = {"code": "no_sandbox_runtime"}
    bad = {"code": 7}
    assert checker.is_valid(good)
    assert list(checker.errors(good)) == []
    assert not checker.is_valid(bad)
    assert list(checker.errors(bad))  # found invalid: validated again, with its errors
    assert checker.is_valid(good)
    assert list(checker.errors(bad))  # another instance than the one remembered


def test_an_instance_without_errors_is_valid_without_validating_again(backend):
    checker = validation.part_checker("common.schema.json#/$defs/ObservationGap")
    good = {"code": "no_sandbox_runtime"}
    bad = {"code": 7}
    assert list(checker.errors(good)) == []
    assert checker.is_valid(good)
    assert list(checker.errors(bad))
    assert not checker.is_valid(bad)


def test_errors_of_a_valid_instance_are_not_collected(monkeypatch):
    # jsonschema-rs answers "is it valid?" well before it has collected no errors: it asks first.
    pytest.importorskip("jsonschema_rs")
    monkeypatch.setenv("TRAJLINT_SCHEMA_BACKEND", "rust")
    validation._backend.cache_clear()
    try:
        # jsonschema-rs's own checker: a run with the native core hands the rules the core's.
        checker = validation._RustChecker(validation.schemas.load("conversation-item"))
        collected = []
        real = checker._validator

        class Spy:
            def is_valid(self, instance):
                return real.is_valid(instance)

            def iter_errors(self, instance):
                collected.append(instance)
                return real.iter_errors(instance)

        monkeypatch.setattr(checker, "_validator", Spy())
        assert list(checker.errors({"type": "compaction_trigger"})) == []
        assert collected == []
        assert list(checker.errors({"type": "bogus"}))
        assert collected == [{"type": "bogus"}]
    finally:
        validation._backend.cache_clear()
