"""The JSON5 that people write by hand in ``openclaw.json``, read at JSON's speed.

A hand-edited ``openclaw.json`` has comments, trailing commas, unquoted keys and single
quotes; the ``json5`` package reads all of JSON5 but in pure Python, about 12 µs a byte (a
4 KB file: 50 ms, on every plugin hook's command). :func:`loads_common` rewrites just
those four forms into JSON for the standard library's parser and gives up (None) on
anything else: hexadecimal or signed numbers, escapes JSON lacks, non-ASCII identifiers,
line continuations. The caller then asks ``json5``, so the answer is always JSON5's
(``tests/cli/test_json5_common.py`` holds the two to the same value, or to this one saying
None).
"""

import json
import re
from typing import Any

# One token at a time: a string in either quote, a comment, a number, an identifier, a run
# of whitespace, or one other character. Anything a string could hold is inside its token,
# so a `//` in a URL is no comment.
_TOKEN = re.compile(
    r"""
      (?P<dq>"(?:[^"\\\n\r]|\\.)*")
    | (?P<sq>'(?:[^'\\\n\r]|\\.)*')
    | (?P<line>//[^\n\r\u2028\u2029]*)
    | (?P<block>/\*.*?\*/)
    | (?P<num>[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?)
    | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
    | (?P<ws>[ \t\n\r\v\f\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
# The escapes JSON has (``\u`` with its four digits); JSON5's others (``\x41``, ``\'`` in
# a double-quoted string, ``\0``, a backslash before a line end) are left to ``json5``.
_JSON_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4})')
# In a single-quoted string: an escape (kept, ``\'`` made a plain quote) or a double quote
# (escaped for JSON).
_SQ_PART = re.compile(r"\\.|\"", re.DOTALL)
_WORDS = {"true", "false", "null", "Infinity", "NaN"}  # JSON's words, and Python's json's
_PUNCTUATION = set("{}[],:-")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _json_escapes_only(body: str) -> bool:
    """Only JSON's escapes, and no UTF-16 surrogate (json pairs two into one character,
    ``json5`` keeps them apart: left to ``json5``, so the value is always its)."""
    return "\\" not in _JSON_ESCAPE.sub("", body) and not _SURROGATE_ESCAPE.search(body)


def _single_to_double(body: str) -> str | None:
    """A single-quoted string's body as a JSON string, None if it has escapes JSON lacks."""
    if not _json_escapes_only(body.replace("\\\\", "").replace("\\'", "")):
        return None
    parts = {"\\'": "'", '"': '\\"'}
    return '"' + _SQ_PART.sub(lambda m: parts.get(m.group(), m.group()), body) + '"'


class Uncommon(ValueError):
    """Not the common JSON5 of a hand-written file (or not JSON5): ask ``json5``."""


def loads_common(text: str) -> Any:
    """``text`` parsed, when it is JSON plus comments, trailing commas, unquoted ASCII keys
    and single-quoted strings; :class:`Uncommon` for anything else."""
    out: list[str] = []
    open_: list[str] = []  # the containers we are in, "{" or "["
    last = ""  # the previous significant token ("" at the start)
    comma_at = -1  # where in ``out`` the last comma is
    for match in _TOKEN.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind in ("ws", "line", "block"):
            out.append(" ")  # (kept apart: JSON5 allows no space where JSON allows none)
            continue
        at_key = bool(open_) and open_[-1] == "{" and last in ("{", ",")
        if kind == "other" and token not in _PUNCTUATION:
            raise Uncommon(token)
        if token in ("]", "}"):
            if last == ",":  # a trailing comma (after a value: checked at the comma)
                del out[comma_at]
            if not open_ or open_.pop() != ("[" if token == "]" else "{"):
                raise Uncommon(token)
        elif token in ("[", "{"):
            open_.append(token)
        elif token == ",":
            if last in ("", ",", "[", "{", ":"):
                raise Uncommon("a comma after no value")
            comma_at = len(out)
        if kind == "dq":
            if not _json_escapes_only(token[1:-1]):
                raise Uncommon("an escape JSON lacks")
        elif kind == "sq":
            converted = _single_to_double(token[1:-1])
            if converted is None:
                raise Uncommon("an escape JSON lacks")
            token = converted
        elif kind == "ident":
            if at_key:  # (a key without its colon fails in json.loads below)
                token = json.dumps(token)
            elif token not in _WORDS:
                raise Uncommon(token)
        out.append(token)
        last = token
    try:
        return json.loads("".join(out))
    except (ValueError, RecursionError) as exc:
        raise Uncommon(str(exc)) from None
