"""The ledger's group commit and write queue: the one transaction a scan writes in.

Small sources are many, and a transaction each would cost more than reading them:
:meth:`WriteQueue.write` joins the scan's open transaction until ``commit_bytes`` of input are
in it, or it has been open :data:`MAX_TRANSACTION_SECONDS` (or the scan ends). Every write is
a whole unit (identity, hits and the position after them), so a crash re-reads at most what
was not committed.

The calls and hits of a transcript file's batches are queued and written just before the
``COMMIT``, together, with SQLite's pages and statements still hot in the caches. Their order
stays the batches': any other write to them, and any read of ``calls``, writes the queue first.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import time
from collections.abc import Iterator

from .. import faults
from ..store import Store
from .ledger_batch import Batch
from .stats import ROUTES, ScanStats

# The longest the scan keeps its transaction open (besides its bytes' bound): a plugin hook's
# restore waits for it to bring a note back in the agent's call, within the hook's 800 ms; a
# catch-up scan's 16 MB (128 MB in bulk) transactions made the hooks take 2-4 s.
MAX_TRANSACTION_SECONDS = 0.25
# OS errors that, raised by a write of the ledger, can only be the state disk's: no space (a
# transcript being read never reports these).
_STATE_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# SQLite error names that, raised by a write of the ledger, are faults of the state database.
_STATE_DB_FAULTS = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CORRUPT",
                    "SQLITE_NOTADB")  # fmt: skip

# The scan's counters of what it recorded, counted when their transaction commits.
COMMITTED = ScanStats.RECORDED
# Each one's place in them, by name (not by the order RECORDED happens to list them in).
# (The identity changes, "renamed" and "resets", are counted by .ledger_checkpoints.)
_HITS, _CALLS, _MALFORMED, _OVERSIZED, _NON_MEMORY, _UNRECOGNISED = (
    COMMITTED.index(name)
    for name in (
        "new_hits", "new_calls", "malformed", "oversized", "non_memory_paths", "unrecognised",
    )
)  # fmt: skip
# New calls by Tool Search route (events.TOOL_CALL, events.CODE): their place in COMMITTED, and
# the persisted counter of each (``status``: direct calls are all the others).
_ROUTE_COMMITTED = {route: COMMITTED.index(f"calls_{route}") for route in ROUTES}
ROUTE_COUNTERS = {route: f"memory_calls_{route}" for route in ROUTES}
UNRECOGNISED_COUNTER = "unrecognised_memory_calls"
UNRECOGNISED_EXAMPLE = "unrecognised.example"  # meta key: the first one seen


class WriteQueue:
    """The scan's writer: group commit over one connection, the queue of batches to write,
    and the counts of what the committed transactions recorded."""

    def __init__(self, store: Store, commit_bytes: int) -> None:
        self.store = store
        self.conn = store.conn
        self.commit_bytes = commit_bytes
        self._in_txn = False
        self._txn_bytes = 0
        self._txn_began = 0.0
        self.rolled_back = False  # a failed write undid the open transaction
        self._normal_commit_bytes = commit_bytes
        # Batches of the open transaction whose calls and hits are not written yet (with their
        # source id); the counts of COMMITTED the batches written added, in the open
        # transaction and in the transactions committed since take_written.
        self._queued: list[tuple[Batch, int]] = []
        self._txn_written = [0] * len(COMMITTED)
        self._written = [0] * len(COMMITTED)
        # Transactions committed so far: the daemon's sign that a long scan moves on.
        self.commits = 0

    @contextlib.contextmanager
    def write(self, nbytes: int) -> Iterator[sqlite3.Connection]:
        """A write that joins the scan's open transaction (committed every ``commit_bytes``)."""
        conn = self.conn
        if not self._in_txn:
            conn.execute("BEGIN IMMEDIATE")
            self._in_txn, self._txn_bytes = True, 0
            self._txn_began = time.monotonic()
        try:
            yield conn
        except BaseException:
            self._undone()
            raise
        self._txn_bytes += nbytes
        if (
            self._txn_bytes >= self.commit_bytes
            or time.monotonic() - self._txn_began >= MAX_TRANSACTION_SECONDS
        ):
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
            except BaseException:  # (a full disk shows at the commit)
                self._undone()
                raise
            finally:
                self._in_txn = False
            txn = self._txn_written
            self._written[:] = map(sum, zip(self._written, txn, strict=True))
            txn[:] = [0] * len(COMMITTED)
            self.commits += 1
            faults.point("scan.committed")

    def _undone(self) -> None:
        """A write or commit failed: the open transaction is undone, its queue and counts too."""
        # SQLite may have rolled back already (a full disk, an I/O error): a second ROLLBACK
        # would raise "no transaction is active" and hide the real cause.
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self._in_txn = False
        self._queued.clear()
        self._txn_written[:] = [0] * len(COMMITTED)  # (rows written early: not counted)
        self.rolled_back = True

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
        """Before a read of ``calls`` in the open transaction: its queued rows in the table,
        written as any other write (:meth:`write`), so that a failure undoes the transaction
        and a later commit never records offsets without their hits."""
        if self._queued:
            with self.write(0):
                self._write_queued()

    def new_scan(self) -> None:
        """What a scan that stopped (a full disk, say) left behind is not the next one's: what
        it recorded and did not count, and the verdict that a failed write undid its
        transaction (kept, a later source's fault would be taken for the state database's)."""
        self.take_written()
        self.rolled_back = False

    def take_written(self) -> dict[str, int]:
        """What the batches of every source recorded in the transactions committed since the
        last call, by ``ScanStats`` field (:data:`COMMITTED`). Nothing of a transaction undone
        is counted: its sources are read again, and counted then."""
        written = dict(zip(COMMITTED, self._written, strict=True))
        self._written[:] = [0] * len(COMMITTED)
        return written
