"""The value formats commands share: the argument type of counts and windows, a size as
people read it, the one JSON document a ``--json`` command prints."""

from __future__ import annotations

import argparse
from typing import Any


def positive_int(text: str) -> int:
    """argparse type for counts and windows (``--days``, ``--top``): a whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def human_bytes(n: int) -> str:
    """A size as people read it (``512 B``, ``3.4 KB``, ``35.9 MB``, ``1.2 GB``; binary units,
    as ``ls -lh`` and ``du -h`` count), in every command that prints one."""
    if n < 1024:
        return f"{n} B"
    for unit, shift in (("KB", 10), ("MB", 20)):
        if n < 1 << (shift + 10):
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n / (1 << 30):.1f} GB"


def json_dumps(doc: Any) -> str:
    """The one JSON document a --json command prints (two-space indent, UTF-8 text).

    The standard library's encoder writes plain documents (dicts, lists, strings, numbers)
    the way orjson does, and importing it costs a read command a fraction of what
    importing orjson does (which loads uuid, dataclasses and inspect for its type checks).
    What it refuses, NaN or a type of its own, is orjson's to write, as before.
    """
    import json

    try:
        return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        import orjson

        return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
