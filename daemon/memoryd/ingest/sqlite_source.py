"""OpenClaw's SQLite transcript store (every release since v2026.7.2), read-only.

Each agent keeps its transcript events in
``<state>/agents/<id>/agent/openclaw-agent.sqlite``. Since schema 14 the table is
``transcript_events(session_id, seq, event_json, created_at)``; since schema 23
(v2026.9.6) an event may be stored compressed instead: ``event_json`` NULL,
``event_zstd`` a zstd frame of its UTF-8 bytes and ``event_utf8_bytes`` their
length. Before schema 14 the tables were ``sessions`` / ``session_entries``.
memoryd never trusts a version number for any of this: :func:`detect_layout`
finds the event table and its columns by name (``sqlite_master``,
``PRAGMA table_info``), and a store it cannot place is reported, not guessed at.

The read position is the last ``seq`` per session, kept in memoryd's own
``transcript_db_cursors`` table and committed with the hits (see ``scan.py``). A table
found by its column names may let rows of a session share an order value (no key makes
``(session, seq)`` unique): its rows are read in ``(seq, rowid)`` order (a table without
rowid: its key), and the cursor also says how many rows of its seq were read
(:data:`Cursor`), so rows sharing a seq on either side of a batch, a scan, a crash or a
restart are each read once.
Everything here is either pure (:func:`decode_event`, :func:`pick_layout`) or a thin
query; which sessions are synthetic is :func:`memoryd.ingest.sources.synthetic_from_keys`.

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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

DB_NAME = "openclaw-agent.sqlite"
_SIDE_FILES = (DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")
# How long to wait for a writer holding the store locked before failing the source for this
# scan (the next scan retries). Tests lower it.
BUSY_TIMEOUT_S = 5.0

# Column names, by role, in order of preference. The event table's shapes before schema 14 were
# not verified: any table with a session column, an order column and a payload column is taken.
_SESSION_COLS = ("session_id",)
_ORDER_COLS = ("seq", "entry_seq", "sequence", "idx", "entry_index", "position", "ordinal")
_JSON_COLS = ("event_json", "entry_json")
_ZSTD_COLS = ("event_zstd", "entry_zstd")
_NBYTES_COLS = ("event_utf8_bytes", "entry_utf8_bytes")
_PREFERRED_TABLES = ("transcript_events", "session_entries")
# Tables that hold archives, not live events (read by their own readers).
_ARCHIVE_TABLES = ("session_transcript_archives", "session_transcript_cold_archives")


class Layout(NamedTuple):
    """Where a store keeps its events: the table and the column for each role."""

    table: str
    session: str
    seq: str  # "rowid" when the table has no order column of its own
    json: str
    zstd: str | None = None  # the compressed payload (schema ≥ 23)
    nbytes: str | None = None  # the decoded length of the compressed payload
    # How rows of a session sharing a seq are ordered (SQL: the rowid, or the key of a table
    # without one); None when the order column is unique in a session (see :func:`with_ties`).
    tie: str | None = None


UNSUPPORTED = "unsupported layout (no transcript_events table)"
# Agent schemas before 4 (2026.5.30 to 2026.7.1, and the 2026.7 line published after 2026.8.1:
# its user_version is 1) keep auth, caches and the memory index there, and no transcripts.
FIRST_TRANSCRIPT_SCHEMA = 4


# The tables of an agent database that holds no transcripts (auth, caches, the memory index).
_NOT_TRANSCRIPT_TABLES = ("auth_profile_", "cache_entries", "memory_", "schema_meta")


def holds_no_transcripts(tables: dict[str, tuple[str, ...]], user_version: int) -> bool:
    """Whether an agent database with no event table is one that never holds transcripts (a
    2026.7 install's): no source, nothing to warn about. Any other database without one is a
    layout not known here (a failed source: memoryd cannot count what it holds)."""
    if 0 < user_version < FIRST_TRANSCRIPT_SCHEMA:
        return True
    return bool(tables) and all(t.lower().startswith(_NOT_TRANSCRIPT_TABLES) for t in tables)


# How long a store may stay without its event table before memoryd calls it a layout it does
# not know: OpenClaw creates the file, then its tables, then sets ``user_version`` last.
NOT_READY_GRACE_S = 600.0


def still_being_created(tables: dict[str, tuple[str, ...]], version: int, age_s: float) -> bool:
    """Whether an agent store with no event table is one OpenClaw is still creating: its
    ``user_version`` not set yet (OpenClaw sets it once its tables are made; every store that
    holds transcripts has one) and the file new. "Not ready yet", read again soon; not a
    failed source (the first turn of a fresh install used to log an ``error`` line for it).
    One left so for longer than :data:`NOT_READY_GRACE_S` is a layout not known here."""
    return (
        version == 0
        and age_s < NOT_READY_GRACE_S
        and "transcript_events" not in tables
        and all(t.lower().startswith(_AGENT_STORE_TABLES) for t in tables)
    )


# The prefixes of the tables an agent store of 2026.9 holds (tests/fixtures/openclaw/2026.9.6):
# a store with no event table but only such tables (or none) is one being created; a table of
# another name is a layout not known here.
_AGENT_STORE_TABLES = (
    "schema_meta",
    "session",
    "conversation",
    "board_",
    "heartbeat_",
    "message_tool_",
    "transcript_",
    "trajectory_",
    "acp_",
    "context_engine_",
    "cache_entries",
    "auth_profile_",
    "memory_",
    "standing_intents",
    "sqlite_sequence",
)


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
    """(total size, newest mtime) of the database and its WAL: changes when rows are added.

    An empty WAL holds no rows: its time is left out (a reader opening the store
    re-creates it empty after the last writer removed it, and that is no change).
    """
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


# A store written less than this before its signature was taken may hold committed rows that
# were not visible yet: a writer's last write to the WAL file comes before its WAL index is
# updated (an fsync may sit between them), and some file systems keep coarse times. Such a read
# is provisional: the store is looked at again at the next scan, and the daemon scans again
# after this long.
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


# ---------------------------------------------------------------------- layout


def table_columns(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """Every table of the store and its column names (in the store's own spelling)."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    out: dict[str, tuple[str, ...]] = {}
    for name in tables:
        cols = conn.execute(f"PRAGMA table_info({quote(name)})").fetchall()
        out[name] = tuple(str(c[1]) for c in cols)
    return out


def pick_layout(tables: dict[str, tuple[str, ...]]) -> Layout | None:
    """The event table and its columns, found by name; None when no table fits.

    ``transcript_events`` (schema ≥ 14) and ``session_entries`` (before) are tried
    first, then any other table holding a session, an order and a payload column.
    """
    order = [t for t in _PREFERRED_TABLES if t in tables]
    order += sorted(t for t in tables if t not in _PREFERRED_TABLES and t not in _ARCHIVE_TABLES)
    for table in order:
        cols = {c.lower(): c for c in tables[table]}
        session = _first(cols, _SESSION_COLS)
        payload = _first(cols, _JSON_COLS)
        if session is None or payload is None:
            continue
        seq = _first(cols, _ORDER_COLS) or "rowid"
        zstd, nbytes = _first(cols, _ZSTD_COLS), _first(cols, _NBYTES_COLS)
        return Layout(table, session, seq, payload, zstd, nbytes if zstd else None)
    return None


def detect_layout(conn: sqlite3.Connection) -> Layout | None:
    return pick_layout(table_columns(conn))


def with_ties(conn: sqlite3.Connection, layout: Layout) -> Layout:
    """``layout``, with how rows sharing a seq are ordered when the order column may repeat.

    OpenClaw's tables key their rows by ``(session_id, seq)``; a table found by its
    column names alone may not, and rows read in batches by seq alone would be skipped
    (or read twice) where a batch ends between two rows of one seq. The table's primary
    key and its unique indexes (``PRAGMA table_info`` / ``index_list`` / ``index_info``)
    say whether any keeps a seq to one row of a session.
    """
    if layout.seq == "rowid":
        return layout
    t = quote(layout.table)
    info = conn.execute(f"PRAGMA table_info({t})").fetchall()  # cid, name, type, notnull, _, pk
    key = [str(c[1]) for c in sorted((c for c in info if c[5]), key=lambda c: c[5])]
    unique = [key] if key else []
    for index in conn.execute(f"PRAGMA index_list({t})").fetchall():  # seq, name, unique, …
        if index[2] and not (len(index) > 4 and index[4]):  # (a partial index: not every row)
            unique.append([c[2] for c in conn.execute(f"PRAGMA index_info({quote(index[1])})")])
    if not order_repeats(layout, unique):
        return layout
    try:
        conn.execute(f"SELECT rowid FROM {t} LIMIT 0")
        tie = "rowid"
    except sqlite3.OperationalError:  # a table WITHOUT ROWID: it has a primary key
        tie = ", ".join(quote(c) for c in key)
    return layout._replace(tie=tie or None)


def order_repeats(layout: Layout, unique_keys: Sequence[Sequence[str | None]]) -> bool:
    """Whether rows of a session may share an order value: no unique key (each a list of
    column names; None for an expression) lies within the session and order columns."""
    own = {layout.session.lower(), layout.seq.lower()}
    return not any(
        key and all(c is not None and c.lower() in own for c in key) for key in unique_keys
    )


def _first(cols: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((cols[n] for n in names if n in cols), None)


def quote(name: str) -> str:
    """An SQL identifier, quoted (names come from the store itself)."""
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------------- reading


# A session's read position: the last seq read, and (a layout whose order column repeats)
# how many rows of that seq were read, in the table's order; None: every one of them.
Cursor = tuple[int, int | None]
START: Cursor = (-1, None)  # nothing read


def sessions_with_new_rows(
    conn: sqlite3.Connection,
    layout: Layout,
    cursors: dict[str, Cursor],
    live: set[str] | None = None,
) -> list[tuple[str, Cursor, int]]:
    """(session_id, cursor to read after, last seq) for every session with rows not yet read;
    every session the table holds goes into ``live`` (when given: the same walk tells).

    A session whose rows now end below its cursor was rewritten (its rows removed
    and written again): it is read again from its start. Re-reading is harmless,
    hits are unique per call.
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
    start). A cursor that does not count its seq's rows (written before memoryd counted
    them) is read as before: every row of its seq read."""
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
    which counts nothing twice (calls and hits are unique per agent, call and path). A
    renumbering that left the rows read where they are moved none under the cursor; one
    that left the count alike can only have moved the rows read themselves (fewer rows
    under the cursor now means more above it): both are caught by the count.

    The check costs a count of the session's rows after its cursor, a walk over the rowids
    the read then visits anyway, and only for sessions whose rows changed. A cursor written
    before rows were counted gets its count once, here (rows up to it read, as it said).
    """
    # The walk and the counts in one read transaction: each statement would otherwise see
    # the store as it is when it starts (the walk's last row is handed over after its
    # statement ended), and a row OpenClaw appends in between would be taken for one moved
    # under the cursor, reading the whole session again.
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


# One row as read: seq, the storage class of the JSON column, its bytes, the zstd frame
# and the decoded length it claims.
Row = tuple[int, str, Any, Any, Any]

# The most rows, and bytes of rows (text and frames), one batch holds (tests lower them).
BATCH_ROWS = 500
BATCH_BYTES = 16 << 20


def every_row(
    conn: sqlite3.Connection,
    layout: Layout,
    session_id: str,
    after: Cursor,
    upto: int,
) -> tuple[list[Row], Cursor, bool]:
    """Every row after ``after`` up to seq ``upto``, up to ``BATCH_ROWS`` of them; the cursor
    after them, and whether rows may be left (another batch is due).

    Every row, not only those SQLite finds ``memory_`` or a waiting call's id in: the
    caller decodes the compressed ones and searches all in Python, in seq order (so an
    answer to a call made in the same batch is met in its place). SQLite's ``instr`` on
    TEXT (character by character) cost more than handing every row over: a schema-22
    store of the 101 MB benchmark corpus scanned in 0.95 s with it, 0.4 s without; a
    second query for each batch's size and one for the ids of calls made in it are spared.
    The JSON column is read as bytes (a row of invalid UTF-8 must not stop the query)
    with its storage class, so a row of the wrong type is seen as such, not coerced.

    A batch also ends once its rows hold ``BATCH_BYTES`` (text or frame): every row
    is handed over now, and a session of large events (OpenClaw stores those over
    4 MiB plain) would otherwise be held 500 at a time.

    Where a seq may repeat (``layout.tie``), the rows are read in ``(seq, tie)`` order
    and the cursor counts the rows of its seq read: the next batch skips that many of
    them, so a batch may end between two rows of one seq. Only rows of that seq are
    skipped (not an ``OFFSET`` over every row from it on): were some of them removed
    since, the rows of later seqs are still each read.
    """
    t, s, q, j = quote(layout.table), quote(layout.session), _order(layout), quote(layout.json)
    z = quote(layout.zstd) if layout.zstd else "NULL"
    n = quote(layout.nbytes) if layout.nbytes else "NULL"
    select = f"SELECT {q}, typeof({j}), CAST({j} AS BLOB), {z}, {n} FROM {t}"  # (a Row)
    batch = BATCH_ROWS
    seq, read = after
    if layout.tie is None:
        rows, cut = _rows(
            conn.execute(
                f"{select} WHERE {s} = ? AND {q} > ? AND {q} <= ? ORDER BY {q} LIMIT ?",
                (session_id, seq, upto, batch),
            )
        )
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
    rows, cut = _rows(
        conn.execute(
            f"{select} WHERE {s} = ? AND {where} AND {q} <= ? ORDER BY {q}, {tie} LIMIT ?",
            (session_id, *args, upto, batch),
        )
    )
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
    t, s, q, j = quote(layout.table), quote(layout.session), _order(layout), quote(layout.json)
    z = quote(layout.zstd) if layout.zstd else "NULL"
    n = quote(layout.nbytes) if layout.nbytes else "NULL"
    return conn.execute(
        f"SELECT {q}, typeof({j}), CAST({j} AS BLOB), {z}, {n} FROM {t} "
        f"WHERE {s} = ? AND {q} <= ? ORDER BY {q} DESC LIMIT ?",
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
    else its ``event_utf8_bytes``.

    As the SQL ``SUM`` it replaces counted: one value that is not an integer (a
    hostile ``event_utf8_bytes``) made the sum a float, read as 0. A sum past 64 bits
    (SQLite's "integer overflow" error, which failed the store at every scan) is 0
    too: the size is only a measure, and those rows are counted malformed.
    """
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


# ---------------------------------------------------------------------- decoding

_ZSTD: Any = None


def zstd_module() -> Any:
    """The standard library's zstd binding, for the streaming reads of archives (``ZstdFile``)
    and the rare row refused by the one-call decode (:func:`_bounded`), imported on first
    use: ``compression.zstd`` on Python ≥ 3.14, else its backport.

    Single rows are decoded with ``zstandard`` first (:func:`decompress`): it keeps one
    decompression context for every row, where this binding makes a new one per frame.
    """
    global _ZSTD
    if _ZSTD is None:
        if sys.version_info >= (3, 14):
            from compression import zstd  # type: ignore[import-not-found]
        else:
            from backports import zstd
        _ZSTD = zstd
    return _ZSTD


# zstd's magic number, little-endian, at the start of every regular frame (skippable frames
# start with 0x184D2A50 to 0x184D2A5F instead).
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# The largest buffer the one-call decode allocates up front, before reading the frame
# (OpenClaw compresses events of at most 4 MiB); larger frames take the careful way.
_ONE_CALL_MAX = 16 << 20

_FRAMES: Any = None  # the zstandard module, imported on first use
_LOCAL: Any = None  # a threading.local: one reusable decompression context per thread


def frames_module() -> Any:
    """The ``zstandard`` binding, imported at the first compressed row (with ``threading``,
    which read commands do without)."""
    global _FRAMES, _LOCAL
    if _FRAMES is None:
        import threading

        import zstandard

        _LOCAL = threading.local()
        _FRAMES = zstandard
    return _FRAMES


def decompressor() -> Any:
    """This thread's ``zstandard.ZstdDecompressor``: making one costs about as much as
    decoding a typical event, so it is made once and reused (one per thread: a context
    must not be used by two at once)."""
    z = _FRAMES or frames_module()
    dctx = getattr(_LOCAL, "dctx", None)
    if dctx is None:
        dctx = _LOCAL.dctx = z.ZstdDecompressor()
    return dctx


def decompress(frame: bytes, limit: int) -> bytes:
    """A zstd frame's bytes, at most ``limit`` + 1 of them (a bomb is cut, then refused).

    Only the first frame is decoded; bytes after it are ignored. Raises ValueError
    when the frame is corrupt, cut short or fails its checksum.

    The usual frame says its decoded size in its header: when that is within
    ``limit`` (or not said), it is decoded in one call into a buffer of that size (or
    of ``limit`` + 1), which the decoder cannot write past, if that buffer is within
    ``_ONE_CALL_MAX`` (it is allocated before the frame is read). Anything else (a
    size over the limit, an empty or skippable frame, a bad header, a frame the one
    call refused) goes through :func:`_bounded`, which says why.
    """
    z = _FRAMES or frames_module()
    if frame[:4] == ZSTD_MAGIC:
        try:
            size = z.frame_content_size(frame)
        except z.ZstdError:
            size = 0  # a header cut short or malformed: _bounded tells which
        # (-1: the header does not say. The one call allocates its buffer first, and
        # ingest.max_line_bytes has no upper bound: past _ONE_CALL_MAX, the careful way.)
        if 0 < size <= min(limit, _ONE_CALL_MAX) or (size == -1 and limit < _ONE_CALL_MAX):
            try:
                out: bytes = decompressor().decompress(frame, max_output_size=limit + 1)
                return out
            except z.ZstdError:
                pass  # malformed: the bounded decoder finds out how
    return _bounded(frame, limit)


def _bounded(frame: bytes, limit: int) -> bytes:
    """:func:`decompress` the careful way: the standard library's streaming decoder with an
    output buffer of ``limit`` + 1 bytes, whatever size the header declares (memoryd's
    decoder before ``zstandard``, whose outcome the fast call is held to).

    It stops once the buffer is full, so memory stays within about the limit. Only the
    rare frame comes here (refused by the one call, or said to be over the limit, empty,
    skippable, or of a bad header), so a context of its own per frame costs nothing that
    shows; feeding ``zstandard``'s stream a few bytes at a time instead (it has no output
    bound) took a decoder call per byte for a frame's last 256 KiB: 48 ms for a cut frame
    of a 200 kB event, against 0.3.
    """
    zstd = zstd_module()
    d = zstd.ZstdDecompressor()
    try:
        out = d.decompress(frame, max_length=limit + 1)
    except (zstd.ZstdError, EOFError) as exc:  # (the binding's own prefix left off)
        raise ValueError(f"bad zstd frame: {str(exc).rsplit(': ', 1)[-1]}") from None
    if len(out) <= limit and not d.eof:
        raise ValueError("zstd frame cut short")
    return bytes(out)


def decode_event(
    json_type: str, text: Any, frame: Any, nbytes: Any, max_bytes: int
) -> tuple[bytes | None, str | None]:
    """One stored event's JSON bytes, or None and why the row is malformed.

    Plain rows hold the text in the JSON column; compressed ones a zstd frame
    whose decoded length must equal ``event_utf8_bytes`` (OpenClaw's own reader
    refuses a mismatch too). A frame is decoded only up to ``max_bytes`` + 1 bytes; an
    event longer than ``max_bytes``, plain or compressed, is refused.
    """
    if json_type in ("text", "blob") and isinstance(text, bytes):
        # Every event is a JSON object. (OpenClaw writes text; a blob of JSON text is taken
        # too. A number written into the TEXT column is stored as text: it is not an event.)
        if len(text) > max_bytes:  # as a compressed event over it (and a JSONL line) is
            return None, f"event over {max_bytes} bytes"
        if text.lstrip()[:1] == b"{":
            return text, None
        return None, f"event_json ({json_type}) is not a JSON object"
    if json_type != "null":
        return None, f"event_json of type {json_type}"
    if frame is None:
        return None, "no event_json and no event_zstd"
    if not isinstance(frame, bytes):
        return None, f"event_zstd of type {type(frame).__name__}"
    if nbytes is not None and (not isinstance(nbytes, int) or nbytes < 0):
        return None, f"event_utf8_bytes is {nbytes!r}"
    limit = max_bytes if nbytes is None else min(nbytes, max_bytes)
    try:
        data = decompress(frame, limit)
    except ValueError as exc:
        return None, str(exc)
    if len(data) > max_bytes:  # (cut one byte past the limit: that it matches a claimed
        return None, f"event over {max_bytes} bytes"  # limit + 1 makes it no event)
    if nbytes is not None and len(data) != nbytes:
        return None, f"decoded {len(data)} bytes, event_utf8_bytes says {nbytes}"
    return data, None


# ---------------------------------------------------------------------- sessions


def session_keys(conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """session id → session key, from ``session_windows`` / ``session_nodes`` / ``sessions``.

    On a store install ``sessions.json`` may be gone; the cron / heartbeat filter
    then takes the keys from here. Columns are found by name; a table without a
    key and an id column is passed over.
    """
    out: dict[str, str] = {}
    for table, id_cols in (
        ("sessions", ("session_id", "id", "current_session_id")),
        ("session_nodes", ("current_session_id", "session_id")),
        ("session_windows", ("session_id",)),
    ):
        cols = {c.lower(): c for c in tables.get(table, ())}
        key, sid = _first(cols, ("session_key", "key")), _first(cols, id_cols)
        if key is None or sid is None:
            continue
        for k, i in conn.execute(f"SELECT {quote(key)}, {quote(sid)} FROM {quote(table)}"):
            if isinstance(k, str) and isinstance(i, str):
                out[i] = k
    return out


def previous_sessions(
    conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]
) -> dict[str, str]:
    """session id → the session it continues (``session_windows.previous_session_id``).

    Read at every read of the store: the windows that link, not every window (the whole
    lineage, :func:`session_lineage`, is read only when the reused-id rule asks for it).
    """
    return {s: p for s, p in _windows(conn, tables, linked_only=True).items() if p is not None}


def session_lineage(
    conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]
) -> dict[str, str | None]:
    """session id → the session it continues, or None: one that continues none (a root).

    Every session of the store has a window (schema ≥ 14), so the sessions it names are
    the whole lineage of the live store: two sessions of different roots hold no copy of
    each other's messages (see :meth:`.apply.Applier._counted_bare`). Empty without
    ``session_windows`` (before schema 14): nothing is known.
    """
    return _windows(conn, tables, linked_only=False)


def _windows(
    conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]], *, linked_only: bool
) -> dict[str, str | None]:
    """session id → the session its window continues, or None (of the windows that link
    another session only, with ``linked_only``)."""
    cols = {c.lower(): c for c in tables.get("session_windows", ())}
    sid, prev = cols.get("session_id"), cols.get("previous_session_id")
    if sid is None or prev is None:
        return {}
    sql = f"SELECT {quote(sid)}, {quote(prev)} FROM session_windows"
    if linked_only:
        sql += f" WHERE {quote(prev)} IS NOT NULL"
    out: dict[str, str | None] = {}
    for s, p in conn.execute(sql):
        if isinstance(s, str):
            out[s] = p if isinstance(p, str) and p and p != s else None
    return out


def root_of(
    lineage: dict[str, str | None], session: str, known: dict[str, str | None] | None = None
) -> str | None:
    """The session ``session`` descends from that continues none; None when the lineage
    does not reach one (a session it does not name, or a loop).

    ``known``: the roots found before in the same lineage, filled in here for every session
    walked. A session reset or compacted daily for years is a chain of thousands of windows,
    and the reused-id rule asks for the root of each call's session: with ``known`` a chain
    is walked once in all, not once per call.
    """
    walked: list[str] = []
    on_path: set[str] = set()
    root: str | None = None
    while True:
        if known is not None and session in known:
            root = known[session]
            break
        if session not in lineage or session in on_path:  # not named, or a loop
            break
        walked.append(session)
        on_path.add(session)
        parent = lineage[session]
        if parent is None:
            root = session
            break
        session = parent
    if known is not None:
        for s in walked:
            known[s] = root
    return root


REWRITE_TABLE = "transcript_rewrite_watermarks"


def rewrite_marks(conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """session id → a digest of its ``transcript_rewrite_watermarks`` rows.

    The table's columns are not documented: every column of a session's rows goes
    into the digest, so any change to them (a new watermark) shows.
    """
    cols = tables.get(REWRITE_TABLE)
    if not cols:
        return {}
    lower = {c.lower(): c for c in cols}
    sid = lower.get("session_id")
    if sid is None:
        return {}
    marks: dict[str, list[str]] = {}
    for row in conn.execute(f"SELECT * FROM {quote(REWRITE_TABLE)}"):
        named = dict(zip(cols, row, strict=False))
        key = named.get(sid)
        if isinstance(key, str):
            marks.setdefault(key, []).append(repr(row))
    return {k: "|".join(sorted(v)) for k, v in marks.items()}


def sessions_left(had_cursor: set[str], live: set[str]) -> list[str]:
    """The sessions read before (``had_cursor``) that the store's live table no longer holds
    (``live``): deleted, reset into an archive, cold-stored (see docs/ingest-sources.md,
    "Sessions that left the store")."""
    return sorted(had_cursor - live)


def not_continued(sessions: list[str], parents: dict[str, str]) -> list[str]:
    """Those of ``sessions`` no session of ``parents`` (session → the one it continues)
    continues: an answer at a continuation's start may be for a call at its parent's end."""
    continued = set(parents.values())
    return [sid for sid in sessions if sid not in continued]


def parents_first(
    sessions: list[tuple[str, Cursor, int]], parent: dict[str, str]
) -> list[tuple[str, Cursor, int]]:
    """The sessions in an order where one continued by another comes before it.

    An answer at the start of a continued session meets the call made at the end
    of the one it continues only if that one was read first.
    """
    todo = {item[0]: item for item in sessions}
    out: list[tuple[str, Cursor, int]] = []
    placed: set[str] = set()
    for sid, *_ in sessions:
        chain: list[str] = []
        while sid in todo and sid not in placed:  # walk up to the oldest ancestor not placed
            placed.add(sid)
            chain.append(sid)
            sid = parent.get(sid, "")
        out.extend(todo[s] for s in reversed(chain))
    return out
