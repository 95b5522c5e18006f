"""Whether OpenClaw's own search reaches the archive (simulate then replays a search finding
an archived note): inside ``memory/``, or inside a folder of ``memory.search.extraPaths``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.workspace import archive_is_searched

pytestmark = pytest.mark.unit


def test_the_archive_is_searched_when_extra_paths_hold_all_of_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    default = "memory-archive/{month}"
    assert not archive_is_searched(default, ws, ())
    assert archive_is_searched(default, ws, (ws / "memory-archive",))
    assert archive_is_searched(default, ws, (ws,))  # a folder holding it
    # one month of it, or a folder beside it, is not the archive
    assert not archive_is_searched(default, ws, (ws / "memory-archive" / "2026-11",))
    assert not archive_is_searched(default, ws, (ws / "memory-archived",))
    assert not archive_is_searched(default, ws, (ws / "notes",))


def test_an_archive_inside_memory_is_indexed_with_it(tmp_path: Path) -> None:
    assert archive_is_searched("memory/archive-{month}", tmp_path, ())
    assert archive_is_searched("memory/archive/{month}", tmp_path, ())
    assert not archive_is_searched("archive/{month}", tmp_path, ())


def test_extra_paths_through_a_symlink_name_the_same_folder(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory-archive").mkdir(parents=True)
    link = tmp_path / "archive-link"
    os.symlink(ws / "memory-archive", link)
    assert archive_is_searched("memory-archive/{month}", ws, (link,))
