"""The one place memoryd asks for the time, so tests can move it.

``MEMORYD_NOW`` (epoch seconds or an ISO 8601 time) pins the clock; ``MEMORYD_CLOCK_OFFSET``
(seconds) shifts the real one (tests, and replaying a policy "as of" another day).
``MEMORYD_CLOCK_OFFSET_FILE`` names a file holding such an offset, re-read on every call, so a
test can make a running daemon see its wall clock jump.

Every reading lies between :data:`EARLIEST` and :data:`LATEST` (1970 to the year 9000), since
``datetime`` ends at 9999. A variable that puts the clock outside is refused like an
unparsable one (``ValueError``); an offset file that does is ignored, with one warning.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from datetime import UTC, datetime
from typing import NamedTuple

# The range of times memoryd's clock may read (epoch seconds): 1970-01-01 to 9000-01-01 UTC,
# far enough from datetime's end (9999-12-31) for a period's end or a local date to exist.
EARLIEST = 0.0
LATEST = 221845392000.0

_RANGE = "between 1970-01-01 and 9000-01-01"

# The offset file's last value the clock accepted, and whether a refused one was reported.
_file_shift = 0.0
_file_refused: str | None = None


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
    try:
        return dt.timestamp()
    except (OverflowError, OSError) as exc:  # (the year 1 with an offset east of UTC)
        raise ValueError(f"{text!r} is out of range") from exc


def in_range(ts: float) -> bool:
    """Whether ``ts`` is a time the clock may read (finite, 1970 to 9000)."""
    return math.isfinite(ts) and EARLIEST <= ts <= LATEST


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
        if not in_range(pinned_at):
            raise ValueError(f"$MEMORYD_NOW: {pinned!r} is not a time {_RANGE}")
        return pinned_at
    offset = os.environ.get("MEMORYD_CLOCK_OFFSET")
    try:
        shift = float(offset) if offset else 0.0
    except ValueError:
        shift = math.nan
    if not math.isfinite(shift):
        raise ValueError(f"$MEMORYD_CLOCK_OFFSET: {offset!r} is not a number of seconds")
    real = time.time()
    if not in_range(real + shift):
        raise ValueError(
            f"$MEMORYD_CLOCK_OFFSET: {offset!r} would put the clock outside the times {_RANGE}"
        )
    offset_file = os.environ.get("MEMORYD_CLOCK_OFFSET_FILE")
    if offset_file:
        shift += _shift_from_file(offset_file, real + shift)
    return real + shift


def _shift_from_file(path: str, base: float) -> float:
    """The offset the file holds now, or the last one accepted when it would put the clock
    outside its range (said once per refused value) or while the file is empty (a test
    rewriting it: between its truncation and its write); a file unreadable or gone: none."""
    global _file_shift, _file_refused
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
        if not text:
            return _file_shift  # (read mid-rewrite: the real clock would be a step back)
        shift = float(text)
    except (OSError, ValueError):
        return 0.0  # a test's file garbled or gone: the real clock
    if in_range(base + shift):
        _file_shift, _file_refused = shift, None
        return shift
    if _file_refused != text:
        _file_refused = text
        # Through stdlib logging (memoryd.log's pipeline in the daemon, stderr elsewhere):
        # memoryd.log reads this clock, so the clock does not import it.
        import logging

        message = (
            f"$MEMORYD_CLOCK_OFFSET_FILE: {text!r} would put the clock outside the times "
            f"{_RANGE}; ignored, the clock keeps its offset of {_file_shift:g} s"
        )
        extra = {"file": path, "offset": text, "kept": _file_shift, "text": message}
        logging.getLogger("memoryd.clock").warning("clock.offset_ignored", extra=extra)
    return _file_shift


def iso(ts: float | None) -> str | None:
    """ISO 8601 UTC with a Z, second precision (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- gaps


class Clocks(NamedTuple):
    """One reading of the three clocks the daemon compares to notice a gap
    (:func:`memoryd.service.schedule.find_gap`): ``wall``, memoryd's clock; ``mono``, which
    stops while the machine sleeps; ``boot``, which runs on (None where there is none)."""

    wall: float
    mono: float
    boot: float | None


# A clock that runs on while the machine sleeps, when the system has one (None: not known).
_BOOT_CLOCK: int | None = getattr(time, "CLOCK_BOOTTIME", None)
if _BOOT_CLOCK is None and sys.platform == "darwin":
    # macOS: clock_gettime's CLOCK_MONOTONIC counts sleep; time.monotonic() does not.
    _BOOT_CLOCK = getattr(time, "CLOCK_MONOTONIC", None)


def read_clocks(boot_clock: int | None = _BOOT_CLOCK) -> Clocks:
    """Wall, monotonic and boot clocks, read together (see :class:`Clocks`); a boot clock the
    kernel refuses (a sandbox lacking it) reads as None, as where there is none."""
    boot: float | None = None
    if boot_clock is not None:
        with contextlib.suppress(OSError):
            boot = time.clock_gettime(boot_clock)
    return Clocks(now(), time.monotonic(), boot)
