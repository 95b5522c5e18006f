"""Upkeep of the transcript store's read state: a table followed by rowid through a VACUUM, and
the per-session state of sessions that left the store.

Real SQLite stores written here, the real scanner; counts compared with the conversations'
known hits (each hit once).
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import memoryd.log
from memoryd.ingest import sqlite_source
from support import transcripts as tx
from support.agent_rows import (
    STAMP,
    WINDOWS,
    Store,
    archive_store,
    delete_session,
    frame,
    merge_counts,
)
from support.scanner_install import FILES, Install, conversation, expected
from support.scanner_install import scan as scan_or_crash
from support.transcripts import timed

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
    assert inst.counts() == merge_counts(expected(12, 3), expected(2))
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
    assert inst.counts() == merge_counts(expected(6, 3), expected(9))
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


def test_a_row_added_while_the_rows_are_counted_reads_no_session_again(inst, monkeypatch):
    """OpenClaw appends while memoryd looks: a row of session b (the last the walk lists)
    lands between the walk that counts each session's rows and the count of b's rows after
    its cursor. Nothing was renumbered: only the new rows are read (b's whole history was
    read again from its start, as if a VACUUM had moved rows under the cursor)."""
    store = RowidStore(inst)
    store.conn.execute("PRAGMA journal_mode = WAL")  # (as OpenClaw's: a writer never waits)
    a, b = conversation(3, "a"), conversation(6, "b")
    store.interleave(("a", a), ("b", b[:20]))
    inst.scan()
    new = b[20:22]
    store.add("b", new[:1])
    real_open = sqlite_source.open_readonly
    landed: list[str] = []

    def open_readonly(path):  # the reader's own connection; OpenClaw's write lands mid-walk
        conn = real_open(path)

        def on_statement(sql: str) -> None:
            if "COUNT(*)" in sql and "rowid >" in sql and not landed:
                landed.append(sql)
                store.add("b", new[1:])

        conn.set_trace_callback(on_statement)
        return conn

    monkeypatch.setattr(sqlite_source, "open_readonly", open_readonly)
    stats = inst.scan()
    assert landed
    assert stats.bytes_read == sum(len(ln) - 1 for ln in new)  # the new rows, not b again
    monkeypatch.setattr(sqlite_source, "open_readonly", real_open)
    store.add("b", b[22:])
    inst.scan()
    assert inst.counts() == merge_counts(expected(3), expected(6))
    store.conn.close()


# ------------------------------------------------------------------ sessions that left the store

DAY = 86400.0
LATER = str(8 * DAY)  # past the default grace period (ingest.vanished_grace_days = 7)


def cursor_rows(inst: Install) -> dict[str, object]:
    """Session → when it was seen gone from the store (None: in the store), by cursor."""
    conn = inst.store.conn
    rows = dict.fromkeys(
        sid for (sid,) in conn.execute("SELECT session_id FROM transcript_db_cursors")
    )
    rows.update(conn.execute("SELECT session_id, gone_at FROM transcript_db_gone"))
    return rows


def waiting(inst: Install) -> list[tuple[str, str]]:
    return inst.store.conn.execute(
        "SELECT call_id, session FROM calls WHERE answered = 0 ORDER BY call_id"
    ).fetchall()


def test_a_deleted_sessions_state_is_forgotten_after_the_grace_period(inst, monkeypatch, caplog):
    """A session deleted into an archive: its archive is read once; its cursor is kept for
    the grace period (noted gone), then forgotten with its calls still waiting (the daemon
    logs it once); its id coming back with the same rows afterwards counts nothing twice."""
    monkeypatch.setattr(memoryd.log, "CONFIGURED", True)  # (as in the daemon)
    caplog.set_level("WARNING", logger="memoryd.ingest")
    store = archive_store(inst)
    store.add_session("keep")
    store.append("keep", conversation(2, "k"))
    lines = [*conversation(3, "d"), tx.call("d-aborted", query="never answered")]
    store.add_session("del")
    store.append("del", lines)
    inst.scan()
    assert inst.counts() == expected(2, 3)
    assert waiting(inst) == [("d-aborted", "del")]
    text = delete_session(store, "del")
    store.conn.execute(
        "INSERT INTO session_transcript_archives VALUES (?, 'del', 'agent:main:main', "
        "'deleted', 'zstd', ?, 1)",
        (f"del.jsonl.deleted.{STAMP}", frame(text)),
    )
    assert inst.scan().new_hits == 0  # the archive: read, nothing new
    gone = cursor_rows(inst)
    assert gone["keep"] is None and isinstance(gone["del"], float)
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", LATER)
    inst.restart()
    store.append("keep", conversation(4, "k")[9:])  # the store changes: it is read
    stats = inst.scan()
    assert stats.errors == 0 and stats.new_hits == 4  # (turns 2 and 3: two files each)
    assert set(cursor_rows(inst)) == {"keep"}
    assert waiting(inst) == []
    forgotten = [r for r in caplog.records if r.msg == "ingest.store_sessions_forgotten"]
    assert [(r.sessions, r.waiting_calls_of, r.grace_days) for r in forgotten] == [(1, 1, 7)]
    assert inst.counts() == merge_counts(expected(4), expected(3))
    # the id comes back with its rows (restored): read from its start, nothing counted twice
    store.append("del", lines)
    inst.restart()
    assert inst.scan().new_hits == 0
    assert inst.counts() == merge_counts(expected(4), expected(3))
    assert set(cursor_rows(inst)) == {"keep", "del"}
    store.conn.close()


def test_a_session_back_within_the_grace_period_keeps_its_cursor(inst, monkeypatch):
    """Rows gone and back (cold storage brought back, a rewrite in two steps) within the
    grace period: the cursor stays and the session is read on from it."""
    store = archive_store(inst)
    store.append("s", conversation(3, "s"))
    inst.scan()
    rows = store.conn.execute("SELECT * FROM transcript_events WHERE session_id = 's'").fetchall()
    store.conn.execute("DELETE FROM transcript_events WHERE session_id = 's'")
    inst.scan()
    assert isinstance(cursor_rows(inst)["s"], float)
    store.conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    more = conversation(5, "s")[13:]
    store.append("s", more)
    stats = inst.scan()
    assert stats.bytes_read == sum(len(ln) - 1 for ln in more)  # the new turns only
    assert cursor_rows(inst) == {"s": None}
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", LATER)
    store.append("s", conversation(6, "s")[21:])
    inst.scan()
    assert cursor_rows(inst) == {"s": None}
    assert inst.counts() == expected(6)
    store.conn.close()


def test_a_call_waiting_in_a_gone_session_that_another_continues_is_kept(inst, monkeypatch, capsys):
    """A session deleted while the session continuing it is in the store: the call waiting
    at its end is kept past the grace period, and the answer at the continuation's start
    still meets it (its query with the hit). A one-shot scan says nothing of it."""
    monkeypatch.setattr(memoryd.log, "CONFIGURED", False)
    store = archive_store(inst)
    store.add_session("p")
    store.append("p", [tx.header("p"), tx.call("p-last", query="the question")])
    store.add_session("c", previous="p")
    store.append("c", [tx.header("c")])
    inst.scan()
    delete_session(store, "p")
    inst.scan()
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", LATER)
    store.append("c", [tx.chatter(1)])
    inst.scan()
    assert "p" not in cursor_rows(inst)
    assert capsys.readouterr().err == ""
    store.append("c", [tx.result("p-last", tx.search_payload([FILES[1]]))])
    inst.restart()
    inst.scan()
    hits = inst.store.conn.execute("SELECT memory_path, query FROM hits").fetchall()
    assert hits == [(FILES[1], "the question")]
    store.conn.close()


def test_a_call_waiting_in_a_gone_session_that_a_header_continues_is_kept(inst, monkeypatch):
    """The same in a store before schema 14 (no windows: only c's header names p, and c was
    read from its start before p was deleted). p's waiting ``memory_search_0`` is kept past
    the grace period, and the late answer in c counts its file with its query. (Forgotten,
    the answer was taken for a copy of p's earlier, answered turn of that id: its hit lost.)"""
    store = Store(inst, schema=13)
    head = tx.dump({**json.loads(tx.header("c")), "parentSession": "p"})
    store.add_session("p")
    store.append("p", [tx.header("p"), *_turn("p", tx.T0, FILES[0])])
    store.append("p", [timed(tx.call("memory_search_0", query="the question"), tx.T0 + 100)])
    store.add_session("c")
    store.append("c", [head])
    inst.scan()
    store.conn.execute("DELETE FROM session_entries WHERE session_id = 'p'")
    inst.scan()
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", LATER)
    store.append("c", [tx.chatter(1)])
    inst.scan()
    assert "p" not in cursor_rows(inst)
    answer = tx.result("memory_search_0", tx.search_payload([FILES[1]]), ts=tx.T0 + 101)
    store.append("c", [timed(answer, tx.T0 + 101)])
    inst.restart()
    inst.scan()
    hits = inst.store.conn.execute("SELECT memory_path, query FROM hits ORDER BY ts").fetchall()
    assert hits == [(FILES[0], "p?"), (FILES[1], "the question")]
    store.conn.close()


def test_the_cursors_of_a_forgotten_store_go_with_it(tmp_path):
    """A transcript store gone for the grace period is forgotten (as a file is), and the
    cursors of its sessions with it."""
    inst = Install(tmp_path, extra_config="[ingest]\nvanished_grace_days = 0\n")
    store = archive_store(inst)
    store.append("s", conversation(2, "s"))
    inst.scan()
    store.conn.close()
    for p in store.path.parent.glob("openclaw-agent.sqlite*"):
        p.unlink()
    inst.scan()  # noted gone
    inst.scan()  # forgotten (no grace)
    for table in ("transcript_db_cursors", "transcript_db_gone"):
        assert inst.store.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone() == (0,)
    inst.store.close()


def test_a_session_with_a_row_of_unusable_order_is_still_in_the_store(inst, monkeypatch):
    """A row whose seq is not a number (bad data) leaves its session unread, as before, but
    the session is still in the store: its cursor is not set aside as gone, and its call
    still waiting is not forgotten after the grace period (an answer may yet come)."""
    store = archive_store(inst)
    store.append("s", [*conversation(2, "s"), tx.call("s-open", query="not answered yet")])
    inst.scan()
    assert waiting(inst) == [("s-open", "s")]
    store.raw("s", "not a number", '{"type":"custom"}', None, None)
    inst.scan()
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", LATER)
    inst.restart()
    inst.scan()
    assert cursor_rows(inst) == {"s": None}
    assert waiting(inst) == [("s-open", "s")]
    live: set[str] = set()
    layout = sqlite_source.detect_layout(store.conn)
    assert layout is not None
    sqlite_source.sessions_with_new_rows(store.conn, layout, {}, live)
    assert live == {"s"}
    store.conn.close()


def test_sessions_left_is_a_pure_decision():
    assert sqlite_source.sessions_left({"a", "b", "c"}, {"a", "e"}) == ["b", "c"]


# ------------------------------------------------------------------ reused ids across sessions


def _turn(session: str, at: float, path: str, *, call: bool = True) -> list[bytes]:
    """One turn of ``memory_search_0`` at ``at`` (the call, unless only its answer is left)."""
    lines = [timed(tx.call("memory_search_0", query=f"{session}?", ts=at), at)] if call else []
    return [
        *lines,
        timed(tx.result("memory_search_0", tx.search_payload([path]), ts=at + 1), at + 1),
    ]


def test_a_reused_id_answered_alone_in_one_session_leaves_other_sessions_turns_counted(inst):
    """Session a holds an answer of ``memory_search_0`` whose call is gone (a truncation
    re-branch); it sorts first, so it is read first, and its call is kept under the bare id.
    Session b, unrelated (its own window, no previous session), made a whole turn of that id
    an hour earlier: it is b's own call, and counts (it was taken for a's, and lost)."""
    store = Store(inst)
    store.add_session("a")
    store.add_session("b")
    store.append("a", [tx.header("a"), *_turn("a", tx.T0 + 3600, FILES[0], call=False)])
    store.append("b", [tx.header("b"), *_turn("b", tx.T0, FILES[1])])
    inst.scan()
    assert inst.counts() == {FILES[0]: 1, FILES[1]: 1}
    store.conn.close()


def test_a_copy_in_a_continued_session_still_counts_once(inst):
    """The same, where b continues a (its window names a as previous) and b's turn is a copy
    in a's kept tail: one call, counted once."""
    store = Store(inst)
    store.add_session("p")
    store.add_session("q", previous="p")
    turn = _turn("p", tx.T0, FILES[1])
    store.append("p", [tx.header("p"), turn[1]])  # p: only the answer is left
    store.append("q", [tx.header("q"), *turn])  # q: the kept tail, call and answer
    inst.scan()
    assert inst.counts() == {FILES[1]: 1}
    store.conn.close()


def test_after_an_upgrade_a_never_read_sessions_earlier_call_counts(inst, monkeypatch):
    """A state.db from before occurrences holds session s's first ``memory_search_0`` call
    under the bare id. After the upgrade, session o (its own lineage, never read: it came
    with the store) made a turn of that id before it: o's own call, counted. s's copy in its
    successor s2 (two levels down: s3 continues s2, which continues s) is s's call: once."""
    import memoryd.ingest.apply as apply_mod

    store = Store(inst)
    for sid, previous in (("s", None), ("s2", "s"), ("s3", "s2"), ("o", None)):
        store.add_session(sid, previous=previous)
    turn = _turn("s", tx.T0 + 600, FILES[0])
    with monkeypatch.context() as m:  # memoryd before the change: ids kept as written
        m.setattr(apply_mod, "is_numbered", lambda _id: False)
        store.append("s", [tx.header("s"), *turn])
        inst.scan()
    assert inst.counts() == {FILES[0]: 1}
    inst.restart()
    store.append("o", [tx.header("o"), *_turn("o", tx.T0, FILES[0])])  # (the same note)
    store.append("s3", [tx.header("s3"), *turn])  # a kept tail, two compactions later
    inst.scan()
    assert inst.counts() == {FILES[0]: 2}
    store.conn.close()


def test_a_reused_id_turn_of_a_session_back_after_the_grace_counts_once_when_the_other_is_gone(
    inst, monkeypatch
):
    """a holds an answer of ``memory_search_0`` alone (kept under the bare id); b, of another
    lineage, made a whole turn of that id an hour before: its own call, counted. Both are
    deleted (their windows with them), b is forgotten after the grace and comes back with the
    same rows and window: read from its start, its turn counts nothing more. (a's lineage was
    unknown by then, b's call was taken for a copy of the bare one, and its hit counted a
    second time under the bare id.)"""
    store = archive_store(inst)
    store.add_session("a")
    store.add_session("b")
    store.append("a", [tx.header("a"), *_turn("a", tx.T0 + 3600, FILES[0], call=False)])
    b_lines = [tx.header("b"), *_turn("b", tx.T0, FILES[1])]
    store.append("b", b_lines)
    inst.scan()
    assert inst.counts() == {FILES[0]: 1, FILES[1]: 1}
    for sid in ("a", "b"):
        delete_session(store, sid)
        store.conn.execute("DELETE FROM session_windows WHERE session_id = ?", (sid,))
    inst.scan()
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", LATER)
    store.add_session("k")
    store.append("k", [tx.header("k")])  # the store changes: it is read, b is forgotten
    inst.scan()
    assert "b" not in cursor_rows(inst)
    store.add_session("b")
    store.append("b", b_lines)
    inst.restart()
    assert inst.scan().new_hits == 0
    assert inst.counts() == {FILES[0]: 1, FILES[1]: 1}
    store.conn.close()


def test_a_reused_id_turn_read_before_the_store_had_windows_counts_once_when_read_again(inst):
    """A store without ``session_windows`` (before schema 14): a's answer of
    ``memory_search_0`` alone is kept under the bare id; b's turn of that id, made earlier
    and read by a later scan, is taken for that call (no lineage known) and its hit counted
    under the bare id. The store is upgraded (every session gets its window: two roots) and b
    is rewritten in place with the same rows (a watermark): read again from its start, its
    turn counts nothing more (it was now its own call, and its hit counted a second time)."""
    store = Store(inst)
    store.conn.execute("DROP TABLE session_windows")
    store.append("a", [tx.header("a"), *_turn("a", tx.T0 + 3600, FILES[0], call=False)])
    inst.scan()
    store.append("b", [tx.header("b"), *_turn("b", tx.T0, FILES[1])])
    inst.scan()
    assert inst.counts() == {FILES[0]: 1, FILES[1]: 1}
    store.conn.execute(WINDOWS)
    for sid in ("a", "b"):
        store.add_session(sid)
    store.conn.execute(
        "CREATE TABLE transcript_rewrite_watermarks(session_id TEXT PRIMARY KEY, seq INTEGER, "
        "rewritten_at INTEGER)"
    )
    store.conn.execute("INSERT INTO transcript_rewrite_watermarks VALUES ('b', 2, 1)")
    inst.restart()
    assert inst.scan().new_hits == 0
    assert inst.counts() == {FILES[0]: 1, FILES[1]: 1}
    store.conn.close()


def test_windows_that_loop_or_name_another_stores_session_read_every_hit_once(inst):
    """Windows that form a loop (x continues y, y continues x), name themselves, or name a
    session of another agent's store: the store is read without a fault, every hit of the
    sessions' own calls once, and a reused id's turns in them (their lineage reaches no root:
    not known) are taken for the bare call as before, never counted twice."""
    store = Store(inst)
    for sid, previous in (("x", "y"), ("y", "x"), ("s", "s"), ("o", "agent-b-session")):
        store.add_session(sid, previous=previous)
        store.append(sid, conversation(2, sid))
    store.add_session("a")
    store.append("a", [tx.header("a"), *_turn("a", tx.T0 + 3600, FILES[0], call=False)])
    store.append("x", _turn("x", tx.T0, FILES[0]))
    store.append("o", _turn("o", tx.T0 + 60, FILES[0]))
    stats = inst.scan()
    assert stats.errors == 0
    assert inst.counts() == merge_counts(*(expected(2) for _ in range(4)), {FILES[0]: 1})
    store.conn.execute("DELETE FROM session_windows WHERE session_id = 'a'")  # (a: gone)
    store.append("y", [tx.chatter(1)])
    inst.restart()
    assert inst.scan().new_hits == 0
    store.conn.close()


_LINEAGES = st.dictionaries(
    st.sampled_from("abcdefgh"), st.one_of(st.none(), st.sampled_from("abcdefghxy")), max_size=8
)


@given(lineage=_LINEAGES, asked=st.lists(st.sampled_from("abcdefghxy"), max_size=12))
def test_root_of_ends_on_loops_and_unnamed_sessions_and_remembers_the_same_roots(lineage, asked):
    """Any windows, loops (a window naming itself or a later one) and links out of the store
    included: the root is the session up the chain that continues none, None where the chain
    loops or leaves the sessions named; asked with the roots found before, the same answers."""
    known: dict[str, str | None] = {}
    for session in asked:
        seen, at, expect = [], session, None
        while at in lineage and at not in seen:
            seen.append(at)
            if lineage[at] is None:
                expect = at
                break
            at = lineage[at]  # type: ignore[assignment]
        assert sqlite_source.root_of(lineage, session) == expect
        assert sqlite_source.root_of(lineage, session, known) == expect
        assert all(sqlite_source.root_of(lineage, s) == r for s, r in known.items())


def test_a_long_chain_of_windows_is_walked_once_for_every_call_asked_of_it():
    """5,000 windows, each continuing the one before (a session reset daily for years): the
    roots of all its sessions, asked one by one with the roots found before, visit each
    window once (a walk per call cost 12.5 million steps)."""
    lineage: dict[str, str | None] = {"w0": None}
    lineage.update({f"w{i}": f"w{i - 1}" for i in range(1, 5000)})

    class Counting(dict):  # the lineage, counting the windows looked at
        looked = 0

        def __getitem__(self, key: str) -> str | None:
            Counting.looked += 1
            return super().__getitem__(key)

    counted = Counting(lineage)
    known: dict[str, str | None] = {}
    assert all(sqlite_source.root_of(counted, f"w{i}", known) == "w0" for i in range(4999, -1, -1))
    assert Counting.looked == 5000


# ------------------------------------------------------------------ any history


HISTORY = st.lists(
    st.one_of(
        # rows of a conversation, each followed by a filler session's row (or not)
        st.tuples(st.just("append"), st.integers(0, 1), st.lists(st.booleans(), max_size=9)),
        st.tuples(st.just("renumber"), st.none(), st.none()),  # fillers deleted, VACUUM
        st.tuples(st.just("drop filler"), st.none(), st.none()),
        st.tuples(st.just("vacuum"), st.none(), st.none()),
        st.tuples(st.just("bounce"), st.integers(0, 1), st.none()),
        st.tuples(st.just("later"), st.none(), st.none()),
        st.tuples(st.just("scan"), st.none(), st.none()),
        st.tuples(st.just("restart"), st.none(), st.none()),
        st.tuples(st.just("crash"), st.integers(1, 6), st.none()),
    ),
    max_size=18,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=HISTORY, batch=st.integers(1, 5))
@example(  # rows read among fillers; more rows; the fillers deleted and the rowids renumbered
    ops=[
        ("append", 0, [True, True, True]),
        ("scan", None, None),
        ("append", 0, [False, False]),
        ("renumber", None, None),
        ("scan", None, None),
    ],
    batch=5,
)
def test_any_history_of_deletes_vacuums_and_returns_counts_every_hit_once(
    tmp_path_factory, monkeypatch, ops, batch
):
    """A table followed by rowid: two conversations written in steps among filler sessions
    that are deleted, VACUUMs renumbering the rowids, a session's rows taken out and put back
    (after its cursor was set aside, or forgotten: days pass), scans in batches of 1–5 rows,
    restarts, crashes right after any commit. Every hit is counted once."""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", batch)
    monkeypatch.delenv("MEMORYD_CLOCK_OFFSET", raising=False)
    inst = Install(tmp_path_factory.mktemp("history"))
    store = RowidStore(inst)
    convs = {f"s{k}": conversation(4, f"h{k}_") for k in range(2)}
    written = dict.fromkeys(convs, 0)
    fillers = days = 0
    for op, arg, n in ops:  # (n: the rows to append, each with a filler row after it or not)
        if op == "append":
            sid = f"s{arg}"
            for filler in n:
                if written[sid] < len(convs[sid]):
                    store.add(sid, [convs[sid][written[sid]]])
                    written[sid] += 1
                if filler:
                    fillers += 1
                    store.add(f"f{fillers}", [tx.chatter(fillers)])
        elif op in ("drop filler", "renumber"):
            store.conn.execute("DELETE FROM agent_log WHERE session_id LIKE 'f%'")
            if op == "renumber":
                store.conn.execute("VACUUM")
        elif op == "bounce":  # out (as to cold storage) and back, at the table's end
            sid = f"s{arg}"
            store.conn.execute("DELETE FROM agent_log WHERE session_id = ?", (sid,))
            inst.scan()
            store.add(sid, convs[sid][: written[sid]])
        elif op == "vacuum":
            store.conn.execute("VACUUM")
        elif op == "later":
            days += 8
            monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", str(days * DAY))
        elif op == "restart":
            inst.restart()
        else:
            scan_or_crash(inst, arg if op == "crash" else None)
    for sid in convs:
        store.add(sid, convs[sid][written[sid] :])
    scan_or_crash(inst, None)
    assert inst.counts() == expected(4, 4)
    assert inst.scan().new_hits == 0
    store.conn.close()
    inst.store.close()


REUSED_HISTORY = st.lists(
    st.one_of(
        # a new turn of memory_search_0 in a session (or only its answer: the call cut away)
        st.tuples(st.just("turn"), st.sampled_from("abc"), st.booleans()),
        st.tuples(st.just("copy"), st.just("b"), st.none()),  # b's kept tail: a's last turn
        st.tuples(st.just("delete"), st.sampled_from("abc"), st.none()),  # rows and window
        st.tuples(st.just("back"), st.sampled_from("abc"), st.none()),  # as they were
        st.tuples(st.just("later"), st.none(), st.none()),
        st.tuples(st.just("scan"), st.none(), st.none()),
        st.tuples(st.just("restart"), st.none(), st.none()),
        st.tuples(st.just("crash"), st.integers(1, 6), st.none()),
    ),
    max_size=20,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=REUSED_HISTORY)
@example(  # the review's case: b's own turn, a deleted, b forgotten and back
    ops=[
        ("turn", "c", False),  # c's own turn, made before ...
        ("turn", "a", True),  # ... a's answer met alone (its call kept under the bare id)
        ("scan", None, None),
        ("delete", "a", None),
        ("delete", "c", None),
        ("scan", None, None),
        ("later", None, None),
        ("turn", "b", False),
        ("scan", None, None),
        ("back", "c", None),
    ]
)
def test_any_history_of_a_reused_id_across_sessions_counts_no_hit_twice(
    tmp_path_factory, monkeypatch, ops
):
    """Turns of ``memory_search_0`` (each its own file, some answers without their call) in
    sessions a, b (continuing a, its kept tail copying a's last turn) and c (another root);
    sessions deleted with their windows and brought back as they were, days passing past the
    grace period, scans, restarts, crashes after any commit. No file is counted twice, and a
    last scan adds nothing. (What lineage is known changes through such a history: the rule
    must give a call read again the id it was first kept under.)"""
    monkeypatch.setattr(sqlite_source, "BATCH_ROWS", 2)
    monkeypatch.delenv("MEMORYD_CLOCK_OFFSET", raising=False)
    inst = Install(tmp_path_factory.mktemp("reused"))
    store = Store(inst)
    previous = {"a": None, "b": "a", "c": None}
    lines: dict[str, list[bytes]] = {}
    last_turn: dict[str, list[bytes]] = {}
    gone: set[str] = set()
    turns = days = 0
    for op, arg, flag in ops:
        if op in ("turn", "copy") and arg not in gone:
            if op == "turn":
                turns += 1
                new = _turn(arg, tx.T0 + 100 * turns, f"memory/t{turns}.md", call=not flag)
                last_turn[arg] = _turn(arg, tx.T0 + 100 * turns, f"memory/t{turns}.md")
            elif "a" in last_turn:
                new = last_turn["a"]
            else:
                continue
            if arg not in lines:
                store.add_session(arg, previous=previous[arg])
                new = [tx.header(arg), *new]
                lines[arg] = []
            store.append(arg, new)
            lines[arg] += new
        elif op == "delete" and arg in lines and arg not in gone:
            store.conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (arg,))
            store.conn.execute("DELETE FROM session_windows WHERE session_id = ?", (arg,))
            gone.add(arg)
        elif op == "back" and arg in gone:
            store.add_session(arg, previous=previous[arg])
            store.append(arg, lines[arg])
            gone.discard(arg)
        elif op == "later":
            days += 8
            monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", str(days * DAY))
        elif op == "restart":
            inst.restart()
        elif op in ("scan", "crash"):
            scan_or_crash(inst, arg if op == "crash" else None)
    scan_or_crash(inst, None)
    counts = inst.counts()
    assert all(n == 1 for n in counts.values()), counts
    assert inst.scan().new_hits == 0
    store.conn.close()
    inst.store.close()
