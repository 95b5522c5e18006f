"""Whether OpenClaw's dreaming is writing a workspace's ``MEMORY.md`` right now (pure but for
reading one small file and asking the kernel about one process).

OpenClaw 2026.9.6's deep phase applies a promotion (its append, or a consolidation rewrite
that takes entries out and appends a ``## Consolidated Memory (DATE)`` section) under a file
lock: ``<state dir>/locks/memory-promotion-<sha256 of the workspace's real path>.lock``, a
JSON file ``{"pid", "createdAt", "starttime"}`` that exists while the lock is held
(``resolveMemoryPromotionLockTarget`` and ``withFileLock`` in its ``dist/``; observed in
tests/live/OBSERVED.md). Between reading ``MEMORY.md`` and writing it, dreaming holds it. A
retire that swapped the file in that span would be caught by either side's compare (dreaming
checks the file's hash before it renames, retire checks the bytes it planned on), but the one
that loses is dreaming's rewrite, so ``retire`` leaves ``MEMORY.md`` alone while the lock is
held by a live process, and says so.

What the lock does not cover: the consolidation's model call, made before the lock is taken
(dreaming then compares ``MEMORY.md`` with what it sent the model, and falls back to a plain
append if it changed). Nothing on disk says that a call is in flight.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def promotion_lock_path(state_dir: Path, workspace: Path) -> Path:
    """Where OpenClaw keeps dreaming's ``MEMORY.md`` write lock for ``workspace``."""
    real = os.path.realpath(workspace)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()
    return state_dir / "locks" / f"memory-promotion-{digest}.lock"


def _start_time(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (``/proc/PID/stat`` field 22, what
    OpenClaw records as ``starttime``); None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # (the command name may hold blanks)
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dreaming_writer(state_dir: Path, workspace: Path) -> str | None:
    """Why ``workspace``'s ``MEMORY.md`` is being written by dreaming now (a sentence naming
    the lock and its holder), or None when it is not.

    A lock file whose process is gone (or whose pid now names a process started at another
    time) holds nothing: OpenClaw takes such a lock over. One that cannot be read is taken as
    held, as OpenClaw itself does (``staleRecovery: "fail-closed"``)."""
    path = promotion_lock_path(state_dir, workspace)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"dreaming's lock {path} cannot be read ({exc.strerror or exc})"
    try:
        doc = json.loads(raw)
        pid = int(doc["pid"])
        recorded = doc.get("starttime")
    except (ValueError, TypeError, KeyError):
        return f"dreaming's lock {path} is held (its owner is unreadable)"
    if pid <= 0 or not _alive(pid):
        return None
    if isinstance(recorded, int) and (now := _start_time(pid)) is not None and now != recorded:
        return None  # the pid was reused by another process
    return f"OpenClaw's dreaming is writing it (pid {pid}, {path})"
