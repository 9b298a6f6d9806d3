"""Row values as rules and health read them: usable counts, and values as keys.

Two kinds of key, for two jobs: `hashable` matches one item with its copy by its ids (canonical,
keys sorted); `group_key` groups rows by an index the way NeMo Gym prints it (its JSON text as
written), and is what a report shows."""

from __future__ import annotations

from typing import Any

import orjson

# orjson 3.12 and 3.13 crash the process (SIGSEGV) writing a list of about 120 million items, and
# a row under the default size cap can hold one; a value read from a row is written whole only
# when a bounded count of its items says it is small.
WRITE_MAX_ITEMS = 1_000_000


def small(value: Any, limit: int = WRITE_MAX_ITEMS) -> bool:
    """Whether `value`'s arrays and objects hold at most `limit` items in all; counting stops
    once past it, so the answer costs at most `limit` steps whatever the value."""
    total = 0
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            total += len(current)
            items: Any = current.values()
        elif isinstance(current, list):
            total += len(current)
            items = current
        else:
            continue
        if total > limit:
            return False
        stack.extend(item for item in items if isinstance(item, (dict, list)))
    return True


def hashable(value: Any) -> Any:
    """`value` itself when it is a JSON scalar, else its canonical JSON text.

    A malformed id may be an array or an object (the schema rules report it); it must still
    match an equal copy, and neither hashing it nor `repr` (which recurses, and a row may nest
    1,000 levels) can be used. Beyond what orjson writes, the value is equal only to itself.
    """
    if value is None or isinstance(value, (str, int, float)):
        return value
    if not small(value):
        return ("too large to compare", id(value))
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return ("too deep to compare", id(value))


def group_key(value: Any) -> Any:
    """A grouping key for a JSON value (NeMo Gym's index keys are ints or strings in practice)."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if not small(value):
        return f"<{type(value).__name__} of {len(value):,} items>"
    try:
        return orjson.dumps(value).decode()
    except (TypeError, ValueError, RecursionError):  # nested deeper than JSON writers go
        return f"<{type(value).__name__} nested too deep>"


def nonnegative_int(value: Any) -> int | None:
    """A count NeMo Gym accepts: a JSON integer (not a boolean) >= 0; anything else is unknown."""
    return value if type(value) is int and value >= 0 else None


def json_type(value: Any) -> str:
    """What a JSON value is, in words for a message: "an integer", "an object", "null"."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int):
        return "an integer"
    return "a number"
