"""kill -9 during a scan loses nothing and counts nothing twice.

A real ``memoryd scan`` subprocess kills itself with SIGKILL at seeded moments the
code names (``MEMORYD_FAULT``: right after the database opens, after the n-th batch
written into an open transaction, after the n-th commit), repeatedly, on one state
dir; then a final scan must report exactly what an uninterrupted scan and the corpus
generator's reference say. No sleeps: the same kills land on a fast or a loaded
machine. ``[ingest] chunk_bytes = 4096`` makes the scan commit often, so most kills
land between commits of a half-read file.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.clock import parse_instant
from support.corpus import CorpusTruth, generate
from support.scan_runs import NOW, counts, env_for, memoryd

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

SMALL_CHUNKS = "[ingest]\nchunk_bytes = 4096\n"


def write_config(root: Path, truth: CorpusTruth, state: Path) -> Path:
    cfg = root / f"memoryd-{state.name}.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
        f"workspace = {json.dumps(str(truth.workspace))}\n"
        f"[state]\ndir = {json.dumps(str(state))}\n{SMALL_CHUNKS}",
        encoding="utf-8",
    )
    return cfg


def stored_hits(state: Path) -> int:
    """Rows in the hits table right now (read-only; 0 before the database exists)."""
    db = state / "state.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT count(*) FROM hits").fetchone()[0]
    except sqlite3.OperationalError:  # killed before the schema was committed
        return 0
    finally:
        conn.close()


def hit_indexes(state: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{state / 'state.db'}?mode=ro", uri=True, timeout=5)
    try:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'hits' "
            "AND name NOT LIKE 'sqlite_%'"
        )
        return {name for (name,) in rows}
    finally:
        conn.close()


def strengths(state: Path) -> list[tuple]:
    """Every hit's kept strength (``hits.strong_from``), by its key; and whether the readers
    may trust the column (no fill pending)."""
    conn = sqlite3.connect(f"file:{state / 'state.db'}?mode=ro", uri=True, timeout=5)
    try:
        pending = conn.execute("SELECT value FROM meta WHERE key = 'hits.strength_pending'")
        rows = conn.execute(
            "SELECT agent, call_id, memory_path, strong_from FROM hits "
            "ORDER BY agent, call_id, memory_path"
        ).fetchall()
        return [("pending", pending.fetchall()), *rows]
    finally:
        conn.close()


def killed_scan(cfg: Path, fault: str) -> bool:
    """A scan that SIGKILLs itself at ``fault``; False if it finished before getting there."""
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "scan"],
        env={**env_for(cfg), "MEMORYD_FAULT": fault},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=300,
    )
    if proc.returncode == 0:
        return False
    assert proc.returncode == -signal.SIGKILL, (fault, proc.stderr[-2000:])
    return True


def test_sigkill_at_random_moments_then_one_scan_gives_the_uninterrupted_counts(
    tmp_path: Path,
) -> None:
    truth = generate(tmp_path / "c", seed=4242, sessions=40, target_bytes=20_000_000, now=NOW)
    reference = write_config(tmp_path, truth, tmp_path / "uninterrupted")
    memoryd(reference, "scan")
    want = counts(reference)
    assert want == truth.counts(None)
    strong = strengths(tmp_path / "uninterrupted")
    assert strong[0] == ("pending", []) and sum(r[3] is not None for r in strong[1:]) > 100

    rng = random.Random(7)
    kills = partial = 0
    in_fill = 0  # kills that landed in the fill of the kept strength
    for rounds in range(1, 4):
        # One round: a fresh state, scans killed at named moments, then a last scan.
        state = tmp_path / f"killed-{rounds}"
        cfg = write_config(tmp_path, truth, state)
        progress: list[int] = []  # hits stored after each kill
        faults = [
            "store.opened:1",  # start-up: the database just opened, maybe not migrated
            f"scan.batch:{rng.randrange(1, 25)}",  # hits written, their commit not yet done
            f"scan.committed:{rng.randrange(1, 20)}",  # right after a commit
            # the strength of every hit, filled after a bulk load: its first chunk written
            "strength.chunk:1",
            f"scan.batch:{rng.randrange(1, 25)}",
            f"scan.committed:{rng.randrange(1, 20)}",
        ]
        for fault in faults:
            if not killed_scan(cfg, fault):
                break  # nothing left to interrupt
            kills += 1
            in_fill += fault.startswith("strength.")
            progress.append(stored_hits(state))
            partial += 0 < progress[-1] < truth.total_hits
        assert progress == sorted(progress), "a kill never undoes committed hits"
        before = stored_hits(state)
        final = json.loads(memoryd(cfg, "scan", "--json"))
        assert final["new_hits"] == truth.total_hits - before
        assert counts(cfg) == want, f"round {rounds}, hits after each kill: {progress}"
        # (the strength triggers dropped for a bulk load, the column filled at its end)
        assert strengths(state) == strong, f"round {rounds}"
        # A first scan builds the hit indexes at its end; killed before that, the next
        # open builds them.
        # (hits_by_session, migration 10's, is dropped and built again too: the strength
        # triggers are dropped with it and the fill at the end uses it)
        assert hit_indexes(state) == {
            "hits_by_path_ts", "hits_by_ts", "hits_by_session", "hits_by_path_anchor"
        }  # (migration 13's dropped and built as the others are)
    assert in_fill >= 2, "kills must land in the fill of the kept strength"
    assert kills >= 12, f"only {kills} of 18 kills landed while a scan was running"
    assert partial >= 6, "kills must land mid-ingest"


def counted_result_line(data: bytes, truth: CorpusTruth) -> int | None:
    """Offset of the first line that is a memory result the reference counts hits at.

    A wrapped toolResult message whose line time is one of the reference's hit times
    carries at least one counted hit (not a cron, dreaming, disabled or decoy result).
    """
    hit_ms = {round(t * 1000) for times in truth.hits.values() for t in times}
    at = 0
    for line in data.splitlines(keepends=True):
        if b'"toolResult"' in line and b"memory_" in line:
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            stamp = rec.get("timestamp") if isinstance(rec, dict) else None
            if isinstance(stamp, str) and round(parse_instant(stamp) * 1000) in hit_ms:
                return at
        at += len(line)
    return None


def test_a_half_written_last_line_is_counted_once_when_completed(tmp_path: Path) -> None:
    truth = generate(tmp_path / "c", seed=31, sessions=8, target_bytes=60_000, now=NOW)
    cfg = write_config(tmp_path, truth, tmp_path / "state")
    # A live transcript, neither renamed nor a successor (its hits are its own), with a result.
    target = next(
        t
        for t in truth.transcripts
        if t.path == t.written_as
        and "_" not in t.path.name
        and counted_result_line(t.path.read_bytes(), truth) is not None
    )
    data = target.path.read_bytes()
    start = counted_result_line(data, truth)
    assert start is not None
    end = data.index(b"\n", start) + 1
    cut = start + (end - start) // 2
    target.path.write_bytes(data[:cut])  # the writer is in the middle of the result line

    first = json.loads(memoryd(cfg, "scan", "--json"))
    assert first["errors"] == 0
    before = counts(cfg)
    assert sum(before.values()) < truth.total_hits, "the half line must not count yet"
    assert json.loads(memoryd(cfg, "scan", "--json"))["new_hits"] == 0  # still half: nothing

    with open(target.path, "ab") as out:
        out.write(data[cut:end])  # the line completed, nothing after it yet
    second = json.loads(memoryd(cfg, "scan", "--json"))
    assert second["malformed"] == 0, "a completed line is a line, not garbage"
    assert second["new_hits"] > 0
    with open(target.path, "ab") as out:
        out.write(data[end:])
    memoryd(cfg, "scan")
    assert counts(cfg) == truth.counts(None)


def test_sigkill_while_a_line_is_half_written_then_completed(tmp_path: Path) -> None:
    """The worst moment twice over: the writer mid-line and the scanner killed mid-scan."""
    truth = generate(tmp_path / "c", seed=77, sessions=10, target_bytes=3_000_000, now=NOW)
    cfg = write_config(tmp_path, truth, tmp_path / "state")
    biggest = max(
        (t for t in truth.transcripts if t.path == t.written_as and "_" not in t.path.name),
        key=lambda t: t.size,
    )
    data = biggest.path.read_bytes()
    found = counted_result_line(data[len(data) // 2 :], truth)
    assert found is not None
    start = found + len(data) // 2
    cut = start + 100
    biggest.path.write_bytes(data[:cut])
    for fault in ("store.opened:1", "scan.batch:3", "scan.committed:2"):
        assert killed_scan(cfg, fault), fault
    memoryd(cfg, "scan")
    with open(biggest.path, "ab") as out:
        out.write(data[cut:])
    memoryd(cfg, "scan")
    assert counts(cfg) == truth.counts(None)
