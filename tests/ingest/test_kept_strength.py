"""The strength each hit keeps, when it is filled at once instead of by triggers (issue 32).

A first scan's bulk load drops the strength triggers and fills ``hits.strong_from`` from
the whole table at its end, in short transactions; migration 10 fills it the same way.
Until the fill is done, the readers do not trust the column (they rank every call again);
once done, every row holds what the rule gives, whatever the order the hits were written
in, and other writers got in between the fill's transactions. Real SQLite files.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from memoryd import faults, kept_strength
from memoryd.ingest.ledger import Ledger
from memoryd.kept_strength import PENDING_META, strengths_kept
from memoryd.store import Store
from support.histories import GenParams, generate

pytestmark = pytest.mark.unit
DAY = 86400.0
_COLS = "agent, call_id, memory_path, kind, ts, score, session"


def _rows(seed: int) -> list[tuple]:
    """A generated history's hits, shuffled (a read before its search, a call's results
    apart), a few scores and sessions missing."""
    h = generate(seed, GenParams(days=60))
    rng = random.Random(seed)
    rows = [(x.agent, x.call_id, x.path, x.kind, x.ts, x.score, x.session) for x in h.hits]
    some = rng.sample(range(len(rows)), 30)
    for i in some[:10]:
        rows[i] = (*rows[i][:5], None, rows[i][6])
    for i in some[10:20]:
        rows[i] = (*rows[i][:6], rng.choice((None, "")))
    rng.shuffle(rows)
    return rows


def _insert(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    for at in range(0, len(rows), 211):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            f"INSERT OR IGNORE INTO hits({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows[at : at + 211],
        )
        conn.execute("COMMIT")


def _kept(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute(f"SELECT {_COLS}, strong_from FROM hits ORDER BY id").fetchall()


def _triggers(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    return {r[0] for r in rows}


@pytest.mark.parametrize("seed", [5, 9])
def test_a_bulk_load_fills_the_strength_the_triggers_would_have_kept(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same hits, written in the same order: through the triggers into one database,
    in a bulk load (no triggers, filled at its end) into another. Every row's strength is
    the same; meanwhile the readers are told not to trust the column."""
    monkeypatch.setattr(kept_strength, "FILL_ROWS", 500)  # (several transactions)
    rows = _rows(seed)
    with Store.open(tmp_path / "triggers.db") as store:
        _insert(store.conn, rows)
        want = _kept(store.conn)
    with Store.open(tmp_path / "bulk.db") as store:
        ledger = Ledger(store, commit_bytes=1 << 20)
        ledger.begin_bulk()
        ledger.flush()  # (the scan commits its group transaction so)
        assert _triggers(store.conn) == set()
        _insert(store.conn, rows)
        assert not strengths_kept(store.conn)  # (the snapshot ranks every call again)
        ledger.end_bulk()
        assert _triggers(store.conn) == set(kept_strength.TRIGGER_NAMES)
        assert strengths_kept(store.conn)
        assert _kept(store.conn) == want
    assert sum(r[7] is None for r in want) > 100 and sum(r[7] is not None for r in want) > 100
    assert len(want) > 2000


def test_a_fill_killed_midway_is_finished_by_the_next_open(tmp_path: Path) -> None:
    """Stopped after its first transaction, the fill leaves its place in the meta row;
    the next writable open goes on from there, and every row is right."""
    rows = _rows(7)
    with Store.open(tmp_path / "triggers.db") as store:
        _insert(store.conn, rows)
        want = _kept(store.conn)
    db = tmp_path / "bulk.db"
    with Store.open(db) as store:
        kept_strength.drop_triggers(store.conn)
        _insert(store.conn, rows)

        def stop() -> None:
            raise KeyboardInterrupt

        faults.hook("strength.committed", stop)
        try:
            with pytest.raises(KeyboardInterrupt):
                kept_strength.fill(store.conn, rows=1000)
        finally:
            faults.hook("strength.committed", None)
        assert store.get_meta(PENDING_META) == "1000"
        assert not strengths_kept(store.conn)
    with Store.open(db) as store:
        assert strengths_kept(store.conn)
        assert _kept(store.conn) == want


def test_another_writer_gets_in_between_the_fills_transactions(tmp_path: Path) -> None:
    """A hit written by another process while the fill runs waits for one chunk, not the
    whole table (busy timeout 0 here: it would fail if the fill held the lock), and keeps
    its strength through the triggers, created again before the fill's first chunk."""
    rows = _rows(11)
    late = [r for r in rows if r[3] != "search" and r[6]][:40]
    early = [r for r in rows if r not in late]
    with Store.open(tmp_path / "triggers.db") as store:
        _insert(store.conn, early)
        _insert(store.conn, late)
        want = _kept(store.conn)
    db = tmp_path / "bulk.db"
    with Store.open(db) as store:
        kept_strength.drop_triggers(store.conn)
        _insert(store.conn, early)
        other = sqlite3.connect(db, isolation_level=None, timeout=0)
        left = list(late)

        def write_one() -> None:
            if left:
                other.execute(
                    f"INSERT INTO hits({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)", left.pop(0)
                )

        faults.hook("strength.committed", write_one)
        try:
            kept_strength.fill(store.conn, rows=100)
        finally:
            faults.hook("strength.committed", None)
        assert len(left) < len(late) - 10  # (written while the fill ran)
        _insert(store.conn, left)
        other.close()
        assert _kept(store.conn) == want
