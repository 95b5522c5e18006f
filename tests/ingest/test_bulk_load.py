"""A bulk load writes each page once: no checkpoints during it, one at its end.

A first scan of a backlog commits many large transactions. With SQLite's automatic
checkpoint every 1,000 pages, the same pages of the unique key are copied into the database
again and again (a 16-fold corpus wrote 17 times its database size). During a bulk load the
WAL only grows; its end checkpoints once and leaves an empty WAL and the usual settings.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memoryd.store import BULK_CACHE_KIB, Store


def insert_hits(store: Store, first: int, n: int) -> None:
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES (?, ?, ?, ?, ?)",
            [
                ("main", f"call-{i}", f"memory/{i % 97}.md", "search", float(i))
                for i in range(first, first + n)
            ],
        )


def wal_bytes(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_no_checkpoint_during_a_bulk_load_one_at_its_end(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = Store.open(db)
    cache = store.conn.execute("PRAGMA cache_size").fetchone()[0]
    store.start_bulk_load()
    assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == -BULK_CACHE_KIB
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for k in range(3):  # about 2,600 pages of WAL: the default would have checkpointed at 1,000
        insert_hits(store, k * 20_000, 20_000)
    grown = wal_bytes(db)
    assert grown > 1000 * 4096
    # a reader meanwhile sees every committed hit (they are in the WAL)
    with Store.open(db, readonly=True) as reader:
        assert reader.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0] == 60_000
    store.end_bulk_load()
    assert wal_bytes(db) == 0  # checkpointed into the database, the WAL truncated
    assert store.conn.execute("PRAGMA cache_size").fetchone()[0] == cache
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    store.end_bulk_load()  # a second end is harmless
    store.close()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0] == 60_000
    conn.close()


def test_a_bulk_load_cut_short_leaves_a_database_that_opens_with_every_commit(
    tmp_path: Path,
) -> None:
    """A scan killed mid-load never reaches its checkpoint: the long WAL is simply read."""
    db = tmp_path / "state.db"
    store = Store.open(db)
    store.start_bulk_load()
    insert_hits(store, 0, 50_000)
    # no end_bulk_load: copy the files as a crash would leave them, WAL included
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for suffix in ("", "-wal"):
        (crashed / f"state.db{suffix}").write_bytes(db.with_name(f"state.db{suffix}").read_bytes())
    store.close()
    with Store.open(crashed / "state.db") as again:
        assert again.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0] == 50_000
        assert again.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000


def test_a_bulk_load_begun_again_before_its_end_still_restores_the_usual_settings(
    tmp_path: Path,
) -> None:
    """A bulk scan that failed before its end (a full disk at its last commit) leaves the
    bulk settings on the daemon's long-lived connection; the next bulk load must not take
    them for the usual ones, or the WAL would never be checkpointed again."""
    store = Store.open(tmp_path / "state.db")
    usual = (
        store.conn.execute("PRAGMA cache_size").fetchone()[0],
        store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
    )
    store.start_bulk_load()
    store.start_bulk_load()  # the retry, with no end_bulk_load in between
    store.end_bulk_load()
    assert (
        store.conn.execute("PRAGMA cache_size").fetchone()[0],
        store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
    ) == usual
    assert usual[1] > 0
    store.close()


def test_a_full_disk_during_a_bulk_load_leaves_the_ledger_and_the_settings_usable(
    tmp_path: Path,
) -> None:
    """After a write fails on a full disk (at an INSERT here; on a real disk often at COMMIT,
    which ``Ledger.flush`` handles the same way) the ledger knows its transaction is gone and
    that the state database broke, and the bulk settings come back (else the WAL grows for
    ever)."""
    import pytest

    from memoryd.ingest.ledger import Ledger

    db = tmp_path / "state.db"
    store = Store.open(db)
    ledger = Ledger(store, commit_bytes=1 << 40)  # commit only when flushed
    ledger.begin_bulk()
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages + 8}")  # the disk fills up
    with pytest.raises(sqlite3.Error) as failure:
        with ledger.write(0) as conn:
            conn.executemany(
                "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES (?, ?, ?, ?, ?)",
                [("main", f"c{i}", f"memory/{i}.md", "search", float(i)) for i in range(5000)],
            )
        ledger.flush()
    assert ledger.state_database_broke(failure.value)
    assert not store.conn.in_transaction
    store.conn.execute("PRAGMA max_page_count = 1073741823")  # space again
    ledger.end_bulk()
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    with ledger.write(0) as conn:  # the next scan's writes work and commit
        conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) "
            "VALUES ('main', 'x', 'm', 's', 1)"
        )
    ledger.flush()
    assert store.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0] == 1
    store.close()
