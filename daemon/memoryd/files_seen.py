"""When memoryd first listed each memory file: the ``files_seen`` table and its baseline.

A note's age counts from the later of its own date and this moment, so an import of old
notes (mtimes years back) is new to memoryd rather than old on arrival. The table is
written only by the runs that act; the read side is one query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store import Store

SEEN_SINCE_META = "files.seen_since"  # the first run that listed the files (the baseline)


def first_seen_of(store: Store) -> tuple[dict[str, float], float | None]:
    """(path → when expire first listed it, the baseline time or None before any run)."""
    try:
        since = store.get_meta(SEEN_SINCE_META)
        rows = store.conn.execute("SELECT path, first_seen FROM files_seen").fetchall()
    except sqlite3.Error:  # a database not migrated yet (read-only): no baseline
        return {}, None
    try:
        baseline = float(since) if since is not None else None
    except ValueError:
        baseline = None
    return {str(p): float(t) for p, t in rows}, baseline


def record_first_seen(store: Store, rels: Iterable[str], now: float) -> None:
    """Note the files expire lists now that it had not listed before (the first call sets
    the baseline). Called by the runs that act (not dry runs: they change nothing)."""
    with store.transaction():
        if store.get_meta(SEEN_SINCE_META) is None:
            store.set_meta(SEEN_SINCE_META, repr(now))
        store.conn.executemany(
            "INSERT OR IGNORE INTO files_seen(path, first_seen) VALUES (?, ?)",
            [(rel, now) for rel in rels],
        )
