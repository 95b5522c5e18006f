"""The scanner: discover transcripts, tail each from its checkpoint, commit hits.

This is the imperative shell around :mod:`.parser` (what a line means),
:mod:`.tailer` (identity and reading) and :mod:`.prescan` (finding and parsing
the lines that matter, possibly in a forked helper). Each run plans first (a
``stat`` per source), then reads the files in order. What a batch of complete
lines gives —
the new hits, the calls still waiting for an answer — is written together with
the offset after those lines, in the same transaction (small transcripts share
one: a group commit every few chunks' worth of lines). A crash at any moment
therefore re-reads at most uncommitted lines, and re-reading is harmless: hits
are unique per agent, call and file.

Most transcript lines carry no memory tool at all. The scanner looks for the
few that can matter with plain byte searches over whole regions (``memory_``,
and the ids of calls of the same session, or the session a successor continues,
still waiting for an answer that may not name its tool) and parses only those
lines; everything else is skipped without being decoded.
"""

from __future__ import annotations

import gc
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from .. import clock
from ..config import Config, Paths
from ..store import Store
from ..workspace import classify_result_path, regular_stat
from . import archives, sqlite_source
from . import sources as src
from .calls import Call, Calls, answers
from .ledger import Batch, Ledger, Settle, SourceWrite
from .parser import GET, SEARCH, ParsedLine, ToolCall, ToolResult, parse_line
from .prescan import (
    NEEDLE,
    Helper,
    Job,
    Prescanned,
    can_fork,
    helper_file_budget,
    helper_share,
    prescan,
)
from .tailer import (
    HEAD_MAX,
    TAIL_LEN,
    Checkpoint,
    Verdict,
    judge,
    lines_containing,
    quick_verdict,
    tail_hash,
)

# A result's call-id field: every key the parser takes a call id from, with a string or a
# number value, so that the pattern pass finds what a byte search for the id finds.
_ID_FIELD = re.compile(
    rb'"(?:toolCallId|toolUseId|tool_call_id|tool_use_id|call_id|callId|id)"\s*:\s*'
    rb'(?:"([^"\\]{1,200})"|(-?[0-9]{1,30})\b)'
)
_CALL_FIELDS = len(ToolCall._fields)  # a result has more (ToolResult._fields)
assert len(ToolResult._fields) != _CALL_FIELDS
# More waiting calls than this: one regex pass over the id fields instead of a search per id.
# A byte search for one id runs at about 6 GB/s here, the regex at about 0.5 GB/s (it stops
# at every quote), so one pass pays only beyond a dozen ids.
_DIRECT_ID_SEARCH_MAX = 12
_COMMIT_CHUNKS = 16  # commit at least every this many chunks' worth of lines
# A first scan (no hits yet) of at least this much builds the hit indexes once, at its end.
_BULK_LOAD_MIN_BYTES = 16 << 20
_MALFORMED_LOG_MAX = 20  # malformed stored events logged one by one per scan; then a summary
SYNTHETIC_QUERY_PREFIXES = ("__dreaming",)


class ScanStats:
    """What one scan did; printed by ``memoryd scan`` and logged by the daemon.

    (The classes of this module are plain classes with ``__slots__``, not dataclasses:
    ``memoryd scan`` is a one-shot command, and importing and building dataclasses is a
    measurable part of its start-up.)
    """

    # In the order ``memoryd scan --json`` prints them.
    FIELDS = (
        "files_seen",
        "files_read",
        "bytes_read",
        "lines_parsed",
        "new_hits",
        "new_calls",
        "malformed",
        "oversized",
        "non_memory_paths",
        "renamed",
        "resets",
        "errors",
        "failed_sources",  # [{source, reason}]: the sources this scan could not read
        "helper_files",  # transcripts whose lines a forked helper found and parsed
        "elapsed",
    )
    __slots__ = FIELDS

    def __init__(self) -> None:
        for name in self.FIELDS:
            setattr(self, name, 0)
        self.elapsed = 0.0
        self.failed_sources: list[dict[str, str]] = []

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {name: getattr(self, name) for name in self.FIELDS}
        d["elapsed"] = round(self.elapsed, 4)
        d["failed_sources"] = [dict(f) for f in self.failed_sources]
        return d


class SourceFailed(Exception):
    """A source that cannot be read for a reason we know (no traceback is logged for it)."""


class _Plan:
    """A source with something to read, from the stat pass of a scan."""

    __slots__ = (
        "at_path",
        "cp",
        "fd",
        "parent",
        "quick",
        "session",
        "settle",
        "sf",
        "st",
        "start",
        "unread",
    )

    def __init__(
        self,
        sf: src.SourceFile,
        st: os.stat_result,
        cp: Checkpoint | None,
        at_path: Checkpoint | None,
        quick: Verdict | None,
        unread: int,
    ) -> None:
        self.sf = sf
        self.st = st
        self.cp = cp  # the checkpoint of its inode
        self.at_path = at_path  # the checkpoint of its path (another file's, maybe)
        self.quick = quick  # the verdict from stat alone
        self.unread = unread  # bytes beyond the checkpoint, as stat sees them
        self.fd = -1
        self.start: Checkpoint | None = None  # where reading starts, once opened and judged
        self.settle: Settle | None = None  # records the identity
        self.parent: str | None = None  # the session a successor continues (from its header)
        self.session = ""  # the session the file holds (set when opened)


class _HelperShare:
    """The files a forked helper prescans, taken in scan order as it answers."""

    def __init__(self, helper: Helper, plans: list[_Plan]) -> None:
        self._helper = helper
        self._next = iter(plans)

    def result(self, plan: _Plan) -> list[Prescanned] | None:
        expected = next(self._next, None)
        assert expected is plan, "the helper's files are committed in the order they were given"
        return self._helper.next()

    def close(self) -> None:
        self._helper.close()


class Scanner:
    """Reads every followed transcript incrementally into the state database."""

    def __init__(self, cfg: Config, paths: Paths, store: Store) -> None:
        self.cfg = cfg
        self.paths = paths
        self.store = store
        self._workspaces = {a.id: str(a.workspace.absolute()) for a in paths.agents}
        self._primary = str(paths.workspace.absolute())
        self._tiers_root = str(paths.tiers_root.absolute())
        self._claude = tuple(Path(p).expanduser() for p in cfg.openclaw.claude_projects)
        self._synthetic_sessions: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}
        self._synthetic_this_scan: dict[str, frozenset[str]] = {}
        self.ledger = Ledger(store, _COMMIT_CHUNKS * cfg.ingest.chunk_bytes)
        self._malformed_logged = 0  # malformed stored events logged in this scan
        # Archives read whole: (agent, name) → (size, digest); loaded at the start of a scan.
        self._archives_done: dict[tuple[str, str], tuple[int, str]] = {}
        # Per agent, the cron / heartbeat sessions the store's own tables name (kept from the
        # last time the store was opened, for archive files read while it is unchanged).
        self._store_synthetic: dict[str, frozenset[str]] = {}
        self._reported: set[str] = set()  # unknown archive columns / kinds, reported once

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
        return list(
            src.discover(
                self.paths.agents,
                include_active_memory=self.cfg.openclaw.include_active_memory,
                claude_projects=self._claude,
            )
        )

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

    def scan(self, only: Iterable[Path] | None = None) -> ScanStats:
        """Read what is new. ``only`` limits the scan to those paths (from file events).

        The cyclic garbage collector is paused meanwhile (in the daemon too): a scan
        builds many small tuples and no cycles, and the collector's passes over them
        are pure cost. A forked helper inherits the pause.
        """
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._scan(only)
        finally:
            if collecting:
                gc.enable()

    def _scan(self, only: Iterable[Path] | None) -> ScanStats:
        t0 = time.perf_counter()
        self._synthetic_this_scan.clear()
        self._malformed_logged = 0
        stats = ScanStats()
        full = only is None
        files = self.discover() if full else [s for p in only if (s := self._owner(Path(p)))]
        by_inode, by_path, vanished = self.ledger.checkpoints()
        self._archives_done = self.ledger.archives_read()
        seen_ids: set[int] = set()
        pending: dict[str, Calls] = {}
        plans = self._plan(files, by_inode, by_path, seen_ids, stats)
        helper: _HelperShare | None = None
        unread = [p.unread for p in plans]
        bulk = full and sum(unread) >= _BULK_LOAD_MIN_BYTES and self.ledger.hits_empty()
        try:
            if bulk:  # a first scan: load without the secondary indexes, build them at the end
                self.ledger.begin_bulk()
            min_bytes = self.cfg.ingest.parallel_min_bytes
            if helper_share(unread, min_bytes) < len(plans) and can_fork():
                split = helper_share(unread, min_bytes, helper_file_budget())
                if split < len(plans):
                    helper = self._start_helper(plans, split, stats)
            failed_before = self.ledger.failed_sources()
            for plan in plans:
                try:
                    if plan.sf.kind == src.SQLITE:
                        self._scan_sqlite(plan, pending, stats)
                    elif plan.sf.kind == src.ARCHIVE:
                        self._scan_archive_file(plan, pending, stats)
                    elif helper is not None and plan.fd >= 0:
                        self._tail_prescanned(plan, helper, pending, stats)
                    else:
                        self._scan_file(plan, pending, stats)
                except Exception as exc:  # the fault barrier: one source fails, the scan goes on
                    self._source_failed(plan.sf, exc, stats, pending, failed_before)
                else:
                    if str(plan.sf.path) in failed_before:
                        self.ledger.source_recovered(str(plan.sf.path))
            if full and failed_before:
                listed = {str(sf.path) for sf in files}
                for gone in failed_before.keys() - listed:
                    self.ledger.source_recovered(gone)
        finally:
            if helper is not None:
                helper.close()
            for plan in plans:
                if plan.fd >= 0:
                    os.close(plan.fd)
            self.ledger.flush()
            if bulk:
                self.ledger.end_bulk()
        if full:
            known = {c.id for c in by_path.values()} | {c.id for c in by_inode.values()}
            self.ledger.mark_vanished(
                known, seen_ids, vanished, self.cfg.ingest.vanished_grace_days
            )
        stats.elapsed = time.perf_counter() - t0
        return stats

    def pending_bytes(self) -> int:
        """Bytes present in followed transcripts beyond their committed offsets."""
        by_inode, _, _ = self.ledger.checkpoints()
        total = 0
        for sf in self.discover():
            st = sf.st or regular_stat(sf.path)
            if st is None or sf.kind in (src.SQLITE, src.ARCHIVE):
                continue
            cp = by_inode.get((st.st_dev, st.st_ino))
            total += st.st_size - (cp.offset if cp and st.st_size >= cp.offset else 0)
        return total

    def _plan(
        self,
        files: list[src.SourceFile],
        by_inode: dict[tuple[int, int], Checkpoint],
        by_path: dict[str, Checkpoint],
        seen_ids: set[int],
        stats: ScanStats,
    ) -> list[_Plan]:
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
                done = self._archives_done.get((sf.agent, str(sf.path)))
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

    def _open(self, plan: _Plan, stats: ScanStats) -> None:
        """Open a planned file and settle what it is (sets ``fd``, ``start`` and ``settle``)."""
        plan.fd = os.open(plan.sf.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
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
        if verdict in (Verdict.TRUNCATED, Verdict.REPLACED):
            stats.resets += 1
        elif verdict is Verdict.RENAMED:
            stats.renamed += 1
        plan.start, plan.settle = self.ledger.settle_identity(
            plan.sf, plan.st, head, plan.cp, plan.at_path, verdict
        )

    def _scan_file(self, plan: _Plan, pending: dict[str, Calls], stats: ScanStats) -> None:
        """Open, judge and read one file in this process, a region at a time."""
        try:
            self._open(plan, stats)
            self._tail(plan, self._prescan_here(plan), pending, stats)
        finally:
            if plan.fd >= 0:
                os.close(plan.fd)
                plan.fd = -1

    def _start_helper(
        self, plans: list[_Plan], split: int, stats: ScanStats
    ) -> _HelperShare | None:
        """Open and judge the files from ``split`` on, and fork a helper to prescan them."""
        share: list[_Plan] = []
        for plan in plans[split:]:
            if plan.sf.kind in (src.SQLITE, src.ARCHIVE):
                continue
            try:
                self._open(plan, stats)
            except OSError:  # out of descriptors, say: the helper takes the files opened so
                if plan.fd >= 0:  # far, and this one and the rest are read here, in turn
                    os.close(plan.fd)
                    plan.fd = -1
                break
            share.append(plan)
        if not share:
            return None
        jobs: list[Job] = []
        for plan in share:
            assert plan.start is not None  # set by _open
            jobs.append(Job(plan.fd, plan.start.offset))
        helper = Helper(
            jobs,
            chunk_bytes=self.cfg.ingest.chunk_bytes,
            max_line_bytes=self.cfg.ingest.max_line_bytes,
        )
        return _HelperShare(helper, share)

    def _tail_prescanned(
        self, plan: _Plan, helper: _HelperShare, pending: dict[str, Calls], stats: ScanStats
    ) -> None:
        """Commit a file of the helper's share, from its answer (or read here if it gave none)."""
        assert plan.start is not None
        done = helper.result(plan)
        regions: Iterable[tuple[Prescanned, bytes | None]]
        if done is not None:
            stats.helper_files += 1
            regions = ((pre, None) for pre in done)
        else:
            regions = self._prescan_here(plan)
        try:
            self._tail(plan, regions, pending, stats)
        finally:  # its descriptor is not needed any more: hand it back at once
            os.close(plan.fd)
            plan.fd = -1

    def _prescan_here(self, plan: _Plan) -> Iterator[tuple[Prescanned, bytes]]:
        """Prescan an opened file in this process, a region at a time (with its bytes)."""
        assert plan.start is not None
        return prescan(
            plan.fd,
            plan.start.offset,
            chunk_bytes=self.cfg.ingest.chunk_bytes,
            max_line_bytes=self.cfg.ingest.max_line_bytes,
        )

    def _tail(
        self,
        plan: _Plan,
        regions: Iterable[tuple[Prescanned, bytes | None]],
        pending: dict[str, Calls],
        stats: ScanStats,
    ) -> None:
        """Apply a file's prescanned regions in order, committing with their end offsets."""
        cp, sf, st = plan.start, plan.sf, plan.st
        assert cp is not None and plan.settle is not None
        stats.files_read += 1
        calls = pending.get(cp.agent)
        if calls is None:
            calls = pending[cp.agent] = self.ledger.waiting_calls(cp.agent)
        session = plan.session or src.file_session(sf, b"")
        synthetic = not self.cfg.openclaw.count_synthetic and session in self._synthetic(cp.agent)
        commit_every = _COMMIT_CHUNKS * self.cfg.ingest.chunk_bytes
        source = SourceWrite(plan.settle)
        batch = Batch(cp, session, synthetic, plan.parent, start=cp.offset, end=cp.offset)
        for pre, data in regions:
            start, end, oversized, _, _ = pre
            stats.bytes_read += end - start
            batch.oversized += oversized
            batch.end = end
            self._apply_region(plan.fd, pre, data, batch, calls, stats)
            if batch.end - batch.start >= commit_every:
                self._commit(batch, source, stats, None, plan.fd)
                batch = Batch(cp, session, synthetic, plan.parent, start=batch.end, end=batch.end)
        # The size and mtime seen *before* reading: bytes appended while we read make the
        # next stat differ, so they are read next time. (A stat taken after the last read
        # could include them without their lines having been read: lost for good.)
        self._commit(batch, source, stats, st, plan.fd)

    def _scan_sqlite(self, plan: _Plan, pending: dict[str, Calls], stats: ScanStats) -> None:
        """Read new rows of OpenClaw's SQLite transcript store (see :mod:`.sqlite_source`).

        A store whose database and WAL are as they were is not opened. Otherwise its
        layout is found by name, each session with rows past its cursor is read (a
        session before the ones that continue it), compressed rows are decoded, and
        each batch of rows is committed with the session's new cursor.
        """
        sf, st = plan.sf, plan.st
        cp = plan.at_path
        sig = sqlite_source.signature(sf.path)
        if sig is None or (cp is not None and (cp.size, cp.mtime_ns) == sig):
            return  # no new rows: the database and its WAL are as they were
        stats.files_read += 1
        conn = sqlite_source.open_readonly(sf.path)
        try:
            tables = sqlite_source.table_columns(conn)
            layout = sqlite_source.pick_layout(tables)
            if layout is None:
                raise SourceFailed(sqlite_source.UNSUPPORTED)
            keys = sqlite_source.session_keys(conn, tables)
            parents = sqlite_source.previous_sessions(conn, tables)
            if cp is None:
                cp = self.ledger.new_store_source(sf, st)
            calls = pending.get(cp.agent)
            if calls is None:
                calls = pending[cp.agent] = self.ledger.waiting_calls(cp.agent)
            cursors = self.ledger.cursors(cp.id)
            self._store_synthetic[cp.agent] = sqlite_source.synthetic_from_keys(keys)
            synthetic_ids: frozenset[str] = frozenset()
            if not self.cfg.openclaw.count_synthetic:
                synthetic_ids = self._synthetic(cp.agent) | self._store_synthetic[cp.agent]
            # Sessions rewritten in place since the last read (a new watermark): from the start.
            marks = sqlite_source.rewrite_marks(conn, tables)
            mark_name = f"{sf.path}#{sqlite_source.REWRITE_TABLE}/"
            changed_marks = {
                sid: digest
                for sid, digest in marks.items()
                if self._archives_done.get((cp.agent, mark_name + sid), (0, ""))[1] != digest
            }
            for sid in changed_marks:
                if sid in cursors:
                    cursors[sid] = -1
            todo = sqlite_source.sessions_with_new_rows(conn, layout, cursors)
            for session_id, after in sqlite_source.parents_first(todo, parents):
                self._read_store_session(
                    conn,
                    layout,
                    cp,
                    session_id,
                    after,
                    session_id in synthetic_ids,
                    parents.get(session_id),
                    calls,
                    stats,
                )
            for shape in archives.archive_shapes(tables):
                self._read_archive_table(conn, shape, sf, cp, pending, stats)
        finally:
            conn.close()
        marks_seen = {mark_name + sid: d for sid, d in changed_marks.items()}
        self.ledger.store_read(cp.id, cp.agent, sig, marks_seen)

    def _read_store_session(
        self,
        conn: sqlite3.Connection,
        layout: sqlite_source.Layout,
        cp: Checkpoint,
        session_id: str,
        after: int,
        synthetic: bool,
        parent: str | None,
        calls: Calls,
        stats: ScanStats,
    ) -> None:
        """One session's rows after its cursor, a batch per transaction with the new cursor.

        Every compressed row is decoded (nothing outside the frame says whether it
        matters); then the same byte prefilter as for files picks the rows to parse.
        """
        max_bytes = self.cfg.ingest.max_line_bytes
        decode = sqlite_source.decode_event
        ids = [c.encode() for c in calls.waiting_in(session_id, parent)]
        for rows in sqlite_source.rows_after(conn, layout, session_id, after):
            batch = Batch(cp, session_id, synthetic, parent)
            nbytes = 0
            for seq, json_type, text, frame, size in rows:
                if json_type == "text" and text[:1] == b"{":
                    event = text  # a plain row, the usual case: no call needed
                else:
                    event, why = decode(json_type, text, frame, size, max_bytes)
                    if event is None:
                        batch.malformed += 1
                        self._malformed_event(cp.path, session_id, seq, why or "")
                        continue
                nbytes += len(event)
                if seq == 0 and parent is None:  # the header: the session it continues, if any
                    parent = batch.parent = src.header_parent(event)
                    ids = [c.encode() for c in calls.waiting_in(session_id, parent)]
                if NEEDLE in event or (ids and any(c in event for c in ids)):
                    self._read_line(event, batch, calls, stats)
                    ids = [c.encode() for c in calls.waiting_in(session_id, parent)]
            stats.bytes_read += nbytes
            new_hits, new_calls = self.ledger.commit_store_batch(batch, nbytes, rows[-1][0])
            stats.new_hits += new_hits
            stats.new_calls += new_calls
            stats.malformed += batch.malformed

    def _read_archive_table(
        self,
        conn: sqlite3.Connection,
        shape: archives.TableShape,
        sf: src.SourceFile,
        cp: Checkpoint,
        pending: dict[str, Calls],
        stats: ScanStats,
    ) -> None:
        """Read the archives of a table not read before (listing them reads no blob)."""
        if shape.unknown and shape.table not in self._reported:
            self._reported.add(shape.table)
            _emit(
                "ingest.archive_columns",
                store=str(sf.path),
                table=shape.table,
                unknown=list(shape.unknown),
            )
        if not shape.readable:
            if shape.table + "!" not in self._reported:
                self._reported.add(shape.table + "!")
                _emit(
                    "ingest.archive_unreadable",
                    store=str(sf.path),
                    table=shape.table,
                    reason="no name or blob column",
                )
            return
        for name, size, digest in archives.list_archives(conn, shape):
            record = f"{sf.path}#{shape.table}/{name}"
            if self._archives_done.get((cp.agent, record)) == (size, digest):
                continue
            found = archives.fetch_archive(conn, shape, name)
            if found is None:
                continue
            stats.files_read += 1
            self._read_archive(
                cp.agent,
                lambda blob=found.blob, enc=found.encoding: archives.open_blob(blob, enc),
                found.session_id or "",
                found.session_key,
                (record, size, digest),
                cp.id,
                pending,
                stats,
            )

    def _scan_archive_file(self, plan: _Plan, pending: dict[str, Calls], stats: ScanStats) -> None:
        """A ``.zst`` archive file (derived from a deleted or reset session, or cold storage).

        A file with that name that is not a zstd frame is no archive of OpenClaw's: it
        is remembered as seen, not read.
        """
        sf, st = plan.sf, plan.st
        record = (str(sf.path), st.st_size, str(st.st_mtime_ns))
        with open(sf.path, "rb") as fh:
            if not archives.is_zstd_file(fh.read(4)):
                self.ledger.archive_skipped(sf.agent, record)
                self._archives_done[(sf.agent, record[0])] = record[1:]
                return
            fh.seek(0)
            stats.files_read += 1
            zstd = sqlite_source.zstd_module()
            self._read_archive(
                sf.agent,
                lambda: zstd.ZstdFile(fh, "rb"),
                src.session_id_of(sf.path.name),
                None,
                record,
                0,
                pending,
                stats,
            )

    def _read_archive(
        self,
        agent: str,
        open_stream: Callable[[], Any],
        session: str,
        key: str | None,
        record: tuple[str, int, str],
        source_id: int,
        pending: dict[str, Calls],
        stats: ScanStats,
    ) -> None:
        """Every line of one archive, committed in batches; the last commit records it read.

        Lines are JSONL transcript lines or cold records (a header names the session
        that the events after it belong to). The byte prefilter picks what is parsed,
        as for files. A frame that breaks off is one malformed line: what came before
        it is counted, and the archive is remembered as read (it will not mend).
        """
        calls = pending.get(agent)
        if calls is None:
            calls = pending[agent] = self.ledger.waiting_calls(agent)
        cp = Checkpoint(source_id, agent, record[0], 0, 0, 0, "", 0, 0, 0)
        commit_every = _COMMIT_CHUNKS * self.cfg.ingest.chunk_bytes
        batch = self._archive_batch(cp, session, key)
        size = 0
        try:
            for line in archives.iter_lines(open_stream(), self.cfg.ingest.max_line_bytes):
                if line is None:
                    batch.oversized += 1
                    continue
                size += len(line) + 1
                waiting = calls.waiting_in(batch.session)
                if not (
                    NEEDLE in line
                    or b'"header"' in line
                    or (waiting and any(c.encode() in line for c in waiting))
                ):
                    continue
                rec = archives.read_record(line)
                if rec.kind == "header":
                    self._commit_archive(batch, size, stats, None)
                    size = 0
                    batch = self._archive_batch(cp, rec.session_id or session, rec.session_key)
                    continue
                if rec.kind == "ignored":
                    if rec.session_key is not None and rec.session_key not in self._reported:
                        self._reported.add(rec.session_key)
                        _emit("ingest.archive_record", archive=record[0], kind=rec.session_key)
                    continue
                if not rec.line:
                    batch.malformed += 1
                    continue
                if (
                    rec.kind == "line"
                    or NEEDLE in rec.line
                    or any(c.encode() in rec.line for c in waiting)
                ):
                    self._read_line(rec.line, batch, calls, stats)
                if size >= commit_every:
                    self._commit_archive(batch, size, stats, None)
                    size = 0
                    batch = self._archive_batch(cp, batch.session, None, batch.synthetic)
        except Exception as exc:
            if not _is_frame_error(exc):
                raise
            batch.malformed += 1
            _emit("ingest.malformed_archive", archive=record[0], reason=str(exc))
        stats.bytes_read += size
        self._commit_archive(batch, size, stats, record)

    def _archive_batch(
        self, cp: Checkpoint, session: str, key: str | None, synthetic: bool | None = None
    ) -> Batch:
        if synthetic is None:
            synthetic = not self.cfg.openclaw.count_synthetic and (
                session in self._synthetic(cp.agent)
                or session in self._store_synthetic.get(cp.agent, frozenset())
                or (key is not None and ("cron:" in key.lower() or "heartbeat" in key.lower()))
            )
        return Batch(cp, session, synthetic)

    def _commit_archive(
        self, batch: Batch, nbytes: int, stats: ScanStats, record: tuple[str, int, str] | None
    ) -> None:
        new_hits, new_calls = self.ledger.commit_archive(batch, nbytes, record)
        if record is not None:
            self._archives_done[(batch.cp.agent, record[0])] = record[1:]
        stats.new_hits += new_hits
        stats.new_calls += new_calls
        stats.malformed += batch.malformed
        stats.oversized += batch.oversized

    def _malformed_event(self, store: str, session_id: str, seq: int, why: str) -> None:
        """Log a stored event that cannot be read: once (it is behind the cursor next time)."""
        self._malformed_logged += 1
        if self._malformed_logged <= _MALFORMED_LOG_MAX:
            _emit("ingest.malformed_event", store=store, session=session_id, seq=seq, reason=why)
        elif self._malformed_logged == _MALFORMED_LOG_MAX + 1:
            _emit("ingest.malformed_event", store=store, more="further ones not logged")

    def _source_failed(
        self,
        sf: src.SourceFile,
        exc: BaseException,
        stats: ScanStats,
        pending: dict[str, Calls],
        failed_before: dict[str, str],
    ) -> None:
        """Mark a source failed with its reason: counted, recorded for ``status``, logged.

        It is logged when it fails, not again at every rescan for the same reason (a
        store of unknown layout stays so until OpenClaw changes it). If the failure
        rolled back the scan's open transaction, the waiting calls kept in memory may
        name rows that were not written: they are loaded again.
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
        stats.errors += 1
        stats.failed_sources.append({"source": str(sf.path), "reason": reason})
        if failed_before.get(str(sf.path)) != reason:
            _emit(
                "ingest.source_failed",
                source=str(sf.path),
                kind=sf.kind,
                agent=sf.agent,
                reason=reason,
                traceback=None if isinstance(exc, SourceFailed) else _traceback(exc),
            )
        self.ledger.source_failed(sf, reason)

    def _commit(
        self,
        batch: Batch,
        source: SourceWrite,
        stats: ScanStats,
        final: os.stat_result | None,
        fd: int,
    ) -> None:
        """Commit a file's batch with the fingerprint of the line before its end."""
        n = min(TAIL_LEN, batch.end)
        fingerprint = tail_hash(os.pread(fd, n, batch.end - n))
        new_hits, new_calls = self.ledger.commit_file(batch, source, fingerprint, final)
        stats.new_hits += new_hits
        stats.new_calls += new_calls
        stats.malformed += batch.malformed
        stats.oversized += batch.oversized

    def _apply_region(
        self,
        fd: int,
        pre: Prescanned,
        data: bytes | None,
        batch: Batch,
        calls: Calls,
        stats: ScanStats,
    ) -> None:
        """Apply a region's needle lines in file order, then answers that do not name their tool.

        An answer that does not name its tool (Claude Code ``tool_result``) holds no
        needle: it is found by the id of a call still waiting — from the region's start
        for calls waiting since before it, after the call's own line for calls made in
        it. The first line that answers a call ends the search for it. What the helper
        already searched (calls made earlier in the same file) is taken from its answer;
        anything else is searched here, in the region's bytes (read again if the helper
        prescanned them).
        """
        start, end, _, lines, by_id = pre
        earlier = set(calls.waiting_in(batch.session, batch.parent))
        made_at: dict[str, int] = {}
        for _, line_end, parsed in lines:
            for call_id in self._apply(parsed, batch, calls, stats):
                made_at[call_id] = line_end
        waiting = calls.waiting_in(batch.session, batch.parent)
        if not waiting:
            return
        look = {cid: start if cid in earlier else made_at.get(cid, start) for cid in waiting}
        done = {begin for begin, _, _ in lines}
        for call_id, searched_from, searched_to, found in by_id:
            at = look.get(call_id)
            if at is None or searched_from > at or calls.is_answered(call_id):
                continue  # not waiting here, or the helper looked from later than we must
            for begin, _, parsed in found:
                if begin >= at and begin not in done:
                    done.add(begin)
                    self._apply(parsed, batch, calls, stats)
                if calls.is_answered(call_id):
                    break
            else:
                look[call_id] = max(searched_to, at)  # what is left, if anything
        look = {cid: at for cid, at in look.items() if at < end and not calls.is_answered(cid)}
        if not look:
            return
        if data is None:
            data = os.pread(fd, end - start, start)
        stop = min(end - start, len(data))
        done = {begin - start for begin in done}
        rel = {cid: at - start for cid, at in look.items()}
        if len(rel) > _DIRECT_ID_SEARCH_MAX:
            for begin, line_end, call_id in sorted(_lines_with_ids(data, stop, rel)):
                if begin not in done and not calls.is_answered(call_id):
                    done.add(begin)
                    self._apply(parse_line(data[begin:line_end]), batch, calls, stats)
            return
        # A long, rare needle is found faster than any pattern: a search per id wins while
        # there are few of them (the usual case: one call in flight).
        for call_id, at in rel.items():
            for begin, line_end in lines_containing(data, call_id.encode(), stop, at):
                if calls.is_answered(call_id):
                    break
                if begin not in done:
                    done.add(begin)
                    self._apply(parse_line(data[begin:line_end]), batch, calls, stats)

    def _read_line(self, line: bytes, batch: Batch, calls: Calls, stats: ScanStats) -> None:
        self._apply(parse_line(line), batch, calls, stats)

    def _apply(self, parsed: ParsedLine, batch: Batch, calls: Calls, stats: ScanStats) -> list[str]:
        """Add one parsed line's calls and hits to ``batch``; returns the ids of new calls.

        Everything is read by position: what the helper sends is the same fields as
        plain tuples (a call has four, a result six), which saves rebuilding them.
        """
        events, malformed = parsed
        stats.lines_parsed += 1
        if malformed:
            batch.malformed += 1
            return []
        made: list[str] = []
        for ev in events:
            if len(ev) == _CALL_FIELDS:
                call_id, tool, query, ts = ev
                # Not looked up in the database: a call seen in an earlier scan (a copy in a
                # successor file) is inserted OR IGNOREd and at worst waits until this scan ends.
                known = calls.known.get(call_id)
                if known is None:
                    calls.add(call_id, Call(tool, query, ts, False, batch.session))
                    batch.new_call((batch.cp.agent, call_id, tool, query, ts, batch.session, 0))
                    made.append(call_id)
                elif not known.answered and known.session != batch.session:
                    calls.carry(call_id, known, batch.session)  # a successor's copy
                    made.append(call_id)
            else:
                self._read_result(ev, batch, calls, stats)
        return made

    def _read_result(self, ev: ToolResult, batch: Batch, calls: Calls, stats: ScanStats) -> None:
        call_id, named, paths, ev_ts, _recovered, _shape = ev
        agent = batch.cp.agent
        call = calls.lookup(call_id, lambda cid: self.ledger.fetch_call(agent, cid))
        if named is not None:
            tool = named
        elif call is not None:
            tool = call.tool
        else:
            return  # an unnamed result of a call that was not a memory call
        if not answers(ev, tool):
            return  # its payload is the other memory tool's answer
        if call is None:  # the call line was never seen (e.g. before a compaction)
            call = Call(tool, None, ev_ts, True, batch.session)
            calls.add(call_id, call)
            batch.answered_unseen.append((agent, call_id, tool, ev_ts, batch.session))
        elif not call.answered:
            calls.answer(call_id, call)
            batch.answer(agent, call_id)
        query = call.query if tool == SEARCH else None
        if not self.cfg.openclaw.count_synthetic and (
            batch.synthetic or (query is not None and query.startswith(SYNTHETIC_QUERY_PREFIXES))
        ):
            return
        ts = ev_ts or call.ts or clock.now()
        workspace = self._workspaces.get(agent) or self._primary
        asked = call.query if tool == GET and call.query else ""
        for path, score, start_line, end_line in paths:
            raw = path or asked
            key = classify_result_path(raw, workspace, self._tiers_root) if raw else None
            if key is None:
                stats.non_memory_paths += 1
                continue
            batch.hits.append(
                (agent, call_id, key, tool, ts, query, score, start_line, end_line, batch.session)
            )

    def _synthetic(self, agent: str) -> frozenset[str]:
        """Session ids of the agent's cron and heartbeat sessions (from its sessions.json).

        Re-read whenever sessions.json changes: the daemon's scanner lives for days,
        and a cron session started after it must not be counted. (Looked at once per
        scan and agent: a scan takes a moment, and the next one looks again.)
        """
        done = self._synthetic_this_scan.get(agent)
        if done is None:
            done = self._synthetic_this_scan[agent] = self._read_synthetic(agent)
        return done

    def _read_synthetic(self, agent: str) -> frozenset[str]:
        sessions_dir = next((a.sessions_dir for a in self.paths.agents if a.id == agent), None)
        if sessions_dir is None:
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
        try:
            data = orjson.loads(index.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            data = None
        ids = src.synthetic_session_ids(data)
        self._synthetic_sessions[agent] = (key, ids)
        return ids


def _is_frame_error(exc: BaseException) -> bool:
    """A compressed stream that does not decode (as opposed to a fault of our own)."""
    if isinstance(exc, EOFError):
        return True
    zstd = sqlite_source._ZSTD
    return zstd is not None and isinstance(exc, zstd.ZstdError)


def _lines_with_ids(data: bytes, stop: int, look: dict[str, int]) -> set[tuple[int, int, str]]:
    """``(begin, end, call id)`` of the lines of ``data[:stop]`` whose id field names a call.

    ``look`` maps each call id to the offset from which to look for it. One
    regular-expression pass reads every id field, so the cost follows the size of
    the region rather than (waiting calls × bytes).
    """
    wanted = {cid.encode(): (at, cid) for cid, at in look.items()}
    found: set[tuple[int, int, str]] = set()
    for m in _ID_FIELD.finditer(data, min(look.values()), stop):
        hit = wanted.get(m.group(1) or m.group(2))
        if hit is not None and m.start() >= hit[0]:
            begin = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.end(), stop)
            found.add((begin, stop if end < 0 else end, hit[1]))
    return found


def _emit(event: str, **fields: object) -> None:
    """Log one event (see :func:`memoryd.log.emit`; imported when there is something to say)."""
    from ..log import emit

    emit(event, **fields)


def _traceback(exc: BaseException) -> str:
    from ..log import format_traceback

    return format_traceback(exc)
