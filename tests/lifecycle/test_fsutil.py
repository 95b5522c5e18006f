"""fsutil: the one no-follow reader and the one atomic writer (real files, real symlinks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.fsutil import NotRegularFile, read_regular, read_text, write_atomic, write_new


def test_a_final_symlink_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("not memoryd's to read")
    link = tmp_path / "note.md"
    link.symlink_to(secret)
    with pytest.raises(OSError):
        read_regular(link)


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    with pytest.raises(NotRegularFile, match="not a regular file"):
        read_regular(tmp_path / "folder.md")


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=200_000), limit=st.one_of(st.none(), st.integers(0, 200_000)))
def test_read_regular_gives_the_bytes_up_to_the_limit(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, limit: int | None
) -> None:
    path = tmp_path_factory.mktemp("r") / "f.md"
    path.write_bytes(data)
    got, st_ = read_regular(path, limit)
    assert got == (data if limit is None else data[:limit])
    assert st_.st_size == len(data)


def test_read_text_replaces_undecodable_bytes(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_bytes(b"caf\xe9 ok")
    assert read_text(tmp_path / "x.md") == "caf\ufffd ok"


def test_write_atomic_replaces_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "refcount.json"
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["refcount.json"]


def test_a_failed_atomic_write_keeps_what_was_there(tmp_path: Path) -> None:
    """The rename fails (the name is a folder): the folder and its file stay, no temp left."""
    target = tmp_path / "report.md"
    target.mkdir()
    (target / "keep.md").write_text("a user's file")
    with pytest.raises(OSError):
        write_atomic(target, b"new")
    assert (target / "keep.md").read_text() == "a user's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_a_symlink_planted_at_the_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.md"
    victim.write_text("a user's file")
    target = tmp_path / "refcount.json"
    (tmp_path / f".refcount.json.{os.getpid()}.tmp").symlink_to(victim)
    with pytest.raises(OSError):
        write_atomic(target, b"{}")
    assert victim.read_text() == "a user's file"
    assert not target.exists()


def test_write_new_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "gist.md"
    write_new(path, b"first")
    with pytest.raises(FileExistsError):
        write_new(path, b"second")
    assert path.read_bytes() == b"first"


@pytest.mark.timeout(20)  # a regression blocks in open() on the FIFO: fail, never hang
def test_a_fifo_device_or_symlink_is_not_a_note_counted_and_never_waited_on(
    tmp_path: Path,
) -> None:
    from memoryd.fsutil import read_note, take_not_notes

    take_not_notes()
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    (tmp_path / "real.md").write_bytes(b"# Real\n" + b"x" * 10_000)
    assert read_note(tmp_path / "pipe.md") is None
    assert read_note("/dev/null") is None
    assert read_note(tmp_path / "link.md") is None
    assert read_note(tmp_path / "gone.md") is None  # moved meanwhile: skipped, not counted
    assert take_not_notes() == 3 and take_not_notes() == 0
    assert read_note(tmp_path / "real.md", 7) == (b"# Real\n", 10_007)


def test_binary_bytes_are_told_from_text_with_a_stray_byte() -> None:
    from memoryd.fsutil import looks_binary

    assert looks_binary(bytes(range(256)) * 4)
    assert looks_binary(b"text\0more")
    assert not looks_binary("# Café\n".encode() * 200 + b"caf\xe9 \n")
    assert not looks_binary(b"")
