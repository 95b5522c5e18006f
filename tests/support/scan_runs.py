"""A generated corpus scanned by the real ``memoryd``: its config, the command run to its end
in the pytest process, and what the scan leaves in the state database.

Shared by the tests that kill a scan (``test_crash_scan``), fork its helper
(``test_scan_helper``) and race its writers (``test_fastpath``, ``test_write_queue``,
``test_writepath``): each compares its scan with an uninterrupted one-process scan of the same
corpus, so they must run and read it the same way.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from support.corpus import CorpusTruth
from support.inprocess import memoryd as run_memoryd

NOW = 1_790_000_000.0  # MEMORYD_NOW of every run, and the corpora's "now"


def env_for(cfg: Path) -> dict[str, str]:
    return dict(os.environ, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))


def memoryd(cfg: Path, *args: str) -> str:
    """A command that runs to its end (in the pytest process: :mod:`support.inprocess`); the scans
    ``test_crash_scan`` kills are children of their own."""
    proc = run_memoryd(args, env=env_for(cfg))
    assert proc.returncode == 0, f"memoryd {' '.join(args)} exited {proc.returncode}: {proc.stderr}"
    return proc.stdout


def counts(cfg: Path) -> dict[str, int]:
    doc = json.loads(memoryd(cfg, "hits", "--all", "--json", "--no-scan"))
    got = {f["path"]: f["hits"] for f in doc["files"]}
    got.update({p: 0 for p in doc["never_hit"]})
    return got


ONE_PROCESS = "[ingest]\nparallel_min_bytes = 0\nchunk_bytes = 65536\n"  # no forked helper


def write_config(root: Path, truth: CorpusTruth, name: str, ingest: str) -> Path:
    """A config reading ``truth``'s install into its own state folder, ``root / name``, with
    ``ingest`` (an ``[ingest]`` table such as :data:`ONE_PROCESS`) appended."""
    cfg = root / f"{name}.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
        f"workspace = {json.dumps(str(truth.workspace))}\n"
        f"[state]\ndir = {json.dumps(str(root / name))}\n{ingest}",
        encoding="utf-8",
    )
    return cfg


def state_rows(state: Path) -> dict[str, list[tuple[object, ...]]]:
    """Everything a scan writes, with row ids replaced by what they stand for."""
    conn = sqlite3.connect(f"file:{state / 'state.db'}?mode=ro", uri=True)
    try:
        paths = dict(conn.execute("SELECT id, path FROM sources"))
        hits = [
            (*row[:-1], paths.get(row[-1]))
            for row in conn.execute(
                "SELECT agent, call_id, memory_path, kind, ts, query, score, start_line, "
                "end_line, session, source_id FROM hits"
            )
        ]
        return {
            "hits": sorted(hits, key=repr),
            "calls": sorted(conn.execute("SELECT * FROM calls"), key=repr),
            "sources": sorted(
                conn.execute(
                    "SELECT agent, kind, path, dev, ino, head_len, head_hash, offset, size, "
                    "mtime_ns, malformed, oversized, resets FROM sources"
                ),
                key=repr,
            ),
            "counters": sorted(conn.execute("SELECT * FROM counters")),
        }
    finally:
        conn.close()
