"""The mover: journaled moves that never lose, overwrite or escape — with real files and kills."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memoryd.move_files import MoveError, _temp_name
from memoryd.mover import Mover
from memoryd.store import Store


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _states(store: Store) -> list[tuple[int, str, str]]:
    return list(store.conn.execute("SELECT id, op, state FROM moves ORDER BY id"))


def test_move_keeps_bytes_and_mtime_and_journals_it(ws: Path, store: Store) -> None:
    src = ws / "memory" / "2026-01-02.md"
    src.write_bytes("# 船\n周六出海\n".encode())
    os.utime(src, (1_700_000_000, 1_700_000_000))
    digest = _sha(src)
    dst = ws / "memory-archive" / "2026-03" / "memory" / "2026-01-02.md"

    move_id = Mover(store, [ws]).move(src, dst, reason="expire: 0 hits", batch="b1")

    assert not src.exists()
    assert _sha(dst) == digest
    assert dst.stat().st_mtime == 1_700_000_000
    rec = Mover(store, [ws]).get(move_id)
    assert rec is not None
    assert (rec.op, rec.state, rec.sha256, rec.size) == ("move", "done", digest, dst.stat().st_size)
    assert rec.src == str(src.resolve()) and rec.dst == str(dst.resolve())


def test_never_overwrites_an_existing_destination(ws: Path, store: Store) -> None:
    src = ws / "memory" / "a.md"
    dst = ws / "memory" / "b.md"
    src.write_text("mine")
    dst.write_text("theirs")
    with pytest.raises(MoveError, match="never overwrites"):
        Mover(store, [ws]).move(src, dst, reason="t", batch="b")
    assert src.read_text() == "mine" and dst.read_text() == "theirs"
    assert _states(store) == []  # refused before any intent was written


def test_refuses_paths_outside_the_roots_and_symlinks(
    ws: Path, store: Store, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("do not touch")
    (ws / "memory" / "link.md").symlink_to(secret)
    (ws / "memory" / "inner-link.md").symlink_to(ws / "memory" / "real.md")
    (ws / "memory" / "real.md").write_text("real")
    (ws / "memory" / "escape").symlink_to(outside, target_is_directory=True)
    mover = Mover(store, [ws])

    attempts = [
        (secret, ws / "memory" / "x.md"),  # source outside
        (ws / "memory" / "real.md", outside / "stolen.md"),  # destination outside
        (ws / "memory" / ".." / ".." / "outside" / "secret.md", ws / "memory" / "y.md"),
        (ws / "memory" / "link.md", ws / "memory" / "z.md"),  # symlink to outside
        (ws / "memory" / "inner-link.md", ws / "memory" / "z.md"),  # any symlink
        (ws / "memory" / "escape" / "secret.md", ws / "memory" / "z.md"),  # symlinked folder
        (ws / "memory" / "real.md", ws / "memory" / "escape" / "new.md"),  # dst via symlink
        (ws, tmp_path / "elsewhere"),  # the root itself
    ]
    for src, dst in attempts:
        with pytest.raises(MoveError):
            mover.move(src, dst, reason="t", batch="b")
    with pytest.raises(MoveError):
        mover.delete(ws / "memory" / "link.md", reason="t", batch="b")
    with pytest.raises(MoveError):
        mover.copy(secret, ws / "memory" / "c.md", reason="t", batch="b")

    assert secret.read_text() == "do not touch"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert (ws / "memory" / "real.md").read_text() == "real"
    assert _states(store) == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["..", ".", "memory", "x.md", "/", "//", "ws", "\\", "~"]), max_size=8)
)
def test_any_accepted_path_is_inside_the_root(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    base = tmp_path_factory.getbasetemp() / "prop"
    root = base / "ws"
    (root / "memory").mkdir(parents=True, exist_ok=True)
    mover = Mover(Store.memory(), [root])
    candidate = str(root) + "/" + "/".join(parts)
    try:
        checked = mover.check_path(candidate)
    except MoveError:
        checked = None
    assume(checked is not None)  # a refused path proves nothing here; enough are accepted
    assert checked is not None
    assert checked.is_relative_to(root.resolve()) and checked != root.resolve()


def _another_file_system(here: Path) -> Path | None:
    """A writable folder on another file system than ``here``: RAM or disk, whichever the
    test files are not on (conftest.py puts them in RAM where it can)."""
    for candidate in (Path("/dev/shm"), Path("/var/tmp"), Path(__file__).resolve().parent):
        with contextlib.suppress(OSError):
            if os.access(candidate, os.W_OK) and candidate.stat().st_dev != here.stat().st_dev:
                return Path(os.path.realpath(candidate))
    return None


def test_cross_file_system_move_copies_verifies_and_unlinks(ws: Path, store: Store) -> None:
    elsewhere = _another_file_system(ws)
    if elsewhere is None:
        pytest.skip("no second file system to move across")
    other = elsewhere / f"memoryd-test-{os.getpid()}-{time.time_ns()}"
    other.mkdir()
    try:
        src = ws / "memory" / "big.md"
        src.write_bytes(os.urandom(3 << 20))
        digest = _sha(src)
        mover = Mover(store, [ws, other])
        move_id = mover.move(src, other / "big.md", reason="t", batch="x")
        assert not src.exists() and _sha(other / "big.md") == digest
        assert [p.name for p in other.iterdir()] == ["big.md"]  # no temp file left
        mover.undo(move_id)
        assert _sha(src) == digest and not (other / "big.md").exists()
    finally:
        for p in other.iterdir():
            p.unlink()
        other.rmdir()


@pytest.mark.parametrize("name", ["x" * 251 + ".md", "é" * 124 + "1.md"])
def test_a_name_at_the_file_systems_limit_moves_and_comes_back_whole(
    ws: Path, store: Store, name: str
) -> None:
    """A note whose name is near 255 bytes (legal on ext4 and APFS): the aside name
    (``.<name>.memoryd-<id>.aside``) was longer than a name may be, so the move failed
    half done and its rollback left a hard link in the archive, one more every retry. The
    side names are now cut to fit, with a hash of the name: the move, its undo and the
    same move again leave exactly one file with one link."""
    from memoryd.fsutil import NAME_MAX_BYTES
    from memoryd.move_files import _aside_name

    assert len(os.fsencode(name)) <= NAME_MAX_BYTES
    src = ws / "memory" / name
    src.write_text("# a long name\n")
    digest = _sha(src)
    dst = ws / "memory-archive" / "2026-03" / "memory" / name
    for side in (_aside_name(src, 10**12), _temp_name(dst, 10**12)):
        assert len(os.fsencode(side.name)) <= NAME_MAX_BYTES
    assert _aside_name(src, 7) != _aside_name(src.with_name("x" * 250 + "y.md"), 7)
    mover = Mover(store, [ws])
    for _ in range(2):
        move_id = mover.move(src, dst, reason="expire: 0 hits", batch="b")
        assert not src.exists() and _sha(dst) == digest and dst.stat().st_nlink == 1
        mover.undo(move_id)
        assert _sha(src) == digest and src.stat().st_nlink == 1 and not dst.exists()
    left = [p.name for p in ws.rglob("*") if p.is_file()]
    assert left == [name], left


def test_copy_delete_and_undo(ws: Path, store: Store) -> None:
    mover = Mover(store, [ws])
    note = ws / "memory" / "topic.md"
    note.write_text("topic")
    copy_id = mover.copy(note, ws / "gists" / "topic.md", reason="gist", batch="g")
    assert (ws / "gists" / "topic.md").read_text() == "topic" and note.exists()
    mover.undo(copy_id)
    assert not (ws / "gists" / "topic.md").exists() and note.read_text() == "topic"
    assert mover.get(copy_id).state == "undone"

    del_id = mover.delete(note, reason="forgotten 30 d", batch="d")
    rec = mover.get(del_id)
    assert not note.exists()
    assert (rec.op, rec.state, rec.size) == ("delete", "done", 5)
    assert rec.sha256 == hashlib.sha256(b"topic").hexdigest()
    with pytest.raises(MoveError, match="cannot be restored"):
        mover.undo(del_id)


def test_undo_finds_moves_by_either_path_and_by_batch(ws: Path, store: Store) -> None:
    mover = Mover(store, [ws])
    files = {f"memory/n{i}.md": f"note {i}" for i in range(3)}
    for rel, text in files.items():
        (ws / rel).write_text(text)
    for rel in files:
        mover.move(ws / rel, ws / "archive" / rel, reason="t", batch="expire:2026-03:1")
    assert mover.last_batch() == "expire:2026-03:1"

    [rec] = mover.find(ws / "memory" / "n0.md")  # by original path
    assert mover.find(ws / "archive" / "memory" / "n0.md") == [rec]  # by archived path
    mover.undo(rec.id)
    assert (ws / "memory" / "n0.md").read_text() == "note 0"
    assert mover.find(ws / "memory" / "n0.md") == []  # an undone move is not offered again

    undone = mover.undo_batch("expire:2026-03:1")
    assert [(Path(rec.src).name, isinstance(outcome, int)) for rec, outcome in undone] == [
        ("n2.md", True),
        ("n1.md", True),
    ]  # newest first, each undone
    for rel, text in files.items():
        assert (ws / rel).read_text() == text
    assert mover.last_batch() is None
    with pytest.raises(MoveError, match="not done"):
        mover.undo(rec.id)


def test_undo_refuses_to_overwrite_a_new_file_at_the_original_place(ws: Path, store: Store) -> None:
    mover = Mover(store, [ws])
    (ws / "memory" / "a.md").write_text("old")
    move_id = mover.move(ws / "memory" / "a.md", ws / "arch" / "a.md", reason="t", batch="b")
    (ws / "memory" / "a.md").write_text("new, written since")
    with pytest.raises(MoveError, match="never overwrites"):
        mover.undo(move_id)
    assert (ws / "memory" / "a.md").read_text() == "new, written since"
    assert (ws / "arch" / "a.md").read_text() == "old"


def _waiting_for_the_lock(thread: threading.Thread) -> bool:
    """Whether ``thread`` waits for a lock (its stack passes the lock helper's ``acquire``)."""
    from memoryd.locks import acquire

    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code is acquire.__code__:
            return True
        frame = frame.f_back
    return False


def test_an_undo_decides_on_the_journal_as_it_is_under_the_lock(
    ws: Path, store: Store, tmp_path: Path
) -> None:
    """The daemon's restore on demand and a hand ``restore`` may undo the same entry.

    Here the hand restore wins the lock, and an expire archives the (edited) file again to
    the same name before the daemon's undo gets the lock: the daemon's undo must see that its
    entry is undone, not move the newer archive back under the old entry's name.
    """
    from support.daemon_harness import wait_until

    note, arch = ws / "memory" / "a.md", ws / "arch" / "a.md"
    note.write_text("v1")
    first = Mover(store, [ws]).move(note, arch, reason="t", batch="expire:1")
    outcome: list[object] = []

    def daemon_undo() -> None:
        other = Store.open(tmp_path / "state" / "state.db")
        try:
            outcome.append(Mover(other, [ws]).undo(first, batch="restore-on-demand:1"))
        except MoveError as exc:
            outcome.append(exc)
        finally:
            other.close()

    holder = Mover(store, [ws])
    with holder._locked():  # the hand restore's process holds the lock...
        daemon = threading.Thread(target=daemon_undo)
        daemon.start()
        wait_until(lambda: _waiting_for_the_lock(daemon), timeout=30)
        inside = Mover(store, [ws])
        inside._lock_path = None  # ...and works under it
        inside.undo(first)
        note.write_text("v2, edited after the restore")
        second = inside.move(note, arch, reason="t", batch="expire:2")
    daemon.join(timeout=60)
    [result] = outcome
    assert isinstance(result, MoveError) and "undone" in str(result)
    assert arch.read_text() == "v2, edited after the restore" and not note.exists()
    assert holder.get(second).state == "done"


def test_an_undo_that_asks_for_unchanged_bytes_leaves_an_edited_archive_alone(
    ws: Path, store: Store
) -> None:
    mover = Mover(store, [ws])
    (ws / "memory" / "a.md").write_text("as archived")
    move_id = mover.move(ws / "memory" / "a.md", ws / "arch" / "a.md", reason="t", batch="b")
    (ws / "arch" / "a.md").write_text("as archived, then edited in the archive")
    with pytest.raises(MoveError, match="changed since"):
        mover.undo(move_id, unchanged=True)
    assert not (ws / "memory" / "a.md").exists()
    assert mover.get(move_id).state == "done"
    mover.undo(move_id)  # by hand: the person gets the edited file back
    assert (ws / "memory" / "a.md").read_text() == "as archived, then edited in the archive"


# ---------------------------------------------------------------------- repair, crash by crash


def _crashed_intent(mover: Mover, op: str, src: Path, dst: Path | None, content: bytes) -> int:
    """The journal as a process killed right after writing its intent leaves it."""
    digest = hashlib.sha256(content).hexdigest()
    return mover._intent(op, src, dst, digest, len(content), "t", "crash")


def test_repair_completes_or_rolls_back_each_crash_point(ws: Path, store: Store) -> None:
    mover = Mover(store, [ws])
    mem, arch = ws / "memory", ws / "arch"
    arch.mkdir()
    body = b"note body\n"

    # 1. killed before the link: file in place, our temp file half-written beside dst
    (mem / "one.md").write_bytes(body)
    i1 = _crashed_intent(mover, "move", mem / "one.md", arch / "one.md", body)
    _temp_name(arch / "one.md", i1).write_bytes(body[:3])
    # 2. killed after link, before unlink: two names, one inode
    (mem / "two.md").write_bytes(body)
    os.link(mem / "two.md", arch / "two.md")
    i2 = _crashed_intent(mover, "move", mem / "two.md", arch / "two.md", body)
    # 3. killed after unlink, before "done"
    (arch / "three.md").write_bytes(body)
    i3 = _crashed_intent(mover, "move", mem / "three.md", arch / "three.md", body)
    # 4. cross-FS copy finished, source not yet unlinked (separate inodes)
    (mem / "four.md").write_bytes(body)
    (arch / "four.md").write_bytes(body)
    i4 = _crashed_intent(mover, "move", mem / "four.md", arch / "four.md", body)
    # 5. somebody else's file at the destination: touch nothing
    (mem / "five.md").write_bytes(body)
    (arch / "five.md").write_bytes(b"other")
    i5 = _crashed_intent(mover, "move", mem / "five.md", arch / "five.md", body)
    # 6. the user edited the source after the link landed: keep the edit in place
    (mem / "six.md").write_bytes(body)
    os.link(mem / "six.md", arch / "six.md")
    i6 = _crashed_intent(mover, "move", mem / "six.md", arch / "six.md", body)
    (mem / "six.md").write_bytes(b"edited")
    # 7. a delete killed before the unlink, 8. after it
    (mem / "seven.md").write_bytes(body)
    i7 = _crashed_intent(mover, "delete", mem / "seven.md", None, body)
    i8 = _crashed_intent(mover, "delete", mem / "eight.md", None, body)

    report = mover.repair()

    assert len(report) == 8
    states = {i: mover.get(i).state for i in (i1, i2, i3, i4, i5, i6, i7, i8)}
    assert states == {
        i1: "rolled_back", i2: "done", i3: "done", i4: "done",
        i5: "failed", i6: "rolled_back", i7: "rolled_back", i8: "done",
    }  # fmt: skip
    assert (mem / "one.md").read_bytes() == body and not (arch / "one.md").exists()
    assert not any(p.name.endswith(".tmp") for p in arch.iterdir())
    for name in ("two", "three", "four"):
        assert not (mem / f"{name}.md").exists() and (arch / f"{name}.md").read_bytes() == body
    assert (mem / "five.md").read_bytes() == body and (arch / "five.md").read_bytes() == b"other"
    assert (mem / "six.md").read_bytes() == b"edited" and not (arch / "six.md").exists()
    assert (mem / "seven.md").exists()
    assert mover.unfinished() == [] and mover.repair() == []


def test_repair_never_acts_on_journal_rows_pointing_outside(
    ws: Path, store: Store, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.md"
    victim.write_text("x")
    (ws / "memory" / "v.md").write_text("x")
    mover = Mover(store, [ws])
    i = _crashed_intent(mover, "move", victim, ws / "memory" / "v.md", b"x")
    mover.repair()
    assert victim.read_text() == "x" and mover.get(i).state == "failed"


_WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memoryd.move_files import MoveError
    from memoryd.mover import Mover
    from memoryd.store import Store

    ws, db = Path(sys.argv[1]), Path(sys.argv[2])
    store = Store.open(db)
    mover = Mover(store, [ws])
    mover.repair()
    print("ready", flush=True)
    for src in sorted((ws / "memory").glob("*.md")):
        try:
            mover.move(src, ws / "archive" / "memory" / src.name, reason="crash test", batch="k")
        except MoveError:
            pass
    """
)


def test_kill_9_at_random_points_loses_and_duplicates_nothing(ws: Path, tmp_path: Path) -> None:
    rng = random.Random(20261129)
    originals = {}
    for i in range(1000):
        data = f"# note {i}\n".encode() + rng.randbytes(rng.randrange(10, 3000))
        (ws / "memory" / f"n{i:04d}.md").write_bytes(data)
        originals[f"n{i:04d}.md"] = hashlib.sha256(data).hexdigest()
    db = tmp_path / "state" / "state.db"
    # Each run kills itself at one of the mover's named moments, after a random number of
    # files (MEMORYD_FAULT): every crash point is hit, on any machine, without a sleep.
    moments = ["checked", "journaled", "placed", "unlink_src", "aside", "before_unlink"]
    for i in range(8):
        fault = f"mover.{moments[i % len(moments)]}:{rng.randrange(1, 100)}"
        proc = subprocess.run(
            [sys.executable, "-c", _WORKER, str(ws), str(db)],
            env={**os.environ, "MEMORYD_FAULT": fault},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == -signal.SIGKILL, (fault, proc.stderr[-2000:])
    subprocess.run([sys.executable, "-c", _WORKER, str(ws), str(db)], check=True, timeout=300,
                   capture_output=True)  # fmt: skip

    with Store.open(db) as store:
        mover = Mover(store, [ws])
        assert mover.repair() == []
        rows = store.conn.execute("SELECT src, dst, state FROM moves").fetchall()
    for name, digest in originals.items():
        here, there = ws / "memory" / name, ws / "archive" / "memory" / name
        assert here.exists() != there.exists(), name  # exactly once
        assert _sha(there if there.exists() else here) == digest
    assert not list((ws / "archive" / "memory").glob(".*.tmp"))
    assert {state for _, _, state in rows} <= {"done", "rolled_back"}
    done = [(s, d) for s, d, state in rows if state == "done"]
    assert len(done) == len(originals)  # each file moved exactly once, journal agrees
    assert all(Path(d).exists() and not Path(s).exists() for s, d in done)


def _copied_topic(ws: Path, store: Store) -> tuple[Mover, Path, Path, int]:
    """memory/topic.md copied to gists/topic.md: (mover, note, copy, the copy's journal id)."""
    mover = Mover(store, [ws])
    note = ws / "memory" / "topic.md"
    note.write_text("topic")
    copy = ws / "gists" / "topic.md"
    return mover, note, copy, mover.copy(note, copy, reason="gist", batch="g")


def test_undoing_a_copy_never_deletes_an_edit_made_to_the_copy(ws: Path, store: Store) -> None:
    """Undo of a copy removes memoryd's copy, not a person's work written into it since."""
    mover, note, copy, copy_id = _copied_topic(ws, store)
    copy.write_text("topic, and what I added to the gist")

    with pytest.raises(MoveError, match="changed"):
        mover.undo(copy_id)

    assert copy.read_text() == "topic, and what I added to the gist"
    assert note.read_text() == "topic"
    assert mover.get(copy_id).state == "done"  # still undoable once the person decides


def test_undoing_a_copy_whose_original_is_gone_keeps_the_only_copy(ws: Path, store: Store) -> None:
    """With its original deleted since, the copy is the note's one remaining file."""
    mover, note, copy, copy_id = _copied_topic(ws, store)
    note.unlink()

    with pytest.raises(MoveError, match="only"):
        mover.undo(copy_id)

    assert copy.read_text() == "topic"
    assert mover.get(copy_id).state == "done"


def test_repair_of_an_edited_aside_whose_name_is_taken_leaves_no_archive_link(
    ws: Path, store: Store
) -> None:
    """Killed with the source aside, edited in place (so memoryd's link shows the edit) and
    a newer save at its name: the edit is kept aside, reported, and the archive holds no
    second name for it."""
    from memoryd.move_files import _aside_name

    mover = Mover(store, [ws])
    src, dst = ws / "memory" / "n.md", ws / "arch" / "n.md"
    dst.parent.mkdir()
    body = b"as journaled\n"
    move_id = _crashed_intent(mover, "move", src, dst, body)
    aside = _aside_name(src, move_id)
    aside.write_bytes(body + b"edited in place\n")
    os.link(aside, dst)
    src.write_bytes(b"a newer save\n")

    [line] = mover.repair()

    assert "kept at" in line and mover.get(move_id).state == "failed"
    assert src.read_bytes() == b"a newer save\n"
    assert aside.read_bytes() == body + b"edited in place\n" and os.stat(aside).st_nlink == 1
    assert not dst.exists()


_ONE_OP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memoryd.mover import Mover
    from memoryd.store import Store

    op, ws, db, arg = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    mover = Mover(Store.open(db), [ws])
    if op == "delete":
        mover.delete(ws / "memory" / "n.md", reason="t", batch="d", expect_sha256=arg)
    else:
        mover.undo(int(arg), unchanged=True)
    """
)


_POINTS = ("journaled", "placed", "unlink_src", "aside", "before_unlink")


@pytest.mark.parametrize(
    ("op", "moment"),
    [("undo", m) for m in _POINTS] + [("delete", m) for m in _POINTS if m != "placed"],
)
def test_a_delete_or_an_undo_killed_at_each_point_is_repaired_to_one_name(
    ws: Path, tmp_path: Path, op: str, moment: str
) -> None:
    """SIGKILL at each of the mover's points of a delete (with the graveyard copy's hash) and
    of an undo asked for the archived bytes: repair leaves the file under exactly one name
    (a delete: none), no file aside, and a journal that says where it is."""
    note, archived = ws / "memory" / "n.md", ws / "arch" / "n.md"
    body = b"# a note\n" * 40
    note.write_bytes(body)
    digest = hashlib.sha256(body).hexdigest()
    db = tmp_path / "state" / "state.db"
    arg = digest
    if op == "undo":
        with Store.open(db) as store:
            arg = str(Mover(store, [ws]).move(note, archived, reason="t", batch="b"))
    proc = subprocess.run(
        [sys.executable, "-c", _ONE_OP, op, str(ws), str(db), arg],
        env={**os.environ, "MEMORYD_FAULT": f"mover.{moment}:1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

    with Store.open(db) as store:
        mover = Mover(store, [ws])
        [line] = mover.repair()
        assert "could not repair" not in line
        is_undo_or_delete = "undo_of IS NOT NULL OR op = 'delete'"
        states = dict(store.conn.execute(f"SELECT {is_undo_or_delete}, state FROM moves"))
    assert not [p for p in ws.rglob("*") if p.name.startswith(".")]  # nothing left aside
    if op == "delete":
        assert note.exists() == (states[1] == "rolled_back")
        assert states[1] in ("rolled_back", "done")
        if note.exists():
            assert note.read_bytes() == body
    else:
        assert note.exists() != archived.exists()
        assert _sha(note if note.exists() else archived) == digest
        back = note.exists()
        assert states == ({0: "undone", 1: "done"} if back else {0: "done", 1: "rolled_back"})
