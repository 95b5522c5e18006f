"""Whether OpenClaw's dreaming is writing a workspace's ``MEMORY.md`` right now (pure but for
reading one small file, OpenClaw's state database read-only, and asking about one process).

Dreaming rewrites ``MEMORY.md`` under a lock file, after a model call made while its sweep's
cron job runs. A retire that swapped the file meanwhile would cost dreaming its rewrite, so
``retire`` leaves ``MEMORY.md`` alone while either shows a live holder. The lock's and the
sweep's shapes, as observed live: docs/openclaw-formats.md, "Dreaming's writes".
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from .plugin_seen import process_runs

DREAMING_JOB = "memory-core:memory-dreaming-promotion"  # the managed job's declaration_key


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


def _holder_alive(pid: int, recorded: object) -> bool:
    """Whether ``pid`` runs and is the process that recorded ``recorded`` as its start time
    (when it recorded one and this system can tell)."""
    if pid <= 0 or not process_runs(pid):
        return False
    now = _start_time(pid) if isinstance(recorded, int) else None
    return now is None or now == recorded  # (another start time: the pid was reused)


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
    if not _holder_alive(pid, recorded):
        return None
    return f"OpenClaw's dreaming is writing it (pid {pid}, {path})"


def dreaming_sweep(state_dir: Path) -> str | None:
    """Why a dreaming sweep is running now (a sentence), or None: the managed job marked
    running and its receipt's owner (the gateway) alive. A gateway that died mid-sweep leaves
    the mark, and holds nothing. A database missing, unreadable or of another shape says
    nothing (the write lock, :func:`dreaming_writer`, still guards the write itself)."""
    db = state_dir / "state" / "openclaw.sqlite"
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True, timeout=2)
    except sqlite3.Error:
        return None
    try:
        jobs = conn.execute(
            "SELECT job_id, state_json FROM cron_jobs WHERE declaration_key = ?", (DREAMING_JOB,)
        ).fetchall()
        for job_id, state_json in jobs:
            try:
                state = json.loads(state_json or "{}")
            except ValueError:
                continue
            if not isinstance(state, dict):
                continue  # (another shape: says nothing)
            receipt = state.get("runningReceiptId")
            if not state.get("runningAtMs") or not isinstance(receipt, str):
                continue
            row = conn.execute(
                "SELECT status, owner_pid, owner_start_time FROM cron_run_receipts "
                "WHERE receipt_id = ? AND job_id = ?",
                (receipt, job_id),
            ).fetchone()
            if row is None or row[0] != "running" or not isinstance(row[1], int):
                continue
            if _holder_alive(row[1], row[2]):
                return f"OpenClaw's dreaming sweep is running (gateway pid {row[1]}, job {job_id})"
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return None


def dreaming_at_work(state_dir: Path, workspace: Path) -> str | None:
    """Why OpenClaw's dreaming is at work on ``workspace`` now (a sweep running, or its
    ``MEMORY.md`` write lock held), or None: what ``retire`` and ``promote`` wait for."""
    return dreaming_sweep(state_dir) or dreaming_writer(state_dir, workspace)
