"""The cheap first answers the strict-JSON rules give before scanning a line have no false negatives."""

from __future__ import annotations

import orjson
import pytest

from trajlint.check.rules.strict_json import duplicate_key, integer_out_of_range
from trajlint.check.subject import row_subject


@pytest.mark.parametrize(
    "number",
    [2**63, 2**64, 2**64 + 1, 10**19, 10**20 - 1, 10**25 + 7, 2**200, 10**308],
)
@pytest.mark.parametrize("sign", [1, -1])
def test_orjson_writes_an_oversized_integer_in_exponent_form(number, sign):
    # `integer-out-of-range` skips a row whose serialized form holds no `e+`: this is why.
    value = orjson.loads(str(sign * number).encode())
    if isinstance(value, int):
        return  # it fits in 64 bits (orjson keeps u64 and i64 exact): nothing to report
    assert isinstance(value, float)
    assert b"e+" in orjson.dumps(value)


def _findings(rule, raw: bytes) -> list[str]:
    return [v.pointer for v in rule(row_subject("t.jsonl", 1, raw))]


def test_oversized_integer_is_found_with_and_without_repeated_keys():
    assert _findings(integer_out_of_range, b'{"n": 99999999999999999999, "x": "1"}') == ["/n"]
    # A repeated key replaces the integer with a float written without `e+`: still reported.
    assert _findings(integer_out_of_range, b'{"a": 99999999999999999999, "a": 0.5}') == ["/a"]
    # A long digit run inside a string is no integer.
    assert _findings(integer_out_of_range, b'{"x": "123456789012345678901234567890"}') == []


def test_repeated_key_is_found_behind_an_escaped_colon():
    assert _findings(duplicate_key, b'{"k\\u003a": 1, "z": {"q": 1, "q": 2}}') == ["/z/q"]
    assert _findings(duplicate_key, b'{"k\\u003a": 1, "z": {"q": 1}}') == []


def test_has_exponent_is_the_plain_search():
    import random

    from trajlint.check.rules.strict_json import has_exponent

    rng = random.Random(5)
    cases = [b"", b"+", b"e", b"e+", b"+e", b"x" * 40 + b"e+", b"+" * 40 + b"e+", b"+" * 17 + b"e+", b"+" * 70 + b"e+", b"+" * 70, b"e" * 30]
    for _ in range(3000):
        cases.append(bytes(rng.choice(b"ex+1 ") for _ in range(rng.randrange(60))))
    for case in cases:
        assert has_exponent(case) == (b"e+" in case), case


@pytest.mark.parametrize(
    ("raw", "repeated"),
    [
        (b'{"a":1,"b":{"c":[1,2],"d":"x:y"}}', []),  # as orjson writes it: equal to its re-serialization
        (b'{"a":1,"b":{"c":[1,2],"c":"x:y"}}', ["/b/c"]),  # compact, but a key repeats
        (b'{"a": 1, "b": {"c": [1, 2], "d": "x:y"}}', []),  # written otherwise: the colons are counted
        (b'{"a": 1, "b": {"c": [1, 2], "c": "x:y"}}', ["/b/c"]),
        (b'{"a":1,"a":1}', ["/a"]),  # the same pair twice
    ],
)
def test_repeated_keys_are_found_however_the_line_is_written(raw, repeated):
    from trajlint.check.rules.strict_json import may_repeat_keys

    assert may_repeat_keys(raw, orjson.dumps(orjson.loads(raw))) == bool(repeated)
    assert _findings(duplicate_key, raw) == repeated
