"""The daemon's APScheduler trigger: memoryd's own cron reading, so it fires what ``status`` shows.

APScheduler 3.11's ``CronTrigger`` loses a day after a spring-forward DST change (asked for
the fire after ``0 0 * * *``'s midnight on 2026-03-29 in Berlin, it answers the 31st), so the
daemon asks :func:`memoryd.timerules.next_fire`, as ``status`` does, and uses APScheduler only
to wait, run and coalesce. Imported inside the daemon only.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

from apscheduler.triggers.base import BaseTrigger

from ..config import job_schedules
from ..timerules import CronSpec, next_fire

if TYPE_CHECKING:
    from ..config import Config


class WallClockCron(BaseTrigger):
    """Fires at the wall-clock minutes ``spec`` names in ``tz`` (see :mod:`memoryd.timerules`)."""

    __slots__ = ("expr", "spec", "timezone")

    def __init__(self, spec: CronSpec, tz: tzinfo, expr: str) -> None:
        self.spec = spec
        self.timezone = tz
        self.expr = expr

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        # After a fire, the next one after it (APScheduler lists every fire between the last
        # and now, to coalesce them after a sleep); at the start, the first at or after now.
        if previous_fire_time is None:
            after = now.timestamp()
        else:
            after = previous_fire_time.timestamp() + 1
        ts = next_fire(self.spec, after, self.timezone)
        return None if ts is None else datetime.fromtimestamp(ts, self.timezone)

    def __str__(self) -> str:
        return f"cron[{self.expr}]"

    def __repr__(self) -> str:
        return f"<WallClockCron ({self.expr!r}, timezone={self.timezone!s})>"


def build_triggers(cfg: Config, tz: tzinfo) -> dict[str, WallClockCron]:
    """One trigger per scheduled job, fired as :func:`memoryd.timerules.next_fire` reads it.

    The expressions were checked when the configuration loaded. A job whose schedule is
    ``"off"`` gets no trigger: the daemon neither fires it nor catches it up.
    """
    return {
        name: WallClockCron(spec, tz, getattr(cfg.schedule, name))
        for name, spec in job_schedules(cfg).items()
    }
