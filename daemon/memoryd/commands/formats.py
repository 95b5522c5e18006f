"""The value formats commands share: the argument type of counts and windows, a size as
people read it, the one JSON document a ``--json`` command prints."""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from ..progress import human_bytes

__all__ = ["for_terminal", "human_bytes", "is_terminal", "json_dumps", "positive_int", "seconds"]


def positive_int(text: str) -> int:
    """argparse type for counts and windows (``--days``, ``--top``): a whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seconds(text: str) -> float:
    """argparse type for a time span in seconds (``--timeout``): a finite number ≥ 0 (0: due
    at once)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


# What a terminal acts on instead of showing: C0 controls but tab and line feed, DEL, C1
# controls, and the bidirectional overrides and isolates that reorder the text after them.
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: str) -> str:
    """``text`` as a terminal shows it and never acts on it: a note's name, a query, a path
    from a transcript may hold an escape sequence (colours, a cleared screen, a changed
    title) or a carriage return that hides what precedes it; each such character is written
    as its escape (``\\x1b``). Only for a terminal: a pipe gets the text as it is."""
    return _TERMINAL_UNSAFE.sub(
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text
    )


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (what :func:`for_terminal` is for)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # (a closed stream, a stand-in without isatty)
        return False


def json_dumps(doc: Any) -> str:
    """The one JSON document a --json command prints (two-space indent, UTF-8 text).

    The standard library writes plain documents as orjson does and imports far faster; what
    it refuses (NaN, a type of its own) is orjson's to write.
    """
    import json

    try:
        out = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        pass
    else:
        try:
            out.encode("utf-8")
        except UnicodeEncodeError:
            # A name that is no UTF-8 (a path given as raw bytes: Python holds each bad byte
            # as a lone surrogate) would print as those bytes, and the document would not
            # be UTF-8; escaped, it is plain JSON, and says which bytes they were.
            return json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False)
        return out
    import orjson

    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
