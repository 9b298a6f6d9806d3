"""The Python reference for strict JSON: every repeated key and oversized integer of a line.

The scan is a small tokenizer over a line orjson parsed, iterative so that no nesting depth can
overflow the stack, which records the JSON pointer of every repeated key and oversized integer.
TL005/TL006 (`trajlint.check.rules.strict_json`) report what it finds; the native core's
verdicts are compared with it (`TRAJLINT_CORE=check`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

import orjson

from trajlint.pointer import child

# Integers orjson keeps exact: i64 and u64.
_MIN_INT = -(2**63)
_MAX_INT = 2**64 - 1

# One token, after optional whitespace. The string pattern is the "unrolled loop" form, linear
# on long strings; a number's fraction and exponent are captured to tell integers apart.
_TOKEN = re.compile(
    rb'[ \t\r\n]*(?:(?P<string>"[^"\\]*(?:\\.[^"\\]*)*")'
    rb"|(?P<number>-?(?:0|[1-9][0-9]*))(?P<real>(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    rb"|(?P<punct>[{}\[\],:])"
    rb"|(?:true|false|null))",
    re.DOTALL,
)


class _Object:
    __slots__ = ("pointer", "keys", "key", "expect_key")

    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.keys: dict[str, int] = {}
        self.key = ""
        self.expect_key = True


class _Array:
    __slots__ = ("pointer", "index")

    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.index = 0


class Scan(NamedTuple):
    repeated: tuple[tuple[str, str, int], ...]  # (object pointer, key, occurrences)
    oversized: tuple[tuple[str, bytes], ...]  # (value pointer, the integer as written)


def overflows(digits: bytes, negative: bool) -> bool:
    # Lengths first: int() refuses strings over 4,300 digits, and a digit run in a string may be
    # any length (or start with zeros, which JSON numbers never do).
    digits = digits.lstrip(b"0")
    if len(digits) != 19 and len(digits) != 20:
        return len(digits) > 20
    return int(digits) > (-_MIN_INT if negative else _MAX_INT)


@lru_cache(maxsize=4)
def scan(raw: bytes) -> Scan:
    """Every repeated key and oversized integer of a line that orjson parsed (so valid JSON)."""
    repeated: list[tuple[str, str, int]] = []
    oversized: list[tuple[str, bytes]] = []
    stack: list[_Object | _Array] = []
    position, end = 0, len(raw.rstrip(b" \t\r\n"))
    match = _TOKEN.match
    while position < end:
        token = match(raw, position)
        if token is None:  # cannot happen on valid JSON; never loop forever on anything else
            break
        position = token.end()
        top = stack[-1] if stack else None
        text = token.group("string")
        if text is not None:
            if isinstance(top, _Object) and top.expect_key:
                key = orjson.loads(text)
                top.keys[key] = top.keys.get(key, 0) + 1
                top.key, top.expect_key = key, False
            continue
        number = token.group("number")
        if number is not None:
            negative = number.startswith(b"-")
            if not token.group("real") and overflows(number.lstrip(b"-"), negative):
                oversized.append((_value_pointer(top), number))
            continue
        punct = token.group("punct")
        if punct == b"{":
            stack.append(_Object(_value_pointer(top)))
        elif punct == b"[":
            stack.append(_Array(_value_pointer(top)))
        elif punct in (b"}", b"]"):
            closed = stack.pop()
            if isinstance(closed, _Object):
                repeated.extend((closed.pointer, key, n) for key, n in closed.keys.items() if n > 1)
        elif punct == b",":
            if isinstance(top, _Array):
                top.index += 1
            elif top is not None:
                top.expect_key = True
    return Scan(tuple(repeated), tuple(oversized))


def _value_pointer(top: _Object | _Array | None) -> str:
    if top is None:
        return ""
    if isinstance(top, _Array):
        return child(top.pointer, top.index)
    return child(top.pointer, top.key)
