"""TL0xx: JSON that parses, but not into what its text says — repeated keys, oversized integers.

orjson (like Python's json) keeps the last of repeated keys and reads an integer beyond 64 bits
as a float, both silently. Re-reading every line token by token would double the cost of the
hot path, so each rule first asks a cheap byte question that has no false negatives, and scans
the line only when it cannot rule the problem out:

- a repeated key drops a key-value pair, and with it at least one ``:`` that the line holds
  outside strings. Re-serializing the parsed value (orjson, C speed) tells: a line equal to it
  lost nothing (orjson never writes a key twice), and otherwise counting colons in both says
  whether anything was dropped; ``\\u003a`` escapes are the only way the re-serialized text
  gains a colon, so they are counted on the raw side.
- an integer that does not fit in 64 bits is a run of at least 19 digits; translating the line
  to digits-and-blanks finds such runs in one C pass, and only a run whose value overflows
  (possibly a digit run inside a string) asks for the scan.

The scan itself (`trajlint.read.strict`) is a small tokenizer that records the JSON pointer of
every repeated key and oversized integer. Where the native core was asked (`trajlint.read.native`)
its verdict replaces the cheap questions: a line it proves clean is neither re-serialized nor
scanned, and a line it does not is scanned to be explained.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from trajlint.check.rule import EVERY_FILE, Violation, row_rule
from trajlint.check.subject import Subject
from trajlint.pointer import child, resolve
from trajlint.read.native import OVERSIZED, REPEATED
from trajlint.read.strict import overflows, scan

__all__ = ["duplicate_key", "has_exponent", "integer_out_of_range", "may_overflow", "may_repeat_keys", "scan"]

_SHORTEST_OVERFLOW = 19  # -9223372036854775809 has 19 digits, 18446744073709551616 has 20
_MISSING = object()
_DIGIT_MAP = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN = b"0" * _SHORTEST_OVERFLOW
_ESCAPED_COLONS = (b"\\u003a", b"\\u003A")

def may_repeat_keys(raw: bytes, serialized: bytes | None) -> bool:
    """Whether the line may hold a repeated key: `serialized` (the parsed value as orjson writes
    it, None when it cannot be written) has fewer colons than the line."""
    if serialized is None:
        return True
    # A line written by orjson (as NeMo Gym writes rows) is its own re-serialization, and then
    # nothing was dropped: one comparison instead of three scans of the line.
    if serialized == raw:
        return False
    kept = serialized.count(b":")
    written = raw.count(b":")
    if b"\\u003" in raw:  # rare; testing for it first halves the cost on the usual line
        written += sum(raw.count(escape) for escape in _ESCAPED_COLONS)
    return kept < written


def _serialized(subject: Subject) -> bytes | None:
    """The parsed row as orjson writes it, made once per row for both rules."""
    return subject.memo("orjson-serialized", _serialize)


def _serialize(subject: Subject) -> bytes | None:
    if len(subject.raw) > SERIALIZE_MAX_BYTES:
        return None
    try:
        return orjson.dumps(subject.value)
    except (TypeError, orjson.JSONEncodeError):
        return None


# A row longer than this is never written again: orjson 3.12 and 3.13 crash the process writing a
# list of about 120 million items (240 MB of text at least), and a copy of a huge row costs its
# size again. Such a row's keys are counted instead, on both sides.
SERIALIZE_MAX_BYTES = 64 * 1024 * 1024
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _keys_may_repeat(subject: Subject) -> bool:
    return subject.memo("may-repeat-keys", _keys_may_repeat_of)


def _keys_may_repeat_of(subject: Subject) -> bool:
    if len(subject.raw) > SERIALIZE_MAX_BYTES:
        return written_keys(subject.raw) > parsed_keys(subject.value)
    return may_repeat_keys(subject.raw, _serialized(subject))


def written_keys(raw: bytes) -> int:
    """The key-value pairs a line of valid JSON writes: its colons outside strings (one C pass)."""
    return _STRING.sub(b'""', raw).count(b":")


def parsed_keys(value: object) -> int:
    """The keys of every object in a parsed value. A container's items are typed in one C pass
    (`map(type, ...)`), so an array of millions of numbers is passed over at C speed."""
    count = 0
    stack = [value]
    while stack:
        current = stack.pop()
        if type(current) is dict:
            count += len(current)
            items: Any = current.values()
        elif type(current) is list:
            items = current
        else:
            continue
        kinds = set(map(type, items))
        if dict in kinds or list in kinds:
            stack.extend(item for item in items if type(item) is dict or type(item) is list)
    return count


def _may_hold_oversized(subject: Subject) -> bool:
    """A cheap first answer to `may_overflow`, without false negatives.

    orjson reads an integer beyond 64 bits as a float of magnitude 2**63 or more (or refuses the
    line, beyond a double), and writes such a float in exponent form, `…e+18` and up. Unless a
    repeated key dropped part of the line, every integer it holds is in the parsed value, so a
    serialized row without `e+` holds no oversized integer; the byte scan of `may_overflow`
    costs ten times as much.
    """
    serialized = _serialized(subject)
    if serialized is None or _keys_may_repeat(subject):
        return True
    return has_exponent(serialized)


def has_exponent(serialized: bytes) -> bool:
    """`b"e+" in serialized`, found faster: `+` is rare and a one-byte search finds it at memory
    speed, while `e` is everywhere in text and slows the two-byte search down."""
    at = serialized.find(b"+")
    for _ in range(64):  # a row full of `+` is left to the plain search
        if at == -1:
            return False
        if serialized[at - 1 : at] == b"e":
            return True
        at = serialized.find(b"+", at + 1)
    return serialized.find(b"e+", at - 1) != -1


def may_overflow(raw: bytes) -> bool:
    if len(raw) < _SHORTEST_OVERFLOW:
        return False
    digits = raw.translate(_DIGIT_MAP)
    start = digits.find(_DIGIT_RUN)
    while start != -1:
        end = digits.find(b" ", start)
        end = len(digits) if end == -1 else end
        if overflows(raw[start:end], raw[start - 1 : start] == b"-"):
            return True
        start = digits.find(_DIGIT_RUN, end)
    return False


def _parsed(subject: Subject) -> bool:
    return subject.problem is None and subject.raw is not None


def _where(pointer: str) -> str:
    return f"the object at {pointer}" if pointer else "the row"


@row_rule("duplicate-key", reads=["line"], kinds=EVERY_FILE)
def duplicate_key(subject: Subject) -> Iterator[Violation]:
    # The native core's verdict, where it was asked, is exact: a line it clears needs no scan.
    if subject.strict is not None:
        if not subject.strict & REPEATED:
            return
    elif not _parsed(subject) or not _keys_may_repeat(subject):
        return
    for pointer, key, count in scan(subject.raw).repeated:
        target = child(pointer, key)
        # A repeat inside a value that a later repeat replaced is gone from the parsed row;
        # the outer repeat is reported, and the pointer of every finding resolves.
        if resolve(subject.value, target, _MISSING) is _MISSING:
            continue
        yield Violation(
            target,
            f"key {key!r} appears {count} times in {_where(pointer)}; JSON readers keep only one "
            "value (orjson and Python's json, so trajlint and NeMo Gym, the last), so the others "
            "are silently lost, and readers that keep the first see a different row",
        )


@row_rule("integer-out-of-range", reads=["line"], kinds=EVERY_FILE)
def integer_out_of_range(subject: Subject) -> Iterator[Violation]:
    if subject.strict is not None:
        if not subject.strict & OVERSIZED:
            return
    elif not _parsed(subject) or not _may_hold_oversized(subject) or not may_overflow(subject.raw):
        return
    for pointer, text in scan(subject.raw).oversized:
        value = resolve(subject.value, pointer, _MISSING)
        if not isinstance(value, float):
            continue  # in a value a repeated key replaced: duplicate-key reports it
        digits = text.decode()
        shown = digits if len(digits) <= 40 else f"{digits[:24]}… ({len(digits.lstrip('-'))} digits)"
        yield Violation(
            pointer,
            f"integer {shown} does not fit in 64 bits; trajlint reads it as the float {value!r}, "
            "which loses its exact value, and so do most JSON readers (orjson, JavaScript, "
            "pandas); Python's json, and so NeMo Gym, keeps it exact",
        )
