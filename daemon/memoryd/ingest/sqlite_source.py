"""OpenClaw's SQLite transcripts (main branch since 2026-07-11).

Newer builds keep each agent's transcript events in
``<state>/agents/<id>/agent/openclaw-agent.sqlite``, table
``transcript_events(session_id, seq, event_json, created_at)``; each
``event_json`` is what used to be one JSONL line. memoryd opens that database
read-only (it belongs to OpenClaw) and reads it incrementally by
``(session_id, seq)``: the read position is the last ``seq`` per session, kept
in memoryd's own ``transcript_db_cursors`` table and committed with the hits.

Failure cases, named: the file is not a database or has no such table (an
older or newer layout) → counted as a read error, nothing else happens; the
database is locked by a writer → SQLite's busy timeout waits, then the next
scan retries; a session's rows are rewritten with lower seq numbers → not seen
again (hits are unique per call anyway, so nothing is double counted).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

DB_NAME = "openclaw-agent.sqlite"
_SIDE_FILES = (DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")


def db_path_for(sessions_dir: Path) -> Path:
    """Where an agent's SQLite transcripts live, next to its ``sessions/`` folder."""
    return sessions_dir.parent / "agent" / DB_NAME


def is_db_file(name: str) -> bool:
    """The database or one of the side files whose change means new rows."""
    return name == DB_NAME or name in _SIDE_FILES


def signature(db: Path) -> tuple[int, int] | None:
    """(total size, newest mtime) of the database and its WAL: changes when rows are added."""
    size = mtime = 0
    found = False
    for p in (db, db.with_name(DB_NAME + "-wal")):
        try:
            st = os.stat(p)
        except OSError:
            continue
        found = True
        size += st.st_size
        mtime = max(mtime, st.st_mtime_ns)
    return (size, mtime) if found else None


def open_readonly(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    return conn


def sessions_with_new_rows(
    conn: sqlite3.Connection, cursors: dict[str, int]
) -> list[tuple[str, int]]:
    """(session_id, last seq read) for every session holding rows past its cursor."""
    out = []
    for session_id, top in conn.execute(
        "SELECT session_id, MAX(seq) FROM transcript_events GROUP BY session_id"
    ):
        done = cursors.get(session_id, -1)
        if top is not None and top > done:
            out.append((session_id, done))
    return out


def rows_after(
    conn: sqlite3.Connection, session_id: str, after: int, batch: int = 2000
) -> Iterator[list[tuple[int, bytes]]]:
    """The session's events after ``after``, in seq order, a batch at a time."""
    while True:
        rows = conn.execute(
            "SELECT seq, CAST(event_json AS BLOB) FROM transcript_events "
            "WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, after, batch),
        ).fetchall()
        if not rows:
            return
        yield rows
        after = rows[-1][0]
