"""Sessions that left the transcript store: their cursors set aside, brought back, forgotten.

A session gone from the store's live table (deleted, reset into an archive, cold-stored)
keeps its cursor in ``transcript_db_gone`` from when it was seen gone; seen again, the
cursor moves back; gone for ``ingest.vanished_grace_days``, it is forgotten
(docs/ingest-sources.md, "Sessions that left the store").
"""

from __future__ import annotations

from collections.abc import Sequence

from ..store import Store
from .ledger_queue import WriteQueue
from .tailer import Checkpoint


def clock_was_set(store: Store, step: float) -> None:
    """The wall clock was set by ``step`` seconds: the times sessions were seen gone from a
    transcript store move with it, so the grace period counts the time that really passed
    (a clock set forward a week would otherwise forget every session gone since)."""
    with store.transaction() as conn:
        conn.execute("UPDATE transcript_db_gone SET gone_at = gone_at + ?", (step,))


class StoreSessionWrites(WriteQueue):
    """The ledger's part for the store's sessions that left it."""

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
        self, source_id: int, now: float, gone: dict[str, tuple[int, int | None]],
        back: dict[str, tuple[int, int | None]],
    ) -> None:  # fmt: skip
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
        self, cp: Checkpoint, forget: Sequence[str], forget_marks: Sequence[str],
        forget_calls: Sequence[str], calls_before: float,
    ) -> None:  # fmt: skip
        """Forget sessions gone from the store for the grace period: their cursors, the
        rewrite watermarks recorded for them (``forget_marks``, by name), and the calls of
        sessions ``forget_calls`` still waiting that were made before ``calls_before``.

        Nothing here can make a hit count twice: the calls answered and the hits, which every
        later copy is checked against, stay; a call still waiting holds no hit.
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
