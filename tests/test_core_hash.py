"""The fingerprints' SHA-256: the native core's (`_core.sha256_hex`, which spares a run OpenSSL)
against hashlib's (`findings.sha256_hex`, the reference), and check mode comparing the two."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlint.findings import Rollout, fingerprint, sha256_hex
from trajlint.read import native


def test_the_reference_is_sha256_of_the_chunks_joined():
    assert sha256_hex(b"ab", b"", b"c") == hashlib.sha256(b"abc").hexdigest()
    assert sha256_hex() == hashlib.sha256(b"").hexdigest()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=6))
def test_the_core_hashes_as_hashlib(core, chunks):
    assert core.sha256_hex(*chunks) == sha256_hex(*chunks)


def test_the_core_hashes_long_input_as_hashlib(core):
    # Past every block boundary the SHA instructions take in one step, and a line-sized chunk.
    line = bytes(range(256)) * 40_001
    assert core.sha256_hex(line, b"\0", line[:63]) == sha256_hex(line, b"\0", line[:63])


def test_the_core_takes_bytes_only(core):
    with pytest.raises(TypeError):
        core.sha256_hex("text")


@pytest.mark.parametrize("rollout", [Rollout("task 7", "7-0"), None])
def test_fingerprints_alike_with_either_hash(core, rollout):
    args = ("TL101", "/ng_trajectory/turns/0", rollout, "runs/a.jsonl", b'{"x": 1}')
    assert fingerprint(*args, core.sha256_hex) == fingerprint(*args)


def test_each_mode_hashes_with_its_own(core, monkeypatch):
    monkeypatch.setenv("TRAJLINT_CORE", "off")
    assert native.sha256_hex() is sha256_hex
    native.mode.cache_clear()
    native.sha256_hex.cache_clear()
    monkeypatch.setenv("TRAJLINT_CORE", "on")
    assert native.sha256_hex() is core.sha256_hex


def test_check_mode_stops_on_a_hash_that_differs(core, monkeypatch):
    wrong = SimpleNamespace(sha256_hex=lambda *chunks: "0" * 64)
    monkeypatch.setattr(native, "_module", lambda: wrong)
    monkeypatch.setenv("TRAJLINT_CORE", "check")
    hash_hex = native.sha256_hex()
    with pytest.raises(native.CoreMismatch, match="SHA-256"):
        fingerprint("TL101", "", None, "a.jsonl", b"{}", hash_hex)
    right = SimpleNamespace(sha256_hex=core.sha256_hex)
    monkeypatch.setattr(native, "_module", lambda: right)
    native.sha256_hex.cache_clear()
    assert fingerprint("TL101", "", None, "a.jsonl", b"{}", native.sha256_hex()) == fingerprint("TL101", "", None, "a.jsonl", b"{}")
