"""The transcript store's read positions: a cursor per session, committed with its hits.

OpenClaw's SQLite store is one source whose sessions are read each from its own cursor (the
last seq read, and how many rows of it): the store's checkpoints, as a file's are
:mod:`.ledger_checkpoints`'.
"""

from __future__ import annotations

import os
import time

from .ledger_archives import record_marks
from .ledger_batch import Batch
from .ledger_queue import WriteQueue
from .sources import SourceFile
from .tailer import Checkpoint


class StoreCursorWrites(WriteQueue):
    """The ledger's part for the transcript store's cursors."""

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

    def new_store_source(self, sf: SourceFile, st: os.stat_result) -> Checkpoint:
        """Record a transcript store seen for the first time (its signature comes later)."""
        with self.write(0) as conn:
            cur = conn.execute(
                "INSERT INTO sources(agent, kind, path, dev, ino, head_len, head_hash, "
                "first_seen) VALUES (?, ?, ?, ?, ?, 0, '', ?)",
                (sf.agent, sf.kind, str(sf.path), st.st_dev, st.st_ino, time.time()),
            )
        assert cur.lastrowid is not None
        return Checkpoint(cur.lastrowid, sf.agent, str(sf.path), st.st_dev, st.st_ino, 0, "", 0, 0,
                          0)  # fmt: skip

    def commit_store_batch(
        self, batch: Batch, nbytes: int, cursor: tuple[int, int | None],
        marks: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """A batch of a store session's rows, with the session's cursor after them; with
        ``marks``, the rewrite watermark that made it read the session again from its start
        (recorded with the first batch of that read, so a stop after it goes on from the cursor)."""
        with self.write(nbytes) as conn:
            if marks:
                record_marks(conn, batch.cp.agent, marks)
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
            record_marks(conn, agent, marks)
