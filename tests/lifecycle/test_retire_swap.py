"""The retire's rewrite of a note, in process: the note's name never names nothing.

OpenClaw reads ``MEMORY.md`` at every session start; a rewrite that renamed the note aside
before linking the new one in left a moment with no note, and a session starting then would
have had no memory. The rewrite swaps the two names in one step (fsutil.exchange); these
tests look at the note at every fault point of a rewrite and of its repair, with a save
landing where it can.
"""

from __future__ import annotations

import ctypes
import errno
from collections.abc import Callable
from pathlib import Path

import pytest

from memoryd import faults, fsutil
from memoryd.fsutil import exchange
from memoryd.retirer import Changed, Retirer
from memoryd.store import Store

BEFORE = b"# Memory\n\n## Kept\n- a\n\n## Old\n- b\n"
AFTER = b"# Memory\n\n## Kept\n- a\n"
ARCHIVE = b"## Old\n- b\n"
POINTS = ("retire.journaled", "retire.archived", "retire.exchange", "retire.swapped",
          "retire.placed")  # fmt: skip


@pytest.fixture
def aside_note(tmp_path: Path) -> tuple[Path, Path, Retirer]:
    """A note to rewrite, on any file system (the tests of the aside way)."""
    src = tmp_path / "MEMORY.md"
    src.write_bytes(BEFORE)
    return src, tmp_path / "archive" / "MEMORY.md", Retirer(Store.memory(), Path)


@pytest.fixture
def note(aside_note: tuple[Path, Path, Retirer]) -> tuple[Path, Path, Retirer]:
    """A note to rewrite where two names can be swapped (else the test is skipped)."""
    _needs_swap(aside_note[0].parent)
    return aside_note


def _swap(retirer: Retirer, src: Path, archive: Path) -> int:
    return retirer.swap(src, BEFORE, AFTER, archive, None, ARCHIVE, batch="t", sections=[])


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".memoryd-" in p.name)


def _can_swap(folder: Path) -> bool:
    a, b = folder / ".swap-a", folder / ".swap-b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    try:
        return exchange(a, b)
    finally:
        a.unlink()
        b.unlink()


def _needs_swap(folder: Path) -> None:
    if not _can_swap(folder):
        pytest.skip("this file system cannot swap two names (the aside way is tested apart)")


def _stopped(*_: object) -> None:
    raise KeyboardInterrupt  # (the rewrite's own repair runs on the way out, as the next one would)


def _edited_then_stopped(src: Path) -> Callable[..., None]:
    """A fault hook: the agent appends to the note, then the rewrite is stopped."""

    def hook(*_: object) -> None:
        _edit(src)
        raise KeyboardInterrupt

    return hook


def _cannot_swap(*_: object) -> None:
    raise OSError(errno.EINVAL, "no swap here")  # a file system that cannot swap two names


def _edit(src: Path, more: bytes = b"## Added by the agent\n- z\n") -> None:
    with src.open("ab") as fh:  # in place, as OpenClaw appends
        fh.write(more)


def _everything(folder: Path) -> bytes:
    """Every byte a person can find: the visible files (the journal aside)."""
    return b"".join(p.read_bytes() for p in folder.rglob("*")
                    if p.is_file() and not p.name.startswith("."))  # fmt: skip


def test_exchange_says_no_where_it_cannot_swap_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"A")
    b.write_bytes(b"B")
    monkeypatch.setattr(fsutil, "_swap_call", False)  # a libc without renameat2
    assert exchange(a, b) is False

    def refusing(*_: object) -> int:
        ctypes.set_errno(errno.EINVAL)  # a file system that cannot
        return -1

    monkeypatch.setattr(fsutil, "_swap_call", refusing)
    assert exchange(a, b) is False
    assert (a.read_bytes(), b.read_bytes()) == (b"A", b"B")

    def failing(*_: object) -> int:
        ctypes.set_errno(errno.EACCES)
        return -1

    monkeypatch.setattr(fsutil, "_swap_call", failing)
    with pytest.raises(PermissionError):
        exchange(a, b)
    with pytest.raises(ValueError):
        exchange(tmp_path / "a\0b", b)


def test_exchange_swaps_two_names_in_one_step(tmp_path: Path) -> None:
    _needs_swap(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"A")
    b.write_bytes(b"B")
    assert exchange(a, b) is True  # (Linux and macOS both can: the fallback is for the rest)
    assert (a.read_bytes(), b.read_bytes()) == (b"B", b"A")
    with pytest.raises(FileNotFoundError):
        exchange(a, tmp_path / "missing")
    assert a.read_bytes() == b"B"


def test_the_note_is_there_at_every_step_of_a_rewrite(note) -> None:
    src, archive, retirer = note
    seen: dict[str, bytes] = {}
    for name in POINTS:
        faults.hook(name, lambda *_, name=name: seen.__setitem__(name, src.read_bytes()))
    _swap(retirer, src, archive)
    assert set(seen) == set(POINTS)  # every step was looked at, and the note was there
    assert seen["retire.exchange"] == BEFORE and seen["retire.swapped"] == AFTER
    assert src.read_bytes() == AFTER and archive.read_bytes() == ARCHIVE
    assert _leftovers(src.parent) == []


def test_a_save_landing_just_before_the_swap_wins_and_the_archive_goes_back(note) -> None:
    src, archive, retirer = note
    saved = BEFORE + b"\n## Saved meanwhile\n- c\n"

    def editor_saves(*_: object) -> None:
        tmp = src.with_name(".MEMORY.md.editor")
        tmp.write_bytes(saved)
        tmp.replace(src)  # as an editor saves: a new file under the name

    faults.hook("retire.exchange", editor_saves)
    faults.hook("retire.swapped", lambda *_: present.append(src.exists()))
    present: list[bool] = []
    with pytest.raises(Changed, match="the edit stays"):
        _swap(retirer, src, archive)
    assert present == [True]
    assert src.read_bytes() == saved and not archive.exists()
    assert _leftovers(src.parent) == []
    assert [r.state for r in retirer.rows()] == ["rolled_back"]


def test_a_rewrite_stopped_after_a_swap_that_met_a_save_is_repaired_to_the_save(note) -> None:
    """Stopped (here: interrupted) between the swap and its check, with a save under the
    temporary name: the repair gives the save its name back, and the archive goes back."""
    src, archive, retirer = note
    saved = BEFORE + b"\n## Saved meanwhile\n- c\n"
    faults.hook("retire.exchange", lambda *_: src.write_bytes(saved))  # saved in place

    faults.hook("retire.swapped", _stopped)
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == saved and not archive.exists()
    assert _leftovers(src.parent) == []
    (row,) = retirer.rows()
    assert row.state == "rolled_back" and "the save stays" in (row.note or "")


def test_a_rewrite_stopped_after_the_swap_is_repaired_to_done(note) -> None:
    src, archive, retirer = note

    faults.hook("retire.swapped", _stopped)
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == AFTER and archive.read_bytes() == ARCHIVE
    assert _leftovers(src.parent) == []
    assert [r.state for r in retirer.rows()] == ["done"]


def test_a_note_edited_after_a_stopped_swap_keeps_the_edit_and_the_archive_its_sections(note):
    """Stopped after the swap; the agent appends to the note (the new one) before the repair:
    the rewrite is done, the edit stays, the archive keeps what left the note."""
    src, archive, retirer = note

    faults.hook("retire.swapped", _edited_then_stopped(src))
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == AFTER + b"## Added by the agent\n- z\n"
    assert archive.read_bytes() == ARCHIVE
    assert _leftovers(src.parent) == []
    (row,) = retirer.rows()
    assert row.state == "done" and "the edit stays" in (row.note or "")


def test_a_save_met_by_a_stopped_swap_then_an_edit_is_kept_where_a_person_sees_it(note):
    src, archive, retirer = note
    saved = BEFORE + b"## Saved meanwhile\n- USERSAVE\n"
    faults.hook("retire.exchange", lambda *_: src.write_bytes(saved))

    faults.hook("retire.swapped", _edited_then_stopped(src))
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    found = _everything(src.parent)
    assert b"USERSAVE" in found and b"Added by the agent" in found and b"- b\n" in found
    assert (src.parent / "MEMORY.md.memoryd-kept-r1").read_bytes() == saved
    assert archive.read_bytes() == ARCHIVE  # (left as it is: the text in both, never neither)
    assert [p for p in _leftovers(src.parent) if p.startswith(".")] == []


def test_the_aside_way_stopped_after_the_link_then_edited_in_place_is_done(aside_note):
    """Where names cannot be swapped: stopped once the new note is linked in, then edited in
    place (the temporary name is the same file): done, no second name left behind."""
    src, archive, retirer = aside_note

    faults.hook("retire.exchange", _cannot_swap)
    faults.hook("retire.placed", _edited_then_stopped(src))
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == AFTER + b"## Added by the agent\n- z\n"
    assert archive.read_bytes() == ARCHIVE and _leftovers(src.parent) == []
    assert [r.state for r in retirer.rows()] == ["done"]


def test_the_aside_way_stopped_while_the_note_was_aside_and_a_new_one_saved_keeps_both(
    aside_note,
):
    src, archive, retirer = aside_note

    def stop_then_save_anew(*_: object) -> None:
        src.write_bytes(b"# Memory\n\nwritten while there was none\n")
        raise KeyboardInterrupt

    faults.hook("retire.exchange", _cannot_swap)
    faults.hook("retire.aside", stop_then_save_anew)
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == b"# Memory\n\nwritten while there was none\n"
    assert (src.parent / "MEMORY.md.memoryd-kept-r1").read_bytes() == BEFORE
    assert [p for p in _leftovers(src.parent) if p.startswith(".")] == []
