"""A person's edit racing memoryd, and a file system that refuses: no edit lost, one name each.

The races are made exact with fault points (``memoryd.faults``): the editor's save
happens at the very moment between the mover's check and its act, every run, with
no sleeps. A read-only ``memory/`` is simulated with ``MEMORYD_FAULT=...:erofs`` at
the step that removes the source's name, because the tests run as root and a
read-only folder does not stop root.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from memoryd import faults
from memoryd.config import Config, OpenClawConfig, resolve_paths
from memoryd.jobs import organize
from memoryd.move_files import MoveError
from memoryd.mover import Mover
from memoryd.store import Store
from memoryd.tierstore import DAY

NOW = "2026-11-03T10:00:00+00:00"
OLD = 1.7e9  # 2023: old enough for expire


def save_by_rename(path: Path, data: bytes) -> None:
    """What vim, VS Code and most editors do: write a temp file, rename it over the note."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_bytes(data)
    os.rename(tmp, path)


def append_in_place(path: Path, data: bytes) -> None:
    """What an editor that writes in place (or `echo >>`) does: the same inode, edited."""
    with open(path, "ab") as fh:
        fh.write(data)


def files_under(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def journal(store: Store) -> list[tuple[str, str]]:
    return list(store.conn.execute("SELECT op, state FROM moves ORDER BY id"))


# --------------------------------------------------------------------------- item 1


@pytest.mark.parametrize("moment", ["mover.placed", "mover.before_unlink"])
def test_a_save_by_rename_during_a_move_is_never_lost(ws: Path, store: Store, moment: str):
    src = ws / "memory" / "2025-01-12.md"
    src.write_bytes(b"# old version\n")
    dst = ws / "memory-archive" / "2026-11" / "memory" / "2025-01-12.md"
    faults.hook(moment, lambda: save_by_rename(src, b"# the user's new version\n"))

    with contextlib.suppress(MoveError):  # refused or done: either way nothing may be lost
        Mover(store, [ws]).move(src, dst, reason="expire", batch="b")

    files = files_under(ws)
    assert files["memory/2025-01-12.md"] == b"# the user's new version\n"
    archived = files.get("memory-archive/2026-11/memory/2025-01-12.md")
    assert archived in (None, b"# old version\n")  # only ever the version memoryd checked
    assert len(files) == 1 + (archived is not None), files  # no hidden leftovers
    assert os.stat(src).st_nlink == 1
    assert journal(store) == [("move", "done" if archived else "rolled_back")]


@pytest.mark.parametrize("moment", ["mover.checked", "mover.before_unlink"])
def test_a_save_by_rename_during_a_delete_is_never_lost(ws: Path, store: Store, moment: str):
    src = ws / "memory" / "n.md"
    src.write_bytes(b"# old\n")
    faults.hook(moment, lambda: save_by_rename(src, b"# new\n"))
    with contextlib.suppress(MoveError):
        Mover(store, [ws]).delete(src, reason="test", batch="b")
    assert files_under(ws) == {"memory/n.md": b"# new\n"}
    assert [state for _, state in journal(store)] != ["intent"]


def test_an_edit_in_place_between_link_and_unlink_rolls_the_move_back(ws: Path, store: Store):
    src = ws / "memory" / "n.md"
    src.write_bytes(b"# old\n")
    dst = ws / "archive" / "n.md"

    faults.hook("mover.placed", lambda: append_in_place(src, b"one more line\n"))
    with pytest.raises(MoveError, match="changed"):
        Mover(store, [ws]).move(src, dst, reason="expire", batch="b")
    assert files_under(ws) == {"memory/n.md": b"# old\none more line\n"}
    assert journal(store) == [("move", "rolled_back")]


# --------------------------------------------------------------------------- item 2


def test_organize_never_deletes_an_edit_made_after_the_graveyard_copy(tmp_path: Path):
    state = tmp_path / "oc"
    state.mkdir()
    cfg = Config(openclaw=OpenClawConfig(state_dir=str(state)))
    paths = resolve_paths(cfg, {})
    root = paths.tiers_root
    note = root / "forgotten" / "checkpoint.md"
    note.parent.mkdir(parents=True)
    note.write_bytes(b"# old checkpoint\n")
    t0 = 1_772_323_200.0
    os.utime(note, (t0, t0))
    with Store.open(paths.db) as store:
        organize.run(cfg, paths, store, t0)
        faults.hook("organize.buried", lambda: save_by_rename(note, b"# edited after burial\n"))
        result = organize.run(cfg, paths, store, t0 + 31 * DAY)  # due for deletion
        faults.clear()
        actions = result.data["actions"]
        deletes = [r for r in actions if r["op"] == "delete" and r["note"] == "checkpoint.md"]
        unfinished = store.conn.execute("SELECT COUNT(*) FROM moves WHERE state = 'intent'")
        assert unfinished.fetchone()[0] == 0

    assert note.read_bytes() == b"# edited after burial\n"
    assert len(deletes) == 1 and deletes[0]["status"] == "failed"
    assert "changed" in deletes[0]["error"]
    assert "1 failed" in result.summary
    # The graveyard holds the version that was meant to go, named by its own hash.
    (archive,) = (paths.memoryd_dir / "graveyard").glob("*.zip")
    with zipfile.ZipFile(archive) as zf:
        (entry,) = zf.namelist()
        assert zf.read(entry) == b"# old checkpoint\n"


# --------------------------------------------------------------------------- item 3


class Install:
    def __init__(self, root: Path) -> None:
        self.state = root / "oc"
        self.ws = self.state / "workspace"
        (self.ws / "memory").mkdir(parents=True)
        (self.state / "agents" / "main" / "sessions").mkdir(parents=True)
        self.home = root
        self.db = self.state / "memoryd" / "state.db"

    def run(self, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.update(HOME=str(self.home), OPENCLAW_STATE_DIR=str(self.state), MEMORYD_NOW=NOW)
        if fault:
            env["MEMORYD_FAULT"] = fault
        return subprocess.run(
            [sys.executable, "-m", "memoryd", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def moves(self) -> list[tuple[str, str]]:
        with Store.open(self.db, readonly=True) as store:
            return journal(store)


def test_a_failed_unlink_rolls_back_to_exactly_one_name(tmp_path: Path):
    inst = Install(tmp_path)
    note = inst.ws / "memory" / "2023-01-05.md"
    note.write_bytes(b"# an old note\n")
    os.utime(note, (OLD, OLD))
    digest = hashlib.sha256(note.read_bytes()).hexdigest()
    archive = inst.ws / "memory-archive" / "2026-11"
    read_only_memory = "mover.unlink_src:*:erofs"

    for attempt in range(2):
        proc = inst.run("expire", "--force", "--json", fault=read_only_memory)
        assert "Traceback" not in proc.stderr, proc.stderr
        doc = json.loads(proc.stdout)
        assert proc.returncode == 1  # a file could not be moved
        assert doc["archive"] == [] and len(doc["failed"]) == 1
        assert "read-only" in doc["failed"][0]["error"].lower()
        assert os.stat(note).st_nlink == 1  # one name: no archive link left behind
        assert [p for p in archive.rglob("*") if p.is_file()] == []  # and no `~2` next time
        assert inst.moves() == [("move", "rolled_back")] * (attempt + 1)

    # Writable again: the move happens; a restore that cannot unlink rolls back too.
    proc = inst.run("expire", "--force", "--json")
    assert len(json.loads(proc.stdout)["archive"]) == 1, proc.stderr
    archived = archive / "memory" / "2023-01-05.md"
    assert not note.exists() and os.stat(archived).st_nlink == 1
    proc = inst.run("restore", "--last", "--json", fault=read_only_memory)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not note.exists() and os.stat(archived).st_nlink == 1
    assert inst.moves()[-1] == ("move", "rolled_back")

    proc = inst.run("restore", "--last", "--json")
    assert proc.returncode == 0, proc.stderr
    assert os.stat(note).st_nlink == 1 and not archived.exists()
    assert hashlib.sha256(note.read_bytes()).hexdigest() == digest
    assert ("move", "intent") not in inst.moves()


def test_a_destination_that_appears_meanwhile_is_never_removed(ws: Path, store: Store):
    """Somebody else's file at the destination, even with the same bytes, is theirs."""
    src = ws / "memory" / "n.md"
    src.write_bytes(b"# same bytes\n")
    dst = ws / "archive" / "n.md"
    dst.parent.mkdir()
    faults.hook("mover.journaled", lambda: dst.write_bytes(b"# same bytes\n"))
    with pytest.raises(MoveError, match="already exists"):
        Mover(store, [ws]).move(src, dst, reason="expire", batch="b")
    assert files_under(ws) == {"archive/n.md": b"# same bytes\n", "memory/n.md": b"# same bytes\n"}
    assert journal(store) == [("move", "rolled_back")]


def test_an_edit_in_place_then_a_save_leave_no_archive_name_behind(ws: Path, store: Store):
    """An edit in place reaches memoryd's hard link too; a save by rename right after the
    source went aside takes its name back. The edited version stays (aside, reported), the
    new save keeps the note's name, and the archive holds no name the journal disowns."""
    src = ws / "memory" / "n.md"
    src.write_bytes(b"# old\n")
    dst = ws / "archive" / "n.md"

    faults.hook("mover.placed", lambda: append_in_place(src, b"edited in place\n"))
    faults.hook("mover.aside", lambda: save_by_rename(src, b"# saved by rename\n"))
    with pytest.raises(MoveError, match="kept at"):
        Mover(store, [ws]).move(src, dst, reason="expire", batch="b")

    files = files_under(ws)
    assert files.pop("memory/n.md") == b"# saved by rename\n"
    assert list(files.values()) == [b"# old\nedited in place\n"]  # one name for that version
    assert not dst.exists()
    assert journal(store) == [("move", "rolled_back")]


def test_a_version_kept_aside_earlier_is_never_overwritten_by_a_later_move(ws: Path, store: Store):
    """A file kept aside by an earlier run (its name was taken) stays in the folder; a state
    database made anew numbers its journal from 1 again, so a later move may pick the very
    same aside name. The kept version must survive that."""
    src = ws / "memory" / "n.md"
    src.write_bytes(b"# today's note\n")
    kept = ws / "memory" / ".n.md.memoryd-1.aside"
    kept.write_bytes(b"# the earlier version a person may still want\n")
    with contextlib.suppress(MoveError):
        Mover(store, [ws]).move(src, ws / "archive" / "n.md", reason="expire", batch="b")
    assert kept.read_bytes() == b"# the earlier version a person may still want\n"
    files = files_under(ws)
    assert b"# today's note\n" in files.values()
    assert len(files) == 2, files  # the note under one name, the kept version under its own
    assert journal(store)[0][1] != "intent"


def test_two_expire_runs_at_once_move_each_note_once_and_fail_none(tmp_path: Path) -> None:
    """Two ``expire --force`` at once (or one beside the daemon's): each planned the same
    notes, then reported "FAILED …: does not exist" for those the other had moved, exit 1,
    and the month's archive was split into two batches (``restore --last`` undid half).
    Now a moving run holds expire's lock from its plan to its last move: the second waits,
    plans what is left (nothing), and both end well. Ordered by a fault point: the first
    stops after its first move, the second runs until it ends or waits for a lock, then
    the first goes on."""
    import signal

    from support import transcripts as tx
    from support.stopped import finish, spawn, until_ended_or_waiting, wait_stopped

    notes = [f"memory/old{i}.md" for i in range(6)]
    _sessions, ws, cfg = tx.make_install(tmp_path, ["MEMORY.md", *notes])
    long_ago = tx.T0 - 400 * DAY
    for rel in notes:
        os.utime(ws / rel, (long_ago, long_ago))
    first = spawn(cfg, "expire", "--force", "--json", fault="expire.moving:2:stop")
    wait_stopped(first)  # one note moved, five to go
    second = spawn(cfg, "expire", "--force", "--json")
    until_ended_or_waiting(second)
    first.send_signal(signal.SIGCONT)
    (rc1, out1, err1), (rc2, out2, err2) = finish(first), finish(second)
    assert (rc1, rc2) == (0, 0), (err1, err2)
    assert "another expire run is moving files; waiting for it to end" in err2  # (said)
    runs = [json.loads(out1), json.loads(out2)]
    assert sorted(a["path"] for run in runs for a in run["archive"]) == notes
    assert not any(run.get("failed") for run in runs), runs
    assert [len(run["archive"]) for run in runs] == [6, 0]
    with Store.open(tmp_path / "md" / "state.db") as store:
        batches = {b for (b,) in store.conn.execute("SELECT DISTINCT batch FROM moves")}
    assert len(batches) == 1, batches


@pytest.mark.parametrize("command", [("restore", "--last"), ("retire", "--force"), ("organize",)])
def test_a_command_waiting_for_the_journal_another_process_holds_says_so(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """``restore --last``, ``retire --force`` and ``organize`` waited without a word while
    another process held the mover's lock (an ``expire --force`` stopped with Ctrl-Z, a long
    run on a slow disk): a terminal that seemed hung. Each says so on stderr before it waits,
    then does its work once the other has ended. Ordered by a fault point: the holder stops
    inside a move, the lock taken."""
    import signal

    from support import transcripts as tx
    from support.stopped import finish, spawn, until_ended_or_waiting, wait_stopped

    notes = [f"memory/old{i}.md" for i in range(3)]
    _sessions, ws, cfg = tx.make_install(tmp_path, ["MEMORY.md", *notes])
    long_ago = tx.T0 - 400 * DAY
    for rel in notes:
        os.utime(ws / rel, (long_ago, long_ago))
    (tmp_path / "state" / "memory_fs").mkdir()  # (organize works only on a tier store)
    first = spawn(cfg, "expire", "--force", fault="mover.placed:2:stop")
    wait_stopped(first)  # inside its second move, the journal's lock held
    second = spawn(cfg, *command)
    until_ended_or_waiting(second)
    assert second.poll() is None, second.communicate()  # (it waits: the lock is taken)
    first.send_signal(signal.SIGCONT)
    (rc1, _out1, err1), (rc2, out2, err2) = finish(first), finish(second)
    assert rc1 == 0, err1
    assert f"another memoryd process holds {tmp_path / 'md' / 'mover.lock'}" in err2, err2
    assert err2.count("waiting for it to finish") == 1, err2  # (once, not once a move)
    if command[0] == "restore":
        assert rc2 == 0 and "undoing the expire run" in out2, (out2, err2)
        assert all((ws / rel).exists() for rel in notes)
