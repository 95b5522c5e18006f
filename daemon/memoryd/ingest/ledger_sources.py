"""Sources that failed and sources that vanished: a source's state beside its checkpoint.

A source the scan could not read is recorded with the reason (``memoryd status`` shows it)
until a scan reads it again; a source gone from disk is flagged, revived if it comes back,
forgotten after the grace period.
"""

from __future__ import annotations

import time

from .ledger_queue import WriteQueue
from .sources import SourceFile


class SourceStateWrites(WriteQueue):
    """The ledger's part for failed and vanished sources."""

    def failed_sources(self) -> dict[str, str]:
        """The sources the last scans could not read, and why (a row each until one does)."""
        return dict(self.conn.execute("SELECT source, reason FROM source_failures"))

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
