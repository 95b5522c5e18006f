"""Where an OpenClaw SQLite store keeps its transcript events: the table and its columns,
found by name (``sqlite_master``, ``PRAGMA table_info``), never by a version number; how
rows of a session sharing an order value are ordered, and a read position in that order
(:data:`Cursor`). Pure but for the ``PRAGMA`` reads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

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


def table_columns(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """Every table of the store and its column names (in the store's own spelling)."""
    sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    tables = [r[0] for r in conn.execute(sql)]
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

    OpenClaw's tables key their rows by ``(session_id, seq)``; a table found by its column
    names alone may not, and rows read in batches by seq alone would be skipped (or read
    twice) where a batch ends between two rows of one seq. The primary key and unique
    indexes say whether any keeps a seq to one row of a session.
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


# A session's read position: the last seq read, and (a layout whose order column repeats)
# how many rows of that seq were read, in the table's order; None: every one of them.
Cursor = tuple[int, int | None]
START: Cursor = (-1, None)  # nothing read
