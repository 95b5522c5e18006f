"""A transcript store whose order column repeats within a session, read exactly.

OpenClaw's own tables key their rows by ``(session_id, seq)``; a table memoryd finds by its
column names alone (an older or unknown build) may not: several rows of a session can share
an order value. Rows that share one and straddle a batch of the reader must each be read
once, whatever the batches, scans, restarts and crashes in between. Real SQLite stores; the
counts are compared with the same events read as a JSONL transcript.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.ingest import sqlite_source
from memoryd.store import SCHEMA_VERSION, Store, StoreError
from support.openclaw_store import SCHEMAS, AgentStore
from support.scanner_install import Install, conversation, expected, scan

pytestmark = pytest.mark.subprocess  # (one test runs `memoryd scan` as a process)

# Found by its column names: no key makes (session_id, entry_seq) unique.
PLAIN = (
    "CREATE TABLE agent_log(session_id TEXT NOT NULL, entry_seq INTEGER NOT NULL, "
    "entry_json TEXT, created_at INTEGER NOT NULL DEFAULT 0)"
)
# The same without a rowid: its key has a column of its own that keeps the order of writes.
NO_ROWID = (
    "CREATE TABLE agent_log(session_id TEXT NOT NULL, entry_seq INTEGER NOT NULL, "
    "n INTEGER NOT NULL, entry_json TEXT, PRIMARY KEY (session_id, entry_seq, n)) WITHOUT ROWID"
)
BAD_ROW = "not an event"  # counted malformed where it is met, once


class TiedStore:
    """An agent store of one table whose ``entry_seq`` may repeat, written row by row."""

    def __init__(self, inst: Install, ddl: str = PLAIN) -> None:
        path = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(ddl)
        self.numbered = ddl is NO_ROWID
        self.written = 0
        self.seq: dict[str, int] = {}

    def add(self, sid: str, event: str, same_seq: bool) -> None:
        """One row after the session's last, with its seq or the next one."""
        last = self.seq.get(sid)
        seq = 0 if last is None else last if same_seq else last + 1
        self.seq[sid] = seq
        self.written += 1
        if self.numbered:
            self.conn.execute(
                "INSERT INTO agent_log(session_id, entry_seq, n, entry_json) VALUES (?, ?, ?, ?)",
                (sid, seq, self.written, event),
            )
        else:
            self.conn.execute(
                "INSERT INTO agent_log(session_id, entry_seq, entry_json) VALUES (?, ?, ?)",
                (sid, seq, event),
            )


def jsonl_counts(root: Path, sessions: dict[str, list[bytes]]) -> dict[str, int]:
    """The same events as JSONL transcripts, scanned once."""
    files = Install(root)
    for sid, lines in sessions.items():
        files.append(f"{sid}.jsonl", b"".join(lines))
    files.scan()
    counts = files.counts()
    files.store.close()
    return counts


@pytest.mark.parametrize("ddl", [PLAIN, NO_ROWID], ids=["rowid", "without-rowid"])
def test_rows_sharing_a_seq_across_a_batch_boundary_are_each_read_once(tmp_path, monkeypatch, ddl):
    """Two rows of each seq, batches of three rows: every batch ends between two rows of one
    seq. Every hit is counted, as in the JSONL; a bad row among them is counted once; a rescan
    after more rows of the last seq reads only those."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", 3)
    lines = conversation(8, "t")
    inst = Install(tmp_path / "store")
    store = TiedStore(inst, ddl)
    for i, line in enumerate(lines[:20]):
        store.add("t", line.decode().rstrip("\n"), same_seq=i % 2 == 1)
        if i == 9:
            store.add("t", BAD_ROW, same_seq=True)
    first = inst.scan()
    assert first.errors == 0 and first.malformed == 1
    for line in lines[20:]:  # the next rows: the first with the last row's seq
        store.add("t", line.decode().rstrip("\n"), same_seq=True)
    second = inst.scan()
    assert second.errors == 0 and second.malformed == 0
    assert inst.counts() == jsonl_counts(tmp_path / "jsonl", {"t": lines}) == expected(8)
    assert first.new_hits + second.new_hits == sum(expected(8).values())
    assert inst.store.counters()["malformed_lines"] == 1
    inst.restart()
    assert inst.scan().new_hits == 0
    store.conn.close()
    inst.store.close()


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.integers(0, 1),  # which session
            st.lists(st.booleans(), min_size=1, max_size=9),  # each row: the last row's seq?
            st.booleans(),  # a bad row among them
        ),
        st.tuples(st.just("scan"), st.none(), st.none(), st.none()),
        st.tuples(st.just("restart"), st.none(), st.none(), st.none()),
        st.tuples(st.just("crash"), st.integers(1, 6), st.none(), st.none()),
    ),
    max_size=16,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, rowid=st.booleans(), batch=st.integers(1, 4))
def test_any_history_of_rows_sharing_seqs_counts_every_hit_once(
    tmp_path_factory, monkeypatch, ops, rowid, batch
):
    """Rows appended with repeated seqs, scans between any two of them (in batches of 1–4
    rows, a commit after each), restarts, and crashes right after any commit: every hit is
    counted once, as in the JSONL, and every bad row is counted malformed once."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", batch)
    root = tmp_path_factory.mktemp("ties")
    inst = Install(root / "store")
    store = TiedStore(inst, PLAIN if rowid else NO_ROWID)
    convs = {f"s{k}": conversation(4, f"k{k}_") for k in range(2)}
    written = dict.fromkeys(convs, 0)
    bad = 0
    new_hits = malformed = 0
    crashed = False

    def grow(sid: str, same: list[bool], with_bad: bool) -> None:
        nonlocal bad
        for j, same_seq in enumerate(same):
            if written[sid] < len(convs[sid]):
                line = convs[sid][written[sid]].decode().rstrip("\n")
                store.add(sid, line, same_seq)
                written[sid] += 1
            if with_bad and j == len(same) // 2:
                store.add(sid, BAD_ROW, same_seq)
                bad += 1

    for op, arg, same, with_bad in ops:
        if op == "append":
            grow(f"s{arg}", same, with_bad)
        elif op == "restart":
            inst.restart()
        else:
            stats = scan(inst, arg if op == "crash" else None)
            if stats is None:
                crashed = True
            else:
                new_hits += stats.new_hits
                malformed += stats.malformed
    for sid in convs:
        grow(sid, [True, False] * len(convs[sid]), False)
    last = scan(inst, None)
    new_hits += last.new_hits
    malformed += last.malformed
    want = jsonl_counts(root / "jsonl", convs)
    assert inst.counts() == want == expected(4, 4)
    assert inst.store.counters().get("malformed_lines", 0) == bad
    if not crashed:  # (a crashed scan's summary is never printed)
        assert new_hits == sum(want.values()) and malformed == bad
    assert inst.scan().new_hits == 0
    store.conn.close()
    inst.store.close()


# `memoryd scan` with batches of 2 rows and a commit after every write.
SCAN_IN_SMALL_COMMITS = (
    "import sys\n"
    "from memoryd.ingest import scan, sqlite_source\n"
    "sqlite_source.BATCH_ROWS = 2\n"
    "scan._COMMIT_CHUNKS = 0\n"
    "from memoryd.cli import main\n"
    "sys.exit(main(['scan']))\n"
)


def test_scans_killed_after_a_commit_again_and_again_count_every_hit_once(tmp_path):
    """``memoryd scan`` as a process, killed (SIGKILL) right after its 2nd or 3rd commit,
    again and again on one state folder until one finishes: every hit of rows sharing seqs
    across batches is counted once, and the bad row once."""
    import os
    import random

    inst = Install(tmp_path / "store")
    store = TiedStore(inst)
    lines = conversation(10, "p")
    for i, line in enumerate(lines):
        store.add("p", line.decode().rstrip("\n"), same_seq=i % 3 != 0)
        if i == 17:
            store.add("p", BAD_ROW, same_seq=True)
    store.conn.close()
    inst.store.close()
    env = dict(os.environ, MEMORYD_CONFIG=str(tmp_path / "store" / "memoryd.toml"))
    rng = random.Random(7)
    killed = 0
    while True:
        env["MEMORYD_FAULT"] = f"scan.committed:{rng.choice((2, 3))}:kill"
        proc = subprocess.run(
            [sys.executable, "-c", SCAN_IN_SMALL_COMMITS], env=env, capture_output=True, timeout=120
        )
        if proc.returncode == 0:
            break
        assert proc.returncode == -9, proc.stderr[-2000:]
        killed += 1
        assert killed < 60  # each run commits at least one batch
    assert killed >= 5, killed
    inst.restart()
    assert inst.counts() == expected(10)
    assert inst.store.counters()["malformed_lines"] == 1
    inst.store.close()


def test_cursors_written_before_rows_were_counted_read_as_before(tmp_path, monkeypatch):
    """A state database of an older memoryd (no ``seq_rows``) is migrated; its cursors say only
    the last seq read, and are read as they were: every row up to that seq read, none again.
    OpenClaw's own tables (a unique seq) keep cursors without a count."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", 4)
    lines = conversation(6, "o")
    inst = Install(tmp_path / "store")
    store = TiedStore(inst)
    for i, line in enumerate(lines[:13]):
        store.add("o", line.decode().rstrip("\n"), same_seq=i % 2 == 1)
    store.add("o", BAD_ROW, same_seq=False)
    first = inst.scan()
    assert first.malformed == 1
    db = inst.store.conn
    assert db.execute("SELECT seq, seq_rows FROM transcript_db_cursors").fetchall() == [(7, 1)]
    # The older memoryd's database: no count (its reader had read seq 7 whole).
    db.execute("ALTER TABLE transcript_db_cursors DROP COLUMN seq_rows")
    db.execute("DROP INDEX IF EXISTS hits_by_path_anchor")  # (migration 13's)
    db.execute("ALTER TABLE hits DROP COLUMN anchor")  # (migration 11's)
    db.execute("PRAGMA user_version = 6")
    inst.restart()
    assert inst.store.conn.execute("SELECT seq_rows FROM transcript_db_cursors").fetchall() == [
        (None,)
    ]
    for line in lines[13:]:
        store.add("o", line.decode().rstrip("\n"), same_seq=False)
    second = inst.scan()
    assert second.malformed == 0 and second.errors == 0
    assert first.new_hits + second.new_hits == sum(expected(6).values())
    assert inst.counts() == expected(6)
    store.conn.close()
    inst.store.close()


@pytest.mark.parametrize(
    ("ddl", "tie"),
    [
        (
            "CREATE TABLE transcript_events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
            "event_json TEXT, PRIMARY KEY (session_id, seq))",
            None,
        ),  # OpenClaw's own
        (
            "CREATE TABLE transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, "
            "PRIMARY KEY (session_id, seq)) WITHOUT ROWID",
            None,
        ),
        ("CREATE TABLE t(seq INTEGER PRIMARY KEY, session_id TEXT, entry_json TEXT)", None),
        (
            "CREATE TABLE t(session_id TEXT, seq INTEGER, entry_json TEXT, "
            "UNIQUE (seq, session_id))",
            None,
        ),
        (PLAIN, "rowid"),
        (NO_ROWID, '"session_id", "entry_seq", "n"'),
        (
            "CREATE TABLE t(id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, entry_json TEXT)",
            "rowid",
        ),
    ],
)
def test_an_order_column_is_known_to_repeat_only_when_no_key_keeps_it_unique(ddl, tie):
    conn = sqlite3.connect(":memory:")
    conn.execute(ddl)
    layout = sqlite_source.detect_layout(conn)
    assert layout is not None
    assert sqlite_source.with_ties(conn, layout).tie == tie


def test_a_partial_or_wider_unique_index_does_not_make_the_order_unique():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t(session_id TEXT, seq INTEGER, kind TEXT, entry_json TEXT)")
    conn.execute("CREATE UNIQUE INDEX a ON t(session_id, seq) WHERE kind = 'message'")
    conn.execute("CREATE UNIQUE INDEX b ON t(session_id, seq, kind)")
    conn.execute("CREATE UNIQUE INDEX c ON t(session_id, seq + 0)")
    layout = sqlite_source.detect_layout(conn)
    assert layout is not None and sqlite_source.with_ties(conn, layout).tie == "rowid"
    conn.execute("CREATE UNIQUE INDEX d ON t(seq)")  # unique across sessions: within one too
    assert sqlite_source.with_ties(conn, layout).tie is None


def test_a_row_of_the_cursors_seq_removed_skips_no_row_of_a_later_seq(tmp_path):
    """Three rows of seq 1 read (the cursor: seq 1, 3 rows); one of them is then removed and
    rows of later seqs are added. Those rows are read, every one: the rows of the cursor's seq
    already read are skipped, never a later seq's (the answer that came first was lost)."""
    lines = [line.decode().rstrip("\n") for line in conversation(2, "d")]
    header, chatter0, call0, decoy0, *rest = lines
    inst = Install(tmp_path / "store")
    store = TiedStore(inst)
    store.add("d", header, same_seq=False)
    for line in (chatter0, call0, decoy0):
        store.add("d", line, same_seq=line is not chatter0)
    assert inst.scan().new_calls == 1
    cursors = inst.store.conn.execute("SELECT seq, seq_rows FROM transcript_db_cursors")
    assert cursors.fetchall() == [(1, 3)]
    store.conn.execute("DELETE FROM agent_log WHERE entry_json = ?", (decoy0,))
    result0, chatter1, call1, decoy1, result1 = rest
    store.add("d", result0, same_seq=False)  # seq 2: the answer to the call read before
    for line in (chatter1, call1, decoy1, result1):
        store.add("d", line, same_seq=line is not chatter1)
    second = inst.scan()
    assert second.errors == 0
    assert inst.counts() == expected(2)
    assert second.new_hits == sum(expected(2).values())
    store.conn.close()
    inst.store.close()


@pytest.mark.parametrize("schema", SCHEMAS)
def test_openclaws_own_stores_keep_the_one_seq_cursor(tmp_path, schema):
    """A store in OpenClaw's own DDL (schema 13, 22, 24, as ``openclaw_store`` writes it) is not
    taken for one whose seq repeats: its sessions are read by seq alone and every cursor it
    leaves says only the last seq (``seq_rows`` NULL), batch after batch."""
    inst = Install(tmp_path / "store")
    lines = [line.decode().rstrip("\n") for line in conversation(5, "w")]
    with AgentStore(inst.sessions.parent.parent.parent, schema=schema) as store:
        layout = sqlite_source.detect_layout(store.conn)
        assert layout is not None and sqlite_source.with_ties(store.conn, layout).tie is None
        sid = store.add_session(lines[:11], key="agent:main:main")
        inst.scan()
        store.append(sid, lines[11:])
    assert inst.scan().errors == 0
    assert inst.counts() == expected(5)
    cursors = inst.store.conn.execute("SELECT seq, seq_rows FROM transcript_db_cursors")
    assert cursors.fetchall() == [(len(lines) - 1, None)]
    inst.store.close()


def test_a_rewritten_session_read_again_after_a_crash_counts_its_bad_rows_once(
    tmp_path, monkeypatch
):
    """A session rewritten in place (a new watermark) is read again from its start, a batch
    a commit. memoryd stopped after the first batch of that read carries on from there at its
    next start: the rewritten session's bad row is counted once more for the rewrite, not once
    for the interrupted read and again for a read from the start."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", 3)
    inst = Install(tmp_path / "store")
    lines = [line.decode().rstrip("\n") for line in conversation(3, "m")]
    with_bad = [lines[0], BAD_ROW, *lines[1:]]
    with AgentStore(inst.sessions.parent.parent.parent, schema=24) as store:
        sid = store.add_session(with_bad, key="agent:main:main")
        assert inst.scan().malformed == 1
        store.rewrite(sid, 1, with_bad[1:])
    assert scan(inst, crash_at=1) is None
    assert inst.scan().errors == 0
    assert inst.counts() == expected(3)
    assert inst.store.counters()["malformed_lines"] == 2  # the first read's, the rewrite's
    assert inst.scan().new_hits == 0
    inst.store.close()


def test_a_vacuum_that_renumbers_the_rowids_loses_no_row(tmp_path, monkeypatch):
    """Another session's rows removed and the store VACUUMed: the rowids of the rows left are
    renumbered (in order). The cursor counts rows of its seq, not a rowid: the rows added after
    it, to its seq and later ones, are each read once."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", 3)
    inst = Install(tmp_path / "store")
    store = TiedStore(inst)
    gone = [line.decode().rstrip("\n") for line in conversation(2, "g")]
    kept = [line.decode().rstrip("\n") for line in conversation(4, "k")]
    for line in gone:
        store.add("g", line, same_seq=False)
    for i, line in enumerate(kept[:8]):
        store.add("k", line, same_seq=i % 2 == 1)
    inst.scan()
    first = "SELECT MIN(rowid) FROM agent_log WHERE session_id = 'k'"
    before = store.conn.execute(first).fetchone()[0]
    store.conn.execute("DELETE FROM agent_log WHERE session_id = 'g'")
    store.conn.execute("VACUUM")
    assert store.conn.execute(first).fetchone()[0] < before  # renumbered
    for i, line in enumerate(kept[8:]):  # the first to the cursor's seq, then later ones
        store.add("k", line, same_seq=i % 2 == 0)
    assert inst.scan().errors == 0
    assert inst.counts() == expected(2, 4)
    store.conn.close()
    inst.store.close()


def test_a_state_database_of_a_newer_memoryd_is_refused_and_left_as_it_is(tmp_path):
    """A state database a later memoryd migrated past this one's schema (a column or a meaning
    of its cursors this one does not know) is not written: the scan stops with a message that
    names it, and its version and cursors stay as they were."""
    inst = Install(tmp_path / "store")
    store = TiedStore(inst)
    for i, line in enumerate(conversation(2, "n")):
        store.add("n", line.decode().rstrip("\n"), same_seq=i % 2 == 1)
    inst.scan()
    db = inst.store.conn
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    cursors = db.execute("SELECT * FROM transcript_db_cursors").fetchall()
    inst.store.close()
    with pytest.raises(StoreError, match=f"schema {SCHEMA_VERSION + 1}, newer than this memoryd"):
        Store.open(inst.paths.db)
    conn = sqlite3.connect(inst.paths.db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert conn.execute("SELECT * FROM transcript_db_cursors").fetchall() == cursors
    conn.close()
    store.conn.close()
