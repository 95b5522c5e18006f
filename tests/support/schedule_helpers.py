"""Helpers for the schedule's tests (``test_daemon_jobs``, ``test_laptop``): an instant from
ISO text, the daemon's triggers for a schedule, and a run recorded as the daemon records it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from memoryd.config import Config, ScheduleConfig
from memoryd.jobs import period_key
from memoryd.service.cron_trigger import build_triggers
from memoryd.service.schedule import last_fire_time
from memoryd.store import Store


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def triggers(tz: tzinfo, **schedule: str) -> dict[str, Any]:
    return build_triggers(Config(schedule=ScheduleConfig(**schedule)), tz)


def record(
    store: Store,
    job: str,
    now: float,
    tz: tzinfo,
    trig: Mapping[str, Any] | None = None,
    status: str = "ok",
) -> None:
    """A run at ``now`` as the daemon records it: under the period of the fire it answers
    (``trig``: the triggers it runs by, the default schedule's when None)."""
    fire = last_fire_time((trig or triggers(tz))[job], now, tz)
    with store.transaction():
        store.record_job(job, period_key(job, fire.timestamp(), tz), status, now, "test")
