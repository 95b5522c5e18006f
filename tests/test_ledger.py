"""The ledger on an in-memory state database: no transcript is read here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.ingest.calls import Call, Calls, answers
from memoryd.ingest.ledger import Batch, Ledger, SourceWrite
from memoryd.ingest.parser import ResultPath, ToolResult
from memoryd.ingest.sources import LIVE, SourceFile
from memoryd.ingest.tailer import Checkpoint, Verdict
from memoryd.store import Store


@pytest.fixture
def ledger():
    store = Store.memory()
    yield Ledger(store, commit_bytes=1 << 20)
    store.close()


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
    batch.new_call(("main", "c1", "search", "q", 1.0, "s1", 1))
    batch.hits.append(("main", "c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, "s1"))
    assert ledger.commit_file(batch, SourceWrite(settle), "fp", st) == (1, 1)
    ledger.flush()
    by_inode, by_path, vanished = ledger.checkpoints()
    cp = by_path["/x/s1.jsonl"]
    assert (cp.offset, cp.size, cp.tail_hash) == (300, 300, "fp") and not vanished
    assert by_inode[(st.st_dev, st.st_ino)] == cp
    # the same batch again (a crash before the offset was committed, say): nothing new
    again = Batch(cp, "s1", False, start=0, end=300)
    again.hits.append(("main", "c1", "MEMORY.md", "search", 1.0, "q", 0.5, 1, 2, "s1"))
    _, settle = ledger.settle_identity(sf, st, b"head", cp, cp, Verdict.GROWN)
    assert ledger.commit_file(again, SourceWrite(settle), "fp", st) == (0, 0)


def test_a_failed_write_rolls_back_the_open_group_and_says_so(ledger):
    with ledger.write(0) as conn:
        conn.execute("INSERT INTO counters VALUES ('a', 1)")
    with pytest.raises(RuntimeError), ledger.write(0):
        raise RuntimeError("boom")
    assert ledger.rolled_back
    assert ledger.conn.execute("SELECT COUNT(*) FROM counters").fetchone()[0] == 0


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
