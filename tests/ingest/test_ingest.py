"""The scanner on real files: checkpoints, partial lines, identity changes, bad input."""

from __future__ import annotations

import os
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.ingest.scan import Scanner
from memoryd.store import Store
from support import transcripts as tx
from support.scanner_install import (
    FILES,
    Install,
    conversation,
    expected,
    insert_events,
    openclaw_db,
)


@pytest.fixture
def inst(tmp_path):
    i = Install(tmp_path)
    yield i
    i.store.close()


def test_cold_scan_counts_every_hit_once(inst):
    inst.append("s1.jsonl", b"".join(conversation(20)))
    stats = inst.scan()
    assert stats.new_hits == 40 and stats.malformed == 0
    assert inst.counts() == expected(20)
    again = inst.scan()
    assert again.new_hits == 0 and again.files_read == 0  # stat-only no-op
    assert inst.counts() == expected(20)


def test_scanning_after_every_line_gives_the_same_counts(inst):
    for line in conversation(12):
        inst.append("s1.jsonl", line)
        inst.scan()
    assert inst.counts() == expected(12)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12), restart=st.booleans()
)
def test_partial_lines_never_change_the_counts(tmp_path_factory, cuts, restart):
    """Appending the bytes in arbitrary pieces (cutting lines anywhere) changes nothing."""
    inst = Install(tmp_path_factory.mktemp("cut"), "[ingest]\nchunk_bytes = 4096\n")
    data = b"".join(conversation(15))
    points = [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    start = 0
    for p in points:
        inst.append("s1.jsonl", data[start:p])
        start = p
        inst.scan()
        if restart:
            inst.restart()
    assert inst.counts() == expected(15)
    row = inst.store.conn.execute("SELECT offset, malformed FROM sources").fetchone()
    assert row == (len(data), 0)
    inst.store.close()


def test_half_written_last_line_is_counted_once_when_completed(inst):
    lines = conversation(1)
    body = b"".join(lines[:-1])
    last = lines[-1]
    inst.append("s1.jsonl", body + last[:37])
    inst.scan()
    assert inst.counts() == {}
    inst.restart()
    inst.append("s1.jsonl", last[37:])
    inst.scan()
    assert inst.counts() == expected(1)
    assert inst.store.counters().get("malformed_lines", 0) == 0


def test_answer_after_restart_and_in_a_successor_file(inst):
    """A call whose result comes later, in another file, after a restart, still counts."""
    inst.append(
        "s1.jsonl",
        tx.header("s1")
        + tx.claude_call("toolu_1", "mcp__openclaw__memory_get", {"path": "memory/a.md"}),
    )
    inst.scan()
    inst.restart()
    inst.append(
        "2026-02-25T10-00-00.000Z_s1.jsonl",
        tx.claude_result("toolu_1", {"path": "memory/a.md", "text": "hello"}),
    )
    inst.scan()
    assert inst.counts() == {"memory/a.md": 1}


@pytest.mark.parametrize("parent_name", ["0b40.jsonl", "zz40.jsonl"])
def test_an_unnamed_answer_in_a_successor_of_another_session_counts_in_one_cold_scan(
    inst, parent_name
):
    """Compaction cut between a call and its answer; the successor has its own session id.

    The parent's last line is the call; the successor (new session id, ``parentSession``
    in its header) starts with the answer, which does not name its tool. Whatever the
    names' order, one cold scan reads the parent first and counts the hit.
    """
    parent = inst.append(
        parent_name,
        tx.header("p1")
        + tx.claude_call("toolu_9", "mcp__openclaw__memory_get", {"path": "memory/b.md"}),
    )
    os.utime(parent, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
    head = {"type": "session", "id": "s2", "timestamp": tx.iso(tx.T0), "parentSession": str(parent)}
    successor = inst.append(
        "2026-02-25T10-00-00.000Z_s2.jsonl",
        tx.dump(head) + tx.claude_result("toolu_9", {"path": "memory/b.md", "text": "hi"}),
    )
    os.utime(successor, ns=(1_700_000_100 * 10**9, 1_700_000_100 * 10**9))
    inst.scan()
    assert inst.counts() == {"memory/b.md": 1}


@pytest.mark.parametrize("id_key", ["tool_use_id", "call_id"])
@pytest.mark.parametrize("n_calls", [2, 20])  # one search per id; one pattern pass for many
def test_unnamed_answers_are_found_by_id_however_many_calls_wait(tmp_path, n_calls, id_key):
    """Calls in flight together, answered later and out of order, past chunk edges.

    A line quoting a call's id before its answer (a log line, say) must not end the
    search for that id.
    """
    inst = Install(tmp_path, extra_config="[ingest]\nchunk_bytes = 4096\n")
    ids = [f"toolu_w{i}" for i in range(n_calls)]
    lines = [tx.header("w")]
    lines += [
        tx.claude_call(cid, "mcp__openclaw__memory_get", {"path": FILES[i % len(FILES)]})
        for i, cid in enumerate(ids)
    ]
    lines += [tx.chatter(i) for i in range(30)]  # several KB: the answers are regions later
    lines.append(tx.dump({"type": "note", "text": f"waiting for {ids[0]} and {ids[-1]}"}))
    lines += [
        tx.claude_result(cid, {"path": FILES[i % len(FILES)], "text": "body"}).replace(
            b'"tool_use_id"', f'"{id_key}"'.encode()
        )
        for i, cid in reversed(list(enumerate(ids)))
    ]
    inst.append("w.jsonl", b"".join(lines))
    inst.scan()
    want: dict[str, int] = {}
    for i in range(n_calls):
        want[FILES[i % len(FILES)]] = want.get(FILES[i % len(FILES)], 0) + 1
    assert inst.counts() == want
    inst.store.close()


def test_successor_copies_are_not_counted_twice(inst):
    lines = conversation(6)
    inst.append("s1.jsonl", b"".join(lines))
    inst.scan()
    # compaction writes a successor that copies the kept tail (same toolCall ids) and goes on
    tail = lines[-8:] + conversation(2, prefix="n")[1:]
    inst.append("2026-02-26T09-00-00.000Z_9f1.jsonl", b"".join(tail))
    inst.scan()
    want = expected(6, 2)
    assert inst.counts() == want


def test_rename_keeps_the_offset(inst):
    p = inst.append("s1.jsonl", b"".join(conversation(5)))
    inst.scan()
    renamed = p.with_name("s1.jsonl.reset.2026-03-06T05-00-00.000Z")
    os.rename(p, renamed)
    with open(renamed, "ab") as fh:  # it may even grow a little before the rename is seen
        fh.write(b"".join(conversation(2, prefix="z")[1:]))
    stats = inst.scan()
    assert stats.renamed == 1 and stats.resets == 0
    assert stats.bytes_read == len(b"".join(conversation(2, prefix="z")[1:]))
    want = expected(5, 2)
    assert inst.counts() == want
    assert inst.store.conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0] == 1


def test_truncation_rereads_from_zero(inst):
    p = inst.append("s1.jsonl", b"".join(conversation(5)))
    inst.scan()
    p.write_bytes(b"".join(conversation(3, prefix="t")))  # shorter: truncated and rewritten
    stats = inst.scan()
    assert stats.resets == 1
    want = expected(5, 3)
    assert inst.counts() == want


def test_replacement_with_a_reused_inode_is_detected(inst):
    p = inst.append("s1.jsonl", b"".join(conversation(3)))
    inst.scan()
    # same inode, same size class, different first bytes: rewritten in place
    new = b"".join(conversation(6, prefix="R"))
    with open(p, "r+b") as fh:
        fh.write(new)
    stats = inst.scan()
    assert stats.resets == 1
    want = expected(3, 6)
    assert inst.counts() == want


def test_new_inode_at_the_same_path_is_read_from_zero(inst):
    p = inst.append("s1.jsonl", b"".join(conversation(3)))
    inst.scan()
    tmp = p.with_name("s1.jsonl.repair-1.tmp")
    tmp.write_bytes(b"".join(conversation(3)) + b"".join(conversation(2, prefix="k")[1:]))
    os.replace(tmp, p)  # malformed-line repair: a new file renamed over the old one
    inst.scan()
    want = expected(3, 2)
    assert inst.counts() == want


def test_files_that_are_not_transcripts_are_never_read(inst):
    body = b"".join(conversation(4))
    for name in (
        "s1.trajectory.jsonl",
        "s1.checkpoint.0f3a.jsonl",
        "s1.jsonl.lock",
        "s1.jsonl.bak-123-456",
        "s1.jsonl.deleted.2026-03-01T00-00-00.000Z.zst",
        "sessions.json",
        "s1.jsonl.repair-7.tmp",
    ):
        inst.append(name, body)
    stats = inst.scan()
    assert stats.files_seen == 0 and inst.counts() == {}
    inst.append("s2.jsonl.deleted.2026-03-01T00-00-00.000Z", body)
    inst.scan()
    assert inst.counts() == expected(4)


def test_huge_lines_garbage_and_invalid_utf8(inst):
    big_snippet = "x" * (5 << 20)
    lines = [
        tx.header("s"),
        b"this is not json at all memory_search\n",
        b"\xff\xfe\x00 memory_get \x80\n",
        tx.call("big"),
        tx.result(
            "big",
            tx.search_payload(
                [{"path": "memory/a.md", "snippet": big_snippet, "source": "memory"}]
            ),
        ),
        tx.call("ok"),
        tx.result("ok", tx.search_payload(["memory/b.md"])),
    ]
    inst.append("s.jsonl", b"".join(lines))
    stats = inst.scan()
    assert inst.counts() == {"memory/a.md": 1, "memory/b.md": 1}
    assert stats.malformed == 2
    assert inst.store.counters()["malformed_lines"] == 2


def test_line_over_the_limit_is_skipped_and_counted(tmp_path):
    inst = Install(tmp_path, "[ingest]\nchunk_bytes = 4096\nmax_line_bytes = 65536\n")
    huge = tx.result("h", tx.search_payload([{"path": "memory/a.md", "snippet": "y" * 200_000}]))
    inst.append(
        "s.jsonl",
        tx.call("h") + huge + tx.call("ok") + tx.result("ok", tx.search_payload(["memory/b.md"])),
    )
    stats = inst.scan()
    assert stats.oversized == 1
    assert inst.counts() == {"memory/b.md": 1}
    size = (inst.sessions / "s.jsonl").stat().st_size
    assert inst.store.conn.execute("SELECT offset FROM sources").fetchone()[0] == size


def test_hostile_paths_are_never_counted(inst):
    hostile = [
        "../../etc/passwd",
        "/etc/passwd",
        "memory/../../x.md",
        "memory/../../../root/.ssh/id.md",
        "memory/a.md",
    ]
    inst.append("s.jsonl", tx.call("h") + tx.result("h", tx.search_payload(hostile)))
    stats = inst.scan()
    assert inst.counts() == {"memory/a.md": 1}
    assert stats.non_memory_paths == 4


@pytest.mark.parametrize("count_synthetic", [False, True])
def test_synthetic_traffic_is_not_counted_by_default(tmp_path, count_synthetic):
    inst = Install(tmp_path, openclaw_extra=f"count_synthetic = {str(count_synthetic).lower()}")
    dreaming = tx.call("d", query="__dreaming_daily__:recall")
    inst.append("s.jsonl", dreaming + tx.result("d", tx.search_payload(["memory/a.md"])))
    (inst.sessions / "sessions.json").write_text(
        '{"agent:main:cron:job1": {"sessionId": "cronsess"}, "agent:main:main": {"sessionId": "s"}}'
    )
    inst.append("cronsess.jsonl", tx.call("c") + tx.result("c", tx.search_payload(["memory/b.md"])))
    inst.scan()
    want = {"memory/a.md": 1, "memory/b.md": 1} if count_synthetic else {}
    assert inst.counts() == want
    inst.store.close()


def test_event_driven_scan_reads_only_the_named_file(inst):
    p1 = inst.append("s1.jsonl", b"".join(conversation(2)))
    inst.append("s2.jsonl", b"".join(conversation(3, prefix="x")))
    stats = inst.scan(only=[p1, inst.sessions / "missing.jsonl", inst.ws / "MEMORY.md"])
    assert stats.files_read == 1
    assert inst.counts() == expected(2)


def test_vanished_source_keeps_its_row_for_the_grace_period(inst):
    p = inst.append("s1.jsonl", b"".join(conversation(2)))
    inst.scan()
    outside = p.parent.parent / "moved-away.jsonl"
    os.rename(p, outside)
    inst.scan()
    row = inst.store.conn.execute("SELECT vanished_at IS NOT NULL, offset FROM sources").fetchone()
    assert row == (1, p.parent.parent.joinpath("moved-away.jsonl").stat().st_size)
    os.rename(outside, p.with_name("s1.jsonl.deleted.2026-03-01T00-00-00.000Z"))
    stats = inst.scan()
    assert stats.bytes_read == 0  # came back under a read name: offset kept, nothing re-read
    assert inst.store.conn.execute("SELECT vanished_at FROM sources").fetchone()[0] is None


# --------------------------------------------------------------------------- SQLite transcripts


def test_sqlite_transcripts_are_read_incrementally(inst):
    _db, conn = openclaw_db(inst)
    lines = conversation(8)
    insert_events(conn, "sA", lines[:10])
    insert_events(conn, "sB", conversation(3, prefix="b"))
    inst.scan()
    insert_events(conn, "sA", lines[10:], first_seq=10)  # the writer goes on (WAL)
    stats = inst.scan()
    assert stats.files_read == 1
    want = expected(8, 3)
    assert inst.counts() == want
    assert inst.scan().files_read == 0  # nothing new: the database is not even opened
    # the JSONL files moved into the import archive hold the same calls: no double count
    archive = inst.sessions / "session-sqlite-import-archive"
    archive.mkdir()
    (archive / "sA.jsonl").write_bytes(b"".join(lines))
    inst.scan()
    assert inst.counts() == want
    conn.close()


def test_one_event_scan_of_a_database_and_its_wal_reads_the_database_once(inst):
    """A write touches the database and its -wal file: both events name one source."""
    db, conn = openclaw_db(inst)
    insert_events(conn, "sA", conversation(4))
    wal = db.with_name(db.name + "-wal")
    assert wal.exists()
    stats = inst.scan(only=[db, wal])
    assert stats.files_read == 1
    assert inst.store.conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0] == 1
    assert inst.counts() == expected(4)
    conn.close()


def test_a_broken_sqlite_store_is_counted_not_fatal(inst):
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    inst.append("s1.jsonl", b"".join(conversation(2)))
    stats = inst.scan()
    assert stats.errors == 1 and inst.store.counters()["read_errors"] == 1
    assert inst.counts() == expected(2)


def test_a_cron_session_started_later_is_left_out_by_a_long_lived_scanner(inst):
    """The daemon keeps one scanner for days: sessions.json is re-read when it changes."""
    scanner = Scanner(inst.cfg, inst.paths, inst.store)
    (inst.sessions / "sessions.json").write_text('{"agent:main:main": {"sessionId": "s"}}')
    inst.append("s.jsonl", tx.call("u") + tx.result("u", tx.search_payload(["memory/a.md"])))
    scanner.scan()
    (inst.sessions / "sessions.json").write_text(
        '{"agent:main:main": {"sessionId": "s"}, "agent:main:cron:nightly": {"sessionId": "late"}}'
    )
    inst.append("late.jsonl", tx.call("c") + tx.result("c", tx.search_payload(["memory/b.md"])))
    scanner.scan()
    assert inst.counts() == {"memory/a.md": 1}


def test_lines_appended_while_scanning_are_never_lost(inst):
    """A writer appending while scans run: a final scan always catches up exactly."""
    import threading

    lines = conversation(150)
    done = threading.Event()

    def writer() -> None:
        for line in lines:
            inst.append("s1.jsonl", line)
        done.set()

    t = threading.Thread(target=writer)
    scanner_store = Store.open(inst.paths.db)
    scanner = Scanner(inst.cfg, inst.paths, scanner_store)
    t.start()
    while not done.is_set():
        scanner.scan()
    t.join()
    scanner.scan()
    scanner_store.close()
    assert inst.counts() == expected(150)


def test_a_failed_commit_does_not_make_a_later_scan_take_a_broken_store_for_its_own_db(inst):
    """The daemon keeps one scanner for days. A scan that stops on memoryd's own database (a
    full disk) must not leave that verdict behind: once there is space again, a transcript
    store that is not a database is that source's failure, and the rest is read."""
    scanner = Scanner(inst.cfg, inst.paths, inst.store)
    inst.append("s1.jsonl", b"".join(conversation(400)))
    conn = inst.store.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
    with pytest.raises(sqlite3.OperationalError, match="full"):
        scanner.scan()
    conn.execute("PRAGMA max_page_count = 1073741823")  # space again
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    stats = scanner.scan()
    assert stats.errors == 1 and inst.store.counters()["read_errors"] == 1
    assert inst.counts() == expected(400)


def test_a_store_batch_undone_with_its_transaction_is_not_counted(inst, monkeypatch):
    """A transcript file's rows and the transcript store's share a transaction; the store's
    last write (its signature) fails and undoes it: the scan counts only what it recorded,
    none of the store's rows, and the next scan reads them again and counts them once."""
    from memoryd.ingest import ledger as ledger_module

    _db, conn = openclaw_db(inst)
    insert_events(conn, "sA", conversation(3))
    conn.close()
    inst.append("s1.jsonl", b"".join(conversation(2, prefix="f")))
    real_store_read = ledger_module.Ledger.store_read
    failed = []

    def fail_once(self, *a):  # type: ignore[no-untyped-def]
        if not failed:
            failed.append(True)
            with self.write(0):
                raise sqlite3.OperationalError("the store's last write failed")
        return real_store_read(self, *a)

    monkeypatch.setattr(ledger_module.Ledger, "store_read", fail_once)
    first = inst.scan()
    assert failed and first.errors == 1
    recorded = inst.store.conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0]
    assert first.new_hits == recorded
    again = inst.scan()
    assert first.new_hits + again.new_hits == sum(expected(3, 2).values())
    assert inst.counts() == expected(3, 2)


@pytest.mark.parametrize("fresh_file", [False, True], ids=["deleted", "reset"])
def test_a_transcript_renamed_between_the_stat_and_the_read_is_no_failure(inst, fresh_file):
    """OpenClaw renames a transcript (``/reset``, delete) while a scan is under way.

    Seen in the soak test (``tests/service/test_soak.py``): the scan had stat'ed the file and then
    failed to open it, a failed source with a traceback at error level. A rename is no
    failure: the file is read under its new name, and a fresh file at the old name from 0.
    """
    from memoryd import faults

    p = inst.append("s1.jsonl", b"".join(conversation(3)))
    inst.scan()
    inst.append("s1.jsonl", b"".join(conversation(2, prefix="z")[1:]))  # not read yet
    aside = p.with_name("s1.jsonl.reset.2026-03-06T05-00-00.000Z")

    def openclaw_renames() -> None:
        faults.hook("scan.planned", None)
        os.rename(p, aside)
        if fresh_file:  # /reset: a new transcript at the same name
            inst.append("s1.jsonl", b"".join(conversation(4, prefix="f")))

    faults.hook("scan.planned", openclaw_renames)
    stats = inst.scan()
    assert (stats.errors, stats.failed_sources) == (0, [])
    inst.scan()
    assert inst.counts() == expected(3, 2, 4) if fresh_file else expected(3, 2)
    assert inst.scan().bytes_read == 0


def test_a_folder_of_transcripts_that_cannot_be_listed_is_a_failed_source(inst, capsys):
    """An agent's ``sessions/`` that is not there holds nothing (an agent that never ran);
    one that is there and cannot be listed (its permissions; here a symlink that loops, which
    stops root too) hides every transcript in it: a failed source, recorded for ``status``
    and logged once however often (and by however many processes) it is scanned, and
    recovered once it lists again."""
    from memoryd.commands.status import _failed_sources

    inst.append("s1.jsonl", b"".join(conversation(2)))
    aside = inst.sessions.with_name("sessions-aside")
    inst.sessions.rename(aside)
    os.symlink(inst.sessions.name, inst.sessions)  # sessions -> sessions: ELOOP
    scanner = Scanner(inst.cfg, inst.paths, inst.store)
    first = scanner.scan()
    assert first.errors == 1 and first.new_hits == 0
    (failed,) = first.failed_sources
    assert failed["source"] == str(inst.sessions)
    assert failed["reason"].startswith("the folder cannot be listed (")
    assert scanner.scan().failed_sources == first.failed_sources
    assert inst.scan().failed_sources == first.failed_sources  # (another scanner, as a command)
    logged = [line for line in capsys.readouterr().err.splitlines() if "source_failed" in line]
    assert len(logged) == 1 and str(inst.sessions) in logged[0], logged
    (shown,) = _failed_sources(inst.store.conn)
    assert (shown["source"], shown["kind"], shown["reason"]) == (
        str(inst.sessions), "folder", failed["reason"])

    inst.sessions.unlink()
    aside.rename(inst.sessions)
    back = scanner.scan()
    assert (back.errors, back.failed_sources) == (0, []) and back.new_hits == 4
    assert _failed_sources(inst.store.conn) == []
    inst.sessions.rename(aside)  # not there at all: nothing to say
    assert scanner.scan().failed_sources == []
