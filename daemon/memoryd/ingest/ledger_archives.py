"""Archives read whole (and rewrite watermarks, recorded like them): never read twice.

Deleted, reset and cold-stored sessions are read once, from tables and ``.zst`` files; the
``archives_read`` table remembers each by name with its size and a digest. The transcript
store's rewrite watermarks are remembered in the same table (:func:`record_marks`).
"""

from __future__ import annotations

import sqlite3
import time

from .ledger_batch import Batch
from .ledger_queue import WriteQueue


def record_archive(conn: sqlite3.Connection, agent: str, record: tuple[str, int, str]) -> None:
    """An archive read whole (or skipped): its (name, size, digest) by agent."""
    conn.execute(
        "INSERT OR REPLACE INTO archives_read(agent, name, size, digest, read_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (agent, *record, time.time()),
    )


def record_marks(conn: sqlite3.Connection, agent: str, marks: dict[str, str]) -> None:
    """Rewrite watermarks seen, by name → digest (recorded like archives)."""
    now = time.time()
    conn.executemany(
        "INSERT OR REPLACE INTO archives_read(agent, name, size, digest, read_at) "
        "VALUES (?, ?, 0, ?, ?)",
        [(agent, name, d, now) for name, d in marks.items()],
    )


class ArchiveWrites(WriteQueue):
    """The ledger's part for archives read whole."""

    def archives_read(self) -> dict[tuple[str, str], tuple[int, str]]:
        """(agent, archive name) → (size, digest) of every archive read whole."""
        return {
            (a, n): (size, d)
            for a, n, size, d in self.conn.execute(
                "SELECT agent, name, size, digest FROM archives_read"
            )
        }

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
                record_archive(conn, batch.cp.agent, record)

    def archive_skipped(self, agent: str, record: tuple[str, int, str]) -> None:
        """An archive seen and not to be read (not a zstd file): remembered like one read."""
        with self.write(0) as conn:
            record_archive(conn, agent, record)
