"""The scanner: discover every source, read each from its checkpoint, commit hits.

Transcript files are read here (named by :mod:`.sources`, judged by :mod:`.tailer`, prescanned
by :mod:`.prescan`, maybe in a forked helper, applied by :mod:`.region_apply`); the SQLite store
by :mod:`.store_reader`, archives by :mod:`.archive_reader`. Every reader writes only through
:mod:`.ledger`: a batch's hits and the position after it in one transaction, so a crash re-reads
at most what was not committed, and re-reading is harmless (hits are unique per agent, call and
file). A source that fails, for any reason, is marked failed and the scan goes on (the fault
barrier in :meth:`Scanner._scan`).
"""

from __future__ import annotations

import gc
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import faults
from ..config import Config, Paths, runs_left_out
from ..progress import Report
from ..store import Store
from ..workspace import Roots, regular_stat, roots_of
from . import sources as src
from . import sqlite_source
from .apply import SYNTHETIC_QUERY_PREFIXES, Applier
from .archive_reader import ArchiveReader
from .calls import Calls
from .context import ReadContext, emit, traceback_of
from .events import TURN_FIELDS
from .ledger import Ledger
from .ledger_batch import Batch
from .ledger_checkpoints import Settle, SourceWrite
from .parser import parse
from .prescan import (
    USER_NEEDLE,
    Helper,
    HelperShare,
    Job,
    Prescanned,
    can_fork,
    core_is_free,
    helper_share,
    open_judged,
    prescan,
)
from .region_apply import apply_region
from .stats import ScanStats, SourceFailed
from .store_reader import StoreReader
from .tailer import (
    HEAD_MAX,
    TAIL_LEN,
    Checkpoint,
    Verdict,
    head_hash,
    judge,
    quick_verdict,
    tail_hash,
)
from .turn_kinds import TURN_RUNS

__all__ = ["SYNTHETIC_QUERY_PREFIXES", "ScanStats", "Scanner", "SourceFailed"]

_COMMIT_CHUNKS = 16  # commit at least every this many chunks' worth of lines
# A first scan (no hits yet) of at least this much builds the hit indexes once, at its end.
_BULK_LOAD_MIN_BYTES = 16 << 20
# A file renamed between a scan's stat and its open: the daemon rescans this soon after.
_GONE_RETRY_S = 1.0


class GoneSincePlanned(FileNotFoundError):
    """The path no longer holds the file the scan stat'ed: renamed or replaced meanwhile."""


@dataclass(slots=True, eq=False)
class _Plan:
    """A source with something to read, from the stat pass of a scan."""

    sf: src.SourceFile
    st: os.stat_result
    cp: Checkpoint | None  # the checkpoint of its inode
    at_path: Checkpoint | None  # the checkpoint of its path (another file's, maybe)
    quick: Verdict | None  # the verdict from stat alone
    unread: int  # bytes beyond the checkpoint, as stat sees them
    fd: int = -1
    job: Job | None = None  # the file as handed to the helper (read there, if it can)
    start: Checkpoint | None = None  # where reading starts, once opened and judged
    settle: Settle | None = None  # records the identity
    parent: str | None = None  # the session a successor continues (from its header)
    session: str = ""  # the session the file holds (set when opened)


class Scanner:
    """Reads every followed transcript incrementally into the state database."""

    def __init__(self, cfg: Config, paths: Paths, store: Store) -> None:
        self.cfg = cfg
        self.paths = paths
        self.store = store
        # Each as given and, behind a symlink, resolved: an absolute path may name either.
        self._workspaces: dict[str, Roots] = {a.id: roots_of(a.workspace) for a in paths.agents}
        self._primary = roots_of(paths.workspace)
        self._tiers_root = roots_of(paths.tiers_root)
        self._claude = tuple(Path(p).expanduser() for p in cfg.openclaw.claude_projects)
        self._synthetic_sessions: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}
        self._synthetic_this_scan: dict[str, frozenset[str]] = {}
        # source id → (offset, run kind of the turn there) after its last read in this process
        self._file_turns: dict[int, tuple[int, str | None]] = {}
        # (agent, session) → the run kind of the turn its file's last read ended in
        self._session_turns: dict[tuple[str, str], str | None] = {}
        # folders of transcripts the last discovery could not list: (agent, folder, why)
        self.unlisted_folders: list[tuple[str, str, str]] = []
        self.ledger = Ledger(store, _COMMIT_CHUNKS * cfg.ingest.chunk_bytes)
        # The extraPaths OpenClaw also searches as memory, per agent, every spelling of each.
        extras = {
            a.id: tuple(root for p in a.extra_paths for root in roots_of(p)) for a in paths.agents
        }
        left_out = runs_left_out(cfg.openclaw)
        # (dreaming's are `__dreaming_…` queries; the lineage is the read context's, below)
        self.applier = Applier(
            self.ledger, self._workspaces, self._primary, self._tiers_root,
            "dreaming" not in left_out, extras, left_out & TURN_RUNS,
            lineage_of=lambda agent: self.ctx.lineage(agent), archive_dir=cfg.archive.dir,
        )  # fmt: skip
        self.ctx = ReadContext(cfg, self.ledger, self.applier, self._synthetic, self._store_path)
        # One reader per kind of source besides transcript files (read here, below).
        self.archive_reader = ArchiveReader(self.ctx)
        self.store_reader = StoreReader(self.ctx, self.archive_reader)

    # ------------------------------------------------------------------ discovery

    def watch_dirs(self) -> list[Path]:
        """Folders whose changes matter (they may not exist yet)."""
        dirs: list[Path] = []
        for agent in self.paths.agents:
            dirs.extend(src.agent_dirs(agent, self.cfg.openclaw.include_active_memory))
        dirs.extend(self._claude)
        return dirs

    def is_transcript(self, path: Path) -> bool:
        """Cheap name filter for file events: a JSONL transcript or the SQLite store."""
        return src.classify_name(path.name) is not None or sqlite_source.is_db_file(path.name)

    def discover(self) -> list[src.SourceFile]:
        """Every transcript to read; the folders that could not be listed, in
        :attr:`unlisted_folders` (until the next call)."""
        self.unlisted_folders = []
        found = src.discover(
            self.paths.agents, include_active_memory=self.cfg.openclaw.include_active_memory,
            claude_projects=self._claude, unreadable=self.unlisted_folders,
        )  # fmt: skip
        return list(found)

    def _folders_failed(self, stats: ScanStats) -> None:
        """A folder of transcripts that cannot be listed hides all of them: a failed source of
        the scan, as a file is; recovered by the scan's end once it lists again (or is gone)."""
        failed_before = self.ledger.failed_sources()
        said: set[str] = set()
        for agent, folder, why in sorted(self.unlisted_folders, key=lambda f: f[1]):
            if any(folder.startswith(f"{top}{os.sep}") for top in said):
                continue  # (inside one already said: the same failure)
            said.add(folder)
            sf = src.SourceFile(agent, src.FOLDER, Path(folder))
            reason = f"the folder cannot be listed ({why})"
            if _count_failure(sf, reason, stats, failed_before):
                self.ledger.source_failed(sf, reason)

    def _owner(self, path: Path) -> src.SourceFile | None:
        """The source a single changed path belongs to (for event-driven scans)."""
        if sqlite_source.is_db_file(path.name):
            for agent in self.paths.agents:
                db = sqlite_source.db_path_for(agent.sessions_dir)
                if path.parent == db.parent:
                    return src.SourceFile(agent.id, src.SQLITE, db)
            return None
        kind = src.classify_name(path.name)
        if kind is None:
            return None
        for agent in self.paths.agents:
            for folder in src.agent_dirs(agent, self.cfg.openclaw.include_active_memory):
                if path.parent == folder:
                    return src.SourceFile(agent.id, kind, path)
        for project in self._claude:
            if project in path.parents and self.paths.agents:
                return src.SourceFile(self.paths.agents[0].id, src.CLAUDE, path)
        return None

    # ------------------------------------------------------------------ scanning

    def scan(
        self, only: Iterable[Path] | None = None, progress: Report | None = None,
        now: float | None = None,
    ) -> ScanStats:  # fmt: skip
        """Read what is new. ``only`` limits the scan to those paths (from file events).

        ``now``: the scan's time (memoryd's clock read now when None), for the grace period of
        sessions gone from a transcript store. ``progress`` is told after each source: sources
        done of those with something to read, and their unread bytes done of all.

        The cyclic garbage collector is paused meanwhile (a forked helper inherits the pause):
        a scan builds many small tuples and no cycles, so its passes are pure cost.
        """
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._scan(only, progress, now)
        finally:
            if collecting:
                gc.enable()

    def _scan(
        self, only: Iterable[Path] | None, progress: Report | None, now: float | None
    ) -> ScanStats:
        t0 = time.perf_counter()
        self._synthetic_this_scan.clear()
        stats = ScanStats()
        full = only is None
        owned = [] if only is None else [s for p in only if (s := self._owner(Path(p)))]
        files = self.discover() if only is None else owned
        if only is None:
            self._folders_failed(stats)
        by_inode, by_path, vanished = self.ledger.checkpoints()
        self.ledger.new_scan()  # (nothing of a scan that failed before: see there)
        self.ctx.new_scan(now)
        seen_ids: set[int] = set()
        pending: dict[str, Calls] = {}
        plans = self._plan(files, by_inode, by_path, seen_ids, stats)
        faults.point("scan.planned")  # OpenClaw may rename or replace a file from here on
        helper: HelperShare | None = None
        read_all = False  # (an interrupted bulk load builds no index: the next scan goes on)
        unread = [p.unread for p in plans]
        # A first scan, or one killed before its end (its indexes are still to build).
        resumed = self.ledger.bulk_unfinished()
        first = resumed or self.ledger.hits_empty()
        bulk = full and sum(unread) >= _BULK_LOAD_MIN_BYTES and first
        if resumed and not bulk:  # too little left to load in bulk: the indexes now
            self.ledger.end_bulk()
        try:
            if bulk:  # a first scan: load without the secondary indexes, build them at the end
                self.ledger.begin_bulk()
            split = helper_share(unread, self.cfg.ingest.parallel_min_bytes)
            if split < len(plans) and can_fork() and self._helper_wanted():
                helper = self._start_helper(plans, split, stats)
            failed_before = self.ledger.failed_sources()
            bytes_total = sum(unread)
            bytes_done = 0
            for done, plan in enumerate(plans, 1):
                try:
                    if plan.sf.kind == src.SQLITE:
                        self.store_reader.read(plan.sf, plan.st, plan.at_path, pending, stats)
                    elif plan.sf.kind == src.ARCHIVE:
                        self.archive_reader.read_file(plan.sf, plan.st, pending, stats)
                    elif helper is not None and plan.job is not None:
                        self._tail_prescanned(plan, helper, pending, stats)
                    else:
                        self._scan_file(plan, pending, stats)
                except GoneSincePlanned:
                    # Renamed or replaced since the stat: no failure. The next scan reads it
                    # by inode under its new name, and a new file at this name from 0.
                    stats.retry_in = stats.retry_in or _GONE_RETRY_S
                except Exception as exc:  # the fault barrier: one source fails, the scan goes on
                    if self.ledger.state_database_broke(exc):
                        raise  # memoryd's own database (a full disk…): no source can be read
                    self._source_failed(plan.sf, exc, stats, pending, failed_before)
                else:
                    if str(plan.sf.path) in failed_before:
                        self.ledger.source_recovered(str(plan.sf.path))
                faults.point("scan.source_done")
                if progress is not None:
                    bytes_done += plan.unread
                    progress(done, len(plans), bytes_done, bytes_total)
            if full and failed_before:
                # (a folder that cannot be listed is one too: _folders_failed keeps its row)
                listed = {str(sf.path) for sf in files} | {f for _, f, _ in self.unlisted_folders}
                for gone in failed_before.keys() - listed:
                    self.ledger.source_recovered(gone)
            read_all = True
        finally:
            if helper is not None:
                helper.close()
            for plan in plans:
                _close(plan)
            try:
                self.ledger.flush()
            finally:  # a failed commit (a full disk) must not leave the bulk settings behind
                if bulk:
                    self.ledger.end_bulk(build=read_all)
                # What every source's batches recorded, counted as their transactions committed.
                for name, n in self.ledger.take_written().items():
                    setattr(stats, name, getattr(stats, name) + n)
        if full:
            known = {c.id for c in by_path.values()} | {c.id for c in by_inode.values()}
            self.ledger.mark_vanished(
                known, seen_ids, vanished, self.cfg.ingest.vanished_grace_days
            )
        stats.elapsed = time.perf_counter() - t0
        return stats

    def pending_bytes(self) -> int:
        """Bytes present in followed transcripts beyond their committed offsets."""
        from .pending import pending_bytes

        return pending_bytes(self.cfg, self.paths, self.store.conn)

    def _plan(
        self, files: list[src.SourceFile], by_inode: dict[tuple[int, int], Checkpoint],
        by_path: dict[str, Checkpoint], seen_ids: set[int], stats: ScanStats,
    ) -> list[_Plan]:  # fmt: skip
        """Stat every source, in scan order; the ones with something to read, planned.

        Stat only: an unchanged file is not opened, and is not in the plan.
        """
        plans: list[_Plan] = []
        seen_inodes: set[tuple[int, int]] = set()
        for sf in files:
            st = sf.st or regular_stat(sf.path)
            if st is None:
                continue
            # A hard link to a file already planned, or a database named twice (an event
            # scan gets both the database and its -wal file): read once.
            if (st.st_dev, st.st_ino) in seen_inodes:
                continue
            seen_inodes.add((st.st_dev, st.st_ino))
            if sf.kind == src.ARCHIVE:  # read whole once; a stat tells whether it was
                done = self.ctx.archives_done.get((sf.agent, str(sf.path)))
                if done != (st.st_size, str(st.st_mtime_ns)):
                    plans.append(_Plan(sf, st, None, None, None, 0))
                continue
            stats.files_seen += 1
            if sf.kind == src.SQLITE:
                cp = by_path.get(str(sf.path))
                if cp is not None:
                    seen_ids.add(cp.id)
                plans.append(_Plan(sf, st, None, cp, None, 0))
                continue
            cp = by_inode.get((st.st_dev, st.st_ino))
            if cp is not None:
                seen_ids.add(cp.id)
            quick = quick_verdict(cp, str(sf.path), st)
            if quick is Verdict.UNCHANGED:
                continue
            from_offset = cp.offset if cp is not None and quick is None else 0
            unread = max(st.st_size - from_offset, 0)
            plans.append(_Plan(sf, st, cp, by_path.get(str(sf.path)), quick, unread))
        return plans

    def _open(self, plan: _Plan) -> None:
        """Open a planned file and settle what it is (sets ``fd``, ``start`` and ``settle``).

        Raises :class:`GoneSincePlanned` when the path no longer holds the file stat'ed.
        """
        try:
            plan.fd = os.open(plan.sf.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise GoneSincePlanned(plan.sf.path) from None
        now = os.fstat(plan.fd)
        if (now.st_dev, now.st_ino) != (plan.st.st_dev, plan.st.st_ino):
            raise GoneSincePlanned(plan.sf.path)  # (closed by the caller, as ever)
        head = os.pread(plan.fd, HEAD_MAX, 0)
        if plan.quick is None:
            assert plan.cp is not None
            before = None
            if plan.cp.tail_hash is not None:  # the bytes just before the offset, as they are now
                n = min(TAIL_LEN, plan.cp.offset)
                before = os.pread(plan.fd, n, plan.cp.offset - n)
            verdict = judge(plan.cp, str(plan.sf.path), plan.st, head, before)
        else:
            verdict = plan.quick
        plan.parent = src.parent_session(plan.fd, head)  # (reads first: stats change only after)
        plan.session = src.file_session(plan.sf, head)
        plan.start, plan.settle = self.ledger.settle_identity(
            plan.sf, plan.st, head, plan.cp, plan.at_path, verdict
        )

    def _scan_file(self, plan: _Plan, pending: dict[str, Calls], stats: ScanStats) -> None:
        """Open, judge and read one file in this process, a region at a time."""
        try:
            self._open(plan)
            self._tail(plan, self._prescan_here(plan), pending, stats)
        finally:
            _close(plan)

    def _helper_wanted(self) -> bool:
        """The ``ingest.helper`` policy: "auto" forks only when another core is idle."""
        policy = self.cfg.ingest.helper
        return policy == "always" or (policy == "auto" and core_is_free())

    def _start_helper(self, plans: list[_Plan], split: int, stats: ScanStats) -> HelperShare | None:
        """Judge the files from ``split`` on, and fork a helper to prescan them. Each file is
        opened, judged and closed here; the helper, and this process when it commits it, open
        it again by path only if it is still the file judged (no descriptor per file held)."""
        share: list[_Plan] = []
        for plan in plans[split:]:
            if plan.sf.kind in (src.SQLITE, src.ARCHIVE):
                continue
            try:
                self._open(plan)
                head = os.pread(plan.fd, HEAD_MAX, 0)
                st = os.fstat(plan.fd)
            except OSError:  # out of descriptors, say: the helper takes the files judged so
                break  # far, and this one and the rest are read here, in turn
            finally:
                _close(plan)
            assert plan.start is not None  # set by _open
            path, offset = str(plan.sf.path), plan.start.offset
            plan.job = Job(path, st.st_dev, st.st_ino, len(head), head_hash(head), offset)
            share.append(plan)
        if not share:
            return None
        jobs = [plan.job for plan in share if plan.job is not None]
        ingest = self.cfg.ingest
        helper = Helper(jobs, chunk_bytes=ingest.chunk_bytes, max_line_bytes=ingest.max_line_bytes)
        faults.point("scan.helper_started")  # in the parent, the helper forked and working
        return HelperShare(helper, share)

    def _tail_prescanned(
        self, plan: _Plan, helper: HelperShare, pending: dict[str, Calls], stats: ScanStats
    ) -> None:
        """Commit a file of the helper's share, from its answer (or read here if it gave none).
        A file no longer the one judged (replaced, renamed, deleted) is left to the next scan,
        from its unchanged checkpoint."""
        assert plan.start is not None and plan.job is not None
        done = helper.result(plan)
        plan.fd = open_judged(plan.job)
        if plan.fd < 0:
            return
        regions: Iterable[tuple[Prescanned, bytes | None]]
        if done is not None:
            stats.helper_files += 1
            regions = ((pre, None) for pre in done)
        else:
            regions = self._prescan_here(plan)
        try:
            self._tail(plan, regions, pending, stats)
        finally:  # its descriptor is not needed any more: hand it back at once
            _close(plan)

    def _prescan_here(self, plan: _Plan) -> Iterator[tuple[Prescanned, bytes]]:
        """Prescan an opened file in this process, a region at a time (with its bytes)."""
        assert plan.start is not None
        ingest = self.cfg.ingest
        return prescan(plan.fd, plan.start.offset, chunk_bytes=ingest.chunk_bytes,
                       max_line_bytes=ingest.max_line_bytes)  # fmt: skip

    def _tail(
        self, plan: _Plan, regions: Iterable[tuple[Prescanned, bytes | None]],
        pending: dict[str, Calls], stats: ScanStats,
    ) -> None:  # fmt: skip
        """Apply a file's prescanned regions in order, committing with their end offsets."""
        cp, sf, st = plan.start, plan.sf, plan.st
        assert cp is not None and plan.settle is not None
        stats.files_read += 1
        calls = pending.get(cp.agent)
        if calls is None:
            calls = pending[cp.agent] = self.ledger.waiting_calls(cp.agent)
        session = plan.session or src.file_session(sf, b"")
        synthetic = self._is_synthetic(sf, session)
        commit_every = _COMMIT_CHUNKS * self.cfg.ingest.chunk_bytes
        source = SourceWrite(plan.settle)
        left_out = self.applier.left_out_turns
        batch = Batch(cp, session, synthetic, plan.parent, start=cp.offset, end=cp.offset)
        batch.in_turn(self._turn_at(cp, plan.fd, plan.parent) if left_out else None, left_out)
        for pre, data in regions:
            start, end, oversized, _, _ = pre
            stats.bytes_read += end - start
            batch.oversized += oversized
            batch.end = end
            apply_region(self.applier, plan.fd, pre, data, batch, calls, stats)
            if batch.end - batch.start >= commit_every:
                self._commit(batch, source, None, plan.fd)
                turn = batch.turn
                batch = Batch(cp, session, synthetic, plan.parent, start=batch.end, end=batch.end)
                batch.in_turn(turn, left_out)
        self._file_turns[cp.id] = (batch.end, batch.turn)
        self._session_turns[(cp.agent, session)] = batch.turn
        # The size and mtime seen *before* reading: bytes appended while we read make the
        # next stat differ, so they are read next time. (A stat taken after the last read
        # could include them without their lines having been read: lost for good.)
        self._commit(batch, source, st, plan.fd)

    def _turn_at(self, cp: Checkpoint, fd: int, parent: str | None) -> str | None:
        """The run kind of the turn a file's read resumes in (None: the user's): known from
        the last read in this process, else from the last user message before the offset. A
        successor read from its start continues its parent's turn (a compaction may cut a
        run's turn in two), as far as this process read the parent."""
        offset, turn = self._file_turns.get(cp.id, (-1, None))
        if offset == cp.offset:
            return turn
        if cp.offset == 0:
            return self._session_turns.get((cp.agent, parent)) if parent else None
        return turn_before(fd, cp.offset)

    def _source_failed(
        self, sf: src.SourceFile, exc: BaseException, stats: ScanStats, pending: dict[str, Calls],
        failed_before: dict[str, str],
    ) -> None:  # fmt: skip
        """Mark a source failed with its reason: counted, recorded for ``status``, logged. If
        the failure rolled back the scan's open transaction, the waiting calls kept in memory
        may name rows that were not written: they are loaded again.
        """
        if isinstance(exc, SourceFailed):
            reason = str(exc)
        elif isinstance(exc, (OSError, sqlite3.Error)):
            reason = str(exc) or type(exc).__name__
        else:
            reason = f"{type(exc).__name__}: {exc}"
        if self.ledger.rolled_back:
            pending.clear()
            self.ledger.rolled_back = False
        if _count_failure(sf, reason, stats, failed_before) and not isinstance(exc, SourceFailed):
            # unexpected: where, for whoever debugs it
            emit("ingest.source_traceback", debug=True, source=str(sf.path),
                 traceback=traceback_of(exc))  # fmt: skip
        self.ledger.source_failed(sf, reason)

    def _commit(
        self, batch: Batch, source: SourceWrite, final: os.stat_result | None, fd: int
    ) -> None:
        """Commit a file's batch with the fingerprint of the line before its end."""
        n = min(TAIL_LEN, batch.end)
        fingerprint = tail_hash(os.pread(fd, n, batch.end - n))
        self.ledger.commit_file(batch, source, fingerprint, final)  # (counted: see _scan)
        faults.point("scan.batch")  # in the open transaction, not yet committed

    def _sessions_dir(self, agent: str) -> Path | None:
        return next((a.sessions_dir for a in self.paths.agents if a.id == agent), None)

    def _store_path(self, agent: str) -> Path | None:
        sessions_dir = self._sessions_dir(agent)
        return sqlite_source.db_path_for(sessions_dir) if sessions_dir is not None else None

    def _is_synthetic(self, sf: src.SourceFile, session: str) -> bool:
        """Whether a transcript file holds cron or heartbeat traffic (not counted).

        sessions.json says so for files in ``sessions/``. An import-archive copy is read
        before the store (and a store install may have no sessions.json): its key is in
        its name (``agent_<id>_cron_<job>.<file>.imported-<ts>``) and in the store.
        """
        if session in self._synthetic(sf.agent):
            return True
        if sf.kind != src.IMPORTED:
            return False
        return src.is_synthetic_slug(
            src.imported_key_slug(sf.path.name, session),
            active_memory=self.ctx.helper_excluded,
            synthetic=self.ctx.synthetic_excluded,
        ) or session in self.ctx.store_synthetic_of(sf.agent)

    def _synthetic(self, agent: str) -> frozenset[str]:
        """Session ids of the agent's cron and heartbeat sessions (from its sessions.json),
        looked at once per scan and agent: the daemon's scanner lives for days, and a cron
        session started after it must not be counted."""
        done = self._synthetic_this_scan.get(agent)
        if done is None:
            done = self._synthetic_this_scan[agent] = self._read_synthetic(agent)
        return done

    def _read_synthetic(self, agent: str) -> frozenset[str]:
        sessions_dir = self._sessions_dir(agent)
        if sessions_dir is None or not (self.ctx.synthetic_excluded or self.ctx.helper_excluded):
            return frozenset()
        index = sessions_dir / "sessions.json"
        try:
            st = os.stat(index)
        except OSError:
            return frozenset()
        key = (st.st_mtime_ns, st.st_size)
        cached = self._synthetic_sessions.get(agent)
        if cached is not None and cached[0] == key:
            return cached[1]
        import orjson  # (once per agent and change: the scan path imports no JSON library itself)

        try:
            data = orjson.loads(index.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            data = None
        ids = src.synthetic_session_ids(
            data, active_memory=self.ctx.helper_excluded, synthetic=self.ctx.synthetic_excluded
        )
        self._synthetic_sessions[agent] = (key, ids)
        return ids


# How far back a resumed read looks for the user message its turn began with: a turn whose
# start is further back is taken for the user's.
_LOOK_BACK_BYTES = 1 << 20


def _count_failure(
    sf: src.SourceFile, reason: str, stats: ScanStats, failed_before: dict[str, str]
) -> bool:
    """A failed source counted in ``stats``, and logged when it starts failing or fails for
    another reason (not at every rescan); whether it was logged."""
    source = str(sf.path)
    stats.errors += 1
    stats.failed_sources.append({"source": source, "reason": reason})
    if failed_before.get(source) == reason:
        return False
    emit("ingest.source_failed", source=source, kind=sf.kind, agent=sf.agent, reason=reason)
    return True


def _close(plan: _Plan) -> None:
    if plan.fd >= 0:
        os.close(plan.fd)
        plan.fd = -1


def turn_before(fd: int, offset: int) -> str | None:
    """The run kind of the turn the line at ``offset`` is in: that of the last user message
    before it, told as the parser tells it (its TurnStarted); None (the user's) when there
    is none within :data:`_LOOK_BACK_BYTES`."""
    begin = max(0, offset - _LOOK_BACK_BYTES)
    read_from = begin - 1 if begin > 0 else 0  # (one byte more: does a line start at begin?)
    try:
        data = os.pread(fd, offset - read_from, read_from)
    except OSError:
        return None
    i = data.rfind(USER_NEEDLE)
    while i >= 0:
        newline = data.rfind(b"\n", 0, i)
        if newline < 0 and read_from > 0:
            return None  # (its line starts before what was read)
        line_start = newline + 1
        line_end = data.find(b"\n", i)
        line = data[line_start : line_end if line_end >= 0 else len(data)]
        for ev in parse(line).events:
            if len(ev) == TURN_FIELDS:
                return ev[0]
        i = data.rfind(USER_NEEDLE, 0, line_start)
    return None
