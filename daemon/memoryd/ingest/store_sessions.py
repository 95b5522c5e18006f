"""The sessions of an OpenClaw SQLite store: their keys, which session continues which
(the lineage), the rewrite watermarks, and which sessions left the store. Thin queries over
tables found by name, and pure rules over what they return.
"""

from __future__ import annotations

import sqlite3

from .store_layout import Cursor, _first, quote


def session_keys(conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """session id → session key, from ``session_windows`` / ``session_nodes`` / ``sessions``
    (``sessions.json`` may be gone on a store install); columns are found by name."""
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
    """session id → the session it continues (``session_windows.previous_session_id``): the
    windows that link only, read at every read of the store."""
    return {s: p for s, p in _windows(conn, tables, linked_only=True).items() if p is not None}


def session_lineage(
    conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]
) -> dict[str, str | None]:
    """session id → the session it continues, or None: one that continues none (a root).

    Every session of the store has a window (schema ≥ 14): two sessions of different roots
    hold no copy of each other's messages (:meth:`.apply.Applier._counted_bare`). Empty
    without ``session_windows``: nothing is known.
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

    ``known``: the roots found before in the same lineage, filled in for every session walked,
    so a chain of thousands of windows is walked once in all, not once per call.
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
    """session id → a digest of its ``transcript_rewrite_watermarks`` rows (every column:
    the table's are not documented, and any change must show)."""
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
    """The sessions in an order where one continued by another comes before it (an answer at
    a continuation's start meets the call at its parent's end only if that was read first)."""
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
