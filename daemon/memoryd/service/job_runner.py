"""The daemon's job runner: organize / reflect / expire, one at a time, and between them the
learned calibration kept current (:data:`KEEP_LEARNED`).

APScheduler only *triggers* it and the main thread submits catch-up runs; whether a job is due
is decided from the ``jobs`` table at the moment it would start (:func:`~.schedule.job_is_due`),
so a missed period runs exactly once, and a DST change never makes two periods of one.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from datetime import tzinfo
from pathlib import Path
from typing import Any

from .. import clock
from ..config import Config, Paths
from ..log import get_logger
from ..store import Store
from .heap import release, resident_kb
from .schedule import job_is_due, last_fire_time

# The daemon's schedule as it stands (a reload may change it between two jobs).
ScheduleSnapshot = Callable[[], tuple[Config, Paths, tzinfo, dict[str, Any]]]

# Not a scheduled job: the learned calibration kept what learning would give
# (:func:`memoryd.own_history.keep_learned`), asked for at start, after a reload and when new
# verdicts come due, so the first dry run, ``explain`` or ``reflect`` after them need not learn.
KEEP_LEARNED = "calibration"
WORKSPACE_LOOK_SECONDS = 30.0  # how often a job held for a missing workspace looks again

log = get_logger("memoryd.service")


class JobRunner(threading.Thread):
    """Runs scheduled jobs one at a time; cron fires and catch-up requests both land here."""

    def __init__(
        self, schedule: ScheduleSnapshot, forget_runs_ahead: Callable[[Store], None]
    ) -> None:
        """``schedule``: the config, paths, zone and triggers in force, read before each job;
        ``forget_runs_ahead``: called with the job's store after each run (see
        :meth:`memoryd.service.main.Daemon.forget_runs_ahead`)."""
        super().__init__(name="memoryd-jobs", daemon=True)
        self.schedule = schedule
        self.forget_runs_ahead = forget_runs_ahead
        self._cond = threading.Condition()
        self._wanted: dict[str, str] = {}  # job → why
        # job → (why, the workspace it waits for): held while that folder is missing
        self._held: dict[str, tuple[str, Path]] = {}
        self._stopping = False
        self.current: str | None = None
        # when to ask for KEEP_LEARNED again (None: asked for, or not looked at yet), and
        # the wall time it was last done at (a clock set back before it: asked for again)
        self.calibration_due: float | None = None
        self.calibration_looked = -float("inf")

    def submit(self, name: str, reason: str) -> None:
        with self._cond:
            self._wanted.setdefault(name, reason)
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._wanted.clear()
            self._cond.notify()

    def run(self) -> None:
        while True:
            with self._cond:
                while not self._wanted and not self._stopping:
                    self._cond.wait(WORKSPACE_LOOK_SECONDS if self._held else None)
                    self._take_back_held()
                if self._stopping:
                    return
                name = next(iter(self._wanted))
                reason = self._wanted.pop(name)
            self.current = name
            try:
                self._run_one(name, reason)
            except Exception:  # e.g. the state database locked or unreadable
                # This thread must outlive any one job: a dead runner would never run a
                # job again while the daemon looked healthy (no WatchdogSec off systemd).
                log.error("job.runner_error", job=name, exc_info=True)
            finally:
                self.current = None
            # The job's working set (every hit row, for reflect and expire) is garbage now:
            # freed at once and handed back, or RSS follows the history's size (heap.py).
            freed = release()
            log.debug("memory.released", job=name, collected=freed.collected,
                      trimmed=freed.trimmed, rss_kb=resident_kb(),
                      py_blocks=sys.getallocatedblocks())  # fmt: skip

    def _take_back_held(self) -> None:
        """The jobs held for a missing workspace, wanted again once it is a folder (under
        the condition's lock; a reload submits its catch-up anyway)."""
        for name, (reason, workspace) in list(self._held.items()):
            if workspace.is_dir():
                self._wanted.setdefault(name, reason)
                del self._held[name]

    def _run_one(self, name: str, reason: str) -> None:
        from ..jobs import run_for_period

        if name == KEEP_LEARNED:
            self._keep_learned(reason)
            return
        cfg, paths, tz, triggers = self.schedule()
        now = clock.now()
        if name not in triggers:  # switched off ("off") by a reload since it was submitted
            log.info("job.off", job=name, reason=reason)
            return
        store = Store.open(paths.db)
        try:
            if not job_is_due(store, name, triggers[name], now, tz):
                log.debug("job.not_due", job=name, reason=reason)
                return
            if name != "organize" and not paths.workspace.is_dir():
                # (an unmounted disk, a workspace moved: a report of "0 files" would stand
                # for the period, and expire would decide on nothing; the job stays due and
                # runs once the folder is back)
                log.warning("job.workspace_missing", job=name, reason=reason,
                            workspace=str(paths.workspace))  # fmt: skip
                with self._cond:
                    self._held.setdefault(name, (reason, paths.workspace))
                return
            log.info("job.start", job=name, reason=reason)
            started = time.monotonic()
            fire = last_fire_time(triggers[name], now, tz)
            try:
                fired = fire.timestamp() if fire else None
                result = run_for_period(
                    name, cfg, paths, store, now, tz, fire=fired, scheduled=True
                )
            except Exception as exc:
                log.error("job.failed", job=name, duration=round(time.monotonic() - started, 3),
                          error=str(exc), exc_info=True)  # fmt: skip
                return
            finally:
                # The clock may have been set back while the job ran, after the main thread
                # forgot the runs recorded ahead: this run's row was not written yet then.
                self.forget_runs_ahead(store)
            summary = result.summary if result is not None else "already done"
            extra = result.data.get("log", {}) if result is not None else {}
            log.info("job.done", job=name, duration=round(time.monotonic() - started, 3),
                     summary=summary, changed=bool(result and result.changed),
                     **(extra if isinstance(extra, dict) else {}))  # fmt: skip
        finally:
            store.close()

    def _keep_learned(self, reason: str) -> None:
        """Learn the calibration again if it is out of date; note when to look next."""
        from ..own_history import LEARN_AGAIN_AFTER_FAILURE, keep_learned

        cfg, paths, _tz, _triggers = self.schedule()
        now = clock.now()
        self.calibration_looked = now
        self.calibration_due = now + LEARN_AGAIN_AFTER_FAILURE  # (an exception: one more try)
        started = time.monotonic()
        store = Store.open(paths.db)
        try:
            learned, due = keep_learned(cfg, paths, store, now)
        finally:
            store.close()
        self.calibration_due = due
        if learned:
            log.info("calibration.learned", reason=reason,
                     duration=round(time.monotonic() - started, 3),
                     next=clock.iso(due) if due != float("inf") else None)  # fmt: skip
