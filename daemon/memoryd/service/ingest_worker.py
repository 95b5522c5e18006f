"""The daemon's one reader of transcripts: a de-duplicating work queue and the ingest worker.

File-system events are hints, not truth (inotify overflows, FSEvents coalesces, network file
systems send nothing), so the watchdog handler (:class:`TranscriptEvents`) only puts a path
into the :class:`WorkQueue`; the :class:`IngestWorker` owns the scanner and its own SQLite
connection and reads from the committed checkpoint. A stat-only full rescan runs at start
(the catch-up scan), every ``daemon.rescan_seconds``, after a gap (sleep, SIGSTOP, the clock
set) and on SIGHUP.
After each pass the worker brings back archived files that new searches ask for
(restore on demand, :mod:`memoryd.ondemand`).
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

from .. import clock
from ..config import Config, ConfigError, Paths, resolve_paths
from ..log import get_logger
from ..store import Store, StoreGone
from . import heap

log = get_logger("memoryd.service")


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
        self._clocks: Any = None  # (wall, monotonic, boot) at the last scan's start

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
        from ..ingest.scan import Scanner

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
        self._grace_follows_the_clock(store)
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
        if only is None:
            log.debug("daemon.footprint", **self.footprint(scanner))
        return stats

    def footprint(self, scanner: Any) -> dict[str, Any]:
        """What the process holds after a full rescan: resident memory, descriptors, threads
        and the entries of every memo that lives as long as the daemon (each bounded, or
        pruned to what is still there; docs/service.md, "Memory over months"). Logged at
        debug level."""
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
        return {
            "rss_kb": heap.resident_kb(),
            "fds": heap.open_fds(),
            "threads": threading.active_count(),
            "py_blocks": sys.getallocatedblocks(),
            "memos": memos,
        }

    def _grace_follows_the_clock(self, store: Store) -> None:
        """Before a scan: if the wall clock was set since the last one (a step its monotonic
        and boot clocks did not make, beyond ``daemon.clock_jump_seconds``), the times store
        sessions were seen gone move by the same step (``ingest.ledger.clock_was_set``), so
        their grace period counts the time that really passed. Here, on the thread that
        scans, before the scan: the main loop notices the step too (``daemon.gap``), but a
        scan could run before it does, and forget with the clock as set."""
        from ..clock import read_clocks
        from ..ingest.ledger import clock_was_set
        from .schedule import find_gap

        now, before = read_clocks(), self._clocks
        self._clocks = now
        if before is None:
            return
        threshold = self.cfg.daemon.clock_jump_seconds
        gap = find_gap(before, now, now.mono - before.mono, threshold)
        if gap is None or abs(gap.clock_step) <= threshold:
            return
        try:
            clock_was_set(store, gap.clock_step)
        except sqlite3.Error:
            log.warning("ingest.grace_shift_failed", step=gap.clock_step, exc_info=True)

    def _restore_on_demand(self, store: Store, new_calls: bool) -> None:
        """After a pass: bring back archived files that new searches ask for (never fatal).

        Switched off (``expire.restore_on_demand = false``), the searches of the pass are
        marked as history instead, so turning it on later never acts on them.
        """
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
    """watchdog handler: turns events into queue entries and does nothing else.

    An exception escaping a handler kills watchdog's dispatch thread for good, so every
    event is handled inside a try; a failure is logged, counted and answered with a full
    rescan, which reads whatever the event was about.
    """

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
