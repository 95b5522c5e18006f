"""Whether OpenClaw's dreaming (memory-core) is at work on a workspace now, read from what it
leaves on disk: promotion stays out of its way.

What OpenClaw 2026.9.6 shows from outside (its ``dist/short-term-promotion-*.mjs``,
``dist/dreaming-dreams-file-*.mjs``, ``dist/dreaming-state-*.mjs``):

* the deep phase writes ``MEMORY.md`` holding a file lock whose sidecar is
  ``<state>/locks/memory-promotion-<sha256 of the workspace's real path>.lock`` (stale after
  120 s);
* every phase of a sweep works under the memory workspace lock, a row of its SQLite plugin
  state (``<state>/state/openclaw.sqlite``, table ``plugin_state_entries``, plugin
  ``memory-core``, namespace ``short-term-locks``, key the sha256 of the workspace's resolved
  path) whose value names the owner pid and ``acquiredAt`` (stale after 60 s);
* a consolidation rewrite is planned by a model call *before* either lock is taken and is held
  in memory only: nothing on disk says one is under way. Dreaming checks ``MEMORY.md``'s hash
  itself before applying it and skips the rewrite when the file changed; so a promotion that
  lands in that window costs dreaming that sweep's rewrite (it falls back to appending), and
  loses nothing of either.

Read-only: the lock file is only looked at, the database opened read-only (``mode=ro``), and a
database that cannot be read says so rather than failing the caller.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

FILE_LOCK_STALE_S = 120.0
DB_LOCK_STALE_S = 60.0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def busy(state_dir: Path, workspace: Path, now: float | None = None) -> str:
    """Why dreaming is at work on ``workspace`` now ("" when nothing says it is)."""
    now = time.time() if now is None else now
    real = os.path.realpath(workspace)
    digest = hashlib.sha256(real.encode()).hexdigest()
    lock = state_dir / "locks" / f"memory-promotion-{digest}.lock"
    try:
        st = lock.stat()
    except OSError:
        st = None
    if st is not None and now - st.st_mtime < FILE_LOCK_STALE_S:
        return f"dreaming is writing MEMORY.md (its lock {lock.name} is held)"
    key = hashlib.sha256(os.path.abspath(workspace).encode()).hexdigest()
    db = state_dir / "state" / "openclaw.sqlite"
    if not db.is_file():
        return ""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
        try:
            row = conn.execute(
                "SELECT value_json FROM plugin_state_entries WHERE plugin_id = 'memory-core' "
                "AND namespace = 'short-term-locks' AND entry_key = ?",
                (key,),
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return ""  # (an older OpenClaw without the table, or a busy file: nothing seen)
    if row is None:
        return ""
    try:
        value = json.loads(row[0])
        acquired = float(value.get("acquiredAt", 0)) / 1000.0
        pid = int(str(value.get("owner", "0")).split(":", 1)[0] or 0)
    except (ValueError, TypeError, AttributeError):
        return ""
    if now - acquired < DB_LOCK_STALE_S and (pid <= 0 or _pid_alive(pid)):
        return "a dreaming sweep is under way (memory-core holds this workspace's lock)"
    return ""
