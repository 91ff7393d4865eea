"""Source text split into lines where Python's tokenizer ends them (``\\n``, ``\\r\\n``, ``\\r``)."""

from __future__ import annotations

import re

# ``str.splitlines`` also splits at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029, which the tokenizer
# treats as ordinary characters (a form feed on its own line is whitespace of that line): line
# numbers counted by it drift from the compiler's after the first such character.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_ENDS = re.compile(r"\r\n|\r")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """``text``'s lines as the compiler numbers them (line 1 at index 0)."""
    if keepends:
        return _LINE.findall(text)
    lines = _ENDS.sub("\n", text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def without_end(line: str) -> str:
    """``line`` without the line end :func:`source_lines` kept."""
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line[-1:] in ("\n", "\r") else line
