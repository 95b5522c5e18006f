"""The ledger: every write of the ingest layer to the state database, and the reads it needs.

The readers (files, the SQLite store, archives) decide what a source holds; the
ledger records it: a source's identity and checkpoint, the calls and hits of a
batch together with the read position after it, the store's per-session
cursors, archives read whole, sources that failed, sources that vanished. No
other ingest module writes SQL, and nothing here reads a transcript, so it can
be exercised without files.

Group commit: small sources are many, and a transaction each would cost more
than reading them. :meth:`Ledger.write` joins the scan's open transaction until
``commit_bytes`` of input are in it (or the scan ends). Every write is a whole
unit (identity, hits and the position after them), so a crash re-reads at most
what was not committed, and re-reading is harmless: hits are unique per agent,
call and file.

The calls and hits of a transcript file's batches are written at the end of the
transaction they belong to, just before its ``COMMIT`` (:meth:`Ledger.commit_file`
queues them): inserted together, the rows of many batches are written with SQLite's
pages and the statements still hot in the processor's caches, instead of between the
parsing of one region and the next. The order of every write to ``calls`` and ``hits``
stays the order of the batches: any other write to them, and any read of ``calls``,
writes the queue first.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence

from .. import faults, kept_strength
from ..store import BULK_UNFINISHED_META, Store
from .calls import OCCURRENCE_MARK, Call, CallRow, Calls
from .sources import SourceFile
from .stats import ROUTES, ScanStats
from .tailer import Checkpoint, Verdict, head_hash

# OS errors that, raised by a write of the ledger, can only be the state disk's: no space (a
# transcript being read never reports these).
_STATE_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# SQLite error names that, raised by a write of the ledger, are faults of the state database.
_STATE_DB_FAULTS = (
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_READONLY",
    "SQLITE_CORRUPT",
    "SQLITE_NOTADB",
)

# None binds as NULL either way; but the sqlite3 module binds an int, float or str at once
# and "adapts" any other value first: for None, two failed attribute lookups (``__adapt__``,
# ``__conform__``), about 3,300 instructions a value, before binding NULL. A hit of
# memory_get has no query or score, many have no line range: 13 k Nones in the memory-heavy
# corpus, 1 % of its cold scan's instructions. An adapter registered for None's type is
# found by one dictionary lookup; this one (a C method: no Python frame) returns None, which
# binds as NULL, as before. (The registry is the process's; NULL for None is its default.)
sqlite3.register_adapter(type(None), {}.get)  # type: ignore[arg-type]  # (see above)

# A bulk load (a first scan of a large backlog) commits this many times less often.
BULK_COMMIT_FACTOR = 8

# Rows a multi-row INSERT carries, largest first; fewer than the smallest go by executemany.
# One statement for many rows pays Python's per-row bookkeeping and SQLite's statement
# reset once: the memory-heavy corpus's 25 k hits and 12 k calls, inserted file by file,
# cost 77 ms instead of 98. 64 rows of 11 values stay under 999, the bound on a statement's
# parameters in SQLite builds before 3.32.
_ROWS_PER_STATEMENT = (64, 16, 4)
# The source id comes first: bound once a statement (``?1``), not once a row.
_INSERT_HITS = (
    "INSERT OR IGNORE INTO hits(source_id, agent, call_id, memory_path, kind, ts, query, "
    "score, start_line, end_line, session) VALUES "
)
# The scan's counters of what it recorded, counted when their transaction commits.
COMMITTED = ScanStats.RECORDED
# Each one's place in them, by name (not by the order RECORDED happens to list them in).
_HITS, _CALLS, _MALFORMED, _OVERSIZED, _NON_MEMORY, _RENAMED, _RESETS, _UNRECOGNISED = (
    COMMITTED.index(name)
    for name in (
        "new_hits", "new_calls", "malformed", "oversized", "non_memory_paths", "renamed", "resets",
        "unrecognised",
    )
)  # fmt: skip
# New calls by Tool Search route (events.TOOL_CALL, events.CODE): their place in COMMITTED, and
# the persisted counter of each (``status``: direct calls are all the others).
_ROUTE_COMMITTED = {route: COMMITTED.index(f"calls_{route}") for route in ROUTES}
ROUTE_COUNTERS = {route: f"memory_calls_{route}" for route in ROUTES}
CELL_ROUTE = "cell"  # apply.CELL: a running code-mode cell's row (see Applier._in_cell)
UNRECOGNISED_COUNTER = "unrecognised_memory_calls"
UNRECOGNISED_EXAMPLE = "unrecognised.example"  # meta key: the first one seen
# The identity changes counted, when the transaction that records one commits.
_IDENTITY_COUNTED = {
    Verdict.TRUNCATED: _RESETS,
    Verdict.REPLACED: _RESETS,
    Verdict.RENAMED: _RENAMED,
}

# A batch's rows: what every row of a batch shares (its source, agent and session) comes
# first, bound once a statement; a row carries only its own values (a hit 8 instead of 10,
# a call 5 instead of 7), which the sqlite3 module binds one by one.
_INSERT_BATCH_HITS = (
    "INSERT OR IGNORE INTO hits(source_id, agent, session, call_id, memory_path, kind, ts, "
    "query, score, start_line, end_line, anchor) VALUES "
)
HIT_WIDTH = 9  # the values of one hit row of a batch (Batch.hits)
_INSERT_BATCH_CALLS = (
    "INSERT OR IGNORE INTO calls(agent, session, call_id, tool, query, ts, answered) VALUES "
)


@functools.cache
def _values(head: str, width: int, rows: int, shared: int = 0) -> str:
    """``head`` with ``rows`` groups of ``shared`` numbered (``?1``…) and ``width`` plain
    placeholders: a plain ``?`` takes the number after the largest one used before it."""
    one = "(" + ",".join([f"?{j}" for j in range(1, shared + 1)] + ["?"] * width) + ")"
    return head + ",".join([one] * rows)


def insert_rows(
    conn: sqlite3.Connection,
    head: str,
    width: int,
    values: Sequence[object],
    shared: Sequence[object] = (),
) -> int:
    """``head`` (an ``INSERT … VALUES``) for each row of ``values``, in order, several a
    statement; the ``shared`` values (the first columns of ``head``) are the same for
    every row. Returns how many rows it inserted (the statements' own row counts: the
    rows the hits table's strength triggers update are not among them).

    ``values`` holds the rows one after the other, ``width`` values each: a statement's
    parameters are then one slice of it, where rows kept as tuples would each be taken
    apart again (and each built as an object of its own, 37 k of them in a heavy scan).
    SQLite applies a multi-row ``VALUES`` one row after the other, each with the
    statement's conflict clause, exactly as ``executemany`` would: an ``OR IGNORE``
    keeps the first of two rows with the same key, wherever the statements split.
    """
    i, n, k = 0, len(values) // width, len(shared)
    inserted = 0
    for size in _ROWS_PER_STATEMENT:
        if n - i < size:
            continue
        sql = _values(head, width, size, k)
        step = size * width
        while n - i >= size:
            at = i * width
            inserted += conn.execute(sql, [*shared, *values[at : at + step]]).rowcount
            i += size
    if i < n:
        inserted += conn.executemany(
            _values(head, width, 1, k),
            [(*shared, *values[j * width : (j + 1) * width]) for j in range(i, n)],
        ).rowcount
    return inserted


class Batch:
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
        "non_memory",
        "oversized",
        "parent",
        "reread",
        "retract",
        "retract_prefixes",
        "routed",
        "session",
        "start",
        "synthetic",
        "unknown",
        "unknown_sample",
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
        # An archive: a copy of events that may have been read live before. Its calls are
        # looked up in the ledger, so an answer counted (or not) then is not counted again.
        self.reread = False
        self.start = start  # file offset the batch starts at
        self.end = end  # file offset after its last complete line
        self.oversized = 0
        self.malformed = 0
        self.non_memory = 0  # result paths outside memory (not counted as hits)
        # Calls reached through Tool Search (call id → route, see events.ToolCall.via): counted
        # by route as their rows are new. Direct calls, nearly all of them, are not listed.
        self.routed: dict[str, str] = {}
        self.unknown = 0  # calls or custom messages naming a memory tool in a shape not known
        # Calls whose hits are taken back (the inner calls of a code-mode cell that failed:
        # the model saw nothing they found), by id and by the prefix of their ids.
        self.retract: list[str] = []
        self.retract_prefixes: list[tuple[str, float | None]] = []  # (prefix, since when)
        self.unknown_sample: str | None = None
        # The rows of the batch's agent and session (``cp.agent``, ``session``: see write()),
        # one after the other in a flat list each (see insert_rows):
        # calls: call id, tool, query, ts, answered (5 values a call; answering one sets
        # its last value)
        self.calls: list[object] = []
        self.call_rows: dict[str, int] = {}  # call id → where its row starts in calls
        self.answered: list[tuple[str, str]] = []
        self.answered_unseen: list[tuple[object, ...]] = []
        # hits: call id, memory path, kind, ts, query, score, start line, end line, anchor
        # (HIT_WIDTH a hit; the anchor: section_map.chunk_anchor's, or None)
        self.hits: list[object] = []

    def new_call(
        self, call_id: str, tool: str, query: str | None, ts: float | None, via: str | None = None
    ) -> None:
        """A call of the batch's agent first met in this batch, in its session (``via``: the
        route it took, None for a direct call)."""
        self.call_rows[call_id] = len(self.calls)
        self.calls.extend((call_id, tool, query, ts, 0))
        if via is not None:
            self.routed[call_id] = via

    def take_back(self, ids: list[str], prefix: str | None, since: float | None) -> None:
        """Hits of calls ``ids`` (and of calls whose id starts with ``prefix``, found since
        ``since``) are taken back: those of this batch at once, those already written when
        the batch is (before its own rows, so that a later call's hits stay)."""
        self.retract.extend(ids)
        if prefix is not None:
            self.retract_prefixes.append((prefix, since))
        gone = set(ids)
        rows = self.hits
        kept: list[object] = []
        for i in range(0, len(rows), HIT_WIDTH):
            cid = rows[i]
            if cid in gone or (
                prefix is not None
                and str(cid).startswith(prefix)
                and (since is None or (rows[i + 3] or 0) >= since - 1e-3)  # type: ignore[operator]
            ):
                continue
            kept.extend(rows[i : i + HIT_WIDTH])
        if len(kept) != len(rows):
            self.hits[:] = kept

    def unrecognised(self, sample: str) -> None:
        """A call or custom message naming a memory tool in a shape not known (counted)."""
        self.unknown += 1
        if self.unknown_sample is None:
            self.unknown_sample = sample

    def answer(self, agent: str, call_id: str) -> None:
        """Record that a call is answered: in its row when it is new in this batch."""
        i = self.call_rows.get(call_id)
        if i is None:
            self.answered.append((agent, call_id))
        else:
            self.calls[i + 4] = 1

    def write(self, conn: sqlite3.Connection, source_id: int) -> tuple[int, int, dict[str, int]]:
        """Insert it all; returns how many hits and calls were new (the rest were known), and
        of the new calls how many took each Tool Search route."""
        # (An empty list is skipped: most batches have no calls without a call line and no
        # answers to earlier batches' calls, and a statement costs even with nothing to do.)
        before_calls = conn.total_changes
        agent, session = self.cp.agent, self.session
        routes: dict[str, int] = {}
        if self.calls and self.routed:
            # (each route's rows on their own, so that only the new ones are counted)
            direct: list[object] = []
            by_route: dict[str, list[object]] = {}
            for i in range(0, len(self.calls), 5):
                via = self.routed.get(self.calls[i])  # type: ignore[call-overload]
                row = self.calls[i : i + 5]
                (direct if via is None else by_route.setdefault(via, [])).extend(row)
            if direct:
                insert_rows(conn, _INSERT_BATCH_CALLS, 5, direct, (agent, session))
            for via, rows in by_route.items():
                before_route = conn.total_changes
                insert_rows(conn, _INSERT_BATCH_CALLS, 5, rows, (agent, session))
                routes[via] = conn.total_changes - before_route
        elif self.calls:
            insert_rows(conn, _INSERT_BATCH_CALLS, 5, self.calls, (agent, session))
        # (a code-mode cell's row, kept while it runs, is no memory call)
        new_calls = conn.total_changes - before_calls - routes.pop(CELL_ROUTE, 0)
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
        deleted = self._take_back(conn) if self.retract or self.retract_prefixes else 0
        # (counted by the statements' own row counts: total_changes counts the rows the
        # strength triggers of migration 10 update too)
        new_hits = 0
        if self.hits:
            new_hits = insert_rows(
                conn, _INSERT_BATCH_HITS, HIT_WIDTH, self.hits, (source_id, agent, session)
            )
        # (hits taken back count as fewer new ones: a scan's figure is what it changed)
        return new_hits - deleted, new_calls, routes

    def _take_back(self, conn: sqlite3.Connection) -> int:
        """Delete the written hits of the calls taken back (see take_back); how many.

        Only the scanner's own rows (a source named): a hit memoryd counted itself under the
        call's id (the plugin's search hook answering with an archived note, a read answered
        empty and restored) was delivered whatever the cell did afterwards."""
        agent, session = self.cp.agent, self.session
        deleted = 0  # (row counts, not total_changes: see write)
        if self.retract:
            deleted += conn.executemany(
                "DELETE FROM hits WHERE agent = ? AND call_id = ? AND source_id IS NOT NULL",
                [(agent, cid) for cid in self.retract],
            ).rowcount
        for prefix, since in self.retract_prefixes:
            if since is None:
                deleted += conn.execute(
                    "DELETE FROM hits WHERE agent = ? AND call_id >= ? AND call_id < ? "
                    "AND source_id IS NOT NULL",
                    (agent, prefix, prefix + "\U0010ffff"),
                ).rowcount
            else:
                deleted += conn.execute(
                    "DELETE FROM hits WHERE agent = ? AND call_id >= ? AND call_id < ? "
                    "AND session = ? AND ts >= ? AND source_id IS NOT NULL",
                    (agent, prefix, prefix + "\U0010ffff", session, since - 1e-3),
                ).rowcount
        return deleted


# A file's state after a batch (the ``sources`` columns): offset, size, mtime_ns, last_read,
# malformed and oversized lines, and the fingerprint of the bytes before the offset. Settling a
# new file's identity writes them in the same row.
Tail = tuple[int, int, int, float, int, int, str]
# Records a file's identity in the database and returns its source id, and whether it
# wrote the tail too.
Settle = Callable[[sqlite3.Connection, Tail | None], tuple[int, bool]]


class SourceWrite:
    """Records a source's identity once, in the first transaction that needs its id."""

    def __init__(self, settle: Settle) -> None:
        self._unsettled: Settle | None = settle
        self._id = 0

    def settle(self, conn: sqlite3.Connection, tail: Tail | None = None) -> tuple[int, bool]:
        """Write the source's identity on ``conn`` unless done already (with ``tail``, if it
        can); its id, and whether the tail was written too."""
        if self._unsettled is None:
            return self._id, False
        self._id, wrote_tail = self._unsettled(conn, tail)
        self._unsettled = None
        return self._id, wrote_tail


def clock_was_set(store: Store, step: float) -> None:
    """The wall clock was set by ``step`` seconds (a move the daemon's monotonic and boot
    clocks did not make: see ``service.ingest_worker``): the times sessions were seen
    gone from a transcript store move with it, so the grace period after which they are
    forgotten counts the time that really passed. A clock set forward a week (by hand, a bad
    NTP answer, a dead clock battery corrected) would otherwise forget every session gone
    since at the next read; one set back would keep them for as much longer."""
    with store.transaction() as conn:
        conn.execute("UPDATE transcript_db_gone SET gone_at = gone_at + ?", (step,))


class Ledger:
    """The scan's writer: group commit over one connection, and the ingest tables."""

    def __init__(self, store: Store, commit_bytes: int) -> None:
        self.store = store
        self.conn = store.conn
        self.commit_bytes = commit_bytes
        self._in_txn = False
        self._txn_bytes = 0
        self.rolled_back = False  # a failed write undid the open transaction
        self._normal_commit_bytes = commit_bytes
        # Batches of the open transaction whose calls and hits are not written yet (with
        # their source id); the counts of COMMITTED that the batches written added, in the
        # open transaction (some are written before its commit: see
        # _write_queue_before_read), and in the transactions committed since take_written.
        self._queued: list[tuple[Batch, int]] = []
        self._txn_written = [0] * len(COMMITTED)
        self._written = [0] * len(COMMITTED)
        # Transactions committed so far: the daemon's sign that a long scan moves on.
        self.commits = 0

    # ------------------------------------------------------------------ group commit

    @contextlib.contextmanager
    def write(self, nbytes: int) -> Iterator[sqlite3.Connection]:
        """A write that joins the scan's open transaction (committed every ``commit_bytes``)."""
        conn = self.conn
        if not self._in_txn:
            conn.execute("BEGIN IMMEDIATE")
            self._in_txn, self._txn_bytes = True, 0
        try:
            yield conn
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error): a second
            # ROLLBACK would raise "no transaction is active" and hide the real cause.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._in_txn = False
            self._queued.clear()  # undone with the rest of the transaction
            self._txn_written[:] = [0] * len(COMMITTED)  # (rows written early: not counted)
            self.rolled_back = True
            raise
        self._txn_bytes += nbytes
        if self._txn_bytes >= self.commit_bytes:
            self.flush()

    def state_database_broke(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a fault of memoryd's own state database met while writing
        (a full disk, an I/O error, a read-only or damaged file), not of the source being
        read: every other source would fail the same way, so the scan stops and the
        command names the database (see ``store.describe_database_error``)."""
        if not self.rolled_back:
            return False
        if isinstance(exc, OSError):  # the state disk itself (ENOSPC, EIO…), not the source
            return exc.errno in _STATE_DISK_ERRNOS
        if not isinstance(exc, sqlite3.Error):
            return False
        name = getattr(exc, "sqlite_errorname", "") or ""
        return name.startswith(_STATE_DB_FAULTS)

    def flush(self) -> None:
        """Commit the scan's open transaction, if any (its queued batches written first)."""
        if self._in_txn:
            try:
                self._write_queued()
                # (tests: a full disk at the commit, as ENOSPC: ``MEMORYD_FAULT``)
                faults.point("ledger.commit")
                self.conn.execute("COMMIT")
            except BaseException:  # (a full disk shows at the commit): undone, as in write()
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self._queued.clear()
                self._txn_written[:] = [0] * len(COMMITTED)
                self.rolled_back = True
                raise
            finally:
                self._in_txn = False
            txn = self._txn_written
            self._written[:] = map(sum, zip(self._written, txn, strict=True))
            txn[:] = [0] * len(COMMITTED)
            self.commits += 1
            faults.point("scan.committed")

    def _write_queued(self) -> None:
        """Write the calls and hits of the queued batches, in the order they were queued."""
        if not self._queued:
            return
        queued, self._queued = self._queued, []
        for batch, source_id in queued:
            self._count(batch.write(self.conn, source_id))

    def _count(self, new: tuple[int, int, dict[str, int]]) -> None:
        """New hits and calls written in the open transaction (counted if it commits), and the
        persisted counters of the calls' routes bumped in it."""
        written = self._txn_written
        written[_HITS] += new[0]
        written[_CALLS] += new[1]
        for route, n in new[2].items():
            if n:
                self.store.bump(ROUTE_COUNTERS[route], n)
                written[_ROUTE_COMMITTED[route]] += n

    def _count_lines(self, batch: Batch) -> None:
        """A batch's malformed and oversized lines and paths outside memory, recorded in the
        open transaction: the persisted counters bumped, and the scan's counted if it commits
        (call inside the transaction)."""
        self.store.bump("oversized_lines", batch.oversized)
        self.store.bump("malformed_lines", batch.malformed)
        written = self._txn_written
        if batch.unknown:
            self.store.bump(UNRECOGNISED_COUNTER, batch.unknown)
            written[_UNRECOGNISED] += batch.unknown
            if (
                batch.unknown_sample is not None
                and self.store.get_meta(UNRECOGNISED_EXAMPLE) is None
            ):
                self.store.set_meta(UNRECOGNISED_EXAMPLE, batch.unknown_sample)
        written[_MALFORMED] += batch.malformed
        written[_OVERSIZED] += batch.oversized
        written[_NON_MEMORY] += batch.non_memory

    def _write_queue_before_read(self) -> None:
        """Before a read of ``calls`` in the open transaction: its queued rows in the table.

        Written as any other write of the transaction (see :meth:`write`): one that
        fails (a full disk, on which SQLite undoes the transaction itself; a row that
        cannot be written) undoes the transaction, its queue with it, and says so;
        otherwise the queue would be gone and the transaction left open, or believed
        open, and a later commit would record offsets without their hits.
        """
        if self._queued:
            with self.write(0):
                self._write_queued()

    def new_scan(self) -> None:
        """What a scan that stopped (a full disk, say) left behind is not the next one's: what
        it recorded and did not count, and the verdict that a failed write undid its
        transaction (kept, a later scan's first fault of a source, such as a transcript store
        that is not a database, would be taken for one of memoryd's own database, every scan)."""
        self.take_written()
        self.rolled_back = False

    def take_written(self) -> dict[str, int]:
        """What the batches of every source recorded in the transactions committed since the
        last call, by ``ScanStats`` field (:data:`COMMITTED`): new hits and calls, malformed
        and oversized lines, paths outside memory, transcripts renamed or reset. Nothing of a
        transaction that was undone is counted, even when written before it failed: its
        sources are read again, and counted then."""
        written = dict(zip(COMMITTED, self._written, strict=True))
        self._written[:] = [0] * len(COMMITTED)
        return written

    def hits_empty(self) -> bool:
        return self.store.hits_empty()

    def bulk_unfinished(self) -> bool:
        return self.store.bulk_unfinished()

    def begin_bulk(self) -> None:
        """A first scan of a large backlog: load without the secondary hit indexes and the
        strength triggers, with a larger page cache, no WAL autocheckpoint and fewer, larger
        transactions (hits and offsets still commit together), which keeps the bytes written
        near twice the database's size instead of three and a half times. The kept strength
        is marked pending meanwhile (its readers rank every call again) and filled from the
        whole table at the end (:mod:`memoryd.kept_strength`)."""
        self.store.start_bulk_load()
        self._normal_commit_bytes = self.commit_bytes
        self.commit_bytes *= BULK_COMMIT_FACTOR
        with self.write(0):
            self.store.drop_hit_indexes()
            # No strength triggers either (2.5x an insert's cost): the column is filled from
            # the whole table at the end, and marked pending meanwhile (kept_strength).
            kept_strength.drop_triggers(self.conn)
            # Until end_bulk: a scan killed meanwhile is resumed in bulk too (else the rest
            # of a first scan is loaded through the indexes, about 1.5x the CPU per MB).
            self.store.set_meta(BULK_UNFINISHED_META, "1")

    def end_bulk(self, build: bool = True) -> None:
        """Build the hit indexes dropped for a bulk load (after the last commit), the
        strength triggers back and every hit's strength filled, then one checkpoint and the
        usual settings back.

        ``build=False``: the load was interrupted (Ctrl-C, a failed commit): the indexes
        stay to build, the mark stays set, and the next scan loads the rest in bulk too
        (building them here, then loading the rest through them, cost a resumed first scan
        about 1.3x the CPU per MB of one in a go).
        """
        try:
            if build:
                self.store.ensure_hit_indexes()
                with self.store.transaction() as conn:
                    kept_strength.create_triggers(conn)
                    conn.execute("DELETE FROM meta WHERE key = ?", (BULK_UNFINISHED_META,))
                # Every hit's strength, in short transactions (killed meanwhile: the next
                # writable open goes on where this one stopped).
                kept_strength.fill(self.store.conn)
        finally:
            self.store.end_bulk_load()
            self.commit_bytes = self._normal_commit_bytes

    # ------------------------------------------------------------------ reads

    def checkpoints(
        self,
    ) -> tuple[dict[tuple[int, int], Checkpoint], dict[str, Checkpoint], set[int]]:
        """Every source's checkpoint by inode and by path, and the ids of vanished ones."""
        # Vanished rows come first so that a live row for the same inode or path wins;
        # a vanished file that reappears (renamed back, remounted) keeps its offset.
        rows = self.conn.execute(
            "SELECT id, agent, path, dev, ino, head_len, head_hash, offset, size, mtime_ns, "
            "tail_hash, vanished_at IS NOT NULL FROM sources ORDER BY vanished_at IS NULL, id"
        ).fetchall()
        cps = [Checkpoint(*r[:-1]) for r in rows]
        vanished = {r[0] for r in rows if r[-1]}
        return {(c.dev, c.ino): c for c in cps}, {c.path: c for c in cps}, vanished

    def archives_read(self) -> dict[tuple[str, str], tuple[int, str]]:
        """(agent, archive name) → (size, digest) of every archive read whole."""
        return {
            (a, n): (size, d)
            for a, n, size, d in self.conn.execute(
                "SELECT agent, name, size, digest FROM archives_read"
            )
        }

    def failed_sources(self) -> dict[str, str]:
        """The sources the last scans could not read, and why (a row each until one does)."""
        return dict(self.conn.execute("SELECT source, reason FROM source_failures"))

    def cursors(self, source_id: int) -> dict[str, tuple[int, int | None]]:
        """The cursor per session of a transcript store: the last seq read, and how many rows
        of it (None: all; see :data:`.sqlite_source.Cursor`). Sessions seen gone from the
        store are not among them (see :meth:`gone_cursors`)."""
        return {
            sid: (seq, rows)
            for sid, seq, rows in self.conn.execute(
                "SELECT session_id, seq, seq_rows FROM transcript_db_cursors WHERE source_id = ?",
                (source_id,),
            )
        }

    def gone_cursors(
        self, source_id: int, sessions: Sequence[str]
    ) -> dict[str, tuple[int, int | None]]:
        """The cursors of those of ``sessions`` seen gone from the store before (a lookup by
        key each: asked only of sessions the store holds that have no cursor)."""
        out: dict[str, tuple[int, int | None]] = {}
        for at in range(0, len(sessions), 500):  # (within any build's bound on parameters)
            part = sessions[at : at + 500]
            marks = ",".join("?" * len(part))
            for sid, seq, rows in self.conn.execute(
                "SELECT session_id, seq, seq_rows FROM transcript_db_gone "
                f"WHERE source_id = ? AND session_id IN ({marks})",
                (source_id, *part),
            ):
                out[sid] = (seq, rows)
        return out

    def store_sessions_moved(
        self,
        source_id: int,
        now: float,
        gone: dict[str, tuple[int, int | None]],
        back: dict[str, tuple[int, int | None]],
    ) -> None:
        """Cursors of sessions seen gone from the store's live table moved aside (``gone``,
        from ``now``), and of sessions there again moved back (``back``)."""
        # (sessions, where their cursors leave, where they go, what the row adds there)
        moves = (
            (
                gone,
                "DELETE FROM transcript_db_cursors WHERE source_id = ? AND session_id = ?",
                "INSERT OR REPLACE INTO transcript_db_gone"
                "(source_id, session_id, seq, seq_rows, gone_at) VALUES (?, ?, ?, ?, ?)",
                (now,),
            ),
            (
                back,
                "DELETE FROM transcript_db_gone WHERE source_id = ? AND session_id = ?",
                "INSERT OR REPLACE INTO transcript_db_cursors"
                "(source_id, session_id, seq, seq_rows) VALUES (?, ?, ?, ?)",
                (),
            ),
        )
        with self.write(0) as conn:
            for sessions, leave, arrive, extra in moves:
                if sessions:
                    conn.executemany(leave, [(source_id, sid) for sid in sessions])
                    rows = [(source_id, sid, *cursor, *extra) for sid, cursor in sessions.items()]
                    conn.executemany(arrive, rows)

    def store_sessions_expired(self, source_id: int, before: float) -> list[str]:
        """Sessions of the store seen gone since before ``before`` (by the index on the time:
        a read pays nothing for the sessions still within their grace period)."""
        return [
            sid
            for (sid,) in self.conn.execute(
                "SELECT session_id FROM transcript_db_gone WHERE source_id = ? AND gone_at < ?",
                (source_id, before),
            )
        ]

    def forget_store_sessions(
        self,
        cp: Checkpoint,
        forget: Sequence[str],
        forget_marks: Sequence[str],
        forget_calls: Sequence[str],
        calls_before: float,
    ) -> None:
        """Forget sessions gone from the store for the grace period: their cursors, the
        rewrite watermarks recorded for them (``forget_marks``, by name), and the calls of
        sessions ``forget_calls`` still waiting that were made before ``calls_before``.

        Nothing here can make a hit count twice: the calls answered and the hits, which
        every later copy of a session's rows is checked against (unique per agent, call
        and path), stay; a session whose id comes back is read from its start against them.
        A call still waiting holds no hit; a copy of it read later is a call again.
        """
        with self.write(0) as conn:
            conn.executemany(
                "DELETE FROM transcript_db_gone WHERE source_id = ? AND session_id = ?",
                [(cp.id, sid) for sid in forget],
            )
            conn.executemany(
                "DELETE FROM archives_read WHERE agent = ? AND name = ?",
                [(cp.agent, name) for name in forget_marks],
            )
            if forget_calls:
                # (the partial index of waiting calls: a walk over those only)
                self._write_queued()
                conn.executemany(
                    "DELETE FROM calls WHERE answered = 0 AND agent = ? AND session = ? AND ts < ?",
                    [(cp.agent, sid, calls_before) for sid in forget_calls],
                )

    def fetch_call(self, agent: str, call_id: str) -> CallRow | None:
        self._write_queue_before_read()  # (the calls of this transaction are in the table first)
        return self.conn.execute(
            "SELECT tool, query, ts, answered, session FROM calls WHERE agent = ? AND call_id = ?",
            (agent, call_id),
        ).fetchone()

    def stored_call(self, agent: str, call_id: str) -> tuple[float | None, str | None] | None:
        """The time and session stored with a call row, or None (no row).

        The write queue is not written first: the one reader (the applier's reused-id
        rule, ``Applier._counted_bare``) asks only of rows written before this process,
        and notes the ones this process makes itself.
        """
        return self.conn.execute(
            "SELECT ts, session FROM calls WHERE agent = ? AND call_id = ?", (agent, call_id)
        ).fetchone()

    def counted_under(self, agent: str, call_id: str, session: str) -> bool:
        """Whether ``session`` holds hits of the agent's call ``call_id`` (the reused-id
        rule's memory of a call taken for the bare one: ``Applier._counted_bare``)."""
        self._write_queue_before_read()
        return (
            self.conn.execute(
                "SELECT 1 FROM hits WHERE agent = ? AND call_id = ? AND session = ? LIMIT 1",
                (agent, call_id, session),
            ).fetchone()
            is not None
        )

    def fetch_occurrences(self, agent: str, call_id: str) -> list[tuple[str, str | None]]:
        """``(occurrence id, session)`` of every call kept under numbered ``call_id`` (see
        :func:`.calls.occurrence_id`): a range of the primary key, ``<id>#`` to ``<id>$``."""
        self._write_queue_before_read()
        return self.conn.execute(
            "SELECT call_id, session FROM calls WHERE agent = ? AND call_id > ? AND call_id < ?",
            (agent, call_id + OCCURRENCE_MARK, call_id + chr(ord(OCCURRENCE_MARK) + 1)),
        ).fetchall()

    def waiting_calls(self, agent: str) -> Calls:
        """The agent's calls still waiting for an answer (from earlier scans)."""
        self._write_queue_before_read()
        rows = self.conn.execute(
            "SELECT call_id, tool, query, ts, session FROM calls WHERE answered = 0 AND agent = ?",
            (agent,),
        )
        calls = Calls()
        for cid, tool, query, ts, session in rows:
            calls.add(cid, Call(tool, query, ts, False, session or ""))
        return calls

    # ------------------------------------------------------------------ files

    def settle_identity(
        self,
        sf: SourceFile,
        st: os.stat_result,
        head: bytes,
        cp: Checkpoint | None,
        at_path: Checkpoint | None,
        verdict: Verdict,
    ) -> tuple[Checkpoint, Settle]:
        """The checkpoint to read from, and how to record the identity the verdict implies.

        The recording runs inside the first commit of what is read from the file, so
        a small file costs one transaction; it returns the source's id. A new file
        read in one batch is recorded with its tail in one statement.
        """
        path = str(sf.path)
        now = time.time()
        hlen, hhash = len(head), head_hash(head)
        # (a reset or a rename is counted when the transaction that records it commits)
        change = _IDENTITY_COUNTED.get(verdict)
        retire = at_path.id if at_path is not None and (cp is None or at_path.id != cp.id) else None

        def retire_old(conn: sqlite3.Connection) -> None:
            if retire is not None:  # another file used to live at this path
                conn.execute("UPDATE sources SET vanished_at = ? WHERE id = ?", (now, retire))

        if verdict is Verdict.NEW:

            def insert(conn: sqlite3.Connection, tail: Tail | None) -> tuple[int, bool]:
                retire_old(conn)
                cur = conn.execute(
                    "INSERT INTO sources(agent, kind, path, dev, ino, head_len, head_hash, offset, "
                    "size, mtime_ns, last_read, malformed, oversized, tail_hash, first_seen) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (sf.agent, sf.kind, path, st.st_dev, st.st_ino, hlen, hhash)
                    + (tail or (0, 0, 0, None, 0, 0, None))
                    + (now,),
                )
                assert cur.lastrowid is not None
                return cur.lastrowid, tail is not None

            return Checkpoint(0, sf.agent, path, st.st_dev, st.st_ino, hlen, hhash, 0, 0, 0), insert
        assert cp is not None
        if verdict in (Verdict.TRUNCATED, Verdict.REPLACED):
            offset = 0
            sql = (
                "UPDATE sources SET path = ?, kind = ?, head_len = ?, head_hash = ?, "
                "offset = 0, resets = resets + 1 WHERE id = ?"
            )
        else:  # GROWN / RENAMED: keep the offset; lengthen a short fingerprint as it grows
            offset = cp.offset
            if hlen < cp.head_len:
                hlen, hhash = cp.head_len, cp.head_hash
            sql = "UPDATE sources SET path = ?, kind = ?, head_len = ?, head_hash = ? WHERE id = ?"
        source_id = cp.id

        def update(conn: sqlite3.Connection, tail: Tail | None) -> tuple[int, bool]:
            retire_old(conn)
            conn.execute(sql, (path, sf.kind, hlen, hhash, source_id))
            if change is not None:
                self._txn_written[change] += 1
            return source_id, False

        return Checkpoint(cp.id, cp.agent, path, cp.dev, cp.ino, hlen, hhash, offset, 0, 0), update

    def commit_file(
        self,
        batch: Batch,
        source: SourceWrite,
        fingerprint: str,
        final: os.stat_result | None,
    ) -> None:
        """Identity, hits, calls and the offset after them: in one transaction, all or nothing.

        With the offset goes ``fingerprint``, of the line just before it (see
        :func:`.tailer.judge`). ``final`` is the file's stat taken before reading, for
        its last batch. The calls and hits are queued, written before the transaction
        commits; :meth:`take_written` counts the new ones.
        """
        tail: Tail | None = None
        if final is not None:
            tail = (
                batch.end,
                final.st_size,
                final.st_mtime_ns,
                time.time(),
                batch.malformed,
                batch.oversized,
                fingerprint,
            )
        with self.write(batch.end - batch.start) as conn:
            source_id, wrote_tail = source.settle(conn, tail)
            if batch.calls or batch.hits or batch.answered or batch.answered_unseen:
                self._queued.append((batch, source_id))
            if tail is None:
                conn.execute(
                    "UPDATE sources SET offset = MAX(offset, ?1), "
                    "tail_hash = CASE WHEN ?1 >= offset THEN ?2 ELSE tail_hash END, "
                    "oversized = oversized + ?3, malformed = malformed + ?4 WHERE id = ?5",
                    (batch.end, fingerprint, batch.oversized, batch.malformed, source_id),
                )
            elif not wrote_tail:  # the file's last batch: its size and mtime before reading too
                conn.execute(
                    "UPDATE sources SET offset = MAX(offset, ?1), "
                    "tail_hash = CASE WHEN ?1 >= offset THEN ?2 ELSE tail_hash END, "
                    "oversized = oversized + ?3, malformed = malformed + ?4, size = ?5, "
                    "mtime_ns = ?6, last_read = ?7 WHERE id = ?8",
                    (
                        batch.end,
                        fingerprint,
                        batch.oversized,
                        batch.malformed,
                        *tail[1:4],
                        source_id,
                    ),
                )
            self._count_lines(batch)

    # ------------------------------------------------------------------ the transcript store

    def new_store_source(self, sf: SourceFile, st: os.stat_result) -> Checkpoint:
        """Record a transcript store seen for the first time (its signature comes later)."""
        with self.write(0) as conn:
            cur = conn.execute(
                "INSERT INTO sources(agent, kind, path, dev, ino, head_len, head_hash, "
                "first_seen) VALUES (?, ?, ?, ?, ?, 0, '', ?)",
                (sf.agent, sf.kind, str(sf.path), st.st_dev, st.st_ino, time.time()),
            )
        assert cur.lastrowid is not None
        return Checkpoint(
            cur.lastrowid, sf.agent, str(sf.path), st.st_dev, st.st_ino, 0, "", 0, 0, 0
        )

    def commit_store_batch(
        self,
        batch: Batch,
        nbytes: int,
        cursor: tuple[int, int | None],
        marks: dict[str, str] | None = None,
    ) -> None:
        """A batch of a store session's rows, with the session's cursor after them (its new
        rows counted when the transaction commits: see :meth:`take_written`); with ``marks``,
        the rewrite watermark that made it read the session again from its start (recorded with
        the first batch of that read: memoryd stopped after it carries on from its cursor)."""
        with self.write(nbytes) as conn:
            if marks:
                self._marks_read(conn, batch.cp.agent, marks)
            self._write_queued()
            self._count(batch.write(conn, batch.cp.id))
            conn.execute(
                "INSERT INTO transcript_db_cursors(source_id, session_id, seq, seq_rows) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(source_id, session_id) "
                "DO UPDATE SET seq = excluded.seq, seq_rows = excluded.seq_rows",
                (batch.cp.id, batch.session, *cursor),
            )
            self._count_lines(batch)

    def store_read(
        self, source_id: int, agent: str, signature: tuple[int, int], marks: dict[str, str]
    ) -> None:
        """A store read to its end: its signature (a no-op rescan compares it), and the
        rewrite watermarks seen (recorded like archives, by name)."""
        with self.write(0) as conn:
            conn.execute(
                "UPDATE sources SET size = ?, mtime_ns = ?, last_read = ? WHERE id = ?",
                (signature[0], signature[1], time.time(), source_id),
            )
            self._marks_read(conn, agent, marks)

    @staticmethod
    def _marks_read(conn: sqlite3.Connection, agent: str, marks: dict[str, str]) -> None:
        """Rewrite watermarks seen, by name → digest (recorded like archives)."""
        now = time.time()
        conn.executemany(
            "INSERT OR REPLACE INTO archives_read(agent, name, size, digest, read_at) "
            "VALUES (?, ?, 0, ?, ?)",
            [(agent, name, d, now) for name, d in marks.items()],
        )

    # ------------------------------------------------------------------ archives

    def commit_archive(
        self, batch: Batch, nbytes: int, record: tuple[str, int, str] | None
    ) -> None:
        """A batch of an archive's lines; with ``record`` (its last) the archive is read (its
        new rows counted when the transaction commits: see :meth:`take_written`)."""
        with self.write(nbytes) as conn:
            self._write_queued()
            self._count(batch.write(conn, batch.cp.id))
            self._count_lines(batch)
            if record is not None:
                self._archive_read(conn, batch.cp.agent, record)

    def archive_skipped(self, agent: str, record: tuple[str, int, str]) -> None:
        """An archive seen and not to be read (not a zstd file): remembered like one read."""
        with self.write(0) as conn:
            self._archive_read(conn, agent, record)

    def _archive_read(
        self, conn: sqlite3.Connection, agent: str, record: tuple[str, int, str]
    ) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO archives_read(agent, name, size, digest, read_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (agent, *record, time.time()),
        )

    # ------------------------------------------------------------------ failures, vanished

    def source_failed(self, sf: SourceFile, reason: str) -> None:
        """Record a source's failure (for ``status``, and ``read_errors``), committed at once:
        left in the open transaction, a later source's write that fails would undo it, and
        the scan would report a failure that nothing recorded."""
        with self.write(0) as conn:
            self.store.bump("read_errors")
            conn.execute(
                "INSERT INTO source_failures(source, kind, agent, reason, at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(source) DO UPDATE SET "
                "kind = excluded.kind, reason = excluded.reason, at = excluded.at",
                (str(sf.path), sf.kind, sf.agent, reason, time.time()),
            )
        self.flush()

    def source_recovered(self, source: str) -> None:
        with self.write(0) as conn:
            conn.execute("DELETE FROM source_failures WHERE source = ?", (source,))

    def mark_vanished(
        self, known: set[int], seen: set[int], vanished: set[int], grace_days: float
    ) -> None:
        """Flag sources that are gone, revive the ones seen again, forget old ones."""
        now = time.time()
        gone = known - seen - vanished
        back = seen & vanished
        cutoff = now - grace_days * 86400
        expired = self.conn.execute(
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
            if expired:  # (a transcript store forgotten: the state of its sessions with it)
                for table in ("transcript_db_cursors", "transcript_db_gone"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE source_id NOT IN (SELECT id FROM sources)"
                    )
