"""Who holds the state directory: the daemon's lock file, read without taking it.

Kept apart from :mod:`memoryd.service` (which takes the lock) so that ``memoryd status``
can ask without importing the daemon, its scheduler and its logging.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "memoryd.lock"


def read_pid(path: Path) -> int | None:
    """The pid written in a lock file (None when it holds none)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def lock_holder(memoryd_dir: Path) -> int | None:
    """The pid of the daemon holding the state (0 if unknown), or None when nobody does."""
    path = memoryd_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return read_pid(path) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
