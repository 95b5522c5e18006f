"""Which of the daemon's jobs are due, and what its clocks say: the schedule's state, as
pure decisions over plain values (a trigger, a zone, an instant, the ``jobs`` table).

The rules of time themselves (cron reading, next fire, zones, periods) are
:mod:`memoryd.timerules`; the daemon's APScheduler triggers are :mod:`.cron_trigger`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any, NamedTuple

from ..clock import Clocks
from ..timerules import SCHEDULED_JOBS, period_key

if TYPE_CHECKING:
    from ..store import Store


def zone_to_follow(followed: str, pending: str | None, read: str) -> tuple[bool, str | None]:
    """Whether the daemon switches to the system zone ``read`` now, and the zone to remember.

    ``pending``: a different zone the previous look read (else None). A new zone is followed
    once two looks in a row read it: ``/etc/localtime`` relinked by hand reads as another zone
    for a moment, and a zone that flips at every look is never followed.
    """
    if read == followed:
        return False, None
    if read != pending:
        return False, read  # seen once: followed if the next look reads it too
    return True, None


# Look-back windows for the latest fire time: short first, so an hourly job costs two steps.
_LOOKBACK_SECONDS = (600, 7200, 2 * 86400, 40 * 86400, 400 * 86400, 3000 * 86400)


def _local(ts: float, tz: tzinfo) -> datetime:
    """An aware local time from epoch seconds, with ``fold`` right in a repeated hour (all
    arithmetic here is on epoch seconds: an aware datetime's is wrong across a DST change)."""
    return datetime.fromtimestamp(ts, tz)


def last_fire_time(trigger: Any, now: float, tz: tzinfo) -> datetime | None:
    """The latest time at or before ``now`` when ``trigger`` fires (None: never in 8 years)."""
    for window in _LOOKBACK_SECONDS:
        fire = trigger.get_next_fire_time(None, _local(now - window, tz))
        if fire is None or fire.timestamp() > now:
            continue
        while True:
            after = trigger.get_next_fire_time(fire, _local(fire.timestamp() + 1, tz))
            if after is None or after.timestamp() > now or after.timestamp() <= fire.timestamp():
                return fire
            fire = after
    return None


def next_fire_time(trigger: Any, now: float, tz: tzinfo) -> datetime | None:
    """The first fire time after ``now``."""
    return trigger.get_next_fire_time(None, _local(now + 1e-3, tz))


# --------------------------------------------------------------------------- what is due


SCHEDULED_SINCE = "schedule.since"  # meta key: when the daemon first ran on this state
OFF_UNTIL = "schedule.off_until.{job}"  # meta key: the latest time a daemon ran with it "off"


def mark_jobs_off(store: Store, jobs: Iterable[str], now: float) -> None:
    """Record that ``jobs`` were switched off until ``now``: their fires until then are not
    owed (a job switched on again waits for its next fire, not a catch-up)."""
    names = list(jobs)
    if names:
        with store.transaction():
            for name in names:
                store.set_meta(OFF_UNTIL.format(job=name), repr(now))


def switched_off(triggers: Mapping[str, Any]) -> list[str]:
    """The scheduled jobs without a trigger (``"off"``)."""
    return [name for name in SCHEDULED_JOBS if name not in triggers]


def job_is_due(store: Store, name: str, trigger: Any, now: float, tz: tzinfo) -> bool:
    """Whether ``name`` owes a run: its latest fire time's period has no recorded run yet.

    A run is recorded under the period of the fire it answers, so "no row at or after that
    period" means the fire was missed. Fires from before the daemon first ran on this state
    (installing memoryd must not archive notes on the spot) or while the job was switched off
    are not missed. Any row counts, failed ones too (retried at the next fire, not in a loop);
    several missed periods collapse into one run.
    """
    fire = last_fire_time(trigger, now, tz)
    if fire is None:
        return False
    scheduled_since = store.get_meta(SCHEDULED_SINCE)
    if scheduled_since is not None and fire.timestamp() < float(scheduled_since):
        return False  # that fire came before memoryd ever ran here: nothing was missed
    off_until = store.get_meta(OFF_UNTIL.format(job=name))
    with contextlib.suppress(ValueError, TypeError):
        if off_until is not None and fire.timestamp() <= float(off_until):
            return False  # the job was switched off then
    return not store.job_ran_since(name, period_key(name, fire.timestamp(), tz))


class FutureRecords(NamedTuple):
    """What :func:`forget_the_future` found recorded by a clock that was ahead."""

    runs: list[tuple[str, str, float]]  # (job, period, started) rows deleted
    marks: list[str]  # meta keys (first start, "off until") moved back to now

    def __bool__(self) -> bool:
        return bool(self.runs or self.marks)


def forget_the_future(store: Store, now: float, slack: float) -> FutureRecords:
    """Undo the schedule records a clock running ahead left behind (more than ``slack`` late).

    A job run while the clock was ahead is recorded under a period that has not come yet, and
    would make that period look done when it comes. So the runs recorded later than now are
    deleted (their work stays done: moves are in the journal), and "first started" and "off
    until" marks from then are moved back to now. A record less than ``slack`` ahead is kept.
    """
    limit = now + slack
    runs = store.runs_started_after(limit)
    marks: list[str] = []
    for key in (SCHEDULED_SINCE, *(OFF_UNTIL.format(job=name) for name in SCHEDULED_JOBS)):
        value = store.get_meta(key)
        with contextlib.suppress(ValueError, TypeError):
            if value is not None and float(value) > limit:
                marks.append(key)
    if runs or marks:
        with store.transaction():
            store.forget_runs_started_after(limit)
            for key in marks:
                store.set_meta(key, repr(now))
    return FutureRecords(runs, marks)


def due_jobs(store: Store, triggers: Mapping[str, Any], now: float, tz: tzinfo) -> list[str]:
    """The scheduled jobs whose latest period has not run yet, in schedule order."""
    return [name for name, trig in triggers.items() if job_is_due(store, name, trig, now, tz)]


class Gap(NamedTuple):
    """What happened between two readings that were meant to be ``expected`` seconds apart.

    ``slept``: the machine was suspended (boot clock ran, monotonic did not); ``stopped``: the
    process did not run although the machine did (SIGSTOP, a frozen VM, heavy swapping);
    ``clock_step``: the wall clock was set (+ forward, - back). Without a boot clock a sleep
    and a clock set forward look the same, and count as ``clock_step``.
    """

    kind: str  # "sleep", "suspended", "clock set forward" or "clock set back"
    seconds: float  # how far the wall clock moved beyond the expected wait (negative: back)
    slept: float
    stopped: float
    clock_step: float

    def message(self) -> str:
        """One line for the log: what happened, how long, and what the daemon does about it."""
        what = {
            "sleep": f"the machine slept {_span_text(self.slept)}",
            "suspended": f"the daemon was stopped for {_span_text(self.stopped)} "
            "(SIGSTOP, or the machine stalled)",
            "clock set forward": f"the wall clock moved {_span_text(self.clock_step)} forward "
            "(set by hand or NTP, or a sleep)",
            "clock set back": f"the wall clock was set back {_span_text(-self.clock_step)}",
        }[self.kind]
        if self.kind == "clock set back":
            return f"{what}; rescanning transcripts (no job runs twice for it)"
        return f"{what}; rescanning transcripts and running the jobs it missed"


def _span_text(seconds: float) -> str:
    """``45 s``, ``12.5 min``, ``9.0 h``, ``3.2 d``: a gap's length for a person."""
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def find_gap(prev: Clocks, cur: Clocks, expected: float, threshold: float) -> Gap | None:
    """The gap between two main-loop readings, when some part of it exceeds ``threshold``.

    ``expected``: the loop's wait plus the time it spent working after the first reading
    (the daemon running, not stopped). Monotonic time beyond ``expected`` is time the process
    did not run; boot-clock time beyond monotonic time is a sleep; wall time beyond boot-clock
    time (monotonic without a boot clock) is the clock being set. The largest part names the
    gap; None when every part is small.
    """
    d_wall, d_mono = cur.wall - prev.wall, cur.mono - prev.mono
    stopped = max(0.0, d_mono - expected)
    if cur.boot is not None and prev.boot is not None:
        d_boot = cur.boot - prev.boot
        slept = max(0.0, d_boot - d_mono)
        step = d_wall - max(d_boot, d_mono)
    else:
        slept, step = 0.0, d_wall - d_mono
    parts = {"sleep": slept, "suspended": stopped, "clock": abs(step)}
    kind = max(parts, key=lambda k: parts[k])
    if parts[kind] <= threshold:
        return None
    if kind == "clock":
        kind = "clock set forward" if step > 0 else "clock set back"
    return Gap(kind, d_wall - expected, slept, stopped, step)
