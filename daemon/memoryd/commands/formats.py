"""The value formats commands share: the argument type of counts and windows, a size as
people read it, the one JSON document a ``--json`` command prints."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..progress import human_bytes

__all__ = ["human_bytes", "json_dumps", "positive_int", "seconds"]


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
