"""A line's bytes -> the value, strict JSON; or a `ParseError` naming why the line is not."""

from __future__ import annotations

import orjson

from trajlint.read.items import ParseError


def parse(raw: bytes) -> object | ParseError:
    """Strict JSON via orjson; only when it fails is the line examined again to name the cause.

    orjson accepts integers up to 64 bits (signed or unsigned) exactly and silently turns larger
    ones into floats; that precision loss is left for a later rule to report.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return _diagnose(raw, exc)


def _diagnose(raw: bytes, exc: orjson.JSONDecodeError) -> ParseError:
    if raw.startswith(b"\xef\xbb\xbf"):
        return ParseError("bom", "line starts with a UTF-8 byte order mark", 0)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        byte = raw[bad.start]
        return ParseError("utf8", f"invalid UTF-8 byte 0x{byte:02x} at byte {bad.start}", bad.start)
    text = raw.decode("utf-8")
    # orjson reports positions in characters of the decoded text; we report bytes.
    position = min(max(exc.pos, 0), len(text))
    offset = len(text[:position].encode("utf-8"))
    reason = exc.msg
    end = len(raw.rstrip(b" \t\r\n"))

    non_finite = _non_finite_literal(raw, offset)
    if non_finite is not None:
        literal, start = non_finite
        return ParseError("non-finite", f"{literal} is not valid JSON (at byte {start})", start)
    if reason.startswith("number is infinity"):
        return ParseError("syntax", f"number out of range: too large for a 64-bit float (at byte {offset})", offset)
    if not raw.strip(b" \t\r\n"):
        return ParseError("truncated", "no JSON value: the input is empty or only whitespace", 0)
    if reason.startswith("unexpected content after document"):
        return ParseError("syntax", f"extra data after the JSON value at byte {offset}", offset)
    if offset >= end or reason.startswith(("unexpected end of data", "EOF while parsing")):
        return ParseError("truncated", "line ends inside a JSON value (truncated?)", offset)
    if "surrogate" in reason:
        return ParseError("syntax", f"unpaired UTF-16 surrogate escape in a string (at byte {offset})", offset)
    return ParseError("syntax", f"invalid JSON at byte {offset}: {reason}", offset)


def _non_finite_literal(raw: bytes, offset: int) -> tuple[str, int] | None:
    """The bare NaN/Infinity token where orjson stopped, and its start.

    orjson stops at the token (older versions at the minus sign of "-Infinity", newer ones just
    after it); text inside a string never stops the parser, so it cannot be mistaken for one.
    """
    for start in (offset, offset - 1):
        if start >= 0 and raw.startswith(b"-Infinity", start):
            return "-Infinity", start
    for token in ("Infinity", "NaN"):
        if raw.startswith(token.encode(), offset):
            return token, offset
    return None
