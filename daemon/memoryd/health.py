"""The daemon's health note: faults ``memoryd status`` must report that the state database
cannot hold (a full disk) or can no longer be trusted with (a damaged file).

The note, ``<memoryd_dir>/daemon.health``, is a JSON object padded with spaces to
:data:`HEALTH_BYTES`, written at that full size at start and afterwards only rewritten in
place: overwriting blocks a file already has needs no free space, so "no space left" can be
written when the disk is full, where a row of the state database cannot. Best effort: a
failure is never fatal.

What it holds:

* ``pid``: the daemon that wrote it (a note of a daemon that is gone is not read as current);
* ``scan_failing``: ``{since, reason, attempts}`` while scans fail (until one succeeds);
* ``ingest_stalled``: ``{since, doing, waiting}`` while the ingest worker is stuck in one
  step (:func:`stalled_for`) with transcripts waiting;
* ``damaged``: ``{db, dev, ino, message, at}`` once the daemon stopped on a damaged state
  database; ``status`` repeats the message for as long as that same file is there.

Light on purpose: ``memoryd status`` imports it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any

HEALTH_NAME = "daemon.health"
HEALTH_BYTES = 4096

# After a failed scan the worker waits RETRY_FIRST_SECONDS, then twice as long after each
# failure in a row, at most RETRY_MAX_SECONDS: most faults are short, and a lasting one (a
# full disk) costs one try a minute.
RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 60.0

_NO_SPACE = "no space left on the state disk"


def retry_delay(failures: int) -> float:
    """Seconds to wait after the ``failures``-th failed scan in a row (1, 2, …)."""
    return min(RETRY_MAX_SECONDS, RETRY_FIRST_SECONDS * 2.0 ** min(max(failures, 1) - 1, 30))


def describe_scan_fault(exc: BaseException) -> str:
    """What a failed scan says in ``status``: the cause in a person's words, when known
    (``SQLITE_FULL`` and ``ENOSPC`` are the state disk: a transcript being read never is)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    code = exc.errno if isinstance(exc, OSError) else None
    if name.startswith("SQLITE_FULL") or code in (errno.ENOSPC, errno.EDQUOT):
        return _NO_SPACE
    if name.startswith("SQLITE_IOERR") or code == errno.EIO:
        return f"the state disk reported an I/O error ({exc})"
    if name.startswith("SQLITE_READONLY") or code in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"the state database cannot be written ({exc})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def stalled_for(
    busy: bool, last_progress: float, now: float, waiting: int, limit: float
) -> float | None:
    """Seconds the ingest worker has made no progress, or None when it is not stalled.

    Stalled: in a step (``busy``) with no progress since ``last_progress`` (monotonic) for
    more than ``limit`` seconds, while ``waiting`` transcripts wait for it.
    """
    if not busy or waiting <= 0 or limit <= 0:
        return None
    idle = now - last_progress
    return idle if idle > limit else None


class HealthNote:
    """The daemon's writer of the note (see the module's docstring)."""

    def __init__(self, memoryd_dir: Path) -> None:
        self.path = memoryd_dir / HEALTH_NAME
        self.doc: dict[str, Any] = {"pid": os.getpid(), "scan_failing": None, "damaged": None}
        self._fd = -1
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return
        self._write()

    def update(self, **fields: Any) -> bool:
        """Change some fields and write the note in place; whether it was written."""
        self.doc.update(fields)
        return self._write()

    def _write(self) -> bool:
        if self._fd < 0:
            return False
        data = json.dumps(self.doc, ensure_ascii=False).encode()
        # A long reason is cut rather than the file grown, further while the note does not fit:
        # a note cut at a byte count would no longer read as JSON.
        for keep in (1000, 200, 0):
            if len(data) <= HEALTH_BYTES - 1:
                break
            for key in ("scan_failing", "damaged"):
                if isinstance(self.doc.get(key), dict):
                    for field in ("reason", "message"):
                        if field in self.doc[key]:
                            self.doc[key][field] = str(self.doc[key][field])[:keep]
            data = json.dumps(self.doc, ensure_ascii=False).encode()
        data = data[: HEALTH_BYTES - 1]  # (still too long only with a path of thousands of bytes)
        try:
            os.pwrite(self._fd, data.ljust(HEALTH_BYTES - 1) + b"\n", 0)
        except OSError:
            return False
        return True

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1


def read_health(memoryd_dir: Path) -> dict[str, Any]:
    """The note as last written ({} when there is none or it does not read)."""
    try:
        text = (memoryd_dir / HEALTH_NAME).read_text(encoding="utf-8")
        doc = json.loads(text)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def damage_of(note: dict[str, Any], db: Path) -> str | None:
    """The message of a damaged state database the note records, if ``db`` is still that file."""
    damaged = note.get("damaged")
    if not isinstance(damaged, dict) or damaged.get("db") != str(db):
        return None
    try:
        st = os.stat(db)
    except OSError:
        return None
    if (st.st_dev, st.st_ino) != (damaged.get("dev"), damaged.get("ino")):
        return None
    message = damaged.get("message")
    return str(message) if message else None


def damage_record(db: Path, message: str, at: float) -> dict[str, Any]:
    """The ``damaged`` field for ``db`` as it is now (its device and inode name the file)."""
    dev: int | None
    ino: int | None
    try:
        st = os.stat(db)
        dev, ino = st.st_dev, st.st_ino
    except OSError:
        dev = ino = None
    return {"db": str(db), "dev": dev, "ino": ino, "message": message, "at": at}
