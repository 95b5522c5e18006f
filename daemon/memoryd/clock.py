"""The one place memoryd asks for the time, so tests can move it.

``MEMORYD_NOW`` (epoch seconds or an ISO 8601 time) pins the clock;
``MEMORYD_CLOCK_OFFSET`` (seconds) shifts the real one. Both exist for tests
and for replaying a policy "as of" another day; neither is needed in production.
``MEMORYD_CLOCK_OFFSET_FILE`` names a file holding such an offset, re-read on
every call: a test changes it to make a running daemon see its wall clock jump
(as after a wake from sleep), which an environment variable cannot do.
"""

from __future__ import annotations

import math
import os
import time
from datetime import UTC, datetime


def parse_instant(text: str) -> float:
    """Epoch seconds from ``"1772010846.0"`` or an ISO 8601 time (``Z`` allowed)."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def now() -> float:
    """Current time in epoch seconds, honouring the test overrides."""
    pinned = os.environ.get("MEMORYD_NOW")
    if pinned:
        try:
            pinned_at = parse_instant(pinned)
        except ValueError:
            pinned_at = math.nan
        if not math.isfinite(pinned_at):
            raise ValueError(
                f"$MEMORYD_NOW: {pinned!r} is neither epoch seconds nor an ISO 8601 time "
                "(such as 2026-03-01T12:00:00Z)"
            )
        return pinned_at
    offset = os.environ.get("MEMORYD_CLOCK_OFFSET")
    try:
        shift = float(offset) if offset else 0.0
    except ValueError:
        shift = math.nan
    if not math.isfinite(shift):
        raise ValueError(f"$MEMORYD_CLOCK_OFFSET: {offset!r} is not a number of seconds")
    offset_file = os.environ.get("MEMORYD_CLOCK_OFFSET_FILE")
    if offset_file:
        try:
            with open(offset_file, encoding="ascii") as fh:
                shift += float(fh.read().strip() or 0)
        except (OSError, ValueError):
            pass  # a test's file half-written or gone: the real clock
    return time.time() + shift


def iso(ts: float | None) -> str | None:
    """ISO 8601 UTC with a Z, second precision (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
