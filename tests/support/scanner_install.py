"""A throw-away OpenClaw install with memoryd's scanner over it, in the pytest process, and
the conversations whose hits it must count.

The scanner's tests on real files (``test_ingest``) and those of OpenClaw's SQLite store, its
upkeep and ties (``test_store_reader``, ``test_store_upkeep``, ``test_store_ties``,
``test_store_daemon``, ``test_tool_search``, ``test_undone_counts``, ``test_reused_ids``) write
the same install and compare with the same expected counts.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from memoryd import faults
from memoryd.config import load_config, resolve_paths
from memoryd.ingest.scan import Scanner
from memoryd.store import Store
from support import transcripts as tx

FILES = ["MEMORY.md", "memory/a.md", "memory/b.md", "memory/2026-02-20.md", "memory/deep/c.md"]


class Install:
    """A throw-away OpenClaw install plus a scanner over it."""

    def __init__(self, root: Path, extra_config: str = "", openclaw_extra: str = "") -> None:
        self.sessions, self.ws, cfg_path = tx.make_install(root, FILES, openclaw_extra)
        if extra_config:
            cfg_path.write_text(cfg_path.read_text() + extra_config)
        self.cfg = load_config(str(cfg_path))
        self.paths = resolve_paths(self.cfg, {})
        self.store = Store.open(self.paths.db)

    def scan(self, **kw):
        return Scanner(self.cfg, self.paths, self.store).scan(**kw)

    def restart(self) -> None:
        """A new process: new connection, new scanner, nothing kept in memory."""
        self.store.close()
        self.store = Store.open(self.paths.db)

    def counts(self) -> dict[str, int]:
        return {p: t.total for p, t in self.store.hit_counts(math.inf).items()}  # every stored hit

    def append(self, name: str, data: bytes) -> Path:
        p = self.sessions / name
        with open(p, "ab") as fh:
            fh.write(data)
        return p


def conversation(n: int, prefix: str = "c") -> list[bytes]:
    """n searches (with chatter and decoys between them) hitting FILES in turn."""
    lines = [tx.header(prefix)]
    for i in range(n):
        cid = f"{prefix}{i}"
        lines.append(tx.chatter(i))
        lines.append(tx.call(cid, query=f"q{i % 3}"))
        lines.append(tx.decoy_result(i))
        lines.append(
            tx.result(cid, tx.search_payload([FILES[i % len(FILES)], FILES[(i + 1) % len(FILES)]]))
        )
    return lines


def expected(*conversations: int) -> dict[str, int]:
    """Hits per file of :func:`conversation` runs of these lengths, taken together."""
    out: dict[str, int] = {}
    for n in conversations:
        for i in range(n):
            for f in {FILES[i % len(FILES)], FILES[(i + 1) % len(FILES)]}:
                out[f] = out.get(f, 0) + 1
    return out


def openclaw_db(inst: Install):
    """A bare agent store beside the install's sessions (events only, in WAL): its path and an
    autocommit connection to write them with :func:`insert_events`."""
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS transcript_events(session_id TEXT, seq INTEGER, "
        "event_json TEXT, created_at INTEGER, PRIMARY KEY (session_id, seq))"
    )
    return db, conn


def insert_events(conn, session: str, lines: list[bytes], first_seq: int = 0) -> None:
    conn.executemany(
        "INSERT INTO transcript_events VALUES (?, ?, ?, 0)",
        [(session, first_seq + i, ln.decode().rstrip("\n")) for i, ln in enumerate(lines)],
    )


class Crash(BaseException):
    """memoryd stopping right after a commit (not an Exception: no barrier catches it)."""


def scan(inst: Install, crash_at: int | None) -> object:
    """A scan that commits after every batch of rows; with ``crash_at``, it stops dead right
    after that commit (what a kill there leaves), and memoryd starts again."""
    scanner = Scanner(inst.cfg, inst.paths, inst.store)
    scanner.ledger.commit_bytes = 1
    if crash_at is None:
        return scanner.scan()
    commits = [0]

    def stop(*_: object) -> None:
        commits[0] += 1
        if commits[0] == crash_at:
            raise Crash

    faults.hook("scan.committed", stop)
    try:
        return scanner.scan()
    except Crash:
        inst.restart()
        return None
    finally:
        faults.hook("scan.committed", None)
