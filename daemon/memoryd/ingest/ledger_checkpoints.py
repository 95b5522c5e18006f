"""A transcript file's checkpoint: its identity, and the offset committed with its hits.

The reads of every source's checkpoint, the recording of the identity a
:class:`.tailer.Verdict` implies, and the commit of a file's batch with the position after it:
identity and offset are written together, in the transaction of the hits read up to there.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable

from .ledger_batch import Batch
from .ledger_queue import COMMITTED, WriteQueue
from .sources import SourceFile
from .tailer import Checkpoint, Verdict, head_hash

# The identity changes counted (their place in COMMITTED), when the transaction that records
# one commits.
_IDENTITY_COUNTED = {
    Verdict.TRUNCATED: COMMITTED.index("resets"),
    Verdict.REPLACED: COMMITTED.index("resets"),
    Verdict.RENAMED: COMMITTED.index("renamed"),
}

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


class CheckpointWrites(WriteQueue):
    """The ledger's part for transcript files' checkpoints."""

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

    def settle_identity(
        self, sf: SourceFile, st: os.stat_result, head: bytes, cp: Checkpoint | None,
        at_path: Checkpoint | None, verdict: Verdict,
    ) -> tuple[Checkpoint, Settle]:  # fmt: skip
        """The checkpoint to read from, and how to record the identity the verdict implies
        (inside the first commit of what is read from the file, so a small file costs one
        transaction; a new file read in one batch is recorded with its tail in one statement).
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
        self, batch: Batch, source: SourceWrite, fingerprint: str, final: os.stat_result | None
    ) -> None:
        """Identity, hits, calls and the offset after them: in one transaction, all or nothing.

        With the offset goes ``fingerprint``, of the line just before it (see
        :func:`.tailer.judge`). ``final`` is the file's stat taken before reading, for its
        last batch. The calls and hits are queued, written before the transaction commits.
        """
        tail: Tail | None = None
        if final is not None:
            tail = (batch.end, final.st_size, final.st_mtime_ns, time.time(), batch.malformed,
                    batch.oversized, fingerprint)  # fmt: skip
        with self.write(batch.end - batch.start) as conn:
            source_id, wrote_tail = source.settle(conn, tail)
            if batch.calls or batch.hits or batch.answered or batch.answered_unseen:
                self._queued.append((batch, source_id))
            moved = (batch.end, fingerprint, batch.oversized, batch.malformed)
            if tail is None:
                conn.execute(
                    "UPDATE sources SET offset = MAX(offset, ?1), "
                    "tail_hash = CASE WHEN ?1 >= offset THEN ?2 ELSE tail_hash END, "
                    "oversized = oversized + ?3, malformed = malformed + ?4 WHERE id = ?5",
                    (*moved, source_id),
                )
            elif not wrote_tail:  # the file's last batch: its size and mtime before reading too
                conn.execute(
                    "UPDATE sources SET offset = MAX(offset, ?1), "
                    "tail_hash = CASE WHEN ?1 >= offset THEN ?2 ELSE tail_hash END, "
                    "oversized = oversized + ?3, malformed = malformed + ?4, size = ?5, "
                    "mtime_ns = ?6, last_read = ?7 WHERE id = ?8",
                    (*moved, *tail[1:4], source_id),
                )
            self._count_lines(batch)
