"""Row values as dict keys, for the rules that match one item with its copy by its ids."""

from __future__ import annotations

from typing import Any

import orjson


def hashable(value: Any) -> Any:
    """`value` itself when it is a JSON scalar, else its canonical JSON text.

    A malformed id may be an array or an object (the schema rules report it); it must still
    match an equal copy, and neither hashing it nor `repr` (which recurses, and a row may nest
    1,000 levels) can be used. Beyond what orjson writes, the value is equal only to itself.
    """
    if value is None or isinstance(value, (str, int, float)):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return ("too deep to compare", id(value))
