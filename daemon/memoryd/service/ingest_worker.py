"""The daemon's one reader of transcripts: a de-duplicating work queue and the ingest worker.

File-system events are hints, not truth (inotify overflows, FSEvents coalesces, network file
systems send nothing), so the watchdog handler (:class:`TranscriptEvents`) only queues a path;
the :class:`IngestWorker` owns the scanner and its own SQLite connection and reads from the
committed checkpoint. After each pass it brings back archived files that new searches ask for
(:mod:`memoryd.ondemand`).

Faults: a scan that fails (a full state disk) is retried after a growing delay, logged when it
starts failing and when it works again, and noted for ``memoryd status``. A damaged state
database stops the daemon (``state.database_damaged``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import clock, faults
from ..config import Config, ConfigError, OpenClawJsonError, Paths, resolve_paths
from ..health import HealthNote, damage_record, describe_scan_fault, retry_delay
from ..log import get_logger
from ..progress import FIRST_SCAN_NOTE, Note
from ..store import Store
from ..store_errors import StoreDamaged, StoreGone, is_damage
from . import heap

log = get_logger("memoryd.service")

# The state database is checked (PRAGMA quick_check) at start and then, at the next full scan,
# once this many seconds of memoryd's clock have passed.
INTEGRITY_CHECK_SECONDS = 86400.0


class WorkQueue:
    """Paths waiting for the worker, each at most once, plus "rescan everything" requests.
    Adding never blocks (watchdog's thread); a burst of writes to one file becomes one read."""

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
    errors: int = 0
    last_full_scan: float | None = None


@dataclass
class ScanFailing:
    """Scans failing in a row: since when (memoryd's clock), why, how often, the next try."""

    since: float
    reason: str
    attempts: int
    retry_at: float  # time.monotonic()

    def as_note(self) -> dict[str, Any]:
        return {"since": self.since, "reason": self.reason, "attempts": self.attempts}


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
        self._clocks: Any = None  # (wall, monotonic, boot) at the last scan's start
        self.health: HealthNote | None = None  # set by the daemon before start
        self.failing: ScanFailing | None = None
        self.checked_at: float | None = None  # memoryd's clock at the last quick_check
        # The step in progress (read by the main loop's liveness check): what it is, and a
        # mark that moves while it makes progress (its start, its committed batches).
        self.doing: str | None = None
        self._scanner: Any = None

    def reconfigure(self, cfg: Config, paths: Paths) -> None:
        """Use a new configuration from the next batch on (with a full rescan)."""
        with self._lock:
            self._pending_config = (cfg, paths)
        self.queue.request_rescan("reload", refresh=True)

    def run(self) -> None:
        try:
            self._run()
        except StoreDamaged as exc:  # one line naming the file and the way out; exit 1
            self.fatal = exc
            log.critical("state.database_damaged", db=str(exc.db), message=str(exc))
            if self.health is not None:
                self.health.update(damaged=damage_record(exc.db, str(exc), clock.now()))
        except StoreGone as exc:  # one clear line; the daemon exits non-zero and is restarted
            self.fatal = exc
            log.critical("state.database_gone", error=str(exc), note="exiting; a restart reopens")
        except BaseException as exc:  # the daemon notices (no more WATCHDOG=1) and exits
            self.fatal = exc
            log.critical("ingest.worker_died", exc_info=True)
        finally:
            self.ready.set()

    def _make_scanner(self, store: Store) -> Any:
        from ..ingest.scan import Scanner

        scanner = Scanner(self.cfg, self.paths, store)
        self._scanner = scanner
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
        except OpenClawJsonError as exc:  # a bad edit of openclaw.json: keep the last good view
            self.openclaw_json_unreadable(exc)
            return
        except ConfigError as exc:  # e.g. the workspace vanished: keep what we had
            log.warning("ingest.refresh_failed", error=str(exc))
            return
        self.openclaw_json_unreadable(None)

    def openclaw_json_unreadable(self, exc: OpenClawJsonError | None) -> None:
        """Note (or clear) an ``openclaw.json`` that stopped parsing: logged once when it
        starts, in the health note while it lasts (the last good view is kept)."""
        if self.health is None:
            return
        before = self.health.doc.get("openclaw_json")
        if exc is None:
            if before is not None:
                log.info("config.openclaw_json_readable", file=before.get("file"))
                self.health.update(openclaw_json=None)
            return
        if before is None or before.get("reason") != exc.reason:
            log.warning("config.openclaw_json_unreadable", file=exc.path, reason=exc.reason,
                        note="the last good view is kept")  # fmt: skip
            since = before.get("since") if before is not None else clock.now()
            note = {"file": exc.path, "reason": exc.reason, "since": since}
            self.health.update(openclaw_json=note)

    def _run(self) -> None:
        store = Store.open(self.paths.db)
        try:
            scanner = self._make_scanner(store)
            self._scan(scanner, store, None, "start")
            self.ready.set()
            next_rescan = time.monotonic() + self.cfg.daemon.rescan_seconds
            while True:
                wait = next_rescan - time.monotonic()
                if self.failing is not None:
                    wait = min(wait, self.failing.retry_at - time.monotonic())
                paths, full, refresh, closed = self.queue.take(max(0.0, wait))
                if refresh:
                    self._refresh_paths()
                    scanner = self._make_scanner(store)
                if closed:  # what was written before the signal, whether or not its event came
                    self._scan(scanner, store, None, "stop")
                    return
                if self.failing is not None:
                    if time.monotonic() < self.failing.retry_at:
                        continue  # its events wait for the retry, which reads everything
                    full = full or "retry"
                if time.monotonic() >= next_rescan:
                    full = full or "periodic"
                stats = None
                if full:
                    stats = self._scan(scanner, store, None, full)
                    next_rescan = time.monotonic() + self.cfg.daemon.rescan_seconds
                elif paths:
                    stats = self._scan(scanner, store, paths, None)
                retry = float(getattr(stats, "retry_in", 0) or 0)
                if retry > 0:  # a store read while it was being written: look again soon
                    next_rescan = min(next_rescan, time.monotonic() + retry)
        finally:
            store.close()

    def progress(self) -> tuple[str | None, int, int]:
        """(the step in progress or None, a count that grows as it goes, steps finished):
        the main loop calls a worker stalled when these stay the same too long."""
        ledger = getattr(self._scanner, "ledger", None)
        return self.doing, int(getattr(ledger, "commits", 0)), self.totals.batches

    def _scan(self, scanner: Any, store: Store, only: list[Path] | None, reason: str | None) -> Any:
        """One scan, logged; returns its stats (None when it failed)."""
        self.doing = f"{reason or 'event'} scan" + (f" of {len(only)} files" if only else "")
        try:
            return self._scan_step(scanner, store, only, reason)
        finally:
            self.doing = None

    def _scan_step(
        self, scanner: Any, store: Store, only: list[Path] | None, reason: str | None
    ) -> Any:
        started = time.monotonic()
        # The start-up scan (maybe minutes of history) leaves its progress for `memoryd status`.
        note = Note(self.paths.memoryd_dir / FIRST_SCAN_NOTE) if reason == "start" else None
        try:
            # Deleted, replaced, truncated or overwritten under us: stop rather than lose every hit
            # (damage first: it is the cause to name). Inside the retry: an I/O error reading
            # the header (a disk going away) is a failed scan, tried again, not a dead worker.
            store.check_header()
            if only is None:
                self._check_integrity_if_due(store)
            store.check_files()
            wall = self._grace_follows_the_clock(store)
            faults.point("ingest.clocks_read")  # (a stop here: the clock set before the scan)
            stats = scanner.scan(only, progress=note, now=wall)
        except (StoreDamaged, StoreGone):
            raise
        except Exception as exc:
            if is_damage(exc):
                raise StoreDamaged(store.path or Path("?"), str(exc)) from exc
            self.totals.errors += 1
            self._scan_failed(exc, reason, only)
            return None
        finally:
            if note is not None:
                note.close()
        if self.failing is not None:
            self._scans_work_again()
        new_hits = int(getattr(stats, "new_hits", 0))
        self.totals.new_hits += new_hits
        # A live batch without new calls brought no new search; a full rescan looks anyway
        # (a `memoryd scan` may have counted the calls in between). Not at stop.
        if reason != "stop":
            self._restore_on_demand(store, only is None or getattr(stats, "new_calls", None) != 0)
        self.totals.batches += 1
        if only is None:
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
        if only is None:
            log.debug("daemon.footprint", **self.footprint(scanner))
        return stats

    def _scan_failed(self, exc: Exception, reason: str | None, only: list[Path] | None) -> None:
        """Log a scan failing (once, with its traceback: not at every retry), note it for
        ``status`` and set the next try after a growing delay."""
        why = describe_scan_fault(exc)
        failing = self.failing
        if failing is None or failing.reason != why:
            failing = self.failing = ScanFailing(clock.now(), why, 0, 0.0)
            log.error("ingest.scan_failed", reason=reason, files=len(only or []), error=why,
                      note="retried after a growing delay (at most "
                      f"{retry_delay(10**6):.0f} s); logged again when scans work",
                      exc_info=True)  # fmt: skip
        else:
            log.debug("ingest.scan_failed", reason=reason, error=why, attempts=failing.attempts)
        failing.attempts += 1
        failing.retry_at = time.monotonic() + retry_delay(failing.attempts)
        if self.health is not None:
            self.health.update(scan_failing=failing.as_note())

    def _scans_work_again(self) -> None:
        failing, self.failing = self.failing, None
        assert failing is not None
        log.warning("ingest.scan_recovered", failing_since=clock.iso(failing.since),
                    failed_attempts=failing.attempts, error=failing.reason)  # fmt: skip
        if self.health is not None:
            self.health.update(scan_failing=None)

    def _check_integrity_if_due(self, store: Store) -> None:
        """``PRAGMA quick_check`` once a day of memoryd's clock (or after the clock was set
        back): raises :class:`StoreDamaged`. Finds the damage no write touched yet."""
        now = clock.now()
        last = self.checked_at
        if last is not None and 0 <= now - last < INTEGRITY_CHECK_SECONDS:
            return
        started = time.monotonic()
        try:
            store.quick_check()
        except sqlite3.OperationalError as exc:  # busy, locked: not damage; tried next time
            log.warning("state.quick_check_failed", error=str(exc))
            return
        self.checked_at = now
        log.debug("state.quick_check", result="ok", duration=round(time.monotonic() - started, 3))

    def footprint(self, scanner: Any) -> dict[str, Any]:
        """What the process holds after a full rescan (logged at debug level): resident memory,
        descriptors, threads and the entries of every memo that lives as long as the daemon."""
        import sys

        memos: dict[str, int] = dict(scanner.applier.memo_sizes())
        if self.restorer is not None:
            memos.update({f"restore_{k}": n for k, n in self.restorer.sizes().items()})
        for name, module, func in (
            ("classified_paths", "memoryd.workspace", "classify_result_path"),
            ("restore_documents", "memoryd.policy.restore_match", "_document"),
        ):
            cached = getattr(sys.modules.get(module), func, None)
            if cached is not None:
                memos[name] = cached.cache_info().currsize
        memos["queued_paths"] = len(self.queue)
        return {"rss_kb": heap.resident_kb(), "fds": heap.open_fds(),
                "threads": threading.active_count(), "py_blocks": sys.getallocatedblocks(),
                "memos": memos}  # fmt: skip

    def _grace_follows_the_clock(self, store: Store) -> float:
        """Before a scan: if the wall clock was set since the last one (beyond
        ``daemon.clock_jump_seconds``), the times store sessions were seen gone move by the same
        step, so their grace period counts the time that really passed. Here, not only in the
        main loop, since a scan could run before the main loop notices.

        Returns the wall time of the reading, which the scan takes as its own: a clock set
        after the reading is then the next scan's step to find."""
        from ..clock import read_clocks
        from ..ingest.ledger_sessions import clock_was_set
        from .schedule import find_gap

        now, before = read_clocks(), self._clocks
        self._clocks = now
        if before is None:
            return now.wall
        threshold = self.cfg.daemon.clock_jump_seconds
        gap = find_gap(before, now, now.mono - before.mono, threshold)
        if gap is None or abs(gap.clock_step) <= threshold:
            return now.wall
        try:
            clock_was_set(store, gap.clock_step)
        except sqlite3.Error:
            log.warning("ingest.grace_shift_failed", step=gap.clock_step, exc_info=True)
        return now.wall

    def _restore_on_demand(self, store: Store, new_calls: bool) -> None:
        """After a pass: bring back archived files that new searches ask for (never fatal).
        Switched off, the pass's searches are marked as history, so turning it on never acts
        on them."""
        try:
            if not self.cfg.expire.restore_on_demand:
                if new_calls:
                    from ..ondemand import ignore_until

                    ignore_until(store, time.time())
                return
            if self.restorer is None:
                from ..ondemand import RestoreOnDemand

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
    """watchdog handler: turns events into queue entries and does nothing else. An exception
    escaping it would kill watchdog's thread for good, so a failure is logged, counted and
    answered with a full rescan."""

    def __init__(self, queue: WorkQueue, offer: Callable[[Path], None]) -> None:
        """``queue``: where rescans are asked for; ``offer``: a changed file, queued when it
        is a transcript the daemon follows (:meth:`memoryd.service.main.Daemon.offer`)."""
        self.queue = queue
        self.offer = offer
        self.errors = 0

    def dispatch(self, event: Any) -> None:
        try:
            self._dispatch(event)
        except Exception:
            self.errors += 1
            log.error("watch.handler_failed", fs_event=repr(event), exc_info=True)
            with contextlib.suppress(Exception):
                self.queue.request_rescan("handler error")

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
                    self.queue.request_rescan("new folder", refresh=True)
                continue
            self.offer(path)
