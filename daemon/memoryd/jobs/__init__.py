"""Scheduled jobs: organize (hourly), reflect (daily), expire (monthly), promote.

Each job module exposes ``run(cfg, paths, store, now, *, dry_run=False)`` returning a
:class:`memoryd.results.JobOutcome`; the CLI and the daemon call the same function.
:func:`run_for_period` records the period key (``expire:2026-11``) in the ``jobs`` table
when a run completes, so the daemon's catch-up runs a missed period exactly once.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable
from datetime import tzinfo

from .. import clock, faults
from ..config import Config, Paths
from ..results import JobOutcome
from ..store import Store
from ..timerules import period_key

JOB_NAMES = ("organize", "reflect", "expire", "promote")


# The jobs return typed results: OrganizeResult, ReflectResult, ExpireResult, PromoteResult.
JobFunc = Callable[..., JobOutcome]


def job_function(name: str) -> JobFunc:
    """The ``run`` function of ``memoryd.jobs.<name>`` (imported on demand)."""
    if name not in JOB_NAMES:
        raise KeyError(name)
    return importlib.import_module(f"memoryd.jobs.{name}").run


def scheduled_function(name: str) -> JobFunc:
    """What the daemon's scheduler runs for ``name``: ``run_scheduled`` when the job has one
    (the scheduled expire asks for consent and is capped), else ``run``."""
    if name not in JOB_NAMES:
        raise KeyError(name)
    module = importlib.import_module(f"memoryd.jobs.{name}")
    return getattr(module, "run_scheduled", module.run)


def run_for_period(
    name: str,
    cfg: Config,
    paths: Paths,
    store: Store,
    now: float,
    tz: tzinfo,
    *,
    force_rerun: bool = False,
    fire: float | None = None,
    scheduled: bool = False,
) -> JobOutcome | None:
    """Run ``name`` once for its period; None if already done.

    The period is that of ``fire``, the scheduled time the run answers (a catch-up at 00:05
    answers yesterday's 03:30 run), else that of ``now``. A failure is recorded as
    ``failed`` (and re-raised), so the next trigger of the period tries again.
    ``scheduled`` (the daemon) runs :func:`scheduled_function`.
    """
    period = period_key(name, now if fire is None else fire, tz)
    if not force_rerun and store.job_done(name, period):
        return None
    # memoryd's clock (the real one in production), as every other time in the jobs table:
    # the daemon compares it with now to find runs a clock running ahead recorded.
    started = clock.now()
    faults.point("job.started")  # (tests: the clock set while a run is under way)
    try:
        func = scheduled_function(name) if scheduled else job_function(name)
        result = func(cfg, paths, store, now)
    except Exception:
        with store.transaction():
            store.record_job(name, period, "failed", started, traceback.format_exc(limit=5))
        raise
    with store.transaction():
        store.record_job(name, period, "ok", started, result.summary)
    return result
