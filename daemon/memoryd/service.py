"""The daemon (``memoryd run``): follow transcripts live, fire the jobs on time, talk to systemd.

Shape of the process, and why:

* **One ingest worker** owns the :class:`~memoryd.ingest.scan.Scanner` and its own SQLite
  connection. File-system events are hints, not truth (inotify overflows, FSEvents coalesces,
  network file systems send nothing), so watchdog handlers only put a path into a
  de-duplicating :class:`WorkQueue`; the worker reads from the committed checkpoint. A
  stat-only full rescan runs at start (the catch-up scan), every ``daemon.rescan_seconds``,
  after a wall-clock jump (wake from sleep) and on SIGHUP, and catches whatever events were lost.
* **One job runner** runs organize / reflect / expire one at a time. APScheduler only
  *triggers* it at the cron times; whether a job is due is decided from the ``jobs`` table
  (:func:`due_jobs`), so periods missed while the daemon was down or the machine slept run
  exactly once at start or after the wake, and a DST change never makes two periods of one.
* **The main thread** handles signals, checks that observer, worker and scheduler are alive
  before each ``WATCHDOG=1``, notices clock jumps, and keeps ``STATUS=`` current.

The decisions (is a job due, did the clock jump, what the status line says) are pure functions
at the top of this module; the threads below them are the imperative shell.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from . import clock
from .cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .config import Config, ConfigError, Paths, load_config, resolve_paths, schedule_is_off
from .cron import SCHEDULED_JOBS, crontab_weekdays, schedule_timezone
from .lockfile import LOCK_NAME
from .lockfile import read_pid as _read_pid
from .log import configure as configure_logging
from .log import get_logger
from .store import Store, StoreGone

log = get_logger("memoryd.service")


# How long SIGTERM waits for a running job to reach its end (the unit's TimeoutStopSec is 90 s).
JOB_STOP_GRACE_SECONDS = 60.0
# How long the worker may take to drain its queue on shutdown.
WORKER_STOP_GRACE_SECONDS = 20.0
# The main loop's tick: clock-jump checks and liveness; cheap enough to stay far under 1 % CPU.
TICK_SECONDS = 1.0
# STATUS= is refreshed at most this often (it costs a query).
STATUS_EVERY_SECONDS = 15.0


# =========================================================================== pure decisions


def build_triggers(cfg: Config, tz: tzinfo) -> dict[str, Any]:
    """One APScheduler CronTrigger per scheduled job; a bad expression names its key.

    A job whose schedule is ``"off"`` gets no trigger: the daemon neither fires it nor
    catches it up, and ``status`` says "off".
    """
    from apscheduler.triggers.cron import CronTrigger

    triggers: dict[str, Any] = {}
    for name in SCHEDULED_JOBS:
        expr = getattr(cfg.schedule, name)
        if schedule_is_off(expr):
            continue
        fields = expr.split()
        if len(fields) != 5:
            raise ConfigError(
                f"schedule.{name}: expected 5 cron fields (minute hour day month weekday), "
                f"got {expr!r}"
            )
        try:
            triggers[name] = CronTrigger(
                minute=fields[0],
                hour=fields[1],
                day=fields[2],
                month=fields[3],
                day_of_week=crontab_weekdays(fields[4]),
                timezone=tz,
            )
        except ValueError as exc:
            raise ConfigError(f"schedule.{name}: invalid cron expression {expr!r}: {exc}") from None
    return triggers


# Look-back windows for the latest fire time: short first, so an hourly job costs two steps.
_LOOKBACK_SECONDS = (600, 7200, 2 * 86400, 40 * 86400, 400 * 86400, 3000 * 86400)


def _local(ts: float, tz: tzinfo) -> datetime:
    """An aware local time from epoch seconds, with ``fold`` right in a repeated hour.

    All arithmetic here is on epoch seconds: adding a timedelta to an aware datetime (and
    comparing two of them) works on the wall-clock reading, which is wrong across a DST change.
    """
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


SCHEDULED_SINCE = "schedule.since"  # meta key: when the daemon first ran on this state
OFF_UNTIL = "schedule.off_until.{job}"  # meta key: the latest time a daemon ran with it "off"


def mark_jobs_off(store: Store, jobs: Iterable[str], now: float) -> None:
    """Record that ``jobs`` were switched off until ``now``: their fires until then are not owed.

    Without it, switching a job on again (a reload, a restart) would count the fires it
    slept through as missed and run it on the spot; it waits for its next fire instead.
    """
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

    A run is recorded under the period of the fire it answers (the latest one at or before
    the moment it ran), so "no row at or after that period" means the fire was missed; a
    catch-up shortly after midnight answers yesterday's daily fire, not today's. Fires from
    before the daemon first ran on this state are not missed: installing memoryd must not
    archive notes on the spot; the first expire comes at its first fire.
    Any row counts, failed ones too: a failure is retried at the next fire, not in a loop.
    Several missed periods collapse into one run (nothing is gained by archiving the same
    files twice in a row). Fires while the job was switched off (:func:`mark_jobs_off`)
    were not missed either.
    """
    from .jobs import period_key

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
    since = period_key(name, fire.timestamp(), tz)
    row = store.conn.execute(
        "SELECT 1 FROM jobs WHERE job = ? AND period >= ? LIMIT 1", (name, since)
    ).fetchone()
    return row is None


def due_jobs(store: Store, triggers: Mapping[str, Any], now: float, tz: tzinfo) -> list[str]:
    """The scheduled jobs whose latest period has not run yet, in schedule order."""
    return [name for name, trig in triggers.items() if job_is_due(store, name, trig, now, tz)]


def clock_jump(
    prev_wall: float, prev_mono: float, wall: float, mono: float, threshold: float
) -> float | None:
    """How far the wall clock moved beyond the monotonic one, when more than ``threshold``.

    CLOCK_MONOTONIC stops while a machine sleeps; the wall clock does not. So a gap between
    the two is a wake from sleep (or someone setting the clock), and lost events and missed
    periods are likely.
    """
    drift = (wall - prev_wall) - (mono - prev_mono)
    return drift if abs(drift) > threshold else None


@dataclass(frozen=True)
class StatusFacts:
    """What the one-line ``STATUS=`` summary is made of."""

    files_followed: int
    hits_today: int
    next_job: str | None  # name of the next job to fire
    next_at: datetime | None
    note: str = ""


def status_line(facts: StatusFacts) -> str:
    """``following 12 transcripts, 34 hits today, next organize at 14:05`` (+ a note)."""
    parts = [
        f"following {facts.files_followed} transcript{'s' if facts.files_followed != 1 else ''}",
        f"{facts.hits_today} hit{'s' if facts.hits_today != 1 else ''} today",
    ]
    if facts.next_job and facts.next_at:
        parts.append(f"next {facts.next_job} at {facts.next_at.strftime('%Y-%m-%d %H:%M %Z')}")
    line = ", ".join(parts)
    return f"{line}; {facts.note}" if facts.note else line


def local_midnight(now: float, tz: tzinfo) -> float:
    """Start of the local day containing ``now`` (for "hits today")."""
    day = datetime.fromtimestamp(now, tz).date()
    return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()


# =========================================================================== the state lock


class AlreadyRunning(Exception):
    """Another daemon holds the state directory's lock."""

    def __init__(self, lock_path: Path, pid: int | None) -> None:
        who = f"process {pid}" if pid else "another process"
        super().__init__(f"another memoryd daemon ({who}) holds {lock_path}")
        self.pid = pid


class StateLock:
    """``flock`` on ``<memoryd_dir>/memoryd.lock``; the file holds the owner's pid.

    The kernel drops the lock when the process dies however it dies, so a stale lock file
    never blocks a restart; the file itself is never deleted (deleting it would let two
    daemons lock two different inodes).
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def acquire(cls, memoryd_dir: Path, *, patience: float = 1.0) -> StateLock:
        memoryd_dir.mkdir(parents=True, exist_ok=True)
        path = memoryd_dir / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + patience
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                # `memoryd status` takes a shared lock for a moment: wait that out.
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise AlreadyRunning(path, _read_pid(path)) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)
        return cls(path, fd)

    def release(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = -1


# =========================================================================== sd_notify


class Notifier:
    """The sd_notify protocol: silent without ``NOTIFY_SOCKET`` (launchd, a terminal)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._notifier: Any = None
        if environ.get("NOTIFY_SOCKET"):
            import sdnotify

            self._notifier = sdnotify.SystemdNotifier()
        usec = environ.get("WATCHDOG_USEC", "")
        pid = environ.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        # Ping at half the watchdog period, as sd_watchdog_enabled(3) advises.
        self.watchdog_interval = int(usec) / 2e6 if usec.isdigit() and mine else None

    def send(self, *lines: str) -> None:
        if self._notifier is not None:
            self._notifier.notify("\n".join(lines))

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def reloading(self) -> None:
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.send("RELOADING=1", f"MONOTONIC_USEC={usec}", "STATUS=reloading configuration")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def extend_start(self, seconds: float, status: str) -> None:
        self.send(f"EXTEND_TIMEOUT_USEC={int(seconds * 1e6)}", f"STATUS={status}")


# =========================================================================== ingest


class WorkQueue:
    """Paths waiting for the worker, each at most once, plus "rescan everything" requests.

    Handlers run on watchdog's thread and must never block or raise, so adding is a set
    insert under a lock. The worker takes everything pending at once: a burst of writes to
    one transcript becomes one read.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._paths: dict[Path, None] = {}
        self._full: str | None = None  # why a full rescan was asked for
        self._refresh = False
        self._closed = False

    def add(self, path: Path) -> None:
        with self._cond:
            self._paths[path] = None
            self._cond.notify()

    def request_rescan(self, reason: str, *, refresh: bool = False) -> None:
        with self._cond:
            self._full = self._full or reason
            self._refresh = self._refresh or refresh
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def take(self, timeout: float) -> tuple[list[Path], str | None, bool, bool]:
        """(paths, full-rescan reason, refresh, closed) after waiting up to ``timeout``."""
        with self._cond:
            if not (self._paths or self._full or self._closed):
                self._cond.wait(timeout)
            paths = list(self._paths)
            self._paths.clear()
            full, refresh = self._full, self._refresh
            self._full, self._refresh = None, False
            return paths, full, refresh, self._closed

    def __len__(self) -> int:
        with self._cond:
            return len(self._paths)


@dataclass
class IngestTotals:
    """What the worker has done since start, read by the main thread for STATUS and logs."""

    files_followed: int = 0
    new_hits: int = 0
    batches: int = 0
    full_scans: int = 0
    errors: int = 0
    last_full_scan: float | None = None


class IngestWorker(threading.Thread):
    """The only reader of transcripts: drains the queue, rescans on schedule and on demand."""

    def __init__(
        self, cfg: Config, paths: Paths, queue: WorkQueue, environ: Mapping[str, str]
    ) -> None:
        super().__init__(name="memoryd-ingest", daemon=True)
        self.cfg, self.paths = cfg, paths
        self.queue = queue
        self.environ = environ
        self.ready = threading.Event()  # set after the catch-up scan
        self.totals = IngestTotals()
        self.watch_dirs: list[Path] = []
        self.watch_dirs_changed = threading.Event()
        self.is_transcript: Callable[[Path], bool] | None = None
        self._pending_config: tuple[Config, Paths] | None = None
        self._lock = threading.Lock()
        self.fatal: BaseException | None = None
        self.restorer: Any = None  # RestoreOnDemand, built on this thread

    def reconfigure(self, cfg: Config, paths: Paths) -> None:
        """Use a new configuration from the next batch on (with a full rescan)."""
        with self._lock:
            self._pending_config = (cfg, paths)
        self.queue.request_rescan("reload", refresh=True)

    def run(self) -> None:
        try:
            self._run()
        except StoreGone as exc:  # one clear line; the daemon exits non-zero and is restarted
            self.fatal = exc
            log.critical("state.database_gone", error=str(exc), note="exiting; a restart reopens")
        except BaseException as exc:  # the daemon notices (no more WATCHDOG=1) and exits
            self.fatal = exc
            log.critical("ingest.worker_died", exc_info=True)
        finally:
            self.ready.set()

    def _make_scanner(self, store: Store) -> Any:
        from .ingest.scan import Scanner

        scanner = Scanner(self.cfg, self.paths, store)
        self.watch_dirs = list(scanner.watch_dirs())
        self.is_transcript = scanner.is_transcript
        self.watch_dirs_changed.set()
        return scanner

    def _refresh_paths(self) -> None:
        """Re-resolve the configuration: new agent folders appear under ``agents/``."""
        with self._lock:
            pending, self._pending_config = self._pending_config, None
        if pending is not None:
            self.cfg, self.paths = pending
            if self.restorer is not None:
                self.restorer.reconfigure(*pending)
            return
        try:
            self.paths = resolve_paths(self.cfg, self.environ)
        except ConfigError as exc:  # e.g. the workspace vanished: keep what we had
            log.warning("ingest.refresh_failed", error=str(exc))

    def _run(self) -> None:
        store = Store.open(self.paths.db)
        try:
            scanner = self._make_scanner(store)
            self._scan(scanner, store, None, "start")
            self.ready.set()
            next_rescan = time.monotonic() + self.cfg.daemon.rescan_seconds
            while True:
                wait = max(0.0, next_rescan - time.monotonic())
                paths, full, refresh, closed = self.queue.take(wait)
                if refresh:
                    self._refresh_paths()
                    scanner = self._make_scanner(store)
                if time.monotonic() >= next_rescan:
                    full = full or "periodic"
                stats = None
                if full:
                    store.check_files()  # deleted under us: stop rather than lose every hit
                    stats = self._scan(scanner, store, None, full)
                    next_rescan = time.monotonic() + self.cfg.daemon.rescan_seconds
                elif paths:
                    stats = self._scan(scanner, store, paths, None)
                retry = float(getattr(stats, "retry_in", 0) or 0)
                if retry > 0:  # a store read while it was being written: look again soon
                    next_rescan = min(next_rescan, time.monotonic() + retry)
                if closed:
                    return
        finally:
            store.close()

    def _scan(self, scanner: Any, store: Store, only: list[Path] | None, reason: str | None) -> Any:
        """One scan, logged; returns its stats (None when it failed)."""
        started = time.monotonic()
        try:
            stats = scanner.scan(only)
        except Exception:
            self.totals.errors += 1
            log.error("ingest.scan_failed", reason=reason, files=len(only or []), exc_info=True)
            time.sleep(0.2)  # a persistent fault must not become a hot loop
            return None
        new_hits = int(getattr(stats, "new_hits", 0))
        self.totals.new_hits += new_hits
        # A live batch without new calls brought no new search; a full rescan looks anyway
        # (a one-shot `memoryd scan` may have counted the calls in between).
        self._restore_on_demand(store, only is None or getattr(stats, "new_calls", None) != 0)
        self.totals.batches += 1
        if only is None:
            self.totals.full_scans += 1
            self.totals.files_followed = int(getattr(stats, "files_seen", 0))
            self.totals.last_full_scan = clock.now()
            with contextlib.suppress(sqlite3.Error), store.transaction():
                store.set_meta("daemon.files_followed", str(self.totals.files_followed))
                store.set_meta("daemon.last_full_scan", str(self.totals.last_full_scan))
        fields = {
            "reason": reason or "event",
            "files": len(only) if only is not None else getattr(stats, "files_seen", None),
            "files_read": getattr(stats, "files_read", None),
            "bytes": getattr(stats, "bytes_read", None),
            "hits": new_hits,
            "malformed": getattr(stats, "malformed", None),
            "duration": round(time.monotonic() - started, 4),
        }
        if getattr(stats, "helper_files", 0):  # a large backlog, shared with a helper process
            fields["helper_files"] = stats.helper_files
        # A full rescan that found nothing, or a live batch, is routine: debug only.
        if only is None and (new_hits or reason != "periodic"):
            log.info("ingest.rescan", **fields)
        else:
            log.debug("ingest.batch" if only is not None else "ingest.rescan", **fields)
        return stats

    def _restore_on_demand(self, store: Store, new_calls: bool) -> None:
        """After a pass: bring back archived files that new searches ask for (never fatal).

        Switched off (``expire.restore_on_demand = false``), the searches of the pass are
        marked as history instead, so turning it on later never acts on them.
        """
        try:
            if not self.cfg.expire.restore_on_demand:
                if new_calls:
                    from .ondemand import ignore_until

                    ignore_until(store, time.time())
                return
            if self.restorer is None:
                from .ondemand import RestoreOnDemand

                self.restorer = RestoreOnDemand(self.cfg, self.paths)
                self.restorer.check(store)  # the first check on a new state only sets the floor
                return
            if new_calls:
                self.restorer.check(store)
        except Exception:
            log.error("restore.on_demand_error", exc_info=True)
            with contextlib.suppress(sqlite3.Error), store.transaction():
                store.bump("restore_on_demand_failures")


class TranscriptEvents:
    """watchdog handler: turns events into queue entries and does nothing else.

    An exception escaping a handler kills watchdog's dispatch thread for good, so every
    event is handled inside a try; a failure is logged, counted and answered with a full
    rescan, which reads whatever the event was about.
    """

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.errors = 0

    def dispatch(self, event: Any) -> None:
        try:
            self._dispatch(event)
        except Exception:
            self.errors += 1
            log.error("watch.handler_failed", fs_event=repr(event), exc_info=True)
            with contextlib.suppress(Exception):
                self.daemon.queue.request_rescan("handler error")

    def _dispatch(self, event: Any) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write", "deleted"):
            return
        targets = [event.src_path]
        if kind == "moved":
            targets.append(event.dest_path)
        for raw in targets:
            path = Path(os.fsdecode(raw))
            if event.is_directory:
                if kind in ("created", "moved"):
                    self.daemon.queue.request_rescan("new folder", refresh=True)
                continue
            self.daemon.offer(path)


@dataclass
class _Watches:
    observer: Any
    polling: bool
    scheduled: dict[tuple[str, bool], Any] = field(default_factory=dict)


# =========================================================================== jobs


class JobRunner(threading.Thread):
    """Runs scheduled jobs one at a time; cron fires and catch-up requests both land here.

    Whether a job runs is decided at the moment it would start (:func:`job_is_due`), so a
    cron fire after a catch-up run of the same period, or two wakes in a row, run nothing.
    """

    def __init__(self, daemon: Daemon) -> None:
        super().__init__(name="memoryd-jobs", daemon=True)
        self.daemon = daemon
        self._cond = threading.Condition()
        self._wanted: dict[str, str] = {}  # job → why
        self._stopping = False
        self.current: str | None = None
        self.last_error: str | None = None

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
                    self._cond.wait()
                if self._stopping:
                    return
                name = next(iter(self._wanted))
                reason = self._wanted.pop(name)
            self.current = name
            try:
                self._run_one(name, reason)
            except Exception as exc:  # e.g. the state database locked or unreadable
                # This thread must outlive any one job: a dead runner would never run a
                # job again while the daemon looked healthy (no WatchdogSec off systemd).
                self.last_error = f"{name}: {exc}"
                log.error("job.runner_error", job=name, exc_info=True)
            finally:
                self.current = None

    def _run_one(self, name: str, reason: str) -> None:
        from .jobs import run_for_period

        cfg, paths, tz, triggers = self.daemon.schedule_snapshot()
        now = clock.now()
        if name not in triggers:  # switched off ("off") by a reload since it was submitted
            log.info("job.off", job=name, reason=reason)
            return
        store = Store.open(paths.db)
        try:
            if not job_is_due(store, name, triggers[name], now, tz):
                log.debug("job.not_due", job=name, reason=reason)
                return
            log.info("job.start", job=name, reason=reason)
            started = time.monotonic()
            fire = last_fire_time(triggers[name], now, tz)
            try:
                result = run_for_period(
                    name,
                    cfg,
                    paths,
                    store,
                    now,
                    tz,
                    fire=fire.timestamp() if fire else None,
                    scheduled=True,
                )
            except Exception as exc:
                self.last_error = f"{name}: {exc}"
                log.error(
                    "job.failed",
                    job=name,
                    duration=round(time.monotonic() - started, 3),
                    error=str(exc),
                    exc_info=True,
                )
                return
            summary = result.summary if result is not None else "already done"
            extra = result.data.get("log", {}) if result is not None else {}
            log.info(
                "job.done",
                job=name,
                duration=round(time.monotonic() - started, 3),
                summary=summary,
                changed=bool(result and result.changed),
                **(extra if isinstance(extra, dict) else {}),
            )
        finally:
            store.close()


# =========================================================================== the daemon


@dataclass
class _Flags:
    stop: str | None = None  # the signal's name
    reload: bool = False


class Daemon:
    """The running process: owns the lock, the threads and the notify socket."""

    def __init__(
        self,
        cfg: Config,
        paths: Paths,
        *,
        config_file: str | None,
        environ: Mapping[str, str],
    ) -> None:
        self.cfg, self.paths = cfg, paths
        self.config_file = config_file
        self.environ = environ
        self.tz = schedule_timezone(cfg)
        self.triggers = build_triggers(cfg, self.tz)
        self.notifier = Notifier(environ)
        self.queue = WorkQueue()
        self.flags = _Flags()
        self.wake = threading.Event()
        self.handler = TranscriptEvents(self)
        self._schedule_lock = threading.Lock()
        self._watched: frozenset[Path] = frozenset()
        self._agents_root = paths.state_dir / "agents"
        # The scanner's file-name filter (pure); set once the worker has built its scanner.
        self.is_transcript: Callable[[Path], bool] = lambda p: ".jsonl" in p.name
        self.worker: IngestWorker | None = None
        self.jobs: JobRunner | None = None
        self.scheduler: Any = None
        self.watches: _Watches | None = None
        self.store: Store | None = None
        self.started = clock.now()

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
        self.store = Store.open(self.paths.db)
        with self.store.transaction():
            self.store.set_meta("daemon.pid", str(os.getpid()))
            self.store.set_meta("daemon.started", str(self.started))
        log.info(
            "daemon.start",
            pid=os.getpid(),
            state_db=str(self.paths.db),
            agents=[a.id for a in self.paths.agents],
            timezone=str(self.tz),
            config=self.config_file,
        )
        repair_moves(self.paths, self.store)

        self.worker = IngestWorker(self.cfg, self.paths, self.queue, self.environ)
        self.watches = self._start_observer()
        self.worker.start()
        if not self._wait_for_catch_up():
            return self._shutdown()
        if self.worker.is_transcript is not None:
            self.is_transcript = self.worker.is_transcript
        self._sync_watches()

        if self.store.get_meta(SCHEDULED_SINCE) is None:
            with self.store.transaction():
                self.store.set_meta(SCHEDULED_SINCE, repr(clock.now()))
        mark_jobs_off(self.store, switched_off(self.triggers), clock.now())
        self.jobs = JobRunner(self)
        self.jobs.start()
        self.scheduler = self._start_scheduler()
        self.notifier.ready(self._status_text())
        log.info(
            "daemon.ready",
            files=self.worker.totals.files_followed,
            hits=self.worker.totals.new_hits,
            duration=round(clock.now() - self.started, 3),
        )
        self._catch_up_jobs("start")
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

    def _start_observer(self) -> _Watches:
        if self.cfg.daemon.polling:
            from watchdog.observers.polling import PollingObserver

            observer: Any = PollingObserver(timeout=max(self.cfg.daemon.polling_interval, 0.1))
        else:
            from watchdog.observers import Observer

            observer = Observer()
        observer.name = "memoryd-observer"
        observer.daemon = True
        observer.start()
        return _Watches(observer, self.cfg.daemon.polling)

    def _desired_watches(self) -> dict[tuple[str, bool], Path]:
        """Folders to observe: the agents root (covers new agents) and each followed folder."""
        assert self.worker is not None
        followed = tuple(self.worker.watch_dirs)
        self._watched = frozenset(followed)
        wanted: dict[tuple[str, bool], Path] = {}
        root = self._agents_root
        if root.is_dir():
            wanted[(str(root), True)] = root
        elif self.paths.state_dir.is_dir():  # notice when agents/ appears
            wanted[(str(self.paths.state_dir), False)] = self.paths.state_dir
        for d in followed:
            if root in d.parents and root.is_dir():
                continue
            if d.is_dir():
                wanted[(str(d), True)] = d
        return wanted

    def _sync_watches(self) -> None:
        """Add watches for folders that appeared, drop those that are gone."""
        assert self.watches is not None and self.worker is not None
        self.worker.watch_dirs_changed.clear()
        wanted = self._desired_watches()
        w = self.watches
        for key in list(w.scheduled):
            if key not in wanted or not Path(key[0]).is_dir():
                with contextlib.suppress(Exception):
                    w.observer.unschedule(w.scheduled.pop(key))
        for key, path in wanted.items():
            if key in w.scheduled:
                continue
            try:
                w.scheduled[key] = w.observer.schedule(self.handler, str(path), recursive=key[1])
                log.info("watch.add", dir=str(path), recursive=key[1])
            except OSError as exc:  # ENOSPC: out of inotify watches; the rescan still works
                log.warning("watch.failed", dir=str(path), error=str(exc))

    def _restart_observer(self, why: str) -> None:
        """Replace a dead or unsuitable observer; the watches are scheduled afresh."""
        log.warning("watch.observer_restart", reason=why)
        old = self.watches
        self.watches = self._start_observer()
        if old is not None:
            with contextlib.suppress(Exception):
                old.observer.stop()
        self._sync_watches()
        self.queue.request_rescan("observer restart")  # events may have been missed

    def _observer_alive(self) -> bool:
        w = self.watches
        if w is None or not w.observer.is_alive():
            return False
        return all(e.is_alive() for e in w.observer.emitters)

    # ------------------------------------------------------------ scheduler

    def _start_scheduler(self) -> Any:
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(
            timezone=self.tz,
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 300},
        )
        self._add_cron_jobs(scheduler)
        scheduler.start()
        return scheduler

    def _add_cron_jobs(self, scheduler: Any) -> None:
        assert self.jobs is not None
        for name, trigger in self.triggers.items():
            scheduler.add_job(
                self.jobs.submit,
                trigger,
                args=(name, "schedule"),
                id=name,
                name=name,
                replace_existing=True,
            )

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

    def _alive(self) -> bool:
        worker_ok = self.worker is not None and self.worker.is_alive()
        jobs_ok = self.jobs is not None and self.jobs.is_alive()
        return worker_ok and jobs_ok and self._observer_alive() and self._scheduler_alive()

    def _main_loop(self) -> None:
        assert self.worker is not None
        interval = self.notifier.watchdog_interval
        tick = min(TICK_SECONDS, interval) if interval else TICK_SECONDS
        prev_wall, prev_mono = clock.now(), time.monotonic()
        last_status = time.monotonic()
        last_ping = 0.0
        was_alive = True
        while not self.flags.stop:
            self.wake.wait(tick)
            self.wake.clear()
            if self.flags.stop:
                break
            if self.flags.reload:
                self.flags.reload = False
                self._reload()
            wall, mono = clock.now(), time.monotonic()
            jump = clock_jump(prev_wall, prev_mono, wall, mono, self.cfg.daemon.clock_jump_seconds)
            prev_wall, prev_mono = wall, mono
            if jump is not None:
                log.warning("clock.jump", seconds=round(jump, 1))
                self.queue.request_rescan("clock jump")
                self._catch_up_jobs("clock jump")
            if not self._observer_alive():
                self._restart_observer("observer thread died")
            if self.worker.watch_dirs_changed.is_set():
                self._sync_watches()
            alive = self._alive()
            if alive != was_alive:
                report = log.info if alive else log.critical
                report(
                    "daemon.health",
                    alive=alive,
                    worker=self.worker.is_alive(),
                    jobs=bool(self.jobs and self.jobs.is_alive()),
                    observer=self._observer_alive(),
                    scheduler=self._scheduler_alive(),
                )
                was_alive = alive
            if self.worker.fatal is not None:
                self.flags.stop = "worker failure"
                break
            if interval and alive and mono - last_ping >= interval:
                self.notifier.watchdog()
                last_ping = mono
            if mono - last_status >= STATUS_EVERY_SECONDS:
                self.notifier.status(self._status_text())
                last_status = mono
                with contextlib.suppress(sqlite3.Error):  # survives a kill -9 while off
                    mark_jobs_off(self.store, switched_off(self.triggers), clock.now())

    # ------------------------------------------------------------ reload

    def _reload(self) -> None:
        """SIGHUP: re-read the config file; an invalid one keeps the old config running."""
        self.notifier.reloading()
        try:
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
            self.notifier.send(
                "READY=1", f"STATUS={self._status_text(f'reload failed, old config kept: {exc}')}"
            )
            return
        # Off until now, in the old config or the new one: a job switched on waits for its
        # next fire (the catch-up below does not count the fires it slept through).
        off = {*switched_off(self.triggers), *switched_off(triggers)}
        with contextlib.suppress(sqlite3.Error):
            assert self.store is not None
            mark_jobs_off(self.store, sorted(off), clock.now())
        polling_changed = (cfg.daemon.polling, cfg.daemon.polling_interval) != (
            self.cfg.daemon.polling,
            self.cfg.daemon.polling_interval,
        )
        with self._schedule_lock:
            self.cfg, self.paths, self.tz, self.triggers = cfg, paths, tz, triggers
        configure_logging(cfg.log.level, cfg.log.format)
        if self.scheduler is not None:
            self.scheduler.remove_all_jobs()  # the new triggers carry the new zone
            self._add_cron_jobs(self.scheduler)
        if polling_changed:
            self._restart_observer("polling setting changed")
        assert self.worker is not None
        self.worker.reconfigure(cfg, paths)
        log.info("daemon.reloaded", config=self.config_file, timezone=str(tz))
        self._catch_up_jobs("reload")
        self.notifier.send("READY=1", f"STATUS={self._status_text('configuration reloaded')}")

    # ------------------------------------------------------------ status

    def _status_text(self, note: str = "") -> str:
        assert self.store is not None
        now = clock.now()
        _cfg, _paths, tz, triggers = self.schedule_snapshot()
        try:
            (today,) = self.store.conn.execute(
                "SELECT COUNT(*) FROM hits WHERE ts >= ?", (local_midnight(now, tz),)
            ).fetchone()
        except sqlite3.Error:
            today = 0
        upcoming = [(next_fire_time(t, now, tz), n) for n, t in triggers.items()]
        upcoming = [(at, n) for at, n in upcoming if at is not None]
        at, name = min(upcoming) if upcoming else (None, None)
        files = self.worker.totals.files_followed if self.worker else 0
        return status_line(StatusFacts(files, int(today), name, at, note))

    # ------------------------------------------------------------ shutdown

    def _shutdown(self) -> int:
        """Stop observing, drain the worker, let a running job finish, release the lock."""
        reason = self.flags.stop or "start-up failure"
        self.notifier.stopping()
        log.info("daemon.stopping", reason=reason)
        t0 = time.monotonic()
        if self.watches is not None:
            with contextlib.suppress(Exception):
                self.watches.observer.stop()
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
            with contextlib.suppress(Exception):
                self.watches.observer.join(5.0)
        failed = self.worker is not None and self.worker.fatal is not None
        if self.store is not None:
            with contextlib.suppress(sqlite3.Error):
                mark_jobs_off(self.store, switched_off(self.triggers), clock.now())
            with contextlib.suppress(sqlite3.Error), self.store.transaction():
                self.store.set_meta("daemon.stopped", str(clock.now()))
            self.store.close()
        log.info(
            "daemon.stopped",
            reason=reason,
            duration=round(time.monotonic() - t0, 3),
            hits=self.worker.totals.new_hits if self.worker else 0,
        )
        return EXIT_FAILURE if failed else EXIT_OK


def _log_thread_death(args: threading.ExceptHookArgs) -> None:
    """A thread dying of an exception is logged, never silent (the watchdog notices it)."""
    thread = args.thread.name if args.thread else "?"
    log.critical(
        "thread.died",
        thread=thread,
        error=repr(args.exc_value),
        traceback="".join(
            traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
        ),
    )


def repair_moves(paths: Paths, store: Store) -> None:
    """Finish or roll back file moves a crash interrupted, before anything else runs.

    The roots are every folder a job may move files in: the workspaces, the tier store
    and memoryd's own folder (graveyard). A repair failure is logged, never fatal: the
    entries stay in the journal for ``memoryd restore`` and the next start.
    """
    from .mover import mover_for

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
    import sys

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
    except AlreadyRunning as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        log.error("daemon.already_running", pid=exc.pid)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_USAGE
