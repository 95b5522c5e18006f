"""How many transcript bytes are not read yet: a stat per source, nothing opened.

Apart from the scanner so that ``memoryd status`` answers without importing it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..config import Config, Paths
from ..workspace import regular_stat
from . import sources as src


def pending_bytes(cfg: Config, paths: Paths, conn: sqlite3.Connection) -> int:
    """Bytes present in followed transcripts beyond their committed offsets (a file without
    a checkpoint, or shorter than its offset, in full; stores and archives not counted)."""
    return backlog(cfg, paths, conn)[1]


def backlog(cfg: Config, paths: Paths, conn: sqlite3.Connection | None) -> tuple[int, int]:
    """How many transcripts have bytes not read yet, and how many bytes (``conn`` None: no
    state database yet, so every transcript in full: what a first scan will read)."""
    # Vanished rows first, so that a live row for the same inode wins (as the scanner reads).
    offsets: dict[tuple[int, int], int] = {}
    if conn is not None:
        sql = "SELECT dev, ino, offset FROM sources ORDER BY vanished_at IS NULL, id"
        offsets = {(dev, ino): offset for dev, ino, offset in conn.execute(sql)}
    claude = tuple(Path(p).expanduser() for p in cfg.openclaw.claude_projects)
    total = files = 0
    found = src.discover(
        paths.agents, include_active_memory=cfg.openclaw.include_active_memory,
        claude_projects=claude,
    )  # fmt: skip
    for sf in found:
        st = sf.st or regular_stat(sf.path)
        if st is None or sf.kind in (src.SQLITE, src.ARCHIVE):
            continue
        offset = offsets.get((st.st_dev, st.st_ino), 0)
        left = st.st_size - (offset if st.st_size >= offset else 0)
        total += left
        files += left > 0
    return files, total
