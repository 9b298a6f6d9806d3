"""Text from the data made safe to print: the one escaping every text and annotation format uses.

A finding quotes the data it is about (keys in its pointer, values and ids in its message, the
file's own name), and the data may hold anything. Printed raw, a newline in a key starts a line
of the reader's choosing, which a CI log takes for a command (GitHub Actions runs a line that
starts with `::`, after leading spaces, and one holding `##[` anywhere); an escape sequence
repaints a terminal. So every character that moves the cursor, ends a line, or reorders text is
shown as a visible escape (`\\n`, `\\x1b`, `\\u202e`), and a line never starts a command.
The JSON formats need none of this: their serialisers escape what JSON requires, and a reader
gets the data back exactly.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline too: a finding is one line), DEL, C1 controls (U+009B is an 8-bit
# escape sequence opener), the Unicode line and paragraph separators, the bidirectional marks,
# embeddings, overrides and isolates that reorder what a reader sees, and lone surrogates (which
# no UTF-8 output can hold).
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# The GitHub Actions runner's older command syntax, honoured anywhere in a line.
_OLD_COMMAND = "##["


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control, line-breaking or reordering character written as an escape,
    and no `##[` (a command wherever it is in a line)."""
    if not (text.isascii() and text.isprintable()):  # almost every string is
        text = _INVISIBLE.sub(_escape, text)
    if _OLD_COMMAND in text:
        text = text.replace(_OLD_COMMAND, "##\\x5b")
    return text


def text_line(text: str) -> str:
    """One line of a text format: `visible`, and never starting a command (`::`)."""
    text = visible(text)
    if text.lstrip().startswith("::"):
        text = text.replace(":", "\\x3a", 1)
    return text
