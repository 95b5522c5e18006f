"""OpenClaw's SQLite transcript store (every release since v2026.7.2), read-only.

Each agent keeps its transcript events in ``<state>/agents/<id>/agent/openclaw-agent.sqlite``
(docs/openclaw-formats.md). memoryd never trusts a version number: :func:`detect_layout` finds
the event table and its columns by name, and a store it cannot place is reported, not guessed.

The read position is the last ``seq`` per session, kept in memoryd's own
``transcript_db_cursors`` table and committed with the hits. A table found by its column names
may let rows of a session share an order value: its rows are read in ``(seq, rowid)`` order
(a table without rowid: its key), and the cursor also says how many rows of its seq were read
(:data:`Cursor`), so rows sharing a seq on either side of a batch, a crash or a restart are
each read once. The layout (:mod:`.store_layout`), the events' bytes (:mod:`.store_frames`)
and the sessions (:mod:`.store_sessions`) have modules of their own, their names re-exported.

Failure cases, named: the file is not a database, or has no event table we
recognise → the source is marked failed with the reason, the other sources are
read; the store is locked by a writer → SQLite's busy timeout waits, then the
source is failed for this scan and retried at the next (its signature is not
recorded); a row of the wrong type, a frame that does not decode or decodes to
the wrong length → counted malformed, the rest is read.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from .store_frames import ZSTD_MAGIC, decode_event, decompress, zstd_module
from .store_layout import (
    START,
    Cursor,
    Layout,
    detect_layout,
    pick_layout,
    quote,
    table_columns,
    with_ties,
)
from .store_sessions import (
    REWRITE_TABLE,
    not_continued,
    parents_first,
    previous_sessions,
    rewrite_marks,
    root_of,
    session_keys,
    session_lineage,
    sessions_left,
)

# This module's names, and those of the layout, the frames and the sessions read through it.
# fmt: off
__all__ = [
    "BATCH_BYTES", "BATCH_ROWS", "BUSY_TIMEOUT_S", "DB_NAME", "FIRST_TRANSCRIPT_SCHEMA",
    "LOOK_BACK_ROWS", "NOT_READY_GRACE_S", "REWRITE_TABLE", "SETTLE_S", "START", "UNSUPPORTED",
    "ZSTD_MAGIC", "Cursor", "Layout", "Row", "db_path_for", "decode_event", "decompress",
    "detect_layout", "every_row", "header_row", "holds_no_transcripts", "is_busy", "is_db_file",
    "not_continued", "open_readonly", "parents_first", "pick_layout", "previous_sessions", "quote",
    "rewrite_marks", "root_of", "rows_before", "session_keys", "session_lineage", "sessions_left",
    "sessions_with_new_rows", "settled", "signature", "size_of", "still_being_created",
    "table_columns", "user_version", "with_ties", "zstd_module"
]
# fmt: on

DB_NAME = "openclaw-agent.sqlite"
_SIDE_FILES = (DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")
# How long to wait for a writer holding the store locked before failing the source for this
# scan (the next scan retries). Tests lower it.
BUSY_TIMEOUT_S = 5.0

UNSUPPORTED = "unsupported layout (no transcript_events table)"
# Agent schemas before 4 (2026.5.30 to 2026.7.1, and the 2026.7 line published after 2026.8.1:
# its user_version is 1) keep auth, caches and the memory index there, and no transcripts.
FIRST_TRANSCRIPT_SCHEMA = 4


# The tables of an agent database that holds no transcripts (auth, caches, the memory index).
_NOT_TRANSCRIPT_TABLES = ("auth_profile_", "cache_entries", "memory_", "schema_meta")


def holds_no_transcripts(tables: dict[str, tuple[str, ...]], user_version: int) -> bool:
    """Whether an agent database with no event table is one that never holds transcripts (a
    2026.7 install's): no source. Any other database without one is a layout not known here."""
    if 0 < user_version < FIRST_TRANSCRIPT_SCHEMA:
        return True
    return bool(tables) and all(t.lower().startswith(_NOT_TRANSCRIPT_TABLES) for t in tables)


# How long a store may stay without its event table before memoryd calls it a layout it does
# not know: OpenClaw creates the file, then its tables, then sets ``user_version`` last.
NOT_READY_GRACE_S = 600.0


def still_being_created(tables: dict[str, tuple[str, ...]], version: int, age_s: float) -> bool:
    """Whether an agent store with no event table is one OpenClaw is still creating: its
    ``user_version`` not set yet (OpenClaw sets it once its tables are made) and the file new.
    "Not ready yet", read again soon; not a failed source. One left so for longer than
    :data:`NOT_READY_GRACE_S` is a layout not known here."""
    return (
        version == 0
        and age_s < NOT_READY_GRACE_S
        and "transcript_events" not in tables
        and all(t.lower().startswith(_AGENT_STORE_TABLES) for t in tables)
    )


# The prefixes of the tables an agent store of 2026.9 holds (tests/fixtures/openclaw/2026.9.6):
# a store with no event table but only such tables (or none) is one being created; a table of
# another name is a layout not known here.
# fmt: off
_AGENT_STORE_TABLES = (
    "schema_meta", "session", "conversation", "board_", "heartbeat_", "message_tool_",
    "transcript_", "trajectory_", "acp_", "context_engine_", "cache_entries", "auth_profile_",
    "memory_", "standing_intents", "sqlite_sequence",
)
# fmt: on


def user_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row and isinstance(row[0], int) else 0


def db_path_for(sessions_dir: Path) -> Path:
    """Where an agent's SQLite transcripts live, next to its ``sessions/`` folder."""
    return sessions_dir.parent / "agent" / DB_NAME


def is_db_file(name: str) -> bool:
    """The database or one of the side files whose change means new rows."""
    return name == DB_NAME or name in _SIDE_FILES


def signature(db: Path) -> tuple[int, int] | None:
    """(total size, newest mtime) of the database and its WAL: changes when rows are added
    (an empty WAL's time is left out: a reader opening the store re-creates it empty)."""
    size = mtime = 0
    found = False
    for p in (db, db.with_name(DB_NAME + "-wal")):
        try:
            st = os.stat(p)
        except OSError:
            continue
        if p is not db and st.st_size == 0:
            continue
        found = True
        size += st.st_size
        mtime = max(mtime, st.st_mtime_ns)
    return (size, mtime) if found else None


# A store written less than this before its signature was taken may hold committed rows not
# visible yet (a writer's WAL write comes before its WAL index is updated; some file systems
# keep coarse times): such a read is provisional, and the daemon scans again after this long.
SETTLE_S = 2.0


def settled(signature: tuple[int, int], now_ns: int) -> bool:
    """Whether a signature taken at ``now_ns`` is old enough to be taken as final."""
    return now_ns - signature[1] >= SETTLE_S * 1e9


def open_readonly(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        f"file:{db}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
    )
    conn.execute("PRAGMA query_only = ON")
    return conn


_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite gave up waiting for a lock another connection holds."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "busy" in text


# ---------------------------------------------------------------------- reading


def sessions_with_new_rows(
    conn: sqlite3.Connection, layout: Layout, cursors: dict[str, Cursor],
    live: set[str] | None = None,
) -> list[tuple[str, Cursor, int]]:
    """(session_id, cursor to read after, last seq) for every session with rows not yet read;
    every session the table holds goes into ``live`` (when given). A session whose rows now end
    below its cursor was rewritten: it is read again from its start (hits are unique per call).
    """
    if live is None:
        live = set()
    if layout.tie is not None:
        return _tied_sessions_with_new_rows(conn, layout, cursors, live)
    if layout.seq == "rowid":
        return _rowid_sessions_with_new_rows(conn, layout, cursors, live)
    t, s, q = quote(layout.table), quote(layout.session), _order(layout)
    out = []
    for session_id, top in conn.execute(f"SELECT {s}, MAX({q}) FROM {t} GROUP BY {s}"):
        if not isinstance(session_id, str):
            continue  # a row without a usable session: nothing to follow it by
        live.add(session_id)  # (in the store, even with a row of no usable order)
        if not isinstance(top, int):
            continue  # a row without a usable order: nothing to follow the session by
        done = cursors.get(session_id, START)
        if top > done[0]:
            out.append((session_id, done, top))
        elif top < done[0]:
            out.append((session_id, START, top))
    return out


def _tied_sessions_with_new_rows(
    conn: sqlite3.Connection, layout: Layout, cursors: dict[str, Cursor], live: set[str]
) -> list[tuple[str, Cursor, int]]:
    """:func:`sessions_with_new_rows` where a seq may repeat: a session's last seq and how
    many rows hold it tell whether rows were added after the cursor (or removed: from the
    start). A cursor that does not count its seq's rows means every row of its seq read."""
    t, s, q = quote(layout.table), quote(layout.session), _order(layout)
    sql = (
        f"SELECT e.{s}, e.{q}, COUNT(*) FROM {t} AS e JOIN "
        f"(SELECT {s} AS sid, MAX({q}) AS top FROM {t} GROUP BY {s}) AS m "
        f"ON e.{s} = m.sid AND e.{q} = m.top GROUP BY e.{s}"
    )
    out = []
    for session_id, top, rows in conn.execute(sql):
        if not isinstance(session_id, str):
            continue
        live.add(session_id)
        if not isinstance(top, int):
            continue
        done, read = cursors.get(session_id, START)
        if top > done or (top == done and read is not None and rows > read):
            out.append((session_id, (done, read), top))
        elif top < done or (top == done and read is not None and rows < read):
            out.append((session_id, START, top))
    return out


def _rowid_sessions_with_new_rows(
    conn: sqlite3.Connection, layout: Layout, cursors: dict[str, Cursor], live: set[str]
) -> list[tuple[str, Cursor, int]]:
    """:func:`sessions_with_new_rows` for a table with no order column, followed by rowid.

    A ``VACUUM`` renumbers the rowids of such a table (no ``INTEGER PRIMARY KEY``),
    keeping their order: where rows were deleted before it (another session's), the rows
    after a session's cursor may now sit at or below the cursor's rowid, and reading on
    from it would skip them for good. So the cursor also counts the session's rows read
    (rows at or below its rowid, in rowid order; ``seq_rows``), and a session whose rows
    changed (more or fewer, or a new last rowid) is checked: the rows at or below the
    cursor must be the ones read. They are not after a renumbering that moved rows under
    it (or rows removed, or inserted below it): the session is read again from its start,
    which counts nothing twice (calls and hits are unique per agent, call and path). The check
    costs a count of the session's rows after its cursor, only for sessions whose rows changed.
    A cursor without a count gets one here (rows up to it read, as it said).
    """
    # The walk and the counts in one read transaction: otherwise a row OpenClaw appends between
    # two statements would be taken for one moved under the cursor, re-reading the session.
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        return _rowid_walk(conn, layout, cursors, live)
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def _rowid_walk(
    conn: sqlite3.Connection, layout: Layout, cursors: dict[str, Cursor], live: set[str]
) -> list[tuple[str, Cursor, int]]:
    """:func:`_rowid_sessions_with_new_rows` within its read transaction."""
    t, s = quote(layout.table), quote(layout.session)
    after_sql = f"SELECT COUNT(*) FROM {t} WHERE {s} = ? AND rowid > ?"
    out: list[tuple[str, Cursor, int]] = []
    for session_id, top, rows in conn.execute(
        f"SELECT {s}, MAX(rowid), COUNT(*) FROM {t} GROUP BY {s}"
    ):
        if not isinstance(session_id, str):
            continue
        live.add(session_id)
        done, read = cursors.get(session_id, START)
        if done < 0:
            out.append((session_id, START, top))
            continue
        if read is not None and rows == read and top == done:
            continue  # as it was: nothing new
        later = conn.execute(after_sql, (session_id, done)).fetchone()[0]
        if read is None:  # a cursor from before the count: every row up to it read
            read = rows - later
        if rows - later != read:  # not the rows read under the cursor: renumbered, rewritten
            out.append((session_id, START, top))
        elif later or top != done or cursors[session_id][1] is None:
            # (rows after it; or none, the cursor is moved to the last row, or given its count)
            out.append((session_id, (min(done, top), read), top))
    return out


def _order(layout: Layout) -> str:
    return "rowid" if layout.seq == "rowid" else quote(layout.seq)


def _select(layout: Layout) -> str:
    """The query of :data:`Row` columns from the event table."""
    t, q, j = quote(layout.table), _order(layout), quote(layout.json)
    z = quote(layout.zstd) if layout.zstd else "NULL"
    n = quote(layout.nbytes) if layout.nbytes else "NULL"
    return f"SELECT {q}, typeof({j}), CAST({j} AS BLOB), {z}, {n} FROM {t}"


# One row as read: seq, the storage class of the JSON column, its bytes, the zstd frame
# and the decoded length it claims.
Row = tuple[int, str, Any, Any, Any]

# The most rows, and bytes of rows (text and frames), one batch holds (tests lower them).
BATCH_ROWS = 500
BATCH_BYTES = 16 << 20


def every_row(
    conn: sqlite3.Connection, layout: Layout, session_id: str, after: Cursor, upto: int
) -> tuple[list[Row], Cursor, bool]:
    """Every row after ``after`` up to seq ``upto``, up to ``BATCH_ROWS`` of them; the cursor
    after them, and whether rows may be left (another batch is due).

    Every row, not only those holding ``memory_``: the caller searches all in Python, in seq
    order (SQLite's ``instr`` cost more: docs/benchmarks.md, "The scanner's constants"). The
    JSON column is read as bytes (invalid UTF-8 must not stop the query) with its storage
    class, so a row of the wrong type is seen as such. A batch also ends once its rows hold
    ``BATCH_BYTES``: a session of large events would otherwise be held 500 at a time.

    Where a seq may repeat (``layout.tie``), the rows are read in ``(seq, tie)`` order
    and the cursor counts the rows of its seq read: the next batch skips that many of
    them, so a batch may end between two rows of one seq. Only rows of that seq are
    skipped (not an ``OFFSET`` over every row from it on): were some of them removed
    since, the rows of later seqs are still each read.
    """
    t, s, q, select = quote(layout.table), quote(layout.session), _order(layout), _select(layout)
    batch = BATCH_ROWS
    seq, read = after
    if layout.tie is None:
        sql = f"{select} WHERE {s} = ? AND {q} > ? AND {q} <= ? ORDER BY {q} LIMIT ?"
        rows, cut = _rows(conn.execute(sql, (session_id, seq, upto, batch)))
        last = rows[-1][0] if cut or len(rows) == batch else upto
        # (followed by rowid: the session's rows read so far, see _rowid_sessions_with_new_rows)
        count = (read or 0) + len(rows) if layout.seq == "rowid" else None
        return rows, (last, count), last < upto
    tie = layout.tie
    args: tuple[object, ...]
    if read is None:  # every row of the cursor's seq read
        where, args = f"{q} > ?", (seq,)
    else:  # the first ``read`` rows of its seq read: those, not a later seq's, are skipped
        where = (
            f"{q} >= ? AND NOT ({q} = ? AND ({tie}) IN "
            f"(SELECT {tie} FROM {t} WHERE {s} = ? AND {q} = ? ORDER BY {tie} LIMIT ?))"
        )
        args = (seq, seq, session_id, seq, read)
    sql = f"{select} WHERE {s} = ? AND {where} AND {q} <= ? ORDER BY {q}, {tie} LIMIT ?"
    rows, cut = _rows(conn.execute(sql, (session_id, *args, upto, batch)))
    if not rows:
        return rows, after, False
    last = rows[-1][0]
    before = next((i for i in range(len(rows) - 1, -1, -1) if rows[i][0] != last), -1)
    of_last = len(rows) - 1 - before + (read if read is not None and last == seq else 0)
    return rows, (last, of_last), cut or len(rows) == batch


LOOK_BACK_ROWS = 2000  # rows read back at most for the message a session's turn began with


def rows_before(
    conn: sqlite3.Connection, layout: Layout, session_id: str, upto: int, limit: int = BATCH_ROWS
) -> list[Row]:
    """Up to ``limit`` rows of a session at or below seq ``upto``, newest first: the rows a
    reader resuming inside a turn looks back through for the user message that began it
    (what kind of run the turn is). Read only when a process meets a session first."""
    s, q = quote(layout.session), _order(layout)
    return conn.execute(
        f"{_select(layout)} WHERE {s} = ? AND {q} <= ? ORDER BY {q} DESC LIMIT ?",
        (session_id, upto, limit),
    ).fetchall()


def _rows(cursor: sqlite3.Cursor) -> tuple[list[Row], bool]:
    """A query's rows, and whether they were cut at ``BATCH_BYTES`` (text or frame)."""
    rows: list[Row] = []
    keep = rows.append
    held = 0
    for row in cursor:  # (a row at a time from SQLite: the budget bounds what is held)
        keep(row)
        data = row[2] or row[3]  # the text, else the frame
        if type(data) is bytes:
            held += len(data)
            if held >= BATCH_BYTES:
                cursor.close()
                return rows, True
    return rows, False


_SUM_MAX = (1 << 63) - 1


def size_of(rows: list[Row]) -> int:
    """The size of a batch's events (compressed ones as decoded): each row's JSON length,
    else its ``event_utf8_bytes``. A value that is not an integer (a hostile
    ``event_utf8_bytes``) or a sum past 64 bits makes it 0: the size is only a measure."""
    total = 0
    for row in rows:
        text, nbytes = row[2], row[4]
        value = len(text) if text is not None else nbytes
        if value is None:
            continue
        if type(value) is not int:
            return 0
        total += value
    return total if -_SUM_MAX - 1 <= total <= _SUM_MAX else 0


def header_row(conn: sqlite3.Connection, layout: Layout, session_id: str) -> bytes | None:
    """The session's first row (seq 0, the header) when it is plain text (it always is)."""
    t, s, q, j = quote(layout.table), quote(layout.session), _order(layout), quote(layout.json)
    if layout.tie is not None:
        q = f"{q}, {layout.tie}"
    row = conn.execute(
        f"SELECT CAST({j} AS BLOB) FROM {t} WHERE {s} = ? AND typeof({j}) = 'text' "
        f"ORDER BY {q} LIMIT 1",
        (session_id,),
    ).fetchone()
    return row[0] if row and isinstance(row[0], bytes) else None
