"""What can be wrong with the state database, and the one line that tells a person.

The error types :class:`memoryd.store.Store` raises and the messages every command prints for
a SQLite or OS error of the state (which file, what is wrong, the way out), worded in one
place and importable without the connection's code.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path


class StoreError(Exception):
    """The state database cannot be opened or is not memoryd's."""


class StoreGone(StoreError):
    """A file of the open state database was deleted or replaced under a running process."""


class StoreDamaged(StoreError):
    """The state database's file is damaged (truncated, overwritten, pages that do not read)."""

    def __init__(self, db: Path, detail: str) -> None:
        super().__init__(damaged_message(db, detail))
        self.db = db
        self.detail = detail


def is_busy(exc: BaseException) -> bool:
    """Whether a SQLite error says another connection holds the database (the primary code:
    SQLITE_BUSY_RECOVERY and the other extended ones are busy too)."""
    return isinstance(exc, sqlite3.Error) and (
        getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY
    )


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error says the database file is damaged (not busy, full or read-only)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(exc)


_NEEDS_WRITE = "memoryd needs to write there (check owner, mode and mount)"
_READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)


def describe_state_os_error(db: Path, exc: OSError) -> str | None:
    """The state database's one read-only line for a file beside it that cannot be written
    (``tiers.lock``, ``mover.lock`` on a read-only mount), or None for any other error.

    On a read-only state folder the lock is what fails first, and should say what every
    other write to the state says (docs/moves.md).
    """
    if exc.errno not in _READ_ONLY_ERRNOS or not isinstance(exc.filename, str | bytes):
        return None
    failing = Path(os.fsdecode(exc.filename))
    if failing.parent != db.parent:
        return None
    cause = exc.strerror or str(exc)
    return f"state database {db}: {failing} is read-only ({cause}); {_NEEDS_WRITE}"


def describe_database_error(db: Path | None, exc: sqlite3.Error) -> str:
    """One line for a person: which file of the state database, and what is wrong with it.

    SQLite's own words name neither the file nor the fix, so the read-only case looks at
    the folder, ``state.db``, its ``-wal`` and its ``-shm``.
    """
    if db is None:
        return f"state database (in memory): {exc}"
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        culprit = _read_only_part(db)
        if culprit == db:
            where = f"state database {db} is read-only"
        elif culprit is not None:
            where = f"state database {db}: {culprit} is read-only"
        else:
            where = f"state database {db} cannot be written"
        return f"{where} ({text}); {_NEEDS_WRITE}"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return damaged_message(db, text)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return f"state database {db}: the disk is full ({text}); free some space in {db.parent}"
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        culprit = _read_only_part(db)
        if culprit is not None:
            return (
                f"state database {db} cannot be opened: {culprit} is read-only ({text}); "
                f"{_NEEDS_WRITE}"
            )
        return f"state database {db} cannot be opened ({text})"
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        return f"state database {db}: the disk reported an error ({text})"
    return f"state database {db}: {text}"


def damaged_message(db: Path, detail: str) -> str:
    """The one line for a damaged state database: the file, what is wrong, the way out."""
    return (
        f"state database {db} is damaged ({detail}); restore it from a backup, or move it "
        "aside and memoryd starts a new one (the hits are counted again from the transcripts; "
        "the journal of moves is not: notes archived before stay in the archive, listed by "
        "`memoryd restore --all`, for you to move back by hand)"
    )


def _read_only_part(db: Path) -> Path | None:
    """The first of the folder, the database, its -wal and its -shm that cannot be written."""
    for path in (db.parent, db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if path.exists() and not os.access(path, os.W_OK):
            return path
    return None
