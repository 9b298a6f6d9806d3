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

from trajlint.contract import items as conversation
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
    """The types of an anyOf/oneOf whose branches differ only by type, else None.

    A branch that is only a reference to one of the document's `$defs` is an object: every
    definition there is a model (`agent_ref` is an `AgentRef` or null).
    """
    types: list[str] = []
    for sub in subschemas:
        if isinstance(sub, dict) and set(sub) == {"$ref"} and str(sub["$ref"]).startswith("#/$defs/"):
            types.append("object")
            continue
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
    elif keyword == "dependentRequired" and isinstance(expected, dict) and isinstance(value, dict):
        for present, needed in expected.items():
            if present in value:
                for name in needed:
                    if name not in value:
                        yield path, keyword, f"{where} has `{present}` but is missing `{name}`"
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
    elif keyword == "not" and isinstance(expected, dict) and set(expected) == {"pattern"}:
        yield path, keyword, f"{where} must not match /{expected['pattern']}/, got {show(value)}"
    elif keyword is None:  # a `false` subschema
        yield path, keyword, f"{where} is not allowed here"
    else:
        yield path, keyword, f"{where} does not satisfy `{keyword}: {show(expected)}`; got {show(value)}"


# -- conversation items ----------------------------------------------------------------------------


def _relative(path: Sequence[str | int]) -> str:
    """`content[0].text`: a place inside an item, in the way people write it."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return f"`{text}`"


def _a(name: str) -> str:
    return ("an " if name.lstrip("`")[:1] in "aeiou" else "a ") + name


def _item_kind(item: dict[str, Any]) -> str:
    """How a message names an item: by its `type`, and by what NeMo Gym reads it as when that matters."""
    read = conversation.reading(item)
    if read == conversation.INPUT:
        seen_as = "an input message"
    elif read == conversation.OUTPUT:
        seen_as = "an output message"
    else:
        seen_as = _a(f"`{'message' if read is None or read.startswith('message:') else read}` item")
    if "type" not in item:
        return f"an item without `type` (read as {seen_as})"
    if read in (conversation.INPUT, conversation.OUTPUT):
        return f"a `message` item (read as {seen_as})"
    return seen_as


def _unreadable(item: dict[str, Any]) -> str:
    """Which value NeMo Gym's reading of the item trips on (see `trajlint.contract.items`)."""
    for name in ("role", "status"):
        if isinstance(item.get(name), (dict, list)):
            return f"its `{name}` is {json_type(item[name])}"
    content = item.get("content")
    first = content[0] if isinstance(content, list) and content else None
    return "its first content part's `type` is " + json_type(first.get("type") if isinstance(first, dict) else None)


_PATTERN_MEANS = {conversation.INT_TEXT: "an integer", conversation.BOOL_TEXT: "a boolean"}


def _lax_types(types: Any) -> str:
    """The types a lax number takes, named by the number (its string and boolean forms go without saying)."""
    names = [types] if isinstance(types, str) else list(types)
    for number in ("integer", "number"):
        if number in names and {"boolean", "string"} <= set(names):
            names = [number] + (["null"] if "null" in names else [])
    return _types_phrase(names)


def _is_lax_bool(branches: Any) -> bool:
    return isinstance(branches, list) and any(
        isinstance(b, dict) and b.get("pattern") == conversation.BOOL_TEXT for b in branches
    )


def _item_problem(path: list[str | int], error: Any, item: dict[str, Any]) -> str:
    """What is wrong at `path` inside an item, as a phrase that follows the item's name."""
    keyword, expected, value = error.keyword, error.expected, error.instance
    where = _relative(path) if path else "it"
    if keyword == "required":
        missing = [name for name in expected or () if isinstance(value, dict) and name not in value]
        return "lacks " + ", ".join(_relative([*path, name]) for name in missing)
    if keyword == "dependentRequired":
        missing = [name for name in conversation.TOKEN_FIELDS if name not in item]
        return "carries token metadata without " + ", ".join(f"`{name}`" for name in missing)
    if keyword == "type":
        return f"has {where} as {got(value)}, not {_lax_types(expected)}"
    if keyword == "enum":
        return f"has {where} {show(value)}, not one of {', '.join(show(v) for v in expected)}"
    if keyword == "const":
        return f"has {where} {show(value)}, not {show(expected)}"
    if keyword == "pattern" and expected == r"\S":
        return f"has a blank {where}"
    if keyword == "pattern":
        return f"has {where} {show(value)}, not {_PATTERN_MEANS.get(expected, f'matching /{expected}/')}"
    if keyword in ("anyOf", "oneOf") and _is_lax_bool(expected):
        return f"has {where} {show(value)}, not a boolean"
    if keyword in ("anyOf", "oneOf") and _required_sets(expected):
        ways = [" and ".join(f"`{k}`" for k in keys) for keys in _required_sets(expected)]
        holder = f" in {where}" if path else ""
        if keyword == "oneOf":
            return f"needs exactly one of {' and '.join(ways)}{holder}"
        return f"needs {' or '.join(ways)}{holder}"
    if keyword in ("anyOf", "oneOf") and _single_types(expected):
        return f"has {where} as {got(value)}, not {_types_phrase(_single_types(expected))}"
    if keyword in ("anyOf", "oneOf"):
        return f"has {where} in none of its allowed shapes ({show(value)})"
    if keyword is None:
        return f"has {where}, which is not allowed there"
    for _, _, message in describe(error._replace(path=tuple(path)), "item"):
        return "fails a check: " + message
    return f"fails `{keyword}` at {where}"


def describe_item(item: Any, errors: Sequence[tuple[list[str | int], Any]]) -> str:
    """One message for every schema error inside one conversation item (paths relative to the item).

    NeMo Gym rejects an item whole, so trajlint reports it once: what NeMo Gym reads it as, and
    each thing wrong with it, in a stable order whichever backend found them.
    """
    for path, error in errors:
        if not path and error.keyword == "type":
            return f"a conversation item must be an object, got {got(item)}"
        if path == ["type"] and error.keyword == "enum" and isinstance(item.get("type"), str):
            return f"unknown conversation item type {show(item['type'])}"
        if path == ["type"] and error.keyword == "type":
            return f"a conversation item's `type` must be a string, got {got(item.get('type'))}"
        if not path and error.keyword is None:
            return f"NeMo Gym cannot tell what kind of item this is: {_unreadable(item)}, where it expects a name"
    # A wrong literal fails its `enum` and its `type` alike: the enum, which lists the choices, says it.
    listed = {tuple(path) for path, error in errors if error.keyword in ("enum", "const")}
    problems = sorted(
        {_item_problem(path, error, item) for path, error in errors if not (error.keyword == "type" and tuple(path) in listed)}
    )
    return f"{_item_kind(item)} " + "; ".join(problems)
