"""Faults that speak (issue 23): a full state disk, a damaged state database, a wild clock, a
corrupt OpenClaw store, an absurd read size, oversized lines — each reported where a user or an
operator looks (``status``, the command's stderr and ``--json``, one log line), never as a
traceback, and never at the cost of a hit.

The full disk is a fault point (``MEMORYD_FAULT=@file``: ``ENOSPC`` at the ledger's commit for
as long as the file names it), so the disk fills and empties again under a running daemon on
any machine, as root or not. The damaged database is the real thing: ``state.db`` truncated,
or 8 KiB of garbage written into it, under the real daemon.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from support.daemon_harness import (
    DaemonProcess,
    Install,
    append,
    hit_count,
    hit_lines,
    make_install,
    run_cli,
    start,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)

NO_SPACE = "no space left on the state disk"


def status(inst: Install, *args: str) -> tuple[int, dict | str]:
    r = run_cli(inst, "status", *args)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, (json.loads(r.stdout) if "--json" in args else r.stdout + r.stderr)


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# --------------------------------------------------------------------------- 1. a full disk


def test_a_full_state_disk_backs_off_shows_in_status_and_loses_no_hit(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    from memoryd.health import retry_delay

    inst = make_install(tmp_path)
    fault = tmp_path / "fault"
    d = start(inst, daemons, MEMORYD_FAULT=f"@{fault}")
    d.wait_ready()
    append(inst.transcript("a"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: hit_count(inst.db) == 1)

    fault.write_text("ledger.commit:*:enospc")  # the disk is full from now on
    append(inst.transcript("a"), hit_lines(["memory/n002.md"]))
    append(inst.transcript("b"), hit_lines(["memory/n003.md", "MEMORY.md"]))

    def failing() -> tuple[float, dict] | None:
        t = time.monotonic()
        code, doc = status(inst, "--json")
        info = doc["daemon"]["scan_failing"]
        return (t, info) if info and code == 1 else None

    t0, first = wait_until(failing)
    assert first["reason"] == NO_SPACE and first["since"].endswith("Z")
    code, text = status(inst)
    assert code == 1
    assert f"scans failing since {first['since']}: {NO_SPACE}" in text

    # Back-off: three more tries take at least two full delays after the one status saw.
    a0 = first["attempts"]
    _, later = wait_until(
        lambda: (f := failing()) and f[1]["attempts"] >= a0 + 3 and f, timeout=120
    )
    assert time.monotonic() - t0 >= retry_delay(a0 + 1) + retry_delay(a0 + 2)
    assert hit_count(inst.db) == 1, "nothing was committed while the disk was full"

    fault.write_text("")  # room again
    wait_until(lambda: status(inst, "--json")[0] == 0, timeout=120)
    wait_until(lambda: hit_count(inst.db) == 4)
    code, doc = status(inst, "--json")
    assert doc["daemon"]["scan_failing"] is None and doc["hits"]["total"] == 4
    # The fault logged once when it began and once when it ended, however many tries.
    failed = [e for e in d.events("ingest.scan_failed") if e["level"] == "error"]
    assert len(failed) == 1 and failed[0]["error"] == NO_SPACE, failed
    recovered = d.events("ingest.scan_recovered")
    assert len(recovered) == 1 and recovered[0]["failed_attempts"] >= later["attempts"]
    assert d.stop() == 0
    assert hit_count(inst.db) == 4, "counted once each"


# --------------------------------------------------------------------------- 2. damage


def _damaged_stop(d: DaemonProcess, inst: Install) -> str:
    """The daemon stopped with exit 1 and one ``state.database_damaged`` line; its message."""
    assert d.proc is not None
    assert d.proc.wait(60) == 1
    damaged = d.events("state.database_damaged")
    assert len(damaged) == 1, d.logs()[-5:]
    message = damaged[0]["message"]
    assert str(inst.db) in message and "is damaged" in message
    assert "restore it from a backup, or move it aside" in message
    assert "exception" not in damaged[0]
    assert not [e for e in d.logs() if "Traceback" in str(e)]
    return message


def _status_says(inst: Install, message: str) -> None:
    for args in ((), ("--json",)):
        r = run_cli(inst, "status", *args)
        assert r.returncode == 1, r.stdout
        assert one_line(r.stderr) == f"memoryd: {message}"


def test_a_state_database_truncated_under_the_daemon_stops_it_at_the_next_write(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons)
    d.wait_ready()
    wait_until(lambda: len(d.events("job.done")) == 3)  # (no job opens the file meanwhile)
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: hit_count(inst.db) == 1)

    os.truncate(inst.db, 0)
    append(inst.transcript("s"), hit_lines(["memory/n002.md"]))  # the next write
    message = _damaged_stop(d, inst)
    assert "truncated to 0 bytes" in message
    _status_says(inst, message)


def _started_with_a_clock_offset_file(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> tuple[Install, Path, DaemonProcess]:
    """A daemon ready on a new install, its clock moved by an offset file (0 for now) that a
    test rewrites to move the clock, or to put a wild value in it."""
    inst = make_install(tmp_path)
    offset = tmp_path / "clock-offset"
    offset.write_text("0")
    d = start(inst, daemons, MEMORYD_CLOCK_OFFSET_FILE=str(offset))
    d.wait_ready()
    return inst, offset, d


def test_garbage_inside_the_state_database_is_found_by_the_daily_check_and_at_start(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst, offset, d = _started_with_a_clock_offset_file(tmp_path, daemons)
    for k in range(10):
        append(inst.transcript(f"s{k}"), hit_lines([f"memory/n{k:03d}.md"]))
    wait_until(lambda: hit_count(inst.db) == 10)

    # Every page in the database file (none left only in the WAL), then 8 KiB of garbage
    # over pages 2 and 3: nothing the daemon writes next needs to touch them.
    conn = sqlite3.connect(inst.db, timeout=30)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    with open(inst.db, "r+b") as fh:
        fh.seek(4096)
        fh.write(bytes(range(256)) * 32)
    offset.write_text(str(26 * 3600))  # a day later (the machine slept)
    message = _damaged_stop(d, inst)
    _status_says(inst, message)

    # A start on it checks first: the same line, exit 1, nothing counted into it.
    again = start(inst, daemons, MEMORYD_CLOCK_OFFSET_FILE=str(offset))
    assert _damaged_stop(again, inst) == message

    # Moved aside, as the message says: status no longer speaks of it.
    inst.db.rename(inst.db.with_name("state.db.damaged"))
    r = run_cli(inst, "status")
    assert r.returncode == 0, r.stderr


def test_status_without_a_daemon_stops_on_a_damaged_page_as_every_command_does(
    tmp_path: Path,
) -> None:
    """Zeroed pages in the middle of ``state.db`` (no daemon to find them first): ``hits``
    stops with exit 1 and the damaged line; ``status`` said "0 total" and exit 0, with a
    warning at the end. Now it stops alike."""
    inst = make_install(tmp_path)
    for k in range(30):
        append(inst.transcript(f"s{k}"), hit_lines([f"memory/n{k % 10:03d}.md"]))
    assert run_cli(inst, "scan").returncode == 0
    conn = sqlite3.connect(inst.db, timeout=30)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    assert pages > 6
    with open(inst.db, "r+b") as fh:
        fh.seek(2 * 4096)
        fh.write(bytes(4 * 4096))
    hits = run_cli(inst, "hits", "--no-scan")
    assert hits.returncode == 1 and "is damaged" in hits.stderr, hits.stderr
    status = run_cli(inst, "status")
    assert status.returncode == 1, status.stdout
    assert one_line(status.stderr) == one_line(hits.stderr)


# --------------------------------------------------------------------------- 3. the clock

WILD_CLOCKS = [
    ("MEMORYD_NOW", "1e20"),
    ("MEMORYD_NOW", "1e308"),
    ("MEMORYD_NOW", "0001-01-01T00:00:00Z"),
    ("MEMORYD_NOW", "-62135596800"),
    ("MEMORYD_CLOCK_OFFSET", "1e20"),
    ("MEMORYD_CLOCK_OFFSET", "-1e20"),
]


@pytest.mark.parametrize("name,value", WILD_CLOCKS)
def test_a_clock_out_of_range_is_refused_in_one_line(tmp_path: Path, name: str, value: str) -> None:
    inst = make_install(tmp_path)
    r = run_cli(inst, "status", env_extra={name: value})
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert f"${name}" in line and "1970" in line


@pytest.mark.parametrize(
    "command",
    [
        ("status",),
        ("expire",),
        ("explain", "memory/n001.md"),
        ("reflect",),
        ("promote",),
        ("run",),
    ],
    ids=lambda c: c[0],
)
def test_every_command_refuses_a_wild_clock(tmp_path: Path, command: tuple[str, ...]) -> None:
    inst = make_install(tmp_path)
    r = run_cli(inst, *command, env_extra={"MEMORYD_NOW": "1e20"})
    assert r.returncode == 2, "2: a person must fix it (systemd does not restart the daemon)"
    assert "$MEMORYD_NOW" in one_line(r.stderr)


def test_a_running_daemon_ignores_a_wild_offset_file_with_one_warning(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst, offset, d = _started_with_a_clock_offset_file(tmp_path, daemons)
    offset.write_text("1e20")
    d.wait_event("clock.offset_ignored")
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: hit_count(inst.db) == 1)  # (the clock read again and again meanwhile)
    code, doc = status(inst, "--json")
    assert code == 0 and doc["hits"]["last_hour"] == 1, "the hit is stamped with a sane time"
    ignored = d.events("clock.offset_ignored")
    assert len(ignored) == 1 and ignored[0]["level"] == "warning", ignored
    assert "1e20" in ignored[0]["text"] and "ignored" in ignored[0]["text"]
    d.check_alive()
    assert d.stop() == 0


# --------------------------------------------------------------------------- 4. a corrupt store


def _corrupt_openclaw_store(inst: Install) -> Path:
    store = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_bytes(b"this is not a database, whatever its name says\n" * 200)
    return store


def test_a_corrupt_openclaw_store_is_one_line_without_debug(tmp_path: Path) -> None:
    inst = make_install(tmp_path / "plain")
    store = _corrupt_openclaw_store(inst)
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    r = run_cli(inst, "scan")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr, r.stderr
    failed = [json.loads(ln) for ln in r.stderr.splitlines() if ln.startswith("{")]
    assert [f["event"] for f in failed] == ["ingest.source_failed"]
    assert failed[0]["source"] == str(store) and "not a database" in failed[0]["reason"]
    assert r.stderr.strip().splitlines()[-1].startswith("memoryd: 1 source could not be read")
    assert hit_count(inst.db) == 1, "the other transcripts are read"

    # The traceback is there for whoever asks (a failure is logged once: another install).
    again = make_install(tmp_path / "debug")
    _corrupt_openclaw_store(again)
    debug = run_cli(again, "scan", "--debug")
    assert debug.returncode == 1
    traced = [json.loads(ln) for ln in debug.stderr.splitlines() if ln.startswith("{")]
    assert [t["event"] for t in traced] == ["ingest.source_failed", "ingest.source_traceback"]
    assert "Traceback (most recent call last)" in traced[1]["traceback"]


# --------------------------------------------------------------------------- 5. chunk_bytes


def test_an_absurd_chunk_size_is_refused_at_load(tmp_path: Path) -> None:
    inst = make_install(
        tmp_path, "[ingest]\nchunk_bytes = 1099511627776\nmax_line_bytes = 2199023255552\n"
    )
    r = run_cli(inst, "hits")
    assert r.returncode == 2
    assert one_line(r.stderr).startswith("memoryd: ingest.chunk_bytes: must be between")


def test_a_read_command_whose_catch_up_scan_failed_says_so(tmp_path: Path) -> None:
    inst = make_install(tmp_path)
    store = _corrupt_openclaw_store(inst)
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    for command in (("hits",), ("expire",)):
        r = run_cli(inst, *command)
        assert r.returncode == 0, r.stderr
        said = [ln for ln in r.stderr.splitlines() if ln.startswith("memoryd:")]
        assert len(said) == 1 and "catch-up scan did not read everything" in said[0], r.stderr
        assert str(store) in said[0]
        doc = json.loads(run_cli(inst, *command, "--json").stdout)
        assert [f["source"] for f in doc["catch_up_failed_sources"]] == [str(store)]
    clean = make_install(tmp_path / "clean")
    assert "catch_up_failed_sources" not in json.loads(run_cli(clean, "hits", "--json").stdout)


# --------------------------------------------------------------------------- 6. oversized lines


def test_status_counts_oversized_lines(tmp_path: Path) -> None:
    inst = make_install(tmp_path, "[ingest]\nchunk_bytes = 4096\nmax_line_bytes = 4096\n")
    big = json.dumps({"type": "message", "text": "x" * 10_000, "tool": "memory_get"})
    append(inst.transcript("s"), big.encode() + b"\n" + hit_lines(["memory/n001.md"]))
    assert run_cli(inst, "scan").returncode == 0
    code, doc = status(inst, "--json")
    assert code == 0 and doc["oversized_lines"] == 1 and doc["hits"]["total"] == 1
    assert "oversized:   1 lines" in status(inst)[1]


def test_a_long_reason_in_another_script_keeps_the_health_note_readable(tmp_path: Path) -> None:
    from memoryd.health import HEALTH_BYTES, HEALTH_NAME, HealthNote, read_health

    note = HealthNote(tmp_path)
    reason = "磁盘已满，" * 600  # 3000 characters, 9000 bytes in UTF-8
    damaged = {"db": str(tmp_path / "state.db"), "dev": 1, "ino": 2, "message": reason, "at": 1.0}
    note.update(scan_failing={"since": 1.0, "reason": reason, "attempts": 3}, damaged=damaged)
    note.close()
    assert (tmp_path / HEALTH_NAME).stat().st_size == HEALTH_BYTES
    doc = read_health(tmp_path)
    assert doc["scan_failing"]["attempts"] == 3 and doc["damaged"]["ino"] == 2
    assert reason.startswith(doc["scan_failing"]["reason"]) and doc["scan_failing"]["reason"]
    assert reason.startswith(doc["damaged"]["message"]) and doc["damaged"]["message"]


def test_status_stops_at_the_first_read_another_process_keeps_locked(tmp_path: Path) -> None:
    """Another process holding ``state.db`` locked: each read of ``status`` waited the full
    30 s and went on to the next (90 s in all). The first such wait now ends it: exit 1,
    one line that says it is a lock, not damage. (A real SQLITE_BUSY from a real lock; the
    wait is left out: this reader does not wait at all.)"""
    from types import SimpleNamespace

    from memoryd.commands.status import _stop_if_unreadable
    from memoryd.store_errors import StoreError

    db = tmp_path / "state.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    reader = sqlite3.connect(db, timeout=0)
    try:
        with pytest.raises(sqlite3.OperationalError) as busy:
            reader.execute("SELECT * FROM t").fetchall()
        with pytest.raises(StoreError) as stopped:
            _stop_if_unreadable(SimpleNamespace(paths=SimpleNamespace(db=db)), busy.value)
        assert str(stopped.value).startswith(f"{db}: locked by another process for more than")
        # anything else (a table an older memoryd lacks) is no reason to stop
        _stop_if_unreadable(SimpleNamespace(paths=SimpleNamespace(db=db)),
                            sqlite3.OperationalError("no such table: jobs"))  # fmt: skip
    finally:
        reader.close()
        holder.close()


def test_a_state_database_that_is_a_link_that_loops_is_said_by_status_too(tmp_path: Path) -> None:
    """``state.db`` a symbolic link that loops: every command said it cannot be opened
    (exit 1), while ``status`` took it for no database yet (exit 0, "not scanned yet"). Now
    it says so too. A link to a file not made yet (the state moved to another disk before
    the first scan) is no fault: the first scan creates it, and status says "not scanned
    yet" until then, as with no file at all."""
    inst = make_install(tmp_path)
    inst.db.unlink(missing_ok=True)
    os.symlink(inst.db.name, inst.db)
    r = run_cli(inst, "status")
    assert r.returncode == 1, r.stdout
    assert one_line(r.stderr) == (f"memoryd: state database {inst.db} cannot be opened "
                                  "(a symbolic link that loops)")  # fmt: skip
    inst.db.unlink()
    for there in (False, True):
        if there:
            os.symlink("elsewhere.db", inst.db)
        r = run_cli(inst, "status")
        assert r.returncode == 0 and "not scanned yet" in r.stdout, r.stderr
    assert run_cli(inst, "scan").returncode == 0
    assert (inst.db.parent / "elsewhere.db").is_file()


def test_an_empty_state_database_file_reads_as_not_scanned_yet(tmp_path: Path) -> None:
    """A 0-byte ``state.db`` (a copy that failed, a ``> state.db``): ``status`` stopped with
    "no such table: jobs", read-only reports alike. It holds nothing, so it reads as no
    database yet, and the next scan makes it one and counts the transcripts again. An empty
    file beside a write-ahead log that holds pages is a database all the same."""
    inst = make_install(tmp_path)
    assert run_cli(inst, "scan").returncode == 0
    counted = run_cli(inst, "hits", "--json").stdout
    for side in ("-wal", "-shm"):
        Path(f"{inst.db}{side}").unlink(missing_ok=True)
    inst.db.write_bytes(b"")
    r = run_cli(inst, "status")
    assert r.returncode == 0 and "not scanned yet" in r.stdout, r.stderr
    assert run_cli(inst, "scan").returncode == 0
    assert run_cli(inst, "hits", "--json").stdout == counted
    assert inst.db.stat().st_size > 0 or Path(f"{inst.db}-wal").stat().st_size > 0


def test_an_archive_the_journal_no_longer_knows_is_listed_not_forgotten(tmp_path: Path) -> None:
    """A damaged state.db moved aside, as its message advises: memoryd starts a new one, and
    the notes expire archived before sit in memory-archive/ with no journal entry.
    ``restore --all`` said "nothing in the archive to restore" and ``status`` "archive: 0
    files": the uninstall step left them out without a word. Now both name them (the
    message of the damage says so first), and nothing is moved on a guess."""
    inst = make_install(tmp_path)
    old = time.time() - 400 * 86400
    for note in (inst.workspace / "memory").glob("*.md"):
        os.utime(note, (old, old))
    done = json.loads(run_cli(inst, "expire", "--force", "--json").stdout)
    archived = sorted(a["to"] for a in done["archive"])
    assert archived
    for side in ("", "-wal", "-shm"):
        Path(f"{inst.db}{side}").unlink(missing_ok=True)
    status = run_cli(inst, "status")
    assert status.returncode == 0
    assert f"and {len(archived)} files in the archive that memoryd's move journal does not " \
        "know" in status.stdout  # fmt: skip
    before = sorted(p.relative_to(inst.workspace).as_posix()
                    for p in inst.workspace.rglob("*") if p.is_file())  # fmt: skip
    r = run_cli(inst, "restore", "--all", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["unjournaled"] == archived
    plain = run_cli(inst, "restore", "--all").stdout
    assert "nothing in the archive to restore" in plain and archived[0] in plain
    after = sorted(p.relative_to(inst.workspace).as_posix()
                   for p in inst.workspace.rglob("*") if p.is_file())  # fmt: skip
    assert after == before


@pytest.mark.parametrize("command", [("mark", "memory/n001.md"), ("pin", "memory/n00*")])
def test_a_mark_the_disk_could_not_keep_is_not_said_to_be_made(tmp_path: Path, command) -> None:
    """The state disk full at the commit: ``mark`` printed "marked memory/n001.md" and then
    stopped with "the disk is full", and nothing was marked. Now it says only the fault;
    with room again, the same command marks and says so."""
    inst = make_install(tmp_path)
    assert run_cli(inst, "scan").returncode == 0
    full = run_cli(inst, *command, env_extra={"MEMORYD_FAULT": "store.commit:*:enospc"})
    assert full.returncode == 1, full.stdout
    assert "marked" not in full.stdout and "pinned" not in full.stdout, full.stdout
    assert "No space left" in full.stderr or "full" in full.stderr, full.stderr
    listed = run_cli(inst, "pin") if command[0] == "pin" else None
    if listed is not None:
        assert "no pins" in listed.stdout
    else:
        assert "user marks: not marked" in run_cli(inst, "explain", "--no-scan",
                                                   command[1]).stdout  # fmt: skip
    ok = run_cli(inst, *command)
    assert ok.returncode == 0 and command[1] in ok.stdout


def test_status_counts_no_hit_stamped_far_ahead_as_of_the_last_hour(tmp_path: Path) -> None:
    """Reads stamped 200 days ahead (a clock set wrong where the transcript was written):
    hits and explain count none of them yet, as documented, while status said "2 last hour,
    2 last day". Its windows now end where theirs do (now + the day of skew allowed); the
    total is of every hit recorded."""
    inst = make_install(tmp_path)
    ahead = time.time() + 200 * 86400
    append(inst.transcript("s"), hit_lines(["memory/n001.md", "memory/n002.md"], ts=ahead))
    append(inst.transcript("s"), hit_lines(["memory/n003.md"]))
    assert run_cli(inst, "scan").returncode == 0
    doc = json.loads(run_cli(inst, "status", "--json").stdout)
    assert doc["hits"] == {"last_hour": 1, "last_day": 1, "total": 3}, doc["hits"]
