"""The retire's rewrite of a note, in process: the note's name never names nothing.

OpenClaw reads ``MEMORY.md`` at every session start; a rewrite that renamed the note aside
before linking the new one in left a moment with no note, and a session starting then would
have had no memory. The rewrite swaps the two names in one step (fsutil.exchange); these
tests look at the note at every fault point of a rewrite and of its repair, with a save
landing where it can.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd import faults
from memoryd.fsutil import exchange
from memoryd.retirer import Changed, Retirer
from memoryd.store import Store

BEFORE = b"# Memory\n\n## Kept\n- a\n\n## Old\n- b\n"
AFTER = b"# Memory\n\n## Kept\n- a\n"
ARCHIVE = b"## Old\n- b\n"
POINTS = ("retire.journaled", "retire.archived", "retire.exchange", "retire.swapped",
          "retire.placed")  # fmt: skip


@pytest.fixture
def note(tmp_path: Path) -> tuple[Path, Path, Retirer]:
    src = tmp_path / "MEMORY.md"
    src.write_bytes(BEFORE)
    return src, tmp_path / "archive" / "MEMORY.md", Retirer(Store.memory(), Path)


def _swap(retirer: Retirer, src: Path, archive: Path) -> int:
    return retirer.swap(src, BEFORE, AFTER, archive, None, ARCHIVE, batch="t", sections=[])


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".memoryd-" in p.name)


def test_exchange_swaps_two_names_in_one_step(tmp_path: Path) -> None:
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

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    faults.hook("retire.swapped", stop)
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == saved and not archive.exists()
    assert _leftovers(src.parent) == []
    (row,) = retirer.rows()
    assert row.state == "rolled_back" and "the save stays" in (row.note or "")


def test_a_rewrite_stopped_after_the_swap_is_repaired_to_done(note) -> None:
    src, archive, retirer = note

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    faults.hook("retire.swapped", stop)
    with pytest.raises(KeyboardInterrupt):
        _swap(retirer, src, archive)
    assert src.read_bytes() == AFTER and archive.read_bytes() == ARCHIVE
    assert _leftovers(src.parent) == []
    assert [r.state for r in retirer.rows()] == ["done"]
