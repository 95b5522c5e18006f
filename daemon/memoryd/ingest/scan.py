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

import contextlib
import gc
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import orjson

from .. import clock
from ..config import Config, Paths
from ..store import Store
from ..workspace import classify_result_path, regular_stat
from . import sources as src
from . import sqlite_source
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
from .tailer import HEAD_MAX, Checkpoint, Verdict, head_hash, judge, lines_containing, quick_verdict

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
_BULK_COMMIT_FACTOR = 8  # a bulk load commits this many times less often (Store.start_bulk_load)
# A first scan (no hits yet) of at least this much builds the hit indexes once, at its end.
_BULK_LOAD_MIN_BYTES = 16 << 20
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
        "helper_files",  # transcripts whose lines a forked helper found and parsed
        "elapsed",
    )
    __slots__ = FIELDS

    def __init__(self) -> None:
        for name in self.FIELDS:
            setattr(self, name, 0)
        self.elapsed = 0.0

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {name: getattr(self, name) for name in self.FIELDS}
        d["elapsed"] = round(self.elapsed, 4)
        return d


class _Call:
    __slots__ = ("answered", "query", "session", "tool", "ts")

    def __init__(
        self, tool: str, query: str | None, ts: float | None, answered: bool, session: str = ""
    ) -> None:
        self.tool = tool
        self.query = query
        self.ts = ts
        self.answered = answered
        self.session = session  # the session that made the call (answers are looked for there)


class _Calls:
    """One agent's memory calls met so far, and per session the ids still waiting.

    An answer that does not name its tool (Claude Code's ``tool_result``) is only
    looked for in the session that made the call (and in a compaction successor
    that continues it): calls that were never answered (an aborted turn) pile up
    over months and must not make every other transcript slower to read.
    """

    __slots__ = ("known", "waiting")

    def __init__(self) -> None:
        self.known: dict[str, _Call] = {}
        self.waiting: dict[str, set[str]] = {}  # session → call ids

    def add(self, call_id: str, call: _Call) -> None:
        self.known[call_id] = call
        if not call.answered:
            self.waiting.setdefault(call.session, set()).add(call_id)

    def answer(self, call_id: str, call: _Call) -> None:
        call.answered = True
        ids = self.waiting.get(call.session)
        if ids is not None:
            ids.discard(call_id)

    def waiting_in(self, session: str, parent: str | None = None) -> set[str]:
        """Calls still waiting in ``session`` and, for a successor, in the session it continues.

        A compaction successor goes on with its parent's conversation: a call made at
        the end of the parent may be answered at the start of the successor.
        """
        own = self.waiting.get(session) or set()
        if parent is None or parent == session or not self.waiting.get(parent):
            return own
        return own | self.waiting[parent]

    def carry(self, call_id: str, call: _Call, session: str) -> None:
        """A copy of a waiting call in a later session: its answer is looked for there now."""
        if call.answered or call.session == session:
            return
        ids = self.waiting.get(call.session)
        if ids is not None:
            ids.discard(call_id)
        call.session = session
        self.waiting.setdefault(session, set()).add(call_id)

    def lookup(self, store: Store, agent: str, call_id: str) -> _Call | None:
        call = self.known.get(call_id)
        if call is None:
            row = store.conn.execute(
                "SELECT tool, query, ts, answered, session FROM calls "
                "WHERE agent = ? AND call_id = ?",
                (agent, call_id),
            ).fetchone()
            if row is not None:
                call = _Call(row[0], row[1], row[2], bool(row[3]), row[4] or "")
                self.add(call_id, call)
        return call


class _Plan:
    """A source with something to read, from the stat pass of a scan."""

    __slots__ = (
        "at_path",
        "cp",
        "fd",
        "parent",
        "quick",
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
        self.settle: _Settle | None = None  # records the identity
        self.parent: str | None = None  # the session a successor continues (from its header)


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


class _Batch:
    """What one region of lines adds to the database, written in one transaction."""

    __slots__ = (
        "answered",
        "answered_unseen",
        "call_rows",
        "calls",
        "cp",
        "end",
        "hits",
        "malformed",
        "oversized",
        "parent",
        "session",
        "start",
        "synthetic",
    )

    def __init__(
        self,
        cp: Checkpoint,
        session: str,
        synthetic: bool,
        parent: str | None = None,
        *,
        start: int = 0,
        end: int = 0,
    ) -> None:
        self.cp = cp
        self.session = session
        self.synthetic = synthetic
        self.parent = parent  # for a successor: the session it continues
        self.start = start  # file offset the batch starts at
        self.end = end  # file offset after its last complete line
        self.oversized = 0
        self.malformed = 0
        self.calls: list[tuple[object, ...]] = []
        self.call_rows: dict[str, int] = {}  # call id → index in calls
        self.answered: list[tuple[str, str]] = []
        self.answered_unseen: list[tuple[object, ...]] = []
        self.hits: list[tuple[object, ...]] = []

    def new_call(self, row: tuple[object, ...]) -> None:
        """A call first met in this batch: (agent, call id, tool, query, ts, session, answered)."""
        self.call_rows[str(row[1])] = len(self.calls)
        self.calls.append(row)

    def answer(self, agent: str, call_id: str) -> None:
        """Record that a call is answered: in its row when it is new in this batch."""
        i = self.call_rows.get(call_id)
        if i is None:
            self.answered.append((agent, call_id))
        else:
            self.calls[i] = (*self.calls[i][:6], 1)

    def write(self, conn: sqlite3.Connection, source_id: int) -> tuple[int, int]:
        """Insert it all; returns how many hits and calls were new (the rest were known)."""
        # (An empty list is skipped: most batches have no calls without a call line and no
        # answers to earlier batches' calls, and a statement costs even with nothing to do.)
        before_calls = conn.total_changes
        if self.calls:
            conn.executemany(
                "INSERT OR IGNORE INTO calls(agent, call_id, tool, query, ts, session, answered) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                self.calls,
            )
        new_calls = conn.total_changes - before_calls
        if self.answered_unseen:
            conn.executemany(
                "INSERT OR IGNORE INTO calls(agent, call_id, tool, query, ts, session, answered) "
                "VALUES (?, ?, ?, NULL, ?, ?, 1)",
                self.answered_unseen,
            )
        if self.answered:
            conn.executemany(
                "UPDATE calls SET answered = 1 WHERE agent = ? AND call_id = ?", self.answered
            )
        before = conn.total_changes
        if self.hits:
            conn.executemany(
                "INSERT OR IGNORE INTO hits(agent, call_id, memory_path, kind, ts, query, score, "
                "start_line, end_line, session, source_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [(*row, source_id) for row in self.hits],
            )
        return conn.total_changes - before, new_calls


# A file's state after a batch (the ``sources`` columns): offset, size, mtime_ns, last_read,
# malformed and oversized lines. Settling a new file's identity writes them in the same row.
_Tail = tuple[int, int, int, float, int, int]
# Records a file's identity in the database and returns its source id, and whether it
# wrote the tail too.
_Settle = Callable[[sqlite3.Connection, _Tail | None], tuple[int, bool]]


class _SourceWrite:
    """Records a source's identity once, in the first transaction that needs its id."""

    def __init__(self, settle: _Settle) -> None:
        self._settle: _Settle | None = settle
        self._id = 0

    def id(self, conn: sqlite3.Connection, tail: _Tail | None = None) -> tuple[int, bool]:
        """The source's id, settling its identity first if not done (with ``tail``, if it can)."""
        if self._settle is None:
            return self._id, False
        self._id, wrote_tail = self._settle(conn, tail)
        self._settle = None
        return self._id, wrote_tail


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
        self._in_txn = False
        self._txn_bytes = 0
        self._commit_bytes = _COMMIT_CHUNKS * cfg.ingest.chunk_bytes

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
        stats = ScanStats()
        full = only is None
        files = self.discover() if full else [s for p in only if (s := self._owner(Path(p)))]
        by_inode, by_path, vanished = self._checkpoints()
        seen_ids: set[int] = set()
        pending: dict[str, _Calls] = {}
        plans = self._plan(files, by_inode, by_path, seen_ids, stats)
        helper: _HelperShare | None = None
        unread = [p.unread for p in plans]
        bulk = full and sum(unread) >= _BULK_LOAD_MIN_BYTES and self.store.hits_empty()
        self._commit_bytes = _COMMIT_CHUNKS * self.cfg.ingest.chunk_bytes
        self._commit_bytes *= _BULK_COMMIT_FACTOR if bulk else 1
        try:
            if bulk:  # a first scan: load without the secondary indexes, build them at the end
                self.store.start_bulk_load()
                with self._write(0):
                    self.store.drop_hit_indexes()
            min_bytes = self.cfg.ingest.parallel_min_bytes
            if helper_share(unread, min_bytes) < len(plans) and can_fork():
                split = helper_share(unread, min_bytes, helper_file_budget())
                if split < len(plans):
                    helper = self._start_helper(plans, split, stats)
            for plan in plans:
                if plan.sf.kind == src.SQLITE:
                    self._scan_sqlite(plan.sf, plan.st, plan.at_path, pending, stats)
                    continue
                try:
                    if helper is not None and plan.fd >= 0:
                        self._tail_prescanned(plan, helper, pending, stats)
                    else:
                        self._scan_file(plan, pending, stats)
                except OSError:
                    self._read_error(stats)
        finally:
            if helper is not None:
                helper.close()
            for plan in plans:
                if plan.fd >= 0:
                    os.close(plan.fd)
            self._flush()
            if bulk:
                self.store.ensure_hit_indexes()
                self.store.end_bulk_load()
        if full:
            known = {c.id for c in by_path.values()} | {c.id for c in by_inode.values()}
            self._mark_vanished(known, seen_ids, vanished)
        stats.elapsed = time.perf_counter() - t0
        return stats

    def pending_bytes(self) -> int:
        """Bytes present in followed transcripts beyond their committed offsets."""
        from .pending import pending_bytes

        return pending_bytes(self.cfg, self.paths, self.store.conn)

    def _checkpoints(
        self,
    ) -> tuple[dict[tuple[int, int], Checkpoint], dict[str, Checkpoint], set[int]]:
        # Vanished rows come first so that a live row for the same inode or path wins;
        # a vanished file that reappears (renamed back, remounted) keeps its offset.
        rows = self.store.conn.execute(
            "SELECT id, agent, path, dev, ino, head_len, head_hash, offset, size, mtime_ns, "
            "vanished_at IS NOT NULL FROM sources ORDER BY vanished_at IS NULL, id"
        ).fetchall()
        cps = [Checkpoint(*r[:-1]) for r in rows]
        vanished = {r[0] for r in rows if r[-1]}
        return {(c.dev, c.ino): c for c in cps}, {c.path: c for c in cps}, vanished

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
            verdict = judge(plan.cp, str(plan.sf.path), plan.st, head)
        else:
            verdict = plan.quick
        plan.parent = parent_session(plan.fd, head)  # (reads first: stats change only after)
        plan.start, plan.settle = self._settle_identity(
            plan.sf, plan.st, head, plan.cp, plan.at_path, verdict, stats
        )

    def _scan_file(self, plan: _Plan, pending: dict[str, _Calls], stats: ScanStats) -> None:
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
            if plan.sf.kind == src.SQLITE:
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
        self, plan: _Plan, helper: _HelperShare, pending: dict[str, _Calls], stats: ScanStats
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

    def _settle_identity(
        self,
        sf: src.SourceFile,
        st: os.stat_result,
        head: bytes,
        cp: Checkpoint | None,
        at_path: Checkpoint | None,
        verdict: Verdict,
        stats: ScanStats,
    ) -> tuple[Checkpoint, _Settle]:
        """The checkpoint to read from, and how to record the identity the verdict implies.

        The recording runs inside the first commit of what is read from the file, so
        a small file costs one transaction; it returns the source's id. A new file
        read in one batch is recorded with its tail in one statement.
        """
        path = str(sf.path)
        now = time.time()
        hlen, hhash = len(head), head_hash(head)
        retire = at_path.id if at_path is not None and (cp is None or at_path.id != cp.id) else None

        def retire_old(conn: sqlite3.Connection) -> None:
            if retire is not None:  # another file used to live at this path
                conn.execute("UPDATE sources SET vanished_at = ? WHERE id = ?", (now, retire))

        if verdict is Verdict.NEW:

            def insert(conn: sqlite3.Connection, tail: _Tail | None) -> tuple[int, bool]:
                retire_old(conn)
                cur = conn.execute(
                    "INSERT INTO sources(agent, kind, path, dev, ino, head_len, head_hash, offset, "
                    "size, mtime_ns, last_read, malformed, oversized, first_seen) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sf.agent, sf.kind, path, st.st_dev, st.st_ino, hlen, hhash)
                    + (tail or (0, 0, 0, None, 0, 0))
                    + (now,),
                )
                assert cur.lastrowid is not None
                return cur.lastrowid, tail is not None

            return Checkpoint(0, sf.agent, path, st.st_dev, st.st_ino, hlen, hhash, 0, 0, 0), insert
        assert cp is not None
        if verdict in (Verdict.TRUNCATED, Verdict.REPLACED):
            stats.resets += 1
            offset = 0
            sql = (
                "UPDATE sources SET path = ?, kind = ?, head_len = ?, head_hash = ?, "
                "offset = 0, resets = resets + 1 WHERE id = ?"
            )
        else:  # GROWN / RENAMED: keep the offset; lengthen a short fingerprint as it grows
            if verdict is Verdict.RENAMED:
                stats.renamed += 1
            offset = cp.offset
            if hlen < cp.head_len:
                hlen, hhash = cp.head_len, cp.head_hash
            sql = "UPDATE sources SET path = ?, kind = ?, head_len = ?, head_hash = ? WHERE id = ?"
        source_id = cp.id

        def update(conn: sqlite3.Connection, tail: _Tail | None) -> tuple[int, bool]:
            retire_old(conn)
            conn.execute(sql, (path, sf.kind, hlen, hhash, source_id))
            return source_id, False

        return Checkpoint(cp.id, cp.agent, path, cp.dev, cp.ino, hlen, hhash, offset, 0, 0), update

    def _tail(
        self,
        plan: _Plan,
        regions: Iterable[tuple[Prescanned, bytes | None]],
        pending: dict[str, _Calls],
        stats: ScanStats,
    ) -> None:
        """Apply a file's prescanned regions in order, committing with their end offsets."""
        cp, sf, st = plan.start, plan.sf, plan.st
        assert cp is not None and plan.settle is not None
        stats.files_read += 1
        calls = pending.get(cp.agent)
        if calls is None:
            calls = pending[cp.agent] = self._load_waiting(cp.agent)
        session = _session_id(sf.path.name)
        synthetic = not self.cfg.openclaw.count_synthetic and session in self._synthetic(cp.agent)
        commit_every = _COMMIT_CHUNKS * self.cfg.ingest.chunk_bytes
        source = _SourceWrite(plan.settle)
        batch = _Batch(cp, session, synthetic, plan.parent, start=cp.offset, end=cp.offset)
        for pre, data in regions:
            start, end, oversized, _, _ = pre
            stats.bytes_read += end - start
            batch.oversized += oversized
            batch.end = end
            self._apply_region(plan.fd, pre, data, batch, calls, stats)
            if batch.end - batch.start >= commit_every:
                self._commit(batch, source, stats, None)
                batch = _Batch(cp, session, synthetic, plan.parent, start=batch.end, end=batch.end)
        # The size and mtime seen *before* reading: bytes appended while we read make the
        # next stat differ, so they are read next time. (A stat taken after the last read
        # could include them without their lines having been read: lost for good.)
        self._commit(batch, source, stats, st)

    def _scan_sqlite(
        self,
        sf: src.SourceFile,
        st: os.stat_result,
        cp: Checkpoint | None,
        pending: dict[str, _Calls],
        stats: ScanStats,
    ) -> None:
        """Read new rows of OpenClaw's SQLite transcripts (see :mod:`.sqlite_source`)."""
        sig = sqlite_source.signature(sf.path)
        if sig is None or (cp is not None and (cp.size, cp.mtime_ns) == sig):
            return  # no new rows: the database and its WAL are as they were
        if cp is None:
            with self._write(0) as conn:
                cur = conn.execute(
                    "INSERT INTO sources(agent, kind, path, dev, ino, head_len, head_hash, "
                    "first_seen) VALUES (?, ?, ?, ?, ?, 0, '', ?)",
                    (sf.agent, src.SQLITE, str(sf.path), st.st_dev, st.st_ino, time.time()),
                )
            assert cur.lastrowid is not None
            cp = Checkpoint(
                cur.lastrowid, sf.agent, str(sf.path), st.st_dev, st.st_ino, 0, "", 0, 0, 0
            )
        calls = pending.get(cp.agent)
        if calls is None:
            calls = pending[cp.agent] = self._load_waiting(cp.agent)
        cursors = dict(
            self.store.conn.execute(
                "SELECT session_id, seq FROM transcript_db_cursors WHERE source_id = ?", (cp.id,)
            )
        )
        stats.files_read += 1
        synthetic_ids = self._synthetic(cp.agent) if not self.cfg.openclaw.count_synthetic else ()
        try:
            source = sqlite_source.open_readonly(sf.path)
        except sqlite3.Error:
            self._read_error(stats)
            return
        try:
            for session_id, after in sqlite_source.sessions_with_new_rows(source, cursors):
                synthetic = session_id in synthetic_ids
                for rows in sqlite_source.rows_after(source, session_id, after):
                    batch = _Batch(cp, session_id, synthetic)
                    for _seq, event in rows:
                        stats.bytes_read += len(event)
                        waiting = calls.waiting_in(session_id)
                        if NEEDLE in event or any(c.encode() in event for c in waiting):
                            self._read_line(event, batch, calls, stats)
                    with self._write(sum(len(r[1]) for r in rows)) as conn:
                        new_hits, new_calls = batch.write(conn, cp.id)
                        conn.execute(
                            "INSERT INTO transcript_db_cursors(source_id, session_id, seq) "
                            "VALUES (?, ?, ?) ON CONFLICT(source_id, session_id) "
                            "DO UPDATE SET seq = excluded.seq",
                            (cp.id, session_id, rows[-1][0]),
                        )
                        self.store.bump("malformed_lines", batch.malformed)
                    stats.new_hits += new_hits
                    stats.new_calls += new_calls
                    stats.malformed += batch.malformed
        except sqlite3.Error:
            self._read_error(stats)
            return
        finally:
            source.close()
        with self._write(0) as conn:
            conn.execute(
                "UPDATE sources SET size = ?, mtime_ns = ?, last_read = ? WHERE id = ?",
                (sig[0], sig[1], time.time(), cp.id),
            )

    def _read_error(self, stats: ScanStats) -> None:
        stats.errors += 1
        with self._write(0):
            self.store.bump("read_errors")

    @contextlib.contextmanager
    def _write(self, nbytes: int) -> Iterator[sqlite3.Connection]:
        """A write that joins the scan's open transaction (group commit).

        Small transcripts are many: one transaction each would cost more than reading
        them. Writes accumulate in one transaction until ``_COMMIT_CHUNKS`` chunks'
        worth of lines is in it, or the scan ends. Every write is a whole unit (a
        file's identity, hits and the offset after them), so whatever a crash cuts
        off is simply read again.
        """
        conn = self.store.conn
        if not self._in_txn:
            conn.execute("BEGIN IMMEDIATE")
            self._in_txn, self._txn_bytes = True, 0
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            self._in_txn = False
            raise
        self._txn_bytes += nbytes
        if self._txn_bytes >= self._commit_bytes:
            self._flush()

    def _flush(self) -> None:
        """Commit the scan's open transaction, if any."""
        if self._in_txn:
            self.store.conn.execute("COMMIT")
            self._in_txn = False

    def _commit(
        self,
        batch: _Batch,
        source: _SourceWrite,
        stats: ScanStats,
        final: os.stat_result | None,
    ) -> None:
        """Identity, hits, calls and the offset after them: in one transaction, all or nothing."""
        tail: _Tail | None = None
        if final is not None:
            tail = (
                batch.end,
                final.st_size,
                final.st_mtime_ns,
                time.time(),
                batch.malformed,
                batch.oversized,
            )
        with self._write(batch.end - batch.start) as conn:
            source_id, wrote_tail = source.id(conn, tail)
            new_hits, new_calls = batch.write(conn, source_id)
            if tail is None:
                conn.execute(
                    "UPDATE sources SET offset = MAX(offset, ?), oversized = oversized + ?, "
                    "malformed = malformed + ? WHERE id = ?",
                    (batch.end, batch.oversized, batch.malformed, source_id),
                )
            elif not wrote_tail:  # the file's last batch: its size and mtime before reading too
                conn.execute(
                    "UPDATE sources SET offset = MAX(offset, ?), oversized = oversized + ?, "
                    "malformed = malformed + ?, size = ?, mtime_ns = ?, last_read = ? "
                    "WHERE id = ?",
                    (batch.end, batch.oversized, batch.malformed, *tail[1:4], source_id),
                )
            self.store.bump("oversized_lines", batch.oversized)
            self.store.bump("malformed_lines", batch.malformed)
        stats.new_hits += new_hits
        stats.new_calls += new_calls
        stats.malformed += batch.malformed
        stats.oversized += batch.oversized

    def _apply_region(
        self,
        fd: int,
        pre: Prescanned,
        data: bytes | None,
        batch: _Batch,
        calls: _Calls,
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
            if at is None or searched_from > at or _answered(calls, call_id):
                continue  # not waiting here, or the helper looked from later than we must
            for begin, _, parsed in found:
                if begin >= at and begin not in done:
                    done.add(begin)
                    self._apply(parsed, batch, calls, stats)
                if _answered(calls, call_id):
                    break
            else:
                look[call_id] = max(searched_to, at)  # what is left, if anything
        look = {cid: at for cid, at in look.items() if at < end and not _answered(calls, cid)}
        if not look:
            return
        if data is None:
            data = os.pread(fd, end - start, start)
        stop = min(end - start, len(data))
        done = {begin - start for begin in done}
        rel = {cid: at - start for cid, at in look.items()}
        if len(rel) > _DIRECT_ID_SEARCH_MAX:
            for begin, line_end, call_id in sorted(_lines_with_ids(data, stop, rel)):
                if begin not in done and not _answered(calls, call_id):
                    done.add(begin)
                    self._apply(parse_line(data[begin:line_end]), batch, calls, stats)
            return
        # A long, rare needle is found faster than any pattern: a search per id wins while
        # there are few of them (the usual case: one call in flight).
        for call_id, at in rel.items():
            for begin, line_end in lines_containing(data, call_id.encode(), stop, at):
                if _answered(calls, call_id):
                    break
                if begin not in done:
                    done.add(begin)
                    self._apply(parse_line(data[begin:line_end]), batch, calls, stats)

    def _read_line(self, line: bytes, batch: _Batch, calls: _Calls, stats: ScanStats) -> None:
        self._apply(parse_line(line), batch, calls, stats)

    def _apply(
        self, parsed: ParsedLine, batch: _Batch, calls: _Calls, stats: ScanStats
    ) -> list[str]:
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
                    calls.add(call_id, _Call(tool, query, ts, False, batch.session))
                    batch.new_call((batch.cp.agent, call_id, tool, query, ts, batch.session, 0))
                    made.append(call_id)
                elif not known.answered and known.session != batch.session:
                    calls.carry(call_id, known, batch.session)  # a successor's copy
                    made.append(call_id)
            else:
                self._read_result(ev, batch, calls, stats)
        return made

    def _read_result(self, ev: ToolResult, batch: _Batch, calls: _Calls, stats: ScanStats) -> None:
        call_id, named, paths, ev_ts, _recovered, shape = ev
        agent = batch.cp.agent
        call = calls.lookup(self.store, agent, call_id)
        tool = named or (call.tool if call else None)
        if tool is None:
            return  # an unnamed result of a call that was not a memory call
        if named is None and shape is not None and shape != tool:
            return
        if call is None:  # the call line was never seen (e.g. before a compaction)
            call = _Call(tool, None, ev_ts, True, batch.session)
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

    def _load_waiting(self, agent: str) -> _Calls:
        rows = self.store.conn.execute(
            "SELECT call_id, tool, query, ts, session FROM calls WHERE answered = 0 AND agent = ?",
            (agent,),
        )
        calls = _Calls()
        for cid, tool, query, ts, session in rows:
            calls.add(cid, _Call(tool, query, ts, False, session or ""))
        return calls

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
        ids = synthetic_session_ids(data)
        self._synthetic_sessions[agent] = (key, ids)
        return ids

    def _mark_vanished(self, known: set[int], seen: set[int], vanished: set[int]) -> None:
        """Flag sources that are gone, revive the ones seen again, forget old ones."""
        now = time.time()
        gone = known - seen - vanished
        back = seen & vanished
        cutoff = now - self.cfg.ingest.vanished_grace_days * 86400
        expired = self.store.conn.execute(
            "SELECT 1 FROM sources WHERE vanished_at < ? LIMIT 1", (cutoff,)
        ).fetchone()
        if not (gone or back or expired):
            return
        with self.store.transaction() as conn:
            conn.executemany(
                "UPDATE sources SET vanished_at = ? WHERE id = ?", [(now, i) for i in gone]
            )
            conn.executemany(
                "UPDATE sources SET vanished_at = NULL WHERE id = ?", [(i,) for i in back]
            )
            conn.execute("DELETE FROM sources WHERE vanished_at < ?", (cutoff,))


def _answered(calls: _Calls, call_id: str) -> bool:
    call = calls.known.get(call_id)
    return call is None or call.answered


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


_HEADER_MAX = 64 << 10  # a session header longer than this is not read for its parent


def parent_session(fd: int, head: bytes) -> str | None:
    """The session a transcript continues, from its header's ``parentSession`` (a path or id).

    Only a header (``"type": "session"``, the first line) names one: compaction
    successors do. None when there is none, or the header cannot be read.
    """
    end = head.find(b"\n")
    if end < 0 and len(head) >= HEAD_MAX:  # a header longer than the head read: read it whole
        head = os.pread(fd, _HEADER_MAX, 0)
        end = head.find(b"\n")
    if end < 0 or b'"parentSession"' not in head[:end]:
        return None
    try:
        header = orjson.loads(head[:end])
    except orjson.JSONDecodeError:
        return None
    parent = header.get("parentSession") if isinstance(header, dict) else None
    if not isinstance(parent, str) or not parent.strip() or header.get("type") != "session":
        return None
    name = parent.strip().replace("\\", "/").rsplit("/", 1)[-1]
    return _session_id(name)


def synthetic_session_ids(index: object) -> frozenset[str]:
    """Sessions that are not the user's: ``cron:`` and ``heartbeat`` keys of sessions.json."""
    ids: set[str] = set()
    if not isinstance(index, dict):
        return frozenset()
    for key, entry in index.items():
        k = str(key).lower()
        if ("cron:" in k or "heartbeat" in k) and isinstance(entry, dict):
            sid = entry.get("sessionId")
            if isinstance(sid, str):
                ids.add(sid)
            sfile = entry.get("sessionFile")
            if isinstance(sfile, str):
                ids.add(_session_id(Path(sfile).name))
    return frozenset(ids)


def _session_id(name: str) -> str:
    """Session id from a transcript name: ``<id>.jsonl[...]``, ``<ISO>_<id>.jsonl``."""
    stem = name.split(".jsonl", 1)[0]
    if src._SUCCESSOR.match(stem + ".jsonl"):
        stem = stem.split("_", 1)[1]
    return stem
