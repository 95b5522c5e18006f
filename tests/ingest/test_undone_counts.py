"""A scan's summary counts what it recorded: nothing of a transaction that was undone.

Group commit puts the batches of many sources in one transaction. When a later write of that
transaction fails (a row that cannot be written), the whole transaction is undone, and the
sources it held are read again by the next scan. The scan's counters of what it recorded
(new hits and calls, malformed and oversized lines, result paths outside memory, renamed and
reset transcripts) must leave out what was undone, as the persisted counters do; otherwise
two scans together report those lines twice.
"""

from __future__ import annotations

import sqlite3

import pytest

from memoryd import faults
from memoryd.ingest import sqlite_source
from memoryd.ingest.scan import Scanner
from support import transcripts as tx
from support.scanner_install import Install, conversation, expected, insert_events, openclaw_db

pytestmark = pytest.mark.unit

STAMP = "2026-09-20T08-00-00.000Z"
# A row that cannot be written: the archive file's record, refused by a trigger of the scan's
# own connection (as SQLite refuses a value it cannot hold), not a fault of the database.
REFUSE_ARCHIVES = (
    "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.archives_read "
    "BEGIN SELECT RAISE(ABORT, 'this row cannot be written'); END"
)
LIMITS = "[ingest]\nchunk_bytes = 4096\nmax_line_bytes = 4096\n"


def bad_lines() -> list[bytes]:
    """One malformed line, one over max_line_bytes, one answer naming a file outside memory."""
    return [
        b'{"type": "message", "memory_search": broken\n',
        tx.chatter(0).rstrip(b"\n")[:-1] + b', "pad": "' + b"x" * 5000 + b'"}\n',
        tx.call("out1"),
        tx.result("out1", tx.search_payload(["/etc/passwd"])),
    ]


def test_a_scan_whose_transaction_is_undone_counts_none_of_its_lines(tmp_path):
    inst = Install(tmp_path, LIMITS)
    inst.append("a.jsonl", b"".join(conversation(6, "a")))
    inst.append("r.jsonl", b"".join(conversation(2, "r")))
    assert inst.scan().errors == 0
    # Then: a.jsonl rewritten shorter (a reset), r.jsonl renamed on a reset, a store session
    # with a bad row, and an archive of a deleted session; each with bad lines.
    (inst.sessions / "a.jsonl").write_bytes(b"".join(conversation(3, "b") + bad_lines()))
    (inst.sessions / "r.jsonl").rename(inst.sessions / f"r.jsonl.reset.{STAMP}")
    inst.append(f"r.jsonl.reset.{STAMP}", b"".join(conversation(3, "r")[9:]))
    _db, conn = openclaw_db(inst)
    insert_events(conn, "sA", [*conversation(2, "s"), b"not an event\n"])
    conn.close()
    archive = b"".join(conversation(2, "z") + bad_lines()[:1])
    zstd = sqlite_source.zstd_module()
    (inst.sessions / f"z.jsonl.deleted.{STAMP}.zst").write_bytes(zstd.compress(archive))

    def refuse_archives(db: sqlite3.Connection) -> None:
        db.execute(REFUSE_ARCHIVES)

    faults.hook("store.opened", refuse_archives)
    inst.restart()
    faults.hook("store.opened", None)
    undone = inst.scan()  # every source in one transaction, undone at the archive's record
    assert undone.errors == 1 and undone.failed_sources[0]["source"].endswith(".zst")
    inst.store.conn.execute("DROP TRIGGER temp.refuse")
    again = inst.scan()
    assert again.errors == 0
    assert inst.counts() == expected(6, 3, 3, 2, 2)
    counters = inst.store.counters()
    both = {
        name: getattr(undone, name) + getattr(again, name)
        for name in ("malformed", "oversized", "non_memory_paths", "renamed", "resets")
    }
    assert both == {
        "malformed": 3,  # a.jsonl's, the store's row, the archive's
        "oversized": 1,
        "non_memory_paths": 1,
        "renamed": 1,
        "resets": 1,
    }
    assert (counters["malformed_lines"], counters["oversized_lines"]) == (3, 1)
    resets = inst.store.conn.execute("SELECT SUM(resets) FROM sources").fetchone()[0]
    assert resets == 1
    # (a.jsonl's 3 searches, r's third, the store's 2 and the archive's 2)
    assert undone.new_hits == 0 and again.new_hits == sum(expected(3, 2, 2).values()) + 2


def test_a_failure_recorded_before_a_later_write_undoes_the_transaction_is_kept(tmp_path):
    """A source's failure is recorded for ``status`` (and counted in ``read_errors``) in the
    scan's open transaction; a later source whose write fails undoes that transaction. Both
    failures are recorded, as the summary says."""
    inst = Install(tmp_path)
    inst.append("a.jsonl", b"".join(conversation(2, "a")))
    db, conn = openclaw_db(inst)
    conn.close()
    for side in db.parent.glob("openclaw-agent.sqlite*"):
        side.unlink()
    db.write_bytes(b"this is not a database" * 100)  # fails: not a database
    zstd = sqlite_source.zstd_module()
    archive = b"".join(conversation(1, "z"))
    (inst.sessions / f"z.jsonl.deleted.{STAMP}.zst").write_bytes(zstd.compress(archive))
    faults.hook("store.opened", lambda c: c.execute(REFUSE_ARCHIVES))
    inst.restart()
    faults.hook("store.opened", None)
    stats = inst.scan()
    assert stats.errors == 2
    failed = inst.store.conn.execute("SELECT source FROM source_failures").fetchall()
    assert sorted(f for (f,) in failed) == sorted(f["source"] for f in stats.failed_sources)
    assert inst.store.counters()["read_errors"] == 2


class Crash(BaseException):
    """memoryd stopping right after a commit (not an Exception: no barrier catches it)."""


def test_an_archive_read_again_after_a_crash_counts_its_bad_lines_once(tmp_path):
    """An archive is committed in several batches and recorded read with the last: memoryd
    stopped after an earlier batch's commit reads it whole again. Its malformed and oversized
    lines are counted once in all (as the hits are, being unique per call), not once for the
    part committed before the stop and again for the whole."""
    inst = Install(tmp_path, LIMITS)
    lines = conversation(3, "z")
    archive = b"".join([lines[0], *bad_lines(), *lines[1:]])
    zstd = sqlite_source.zstd_module()
    (inst.sessions / f"z.jsonl.deleted.{STAMP}.zst").write_bytes(zstd.compress(archive))
    scanner = Scanner(inst.cfg, inst.paths, inst.store)
    scanner.ledger.commit_bytes = 1  # a commit after every line
    commits = [0]

    def stop(*_: object) -> None:
        commits[0] += 1
        if commits[0] == 6:  # the bad lines' batches committed, the archive not recorded read
            raise Crash

    faults.hook("scan.committed", stop)
    try:
        with pytest.raises(Crash):
            scanner.scan()
    finally:
        faults.hook("scan.committed", None)
    inst.restart()
    stats = inst.scan()
    assert stats.errors == 0 and inst.counts() == expected(3)
    assert (stats.malformed, stats.oversized) == (1, 1)
    counters = inst.store.counters()
    assert (counters["malformed_lines"], counters["oversized_lines"]) == (1, 1)
    assert inst.scan().files_read == 0
