"""Upkeep of the transcript store's read state: a table followed by rowid through a VACUUM, and
the per-session state of sessions that left the store.

Real SQLite stores written here, the real scanner; counts compared with the conversations'
known hits (each hit once).
"""

from __future__ import annotations

import sqlite3

import pytest

from memoryd.ingest import sqlite_source
from test_ingest import Install, conversation, expected

pytestmark = pytest.mark.unit

# A table found by its column names with no order column at all: followed by rowid.
NO_ORDER = "CREATE TABLE agent_log(session_id TEXT NOT NULL, entry_json TEXT)"


class RowidStore:
    """An agent store of one table without an order column, written row by row."""

    def __init__(self, inst: Install) -> None:
        path = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute(NO_ORDER)

    def add(self, sid: str, lines: list[bytes]) -> None:
        self.conn.executemany(
            "INSERT INTO agent_log(session_id, entry_json) VALUES (?, ?)",
            [(sid, ln.decode().rstrip("\n")) for ln in lines],
        )

    def interleave(self, a: tuple[str, list[bytes]], b: tuple[str, list[bytes]]) -> None:
        for i in range(max(len(a[1]), len(b[1]))):
            for sid, lines in (a, b):
                if i < len(lines):
                    self.add(sid, [lines[i]])


@pytest.fixture
def inst(tmp_path):
    i = Install(tmp_path)
    yield i
    i.store.close()


def _merge(*counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


@pytest.mark.parametrize("batch_rows", [500, 3])
def test_rows_added_before_a_vacuum_renumbers_the_rowids_are_read(inst, monkeypatch, batch_rows):
    """Session a is read, interleaved with b; b is deleted, a goes on, and a VACUUM renumbers
    the rowids (a table without an INTEGER PRIMARY KEY): a's new rows now sit at rowids at and
    below its old cursor. Every hit of a is counted, once; a rescan reads nothing."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", batch_rows)
    store = RowidStore(inst)
    a, b = conversation(12, "a"), conversation(3, "b")
    store.interleave(("a", a[:13]), ("b", b))
    inst.scan()
    assert inst.counts() == expected(3, 3)
    store.conn.execute("DELETE FROM agent_log WHERE session_id = 'b'")
    store.add("a", a[13:])
    store.conn.execute("VACUUM")
    inst.scan()
    assert inst.counts() == expected(12, 3)
    assert inst.scan().new_hits == 0
    inst.restart()
    store.add("a", conversation(2, "z")[1:])
    assert inst.scan().new_hits == sum(expected(2).values())
    assert inst.counts() == _merge(expected(12, 3), expected(2))
    store.conn.close()


def test_a_vacuum_with_no_new_rows_hides_nothing_later(inst):
    """Renumbered with nothing new (its rows now end below the cursor): nothing counted twice,
    and rows added after it are read."""
    store = RowidStore(inst)
    a, b = conversation(6, "a"), conversation(3, "b")
    store.interleave(("a", a), ("b", b))
    inst.scan()
    store.conn.execute("DELETE FROM agent_log WHERE session_id = 'b'")
    store.conn.execute("VACUUM")
    assert inst.scan().new_hits == 0
    store.add("a", conversation(9, "c")[1:])
    inst.scan()
    assert inst.counts() == _merge(expected(6, 3), expected(9))
    store.conn.close()


def test_a_cursor_written_before_rows_were_counted_reads_on_and_gets_its_count(inst):
    """A rowid cursor without a count (every cursor before it was kept) means every row up
    to it read: the rows after it are read, once, and the cursor counts its rows from then
    on, so a later renumbering is caught."""
    store = RowidStore(inst)
    a, b = conversation(12, "a"), conversation(3, "b")
    store.interleave(("a", a[:13]), ("b", b))
    inst.scan()
    inst.store.conn.execute("UPDATE transcript_db_cursors SET seq_rows = NULL")
    inst.restart()
    store.add("a", a[13:29])
    inst.scan()
    rows = inst.store.conn.execute(
        "SELECT session_id, seq_rows FROM transcript_db_cursors ORDER BY session_id"
    ).fetchall()
    assert rows == [("a", 29), ("b", len(b))]
    store.conn.execute("DELETE FROM agent_log WHERE session_id = 'b'")
    store.add("a", a[29:])
    store.conn.execute("VACUUM")
    inst.scan()
    assert inst.counts() == expected(12, 3)
    store.conn.close()
