"""The ledger on an in-memory state database: no transcript is read here."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.ingest import ledger_rows
from memoryd.ingest.calls import Call, Calls, answers
from memoryd.ingest.events import ResultPath, ToolResult
from memoryd.ingest.ledger import Ledger
from memoryd.ingest.ledger_batch import Batch
from memoryd.ingest.ledger_checkpoints import SourceWrite
from memoryd.ingest.sources import LIVE, SourceFile
from memoryd.ingest.tailer import Checkpoint, Verdict
from memoryd.store import Store


@pytest.fixture
def ledger():
    store = Store.memory()
    yield Ledger(store, commit_bytes=1 << 20)
    store.close()


def new_rows(ledger: Ledger) -> tuple[int, int]:
    """The new hits and calls counted since the last look (everything else counted: none)."""
    written = ledger.take_written()
    rest = {k: v for k, v in written.items() if k not in ("new_hits", "new_calls") and v}
    assert not rest
    return written["new_hits"], written["new_calls"]


def stat_of(tmp: Path, name: str, size: int) -> os.stat_result:
    """The stat of a real file of that size (the ledger records what a stat says)."""
    p = tmp / name
    p.write_bytes(b"x" * size)
    return p.stat()


def test_a_new_file_is_recorded_with_its_hits_offset_and_fingerprint_in_one_write(ledger, tmp_path):
    sf = SourceFile("main", LIVE, Path("/x/s1.jsonl"))
    st = stat_of(tmp_path, "s1", 300)
    start, settle = ledger.settle_identity(sf, st, b"head", None, None, Verdict.NEW)
    assert start.offset == 0
    batch = Batch(start, "s1", False, start=0, end=300)
    batch.new_call("c1", "search", "q", 1.0)
    batch.answer("main", "c1")
    batch.hits.extend(("c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, None))
    ledger.commit_file(batch, SourceWrite(settle), "fp", st)
    # its calls and hits are written when the transaction commits, and counted then
    assert ledger.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0] == 0
    ledger.flush()
    assert new_rows(ledger) == (1, 1)
    # the batch's agent and session are in every row it wrote, with its source id
    assert ledger.conn.execute(
        "SELECT agent, call_id, memory_path, kind, ts, query, score, start_line, end_line, "
        "session, source_id FROM hits"
    ).fetchall() == [("main", "c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, "s1", 1)]
    assert ledger.conn.execute("SELECT * FROM calls").fetchall() == [
        ("main", "c1", "search", "q", 1.0, "s1", 1)
    ]
    by_inode, by_path, vanished = ledger.checkpoints()
    cp = by_path["/x/s1.jsonl"]
    assert (cp.offset, cp.size, cp.tail_hash) == (300, 300, "fp") and not vanished
    assert by_inode[(st.st_dev, st.st_ino)] == cp
    # the same batch again (a crash before the offset was committed, say): nothing new
    again = Batch(cp, "s1", False, start=0, end=300)
    again.hits.extend(("c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, None))
    _, settle = ledger.settle_identity(sf, st, b"head", cp, cp, Verdict.GROWN)
    ledger.commit_file(again, SourceWrite(settle), "fp", st)
    ledger.flush()
    assert not any(ledger.take_written().values())


def test_a_failed_write_rolls_back_the_open_group_and_says_so(ledger):
    with ledger.write(0) as conn:
        conn.execute("INSERT INTO counters VALUES ('a', 1)")
    with pytest.raises(RuntimeError), ledger.write(0):
        raise RuntimeError("boom")
    assert ledger.rolled_back
    assert ledger.conn.execute("SELECT COUNT(*) FROM counters").fetchone()[0] == 0


def test_a_queued_batch_that_cannot_be_written_undoes_its_transaction_at_the_commit(
    ledger, tmp_path
):
    """A file's rows are written when its transaction commits: one that cannot be (a value
    SQLite cannot hold) undoes the whole transaction there, offsets included, says so, and
    leaves the ledger ready for the next one."""
    sf = SourceFile("main", LIVE, Path("/x/s1.jsonl"))
    st = stat_of(tmp_path, "s1", 300)
    start, settle = ledger.settle_identity(sf, st, b"head", None, None, Verdict.NEW)
    batch = Batch(start, "s1", False, start=0, end=300)
    batch.hits.extend(("c1", "MEMORY.md", "search", 1.0, "q", 0.5, 2**70, 2, None))
    ledger.commit_file(batch, SourceWrite(settle), "fp", st)  # queued: nothing fails yet
    with pytest.raises(OverflowError):
        ledger.flush()
    assert ledger.rolled_back and not ledger.conn.in_transaction
    assert ledger.checkpoints()[1] == {}  # the file's identity and offset: undone too
    assert not any(ledger.take_written().values())
    ledger.source_failed(sf, "why")  # the next write opens a transaction of its own
    ledger.flush()
    assert ledger.failed_sources() == {"/x/s1.jsonl": "why"}


@pytest.mark.parametrize("read", ["waiting_calls", "fetch_call"])
def test_a_read_of_calls_that_cannot_write_the_queue_undoes_its_transaction(ledger, tmp_path, read):
    """A read of ``calls`` writes the queue first, in the middle of the transaction: a
    queued row that cannot be written there undoes the transaction as a failed commit
    does (and says so), instead of dropping the queue and leaving the transaction open,
    whose next commit would record the file's offset without its hits (lost for good)."""
    sf = SourceFile("main", LIVE, Path("/x/s1.jsonl"))
    st = stat_of(tmp_path, "s1", 300)
    start, settle = ledger.settle_identity(sf, st, b"head", None, None, Verdict.NEW)
    batch = Batch(start, "s1", False, start=0, end=300)
    batch.hits.extend(("c1", "MEMORY.md", "search", 1.0, "q", 0.5, 2**70, 2, None))
    ledger.commit_file(batch, SourceWrite(settle), "fp", st)
    with pytest.raises(OverflowError):
        if read == "waiting_calls":
            ledger.waiting_calls("ops")
        else:
            ledger.fetch_call("ops", "c9")
    assert ledger.rolled_back and not ledger.conn.in_transaction
    ledger.source_failed(SourceFile("ops", LIVE, Path("/x/o1.jsonl")), "why")
    ledger.flush()
    assert ledger.checkpoints()[1] == {}  # s1 is read again next time, its hit with it
    assert not any(ledger.take_written().values())


def test_a_full_disk_met_by_a_read_of_calls_leaves_no_write_outside_a_transaction(tmp_path):
    """The disk fills while a read of ``calls`` writes the queue: SQLite undoes the
    transaction itself. The ledger must know it: the next file's offset is written in a
    transaction of its own with its hits, never committed alone before them (a kill then
    would lose its hits for good)."""
    store = Store.open(tmp_path / "state.db")
    try:
        ledger = Ledger(store, commit_bytes=1 << 30)
        sf = SourceFile("main", LIVE, Path("/x/s1.jsonl"))
        st = stat_of(tmp_path, "s1", 300)
        start, settle = ledger.settle_identity(sf, st, b"head", None, None, Verdict.NEW)
        batch = Batch(start, "s1", False, start=0, end=300)
        for i in range(3000):  # more pages than the disk has left
            batch.hits.extend(
                (f"c{i}", f"memory/n{i}.md", "search", 1.0, "q" * 50, 0.5, 1, 2, None)
            )
        ledger.commit_file(batch, SourceWrite(settle), "fp", st)
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the disk fills up
        with pytest.raises(sqlite3.OperationalError) as failed:
            ledger.waiting_calls("ops")
        assert ledger.state_database_broke(failed.value)  # the scan names the database
        store.conn.execute("PRAGMA max_page_count = 1073741823")  # space again
        sf2 = SourceFile("ops", LIVE, Path("/x/o1.jsonl"))
        st2 = stat_of(tmp_path, "o1", 200)
        start2, settle2 = ledger.settle_identity(sf2, st2, b"head2", None, None, Verdict.NEW)
        batch2 = Batch(start2, "o1", False, start=0, end=200)
        batch2.hits.extend(("d1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, None))
        ledger.commit_file(batch2, SourceWrite(settle2), "fp2", st2)
        other = sqlite3.connect(tmp_path / "state.db")
        try:
            # not committed yet: another connection (or the next start, after a kill) sees
            # neither the offset nor the hit
            assert other.execute("SELECT path, offset FROM sources").fetchall() == []
            ledger.flush()
            assert other.execute("SELECT path, offset FROM sources").fetchall() == [
                ("/x/o1.jsonl", 200)
            ]
            assert other.execute("SELECT call_id FROM hits").fetchall() == [("d1",)]
        finally:
            other.close()
    finally:
        store.close()


def test_rows_written_before_a_read_of_calls_are_not_counted_if_their_transaction_is_undone(
    ledger, tmp_path
):
    """A read of ``calls`` writes the queue in the middle of the transaction; a later write
    of that transaction fails and undoes it: the rows written early are undone too, and
    not counted (the next scan reads their file again and counts them then)."""
    sf = SourceFile("main", LIVE, Path("/x/s1.jsonl"))
    st = stat_of(tmp_path, "s1", 300)
    start, settle = ledger.settle_identity(sf, st, b"head", None, None, Verdict.NEW)
    batch = Batch(start, "s1", False, start=0, end=300)
    batch.new_call("c1", "search", "q", 1.0)
    batch.hits.extend(("c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, None))
    ledger.commit_file(batch, SourceWrite(settle), "fp", st)
    ledger.waiting_calls("ops")  # writes the queue first
    with pytest.raises(RuntimeError), ledger.write(0):
        raise RuntimeError("the next file's write failed")
    assert ledger.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0] == 0
    assert not any(ledger.take_written().values())
    # and rows written early in a transaction that commits are counted once, at the commit
    start, settle = ledger.settle_identity(sf, st, b"head", None, None, Verdict.NEW)
    batch = Batch(start, "s1", False, start=0, end=300)
    batch.new_call("c1", "search", "q", 1.0)
    batch.hits.extend(("c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, None))
    ledger.commit_file(batch, SourceWrite(settle), "fp", st)
    ledger.waiting_calls("ops")
    ledger.flush()
    assert new_rows(ledger) == (1, 1)


def test_failures_archives_and_vanished_sources(ledger, tmp_path):
    sf = SourceFile("main", "sqlite", Path("/x/db"))
    ledger.source_failed(sf, "unsupported layout (no transcript_events table)")
    ledger.flush()
    assert ledger.failed_sources() == {"/x/db": "unsupported layout (no transcript_events table)"}
    ledger.source_recovered("/x/db")
    cp = Checkpoint(0, "main", "arch", 0, 0, 0, "", 0, 0, 0)
    ledger.commit_archive(Batch(cp, "s", False), 10, ("arch", 10, "d"))
    ledger.archive_skipped("main", ("not-zstd", 3, "m"))
    ledger.flush()
    assert ledger.failed_sources() == {}
    assert ledger.archives_read() == {("main", "arch"): (10, "d"), ("main", "not-zstd"): (3, "m")}
    store_cp = ledger.new_store_source(sf, stat_of(tmp_path, "db", 0))
    ledger.flush()
    ledger.mark_vanished({store_cp.id}, set(), set(), grace_days=30)
    assert ledger.checkpoints()[2] == {store_cp.id}


def test_the_one_answer_rule():
    named = ToolResult("c", "search", (ResultPath("a"),), None, False, "get")
    unnamed_get = ToolResult("c", None, (), None, False, "get")
    unnamed_plain = ToolResult("c", None, (), None, False, None)
    assert answers(named, "get") and answers(named, "search")
    assert answers(unnamed_get, "get") and not answers(unnamed_get, "search")
    assert answers(tuple(unnamed_plain), "search")  # the helper's plain tuples too
    calls = Calls()
    calls.add("c", Call("search", "q", None, False, "s"))
    assert calls.waiting_in("t", parent="s") == {"c"}
    assert not calls.is_answered("c") and calls.is_answered("unknown")
    assert calls.lookup("d", lambda cid: ("get", "MEMORY.md", 1.0, 0, "t")).tool == "get"
    assert calls.waiting_in("t") == {"d"}


# A batch's rows as the applier builds them (without its agent and session): few call ids
# and paths, so that keys repeat, within the batch and with rows already in the database.
CALL_IDS = ["c1", "c2", "toolu_01A", "call_9"]
BATCH_CALLS = st.lists(
    st.tuples(
        st.sampled_from(CALL_IDS),
        st.sampled_from(["search", "get"]),
        st.one_of(st.none(), st.text(max_size=5)),
        st.one_of(st.none(), st.floats(0, 2e9, allow_nan=False)),
        st.booleans(),  # answered in the batch
    ),
    max_size=40,
)
BATCH_HITS = st.lists(
    st.tuples(
        st.sampled_from(CALL_IDS),
        st.sampled_from(["MEMORY.md", "memory/a.md", "memory/b.md"]),
        st.sampled_from(["search", "get"]),
        st.floats(0, 2e9, allow_nan=False),
        st.one_of(st.none(), st.text(max_size=5)),
        st.one_of(st.none(), st.floats(0, 1)),
        st.one_of(st.none(), st.integers(0, 500)),
        st.one_of(st.none(), st.integers(0, 500)),
        st.one_of(st.none(), st.just("*"), st.just("1:2:0badc0de")),
    ),
    max_size=300,
)


@settings(max_examples=40, deadline=None)
@given(
    calls=BATCH_CALLS,
    hits=BATCH_HITS,
    agent=st.sampled_from(["main", "work"]),
    session=st.sampled_from(["s1", "s2"]),
    source_id=st.integers(1, 3),
    split=st.sampled_from([(64, 16, 4), (4,), (1,), ()]),
)
def test_a_batch_writes_the_rows_of_executemany_with_its_agent_and_session_in_each(
    calls: list[tuple[object, ...]],
    hits: list[tuple[object, ...]],
    agent: str,
    session: str,
    source_id: int,
    split: tuple[int, ...],
) -> None:
    """Batch.write binds what every row of a batch shares once a statement, several rows a
    statement: the tables and the counts of new rows are those of the plain way, a whole
    row at a time by executemany, in order (the first of two rows with one key kept)."""
    results = []
    for way in ("plain", "batch"):
        store = Store.memory()
        conn = store.conn
        conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) "
            "VALUES ('main', 'c1', 'memory/a.md', 'get', 1.0)"
        )  # known already
        conn.execute("INSERT INTO calls(agent, call_id, tool) VALUES ('main', 'c2', 'get')")
        before = conn.total_changes
        if way == "plain":
            first: dict[object, list[object]] = {}
            for cid, tool, query, ts, answered in calls:
                row = first.setdefault(cid, [agent, cid, tool, query, ts, session, 0])
                row[6] = row[6] or int(answered)
            conn.executemany(
                "INSERT OR IGNORE INTO calls(agent, call_id, tool, query, ts, session, answered) "
                "VALUES (?,?,?,?,?,?,?)",
                list(first.values()),
            )
            new_calls = conn.total_changes - before
            # (the statement's own row count: total_changes also counts the rows the
            # strength triggers update, migration 10)
            inserted = conn.executemany(
                "INSERT OR IGNORE INTO hits(agent, call_id, memory_path, kind, ts, query, score, "
                "start_line, end_line, anchor, session, source_id) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(agent, *h[:2], *h[2:], session, source_id) for h in hits],
            ).rowcount
            new = (inserted, new_calls, {})
        else:
            cp = Checkpoint(source_id, agent, "p", 0, 0, 0, "", 0, 0, 0)
            batch = Batch(cp, session, False)
            for cid, tool, query, ts, answered in calls:
                if cid not in batch.call_rows:  # (the applier makes a call once a batch)
                    batch.new_call(str(cid), str(tool), query, ts)  # type: ignore[arg-type]
                if answered:
                    batch.answer(agent, str(cid))
            batch.hits.extend(value for hit in hits for value in hit)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(ledger_rows, "_ROWS_PER_STATEMENT", split)
                new = batch.write(conn, source_id)
        results.append(
            (
                new,
                conn.execute("SELECT * FROM hits ORDER BY id").fetchall(),
                conn.execute("SELECT * FROM calls ORDER BY agent, call_id").fetchall(),
            )
        )
        store.close()
    assert results[0] == results[1]
