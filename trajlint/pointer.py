"""RFC 6901 JSON pointers, the way every stage names a place inside a row."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def escape(token: str | int) -> str:
    text = str(token)
    # Most tokens are plain keys and indices: testing first is cheaper than two replaces.
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


def pointer(parts: Iterable[str | int]) -> str:
    """The pointer for a path of object keys and array indices ("" is the whole document)."""
    return child("", *parts)


def child(base: str, *parts: str | int) -> str:
    for part in parts:
        base = f"{base}/{escape(part)}"
    return base


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


_MISSING = object()


def resolve(document: Any, ptr: str, default: Any = _MISSING) -> Any:
    """The value at `ptr`; raises KeyError (or returns `default`) when it does not resolve."""
    if ptr == "":
        return document
    node = document
    for token in ptr[1:].split("/"):
        token = unescape(token)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < len(node):
            node = node[int(token)]
        else:
            if default is _MISSING:
                raise KeyError(ptr)
            return default
    return node
