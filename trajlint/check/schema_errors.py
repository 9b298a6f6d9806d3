"""Turn JSON Schema validation errors into trajlint's own (pointer, message) pairs.

Finding identity must not depend on the validation library: its message text, error order and
schema paths differ between backends. So every error is reduced to the instance location and
the failing keyword, and the message is written here from those facts alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from trajlint.pointer import escape, pointer  # noqa: F401  (re-exported for the rules)
from trajlint.row.values import json_type

_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def show(value: Any, limit: int = 60) -> str:
    """A short rendering of an offending value for a message."""
    if isinstance(value, dict):
        return "an object" if value else "{}"
    if isinstance(value, list):
        return f"an array of {len(value)}" if value else "[]"
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def got(value: Any) -> str:
    """The "got ..." part of a message: the JSON type, and the value when it is a scalar."""
    if value is None or isinstance(value, (dict, list)):
        return json_type(value) if value or value is None else show(value)
    return f"{json_type(value)} {show(value)}"


def _types_phrase(types: str | Sequence[str]) -> str:
    names = [types] if isinstance(types, str) else list(types)
    words = [_TYPE_NAMES.get(t, t) for t in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _field(path: Sequence[str | int], section: str) -> str:
    """How a message names the place: the innermost key, with its item index when in a list."""
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], str):
            tail = "".join(f"[{p}]" for p in path[i + 1 :])
            return f"`{path[i]}{tail}`"
    if path:
        return f"`{section}" + "".join(f"[{p}]" for p in path) + "`"
    return f"`{section}`"


def _single_types(subschemas: Sequence[Any]) -> list[str] | None:
    """The types of an anyOf/oneOf whose branches differ only by type, else None."""
    types: list[str] = []
    for sub in subschemas:
        if not isinstance(sub, dict) or set(sub) - {"type", "title", "description"}:
            return None
        t = sub.get("type")
        types.extend([t] if isinstance(t, str) else t or [])
    return types or None


def _required_sets(subschemas: Sequence[Any]) -> list[list[str]]:
    """The required keys of each branch, when every branch is told apart by what it requires."""
    sets = [sub.get("required") for sub in subschemas if isinstance(sub, dict)]
    if len(sets) != len(subschemas) or not all(isinstance(keys, list) and keys for keys in sets):
        return []
    return sets


def describe(error: Any, section: str) -> Iterator[tuple[list[str | int], str, str]]:
    """(path, keyword, message) for one backend-neutral `SchemaError`; some yield several.

    Only the instance path, the keyword, its schema value, the offending value and the schema
    object holding the keyword are read, so both validation backends get the same messages.
    """
    path = list(error.path)
    keyword = error.keyword
    expected = error.expected
    value = error.instance
    where = _field(path, section)

    if keyword == "depth":
        yield path, keyword, f"{where} is nested too deeply (hundreds of levels) to be validated"
    elif keyword == "type":
        yield path, keyword, f"{where} must be {_types_phrase(expected)}, got {got(value)}"
    elif keyword == "required":
        for name in expected or ():
            if isinstance(value, dict) and name not in value:
                yield path, keyword, f"{where} is missing the required field `{name}`"
    elif keyword == "additionalProperties" and expected is False and isinstance(value, dict):
        holder = error.schema if isinstance(error.schema, dict) else {}
        known = set(holder.get("properties", {}))
        patterns = holder.get("patternProperties", {})
        for key in value:
            if key in known or any(re.search(p, key) for p in patterns):
                continue
            yield path + [key], keyword, f"unknown field `{key}` in {where}"
    elif keyword == "enum":
        options = ", ".join(show(v) for v in expected)
        yield path, keyword, f"{where} must be one of {options}; got {show(value)}"
    elif keyword == "const":
        yield path, keyword, f"{where} must be {show(expected)}, got {show(value)}"
    elif keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}[keyword]
        yield path, keyword, f"{where} must be {op} {show(expected)}, got {show(value)}"
    elif keyword == "minLength" and expected == 1:
        yield path, keyword, f"{where} must not be empty"
    elif keyword in ("minLength", "maxLength"):
        bound = "at least" if keyword == "minLength" else "at most"
        yield path, keyword, f"{where} must be {bound} {expected} characters long, got {show(value)}"
    elif keyword in ("minItems", "maxItems"):
        bound = "at least" if keyword == "minItems" else "at most"
        yield path, keyword, f"{where} must hold {bound} {expected} items, got {len(value)}"
    elif keyword == "pattern":
        yield path, keyword, f"{where} must match /{expected}/, got {show(value)}"
    elif keyword in ("anyOf", "oneOf"):
        types = _single_types(expected)
        if types is not None:
            yield path, keyword, f"{where} must be {_types_phrase(types)}, got {got(value)}"
        elif _required_sets(expected):
            ways = " or ".join(" and ".join(f"`{k}`" for k in keys) for keys in _required_sets(expected))
            yield path, keyword, f"{where} must carry {ways} (non-empty), got {show(value, 120)}"
        else:
            yield path, keyword, f"{where} matches none of its allowed shapes, got {show(value)}"
    elif keyword is None:  # a `false` subschema
        yield path, keyword, f"{where} is not allowed here"
    else:
        yield path, keyword, f"{where} does not satisfy `{keyword}: {show(expected)}`; got {show(value)}"
