"""memoryd's one ``flock`` helper: the daemon's single-instance lock and the short work locks.

Three locks, one way of taking them:

* ``<memoryd_dir>/memoryd.lock`` (:data:`LOCK_NAME`): one daemon per state directory
  (:class:`StateLock`); the file holds the owner's pid, and ``memoryd status`` asks who holds
  it (:func:`lock_holder`) without taking it;
* the mover's journal lock: one file operation or repair at a time (:mod:`memoryd.mover`);
* ``tiers.lock``: one organize or recall at a time on a tier store.

An ``flock`` belongs to the open file: the kernel drops it when the holder closes it or dies,
so a stale lock file never blocks anybody. Lock files are never deleted (two processes could
lock two different inodes), and are opened close-on-exec.

Light on purpose (``os`` and ``fcntl`` only): ``memoryd status`` imports it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_NAME = "memoryd.lock"

# Polling step while waiting a bounded time for a lock (flock itself waits only forever).
_POLL_SECONDS = 0.05
# The errors a non-blocking flock raises when someone else holds the lock.
_HELD = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)


def acquire(
    path: Path, *, shared: bool = False, patience: float | None = None, mode: int = 0o600
) -> int | None:
    """Open (creating it and its folder) and lock ``path``; closing the returned descriptor
    releases the lock. ``patience``: seconds to wait at most (then None), None: as long as
    it takes."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # (memoryd's state folder)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        if patience is None:
            fcntl.flock(fd, kind)
            return fd
        deadline = time.monotonic() + patience
        while True:
            try:
                fcntl.flock(fd, kind | fcntl.LOCK_NB)
                return fd
            except OSError as exc:
                if exc.errno not in _HELD:
                    raise
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(_POLL_SECONDS)
    except BaseException:
        os.close(fd)
        raise


# Told the lock's path before a wait that has no ``waiting`` of its own: the command line
# sets it (a person at a terminal sees why a command stands still); the daemon waits silently.
_tell_wait: Callable[[Path], None] | None = None


def tell_waits(tell: Callable[[Path], None] | None) -> None:
    """From now on, call ``tell`` with a lock's path before waiting for another's (None: not)."""
    global _tell_wait
    _tell_wait = tell


@contextlib.contextmanager
def held(
    path: Path, *, mode: int = 0o600, waiting: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for the ``with`` block, waiting as long as it takes
    (``waiting`` is called first when another holds it; else what :func:`tell_waits` set)."""
    tell = _tell_wait
    if waiting is None and tell is not None:
        waiting = functools.partial(tell, path)
    fd = acquire(path, mode=mode, patience=0) if waiting is not None else None
    if fd is None:
        if waiting is not None:
            waiting()
        fd = acquire(path, mode=mode)
    assert fd is not None  # (no patience: acquire waits)
    try:
        yield
    finally:
        os.close(fd)  # closing releases the lock


# =========================================================================== the state lock


class AlreadyRunning(Exception):
    """Another daemon holds the state directory's lock."""

    def __init__(self, lock_path: Path, pid: int | None) -> None:
        who = f"process {pid}" if pid else "another process"
        super().__init__(f"another memoryd daemon ({who}) holds {lock_path}")
        self.pid = pid


class StateLock:
    """``flock`` on ``<memoryd_dir>/memoryd.lock``; the file holds the owner's pid."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def acquire(cls, memoryd_dir: Path, *, patience: float = 1.0) -> StateLock:
        """Take the lock or raise :class:`AlreadyRunning`.

        ``patience``: `memoryd status` takes a shared lock for a moment; wait that out.
        """
        path = memoryd_dir / LOCK_NAME
        fd = acquire(path, patience=patience, mode=0o644)
        if fd is None:
            raise AlreadyRunning(path, read_pid(path))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)
        return cls(path, fd)

    def release(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = -1


def read_pid(path: Path) -> int | None:
    """The pid written in a lock file (None when it holds none)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def lock_holder(memoryd_dir: Path) -> int | None:
    """The pid of the daemon holding the state (0 if unknown), or None when nobody does
    (creating nothing: ``status`` leaves no lock file behind)."""
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
