"""Bulk mode: a first scan of a large backlog loads without the hit indexes, then builds them.

A mode of the whole ledger, begun and ended by the scanner around a first scan, with settings
of its own (larger transactions, no strength triggers, a mark a killed load resumes from).
"""

from __future__ import annotations

from .. import kept_strength
from ..store import BULK_UNFINISHED_META
from .ledger_queue import WriteQueue

# A bulk load (a first scan of a large backlog) commits this many times less often.
BULK_COMMIT_FACTOR = 8


class BulkLoad(WriteQueue):
    """Bulk mode of the ledger (see the module's docstring)."""

    def hits_empty(self) -> bool:
        return self.store.hits_empty()

    def bulk_unfinished(self) -> bool:
        return self.store.bulk_unfinished()

    def begin_bulk(self) -> None:
        """A first scan of a large backlog: load without the secondary hit indexes and the
        strength triggers, with a larger page cache, no WAL autocheckpoint and fewer, larger
        transactions (hits and offsets still commit together; docs/benchmarks.md). The kept
        strength is marked pending meanwhile and filled from the whole table at the end."""
        self.store.start_bulk_load()
        self._normal_commit_bytes = self.commit_bytes
        self.commit_bytes *= BULK_COMMIT_FACTOR
        with self.write(0):
            self.store.drop_hit_indexes()
            kept_strength.drop_triggers(self.conn)
            # Until end_bulk: a scan killed meanwhile is resumed in bulk too (else the rest
            # of a first scan is loaded through the indexes, at more CPU per MB).
            self.store.set_meta(BULK_UNFINISHED_META, "1")

    def end_bulk(self, build: bool = True) -> None:
        """Build the hit indexes dropped for a bulk load (after the last commit), the
        strength triggers back and every hit's strength filled, then one checkpoint and the
        usual settings back.

        ``build=False``: the load was interrupted (Ctrl-C, a failed commit): the indexes stay
        to build, the mark stays set, and the next scan loads the rest in bulk too (cheaper
        than loading it through the indexes: docs/benchmarks.md).
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
