"""The daemon (``memoryd run``): follow transcripts live, fire the jobs on time, talk to systemd.

* **One ingest worker** (:mod:`.ingest_worker`) owns the scanner and its own connection; file
  events only queue paths, and a stat-only full rescan at start, every
  ``daemon.rescan_seconds``, after a gap and on SIGHUP catches whatever events were lost.
* **One job runner** (:mod:`.job_runner`) runs the jobs one at a time, when due by the
  ``jobs`` table; APScheduler only triggers it.
* **The main thread** handles signals, checks liveness before each ``WATCHDOG=1``, notices
  gaps and a change of the system's time zone, and keeps ``STATUS=`` current.

The decisions (:mod:`.schedule`, :mod:`.systemd`) are pure; the threads and this module are
the imperative shell.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Any

from .. import clock, faults
from ..clock import read_clocks
from ..config import (
    Config,
    ConfigError,
    OpenClawJsonError,
    Paths,
    load_config,
    resolve_paths,
    schedule_timezone,
)
from ..errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from ..health import HealthNote, damage_record, stalled_for
from ..hit_counts import hits_since
from ..locks import AlreadyRunning, StateLock
from ..log import configure as configure_logging
from ..log import get_logger, resolve_format
from ..store import Store
from ..store_errors import StoreDamaged
from ..timerules import local_midnight, local_zone
from .cron_trigger import build_triggers
from .ingest_worker import IngestWorker, TranscriptEvents, WorkQueue
from .job_runner import KEEP_LEARNED, JobRunner
from .schedule import (
    SCHEDULED_SINCE,
    Gap,
    due_jobs,
    find_gap,
    forget_the_future,
    mark_jobs_off,
    next_fire_time,
    switched_off,
    zone_to_follow,
)
from .systemd import Notifier, StatusFacts, status_line
from .watches import Watches, wanted_folders

log = get_logger("memoryd.service")


# How long SIGTERM waits for a running job to reach its end (the unit's TimeoutStopSec is 90 s).
JOB_STOP_GRACE_SECONDS = 60.0
# How long the worker may take to drain its queue on shutdown.
WORKER_STOP_GRACE_SECONDS = 20.0
# The main loop's tick: clock-jump checks and liveness; cheap enough to stay far under 1 % CPU.
TICK_SECONDS = 1.0
# The wall clock this far behind the calibration's last look is a clock set back, not a
# time server's step: the calibration is looked at again.
CLOCK_SET_BACK_SECONDS = 60.0
# STATUS= is refreshed at most this often (it costs a query).
STATUS_EVERY_SECONDS = 15.0
# APScheduler's settings for every cron job: fires noticed late make one run, however late
# (its default grace, 1 s, drops a fire a loaded machine or a short sleep delayed). Running a job
# twice is no risk: the job runner runs it only while its period is owed (docs/service.md).
SCHEDULER_JOB_DEFAULTS: dict[str, Any] = {"coalesce": True, "max_instances": 1,
                                          "misfire_grace_time": None}  # fmt: skip


@dataclass
class _Flags:
    stop: str | None = None  # the signal's name
    reload: bool = False


class Daemon:
    """The running process: owns the lock, the threads and the notify socket."""

    def __init__(
        self, cfg: Config, paths: Paths, *, config_file: str | None, environ: Mapping[str, str]
    ) -> None:
        self.cfg, self.paths = cfg, paths
        self.config_file = config_file
        self.environ = environ
        self.tz = schedule_timezone(cfg)
        self.triggers = build_triggers(cfg, self.tz)
        self.notifier = Notifier(environ)
        self.queue = WorkQueue()
        # A rescan due one tick after an observer restart (see _restart_observer)
        self._rescan_when_watching = False
        self.flags = _Flags()
        self.wake = threading.Event()
        self.handler = TranscriptEvents(self.queue, self.offer)
        self._schedule_lock = threading.Lock()
        self._zone_seen: str | None = None  # a new system zone read once, not yet followed
        self._watched: frozenset[Path] = frozenset()
        self._agents_root = paths.state_dir / "agents"
        # The scanner's file-name filter (pure); set once the worker has built its scanner.
        self.is_transcript: Callable[[Path], bool] = lambda p: ".jsonl" in p.name
        self.worker: IngestWorker | None = None
        self.jobs: JobRunner | None = None
        self.scheduler: Any = None
        self.watches: Watches | None = None
        self.store: Store | None = None
        self.health: HealthNote | None = None
        self.started = clock.now()
        # The ingest worker's last progress mark, when it changed (monotonic), and the stall
        # being reported ({since, doing, waiting}), if any.
        self._progress_mark: tuple[str | None, int, int] = (None, 0, 0)
        self._progress_at = time.monotonic()
        self.stalled: dict[str, Any] | None = None

    # ------------------------------------------------------------ shared with threads

    def schedule_snapshot(self) -> tuple[Config, Paths, tzinfo, dict[str, Any]]:
        with self._schedule_lock:
            return self.cfg, self.paths, self.tz, dict(self.triggers)

    def offer(self, path: Path) -> None:
        """A file changed: queue it when it is a transcript we follow (watchdog's thread)."""
        if not self.is_transcript(path):
            return
        followed = self._watched
        for parent in path.parents:
            if parent in followed:
                self.queue.add(path)
                return
        # A transcript outside every followed folder: a new agent (with agents = ["*"]).
        if self._agents_root in path.parents and "*" in self.cfg.openclaw.agents:
            self.queue.request_rescan("new agent", refresh=True)

    # ------------------------------------------------------------ run

    def run(self) -> int:
        lock = StateLock.acquire(self.paths.memoryd_dir)
        try:
            return self._run_locked()
        finally:
            lock.release()

    def _install_signals(self) -> None:
        def on_stop(signum: int, _frame: Any) -> None:
            self.flags.stop = signal.Signals(signum).name
            self.wake.set()

        def on_hup(_signum: int, _frame: Any) -> None:
            self.flags.reload = True
            self.wake.set()

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGHUP, on_hup)

    def _run_locked(self) -> int:
        self._install_signals()
        threading.excepthook = _log_thread_death
        self.health = HealthNote(self.paths.memoryd_dir)  # (written now, while there is room)
        try:
            self.store = Store.open(self.paths.db)
            self.store.quick_check()  # before anything is written into it (then once a day)
        except StoreDamaged as exc:
            self.health.update(damaged=damage_record(exc.db, str(exc), clock.now()))
            log.critical("state.database_damaged", db=str(exc.db), message=str(exc))
            if self.store is not None:
                self.store.close()
            return EXIT_FAILURE
        checked_at = clock.now()
        with self.store.transaction():
            self.store.set_meta("daemon.pid", str(os.getpid()))
            self.store.set_meta("daemon.started", str(self.started))
        log.info("daemon.start", pid=os.getpid(), state_db=str(self.paths.db),
                 agents=[a.id for a in self.paths.agents], timezone=str(self.tz),
                 config=self.config_file)  # fmt: skip
        repair_moves(self.paths, self.store)

        self.worker = IngestWorker(self.cfg, self.paths, self.queue, self.environ)
        self.worker.health = self.health
        self.worker.checked_at = checked_at
        self.watches = self._start_observer()
        self.worker.start()
        if not self._wait_for_catch_up():
            return self._shutdown()
        if self.worker.is_transcript is not None:
            self.is_transcript = self.worker.is_transcript
        self._sync_watches()

        self.forget_runs_ahead(self.store)
        if self.store.get_meta(SCHEDULED_SINCE) is None:
            with self.store.transaction():
                self.store.set_meta(SCHEDULED_SINCE, repr(clock.now()))
        mark_jobs_off(self.store, switched_off(self.triggers), clock.now())
        self.jobs = JobRunner(self.schedule_snapshot, self.forget_runs_ahead)
        self.jobs.start()
        self.scheduler = self._start_scheduler()
        self.notifier.ready(self._status_text())
        totals = self.worker.totals
        log.info("daemon.ready", files=totals.files_followed, hits=totals.new_hits,
                 duration=round(clock.now() - self.started, 3))  # fmt: skip
        self._catch_up_jobs("start")
        self.jobs.submit(KEEP_LEARNED, "start")
        self._main_loop()
        return self._shutdown()

    def _wait_for_catch_up(self) -> bool:
        """Block until the first full scan is done; systemd's start timeout is extended."""
        assert self.worker is not None
        while not self.worker.ready.wait(5.0):
            if self.flags.stop:
                return False
            self.notifier.extend_start(30.0, "catch-up scan of transcripts")
            if self.notifier.watchdog_interval:
                self.notifier.watchdog()
        return not self.flags.stop and self.worker.fatal is None

    # ------------------------------------------------------------ observers

    def _start_observer(self) -> Watches:
        return Watches(self.handler, self.cfg.daemon.polling, self.cfg.daemon.polling_interval)

    def _sync_watches(self) -> None:
        """Watch the folders the worker follows now (and the agents root for new agents)."""
        assert self.watches is not None and self.worker is not None
        self.worker.watch_dirs_changed.clear()
        followed = tuple(self.worker.watch_dirs)
        self._watched = frozenset(followed)
        self.watches.sync(wanted_folders(self._agents_root, self.paths.state_dir, followed))

    def _watches_stale(self) -> bool:
        """A folder memoryd watches went away and came back (or is another one now)."""
        assert self.watches is not None
        return self.watches.stale(wanted_folders(self._agents_root, self.paths.state_dir,
                                                 self._watched))  # fmt: skip

    def _restart_observer(self, why: str) -> None:
        """Replace a dead or unsuitable observer; the watches are scheduled afresh."""
        log.warning("watch.observer_restart", reason=why)
        old = self.watches
        self.watches = self._start_observer()
        if old is not None:
            old.stop()
        self._sync_watches()
        self.queue.request_rescan("observer restart")  # events may have been missed
        # A new observer's watches are added by its threads after schedule() returned: a write
        # before they exist would wait for the hourly rescan. So one more, a tick later.
        self._rescan_when_watching = True

    def _observer_alive(self) -> bool:
        return self.watches is not None and self.watches.alive()

    # ------------------------------------------------------------ scheduler

    def _start_scheduler(self) -> Any:
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(timezone=self.tz, job_defaults=SCHEDULER_JOB_DEFAULTS)
        self._add_cron_jobs(scheduler)
        scheduler.start()
        return scheduler

    def _add_cron_jobs(self, scheduler: Any) -> None:
        assert self.jobs is not None
        for name, trigger in self.triggers.items():
            scheduler.add_job(self.jobs.submit, trigger, args=(name, "schedule"), id=name,
                              name=name, replace_existing=True)  # fmt: skip

    def _rearm_scheduler(self) -> None:
        """Give APScheduler the current triggers, each next fire computed from the clock now:
        after a reload or a followed zone (new triggers), and after a gap (a next fire computed
        while the clock was ahead lies as far ahead). Missed fires are the caller's catch-up."""
        if self.scheduler is None:
            return
        self.scheduler.remove_all_jobs()
        self._add_cron_jobs(self.scheduler)

    def _after_gap(self, gap: Gap) -> None:
        """The daemon did not run normally for a while (a sleep, SIGSTOP, the clock set): file
        events may have been lost, so a full rescan; runs recorded while the clock was ahead are
        forgotten, the next fires computed again, and the missed periods run once, now."""
        log.warning("daemon.gap", kind=gap.kind, seconds=round(gap.seconds, 1) + 0.0,  # (no -0.0)
                    slept=round(gap.slept, 1) + 0.0, stopped=round(gap.stopped, 1) + 0.0,
                    clock_step=round(gap.clock_step, 1) + 0.0, message=gap.message())  # fmt: skip
        self.queue.request_rescan(f"after a gap ({gap.kind})")
        assert self.store is not None
        self.forget_runs_ahead(self.store)
        self._rearm_scheduler()
        self._catch_up_jobs(f"after a gap ({gap.kind})")

    def forget_runs_ahead(self, store: Store) -> None:
        """Runs recorded while the clock was ahead must not stand in for periods to come.

        Called at start and after a gap, and by the job runner after each run (on its own
        connection): a run started while the clock was ahead writes its row when it ends.
        """
        try:
            found = forget_the_future(store, clock.now(), self.cfg.daemon.clock_jump_seconds)
        except sqlite3.Error:
            log.warning("job.future_check_failed", exc_info=True)
            return
        if found:
            log.warning(
                "clock.records_ahead",
                runs=[
                    f"{job} {period} at {clock.iso(started)}" for job, period, started in found.runs
                ],
                marks=found.marks,
                message="the clock was ahead when these were recorded; forgotten, so those "
                "periods run when they really come",
            )

    def _follow_local_zone(self) -> bool:
        """With ``schedule.timezone = ""``, follow the system's zone when it changes (once two
        ticks in a row read it: :func:`~.schedule.zone_to_follow`). Returns whether it did."""
        with self._schedule_lock:
            cfg, old = self.cfg, self.tz
        if cfg.schedule.timezone:
            return False
        new = local_zone()
        follow, self._zone_seen = zone_to_follow(str(old), self._zone_seen, str(new))
        if not follow:
            return False
        try:
            triggers = build_triggers(cfg, new)
        except ConfigError:  # the schedule was valid in every zone; kept as it was
            return False
        with self._schedule_lock:
            self.tz, self.triggers = new, triggers
        self._rearm_scheduler()  # the new triggers carry the new zone
        log.warning("timezone.changed", old=str(old), new=str(new),
                    message=f"the system's time zone changed from {old} to {new}: "
                    "the schedule and today's date now follow the new zone")  # fmt: skip
        return True

    def _scheduler_alive(self) -> bool:
        from apscheduler.schedulers.base import STATE_RUNNING

        s = self.scheduler
        if s is None or s.state != STATE_RUNNING:
            return False
        thread = getattr(s, "_thread", None)
        return thread is None or thread.is_alive()

    def _catch_up_jobs(self, reason: str) -> None:
        assert self.jobs is not None and self.store is not None
        _cfg, _paths, tz, triggers = self.schedule_snapshot()
        try:
            due = due_jobs(self.store, triggers, clock.now(), tz)
        except sqlite3.Error:
            log.warning("job.catch_up_check_failed", exc_info=True)
            due = list(triggers)  # the runner checks again before running
        for name in due:
            log.info("job.catch_up", job=name, reason=reason)
            self.jobs.submit(name, f"catch-up ({reason})")

    # ------------------------------------------------------------ main loop

    def _check_progress(self, mono: float) -> None:
        """Notice an ingest worker stuck in one step while transcripts wait (a read that
        never returns): logged once, in the health note for ``status``, and not alive for
        the systemd watchdog until it moves again."""
        assert self.worker is not None
        mark = self.worker.progress()
        if mark != self._progress_mark:
            self._progress_mark, self._progress_at = mark, mono
        waiting = len(self.queue)
        stuck = stalled_for(
            mark[0] is not None, self._progress_at, mono, waiting, self.cfg.daemon.stall_seconds
        )
        if (stuck is not None) == (self.stalled is not None):
            return
        if stuck is not None:
            self.stalled = {"since": clock.now() - stuck, "doing": mark[0], "waiting": waiting}
            log.critical("ingest.worker_stalled", doing=mark[0], seconds=round(stuck, 1),
                         waiting=waiting, note="no hits are counted while it waits; "
                         "the systemd watchdog restarts it")  # fmt: skip
        else:
            log.warning("ingest.worker_moving", after=self.stalled)
            self.stalled = None
        if self.health is not None:
            self.health.update(ingest_stalled=self.stalled)

    def _alive(self) -> bool:
        if self.stalled is not None:
            return False
        worker_ok = self.worker is not None and self.worker.is_alive()
        jobs_ok = self.jobs is not None and self.jobs.is_alive()
        return worker_ok and jobs_ok and self._observer_alive() and self._scheduler_alive()

    def _main_loop(self) -> None:
        assert self.worker is not None
        interval = self.notifier.watchdog_interval
        tick = min(TICK_SECONDS, interval) if interval else TICK_SECONDS
        prev = read_clocks()
        # How long the last tick worked after its reading: running, not stopped.
        busy = 0.0
        last_status = time.monotonic()
        last_ping = 0.0
        was_alive = True
        while not self.flags.stop:
            self.wake.wait(tick)
            self.wake.clear()
            if self.flags.stop:
                break
            clocks = read_clocks()
            mono = clocks.mono
            gap = find_gap(prev, clocks, tick + busy, self.cfg.daemon.clock_jump_seconds)
            prev = clocks
            if self._rescan_when_watching and self._observer_alive():
                self._rescan_when_watching = False
                self.queue.request_rescan("observer restart (watching)")
            if self.flags.reload:
                self.flags.reload = False
                self._reload()
            zone_changed = self._follow_local_zone()
            if gap is not None:
                self._after_gap(gap)
            elif zone_changed:
                self._catch_up_jobs("time zone change")
            if not self._observer_alive():
                self._restart_observer("observer thread died")
            if self.worker.watch_dirs_changed.is_set():
                self._sync_watches()
            elif self._watches_stale():
                self._sync_watches()
                self.queue.request_rescan("watched folders back")  # (written while unwatched)
                self._rescan_when_watching = True  # (and once the new watches are set)
            self._check_progress(mono)
            self._keep_learned_when_due()
            alive = self._alive()
            if alive != was_alive:
                report = log.info if alive else log.critical
                jobs = bool(self.jobs and self.jobs.is_alive())
                report("daemon.health", alive=alive, stalled=self.stalled is not None,
                       worker=self.worker.is_alive(), jobs=jobs, observer=self._observer_alive(),
                       scheduler=self._scheduler_alive())  # fmt: skip
                was_alive = alive
            if self.worker.fatal is not None:
                self.flags.stop = "worker failure"
                break
            if interval and alive and mono - last_ping >= interval:
                self.notifier.watchdog()
                last_ping = mono
            # (at once after a change of zone: the status names the zone the schedule is in)
            if zone_changed or mono - last_status >= STATUS_EVERY_SECONDS:
                self.notifier.status(self._status_text())
                last_status = mono
                assert self.store is not None  # (open while the loop runs)
                with contextlib.suppress(sqlite3.Error):  # survives a kill -9 while off
                    mark_jobs_off(self.store, switched_off(self.triggers), clock.now())
            busy = time.monotonic() - mono

    def _keep_learned_when_due(self) -> None:
        """New verdicts are due (:func:`memoryd.own_history.calibration_stale_at`), or the
        clock was set back past the last look (what was kept is then of a later time): the
        job runner learns the calibration again, between two jobs."""
        jobs = self.jobs
        due = jobs.calibration_due if jobs is not None else None
        if jobs is None or due is None:
            return
        now = clock.now()
        if now >= due or now < jobs.calibration_looked - CLOCK_SET_BACK_SECONDS:
            jobs.calibration_due = None
            jobs.submit(KEEP_LEARNED, "verdicts due" if now >= due else "clock set back")

    # ------------------------------------------------------------ reload

    def _reload(self) -> None:
        """SIGHUP: re-read the config file; an invalid one keeps the old config running."""
        self.notifier.reloading()
        try:
            faults.point("daemon.reload")  # (a reader's fault no check names: an OSError)
            cfg = load_config(self.config_file)
            paths = resolve_paths(cfg, self.environ)
            tz = schedule_timezone(cfg)
            triggers = build_triggers(cfg, tz)
            if paths.db != self.paths.db:
                raise ConfigError(
                    f"state.dir: the state database cannot change while running "
                    f"({self.paths.db} → {paths.db}); restart instead"
                )
        except ConfigError as exc:
            log.error("daemon.reload_rejected", error=str(exc), config=self.config_file)
            if isinstance(exc, OpenClawJsonError) and self.worker is not None:
                self.worker.openclaw_json_unreadable(exc)
            self._ready_again(f"reload failed, old config kept: {exc}")
            return
        except Exception as exc:  # a reader's fault the checks did not name: still no exit
            log.error("daemon.reload_failed", error=repr(exc), config=self.config_file,
                      exc_info=True)  # fmt: skip
            self._ready_again("reload failed, old config kept")
            return
        # Off until now, in the old config or the new one: a job switched on waits for its
        # next fire (the catch-up below does not count the fires it slept through).
        off = {*switched_off(self.triggers), *switched_off(triggers)}
        with contextlib.suppress(sqlite3.Error):
            assert self.store is not None
            mark_jobs_off(self.store, sorted(off), clock.now())
        new, old = cfg.daemon, self.cfg.daemon
        polling_changed = (new.polling, new.polling_interval) != (old.polling, old.polling_interval)
        with self._schedule_lock:
            self.cfg, self.paths, self.tz, self.triggers = cfg, paths, tz, triggers
        configure_logging(cfg.log.level, cfg.log.format)
        self._rearm_scheduler()  # the new triggers carry the new zone
        if polling_changed:
            self._restart_observer("polling setting changed")
        assert self.worker is not None
        self.worker.reconfigure(cfg, paths)
        self.worker.openclaw_json_unreadable(None)  # (read again: it parses, if it is there)
        log.info("daemon.reloaded", config=self.config_file, timezone=str(tz))
        self._catch_up_jobs("reload")
        if self.jobs is not None:  # (another target, floor or schedule: learned again)
            self.jobs.submit(KEEP_LEARNED, "reload")
        self._ready_again("configuration reloaded")

    def _ready_again(self, note: str) -> None:
        self.notifier.send("READY=1", f"STATUS={self._status_text(note)}")

    # ------------------------------------------------------------ status

    def _status_text(self, note: str = "") -> str:
        assert self.store is not None
        now = clock.now()
        _cfg, _paths, tz, triggers = self.schedule_snapshot()
        try:
            today = hits_since(self.store.conn, local_midnight(now, tz))
        except sqlite3.Error:
            today = 0
        upcoming = [(next_fire_time(t, now, tz), n) for n, t in triggers.items()]
        upcoming = [(at, n) for at, n in upcoming if at is not None]
        at, name = min(upcoming) if upcoming else (None, None)
        files = self.worker.totals.files_followed if self.worker else 0
        failing = self.worker.failing if self.worker else None
        if self.stalled is not None and not note:
            note = f"ingest worker stalled in a {self.stalled['doing']}"
        if failing is not None and not note:
            note = f"scans failing since {clock.iso(failing.since)}: {failing.reason}"
        return status_line(StatusFacts(files, int(today), name, at, note))

    # ------------------------------------------------------------ shutdown

    def _shutdown(self) -> int:
        """Stop observing, drain the worker, let a running job finish, release the lock."""
        reason = self.flags.stop or "start-up failure"
        self.notifier.stopping()
        log.info("daemon.stopping", reason=reason)
        t0 = time.monotonic()
        if self.watches is not None:
            self.watches.stop()
        if self.scheduler is not None:
            with contextlib.suppress(Exception):
                self.scheduler.shutdown(wait=False)
        if self.jobs is not None:
            running = self.jobs.current
            self.jobs.stop()
            self.jobs.join(JOB_STOP_GRACE_SECONDS)
            if self.jobs.is_alive():
                log.warning("daemon.job_abandoned", job=running, note="its period runs again")
        if self.worker is not None:
            self.queue.close()
            self.worker.join(WORKER_STOP_GRACE_SECONDS)
        if self.watches is not None:
            self.watches.join(5.0)
        failed = self.worker is not None and self.worker.fatal is not None
        # A damaged database gets no more writes: they could only spread what is wrong.
        damaged = failed and isinstance(self.worker and self.worker.fatal, StoreDamaged)
        if self.store is not None and damaged:
            self.store.close()
        elif self.store is not None:
            with contextlib.suppress(sqlite3.Error):
                mark_jobs_off(self.store, switched_off(self.triggers), clock.now())
            with contextlib.suppress(sqlite3.Error), self.store.transaction():
                self.store.set_meta("daemon.stopped", str(clock.now()))
            self.store.close()
        log.info("daemon.stopped", reason=reason, duration=round(time.monotonic() - t0, 3),
                 hits=self.worker.totals.new_hits if self.worker else 0)  # fmt: skip
        if self.health is not None:
            self.health.close()
        return EXIT_FAILURE if failed else EXIT_OK


def _log_thread_death(args: threading.ExceptHookArgs) -> None:
    """A thread dying of an exception is logged, never silent (the watchdog notices it)."""
    thread = args.thread.name if args.thread else "?"
    lines = traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
    log.critical("thread.died", thread=thread, error=repr(args.exc_value), traceback="".join(lines))


def repair_moves(paths: Paths, store: Store) -> None:
    """Finish or roll back file moves a crash interrupted, before anything else runs. A
    failure is logged, never fatal: the entries stay in the journal for ``memoryd restore``."""
    from ..mover import mover_for

    try:
        lines = mover_for(store, paths).repair()
    except Exception:
        log.error("repair.failed", exc_info=True)
        return
    for line in lines:
        log.warning("repair.move", outcome=line)
    if lines:
        log.info("repair.done", entries=len(lines))


def run_daemon(cfg: Config, config_file: str | None, environ: Mapping[str, str]) -> int:
    """``memoryd run``: the process systemd or launchd supervises. Returns the exit code."""

    configure_logging(cfg.log.level, cfg.log.format)
    try:
        paths = resolve_paths(cfg, environ)
        if not paths.state_dir.is_dir():
            # Creating ~/.openclaw for an OpenClaw that is not there would only hide the mistake.
            raise ConfigError(
                f"no OpenClaw state directory at {paths.state_dir} (set openclaw.state_dir in "
                "the config or $OPENCLAW_STATE_DIR)"
            )
        daemon = Daemon(cfg, paths, config_file=config_file, environ=environ)
        return daemon.run()
    except (AlreadyRunning, ConfigError) as exc:
        # One line on a terminal; under journald or launchd one JSON object only, so that
        # `journalctl -o cat | jq` does not stop at the very line that says why.
        if resolve_format(cfg.log.format, sys.stderr) == "console":
            print(f"memoryd: {exc}", file=sys.stderr)
        elif isinstance(exc, AlreadyRunning):
            log.error("daemon.already_running", pid=exc.pid, message=str(exc), exit=EXIT_USAGE)
        else:
            log.error("daemon.failed", message=str(exc), exit=EXIT_USAGE)
        return EXIT_USAGE
