"""A transcript line's time: epoch seconds from what OpenClaw and Claude Code write, pure.

ISO strings (OpenClaw's ``2026-02-25T09:14:02.123Z`` read without detours), epoch seconds or
epoch milliseconds; None for anything else, never an exception.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def line_time(record: dict[str, Any], msg: dict[str, Any]) -> float | None:
    """The line's time: the record's, else the message's."""
    ts = line_epoch(record.get("timestamp"))
    return line_epoch(msg.get("timestamp")) if ts is None else ts


def to_epoch(value: Any) -> float | None:
    """Epoch seconds from an ISO string, epoch seconds or epoch milliseconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        v = float(value)
    elif isinstance(value, str):
        s = value.strip()
        if len(s) < 10 or s[4:5] != "-":  # not an extended ISO date: a number?
            try:
                v = float(s)
            except ValueError:
                return _iso_epoch(s)
        else:  # the usual case
            return _iso_epoch(s)
    else:
        return None
    if v != v or v <= 0:
        return None
    if v > 1e11:  # milliseconds
        v /= 1000.0
    return v if v < 1e10 else None


def _iso_epoch(s: str) -> float | None:
    try:
        dt = datetime.fromisoformat(s)
        return dt.timestamp() if dt.tzinfo is not None else None
    except (ValueError, OverflowError):  # not a date; a date beyond what an epoch holds
        return None


_fromisoformat = datetime.fromisoformat


def line_epoch(value: Any) -> float | None:
    """:func:`to_epoch`, OpenClaw's ``2026-02-25T09:14:02.123Z`` without its detours (for
    such a string ``to_epoch`` makes the same ``fromisoformat`` call after checks that cannot
    apply)."""
    if (
        type(value) is str
        and len(value) == 24
        and value[23] == "Z"
        and value[4] == "-"
        and not value[0].isspace()
    ):
        try:
            return _fromisoformat(value).timestamp()
        except (ValueError, OverflowError):
            return None
    return to_epoch(value)
