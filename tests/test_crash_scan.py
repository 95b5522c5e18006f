"""kill -9 during a scan loses nothing and counts nothing twice.

A real ``memoryd scan`` subprocess is killed with SIGKILL at seeded random moments
(start-up, mid-file, mid-commit: wherever the delay lands), repeatedly, on one state
dir; then a final scan must report exactly what an uninterrupted scan and the corpus
generator's reference say. ``[ingest] chunk_bytes = 4096`` makes the scan commit
often, so most kills land between commits of a half-read file.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memoryd.clock import parse_instant
from memoryd.corpus import CorpusTruth, generate

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

NOW = 1_790_000_000.0
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


def env_for(cfg: Path) -> dict[str, str]:
    return dict(os.environ, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))


def memoryd(cfg: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", *args], env=env_for(cfg), capture_output=True, text=True
    )
    assert proc.returncode == 0, f"memoryd {' '.join(args)} exited {proc.returncode}: {proc.stderr}"
    return proc.stdout


def counts(cfg: Path) -> dict[str, int]:
    doc = json.loads(memoryd(cfg, "hits", "--all", "--json", "--no-scan"))
    got = {f["path"]: f["hits"] for f in doc["files"]}
    got.update({p: 0 for p in doc["never_hit"]})
    return got


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


def timed_scan(cfg: Path) -> float:
    started = time.perf_counter()
    memoryd(cfg, "scan")
    return time.perf_counter() - started


def test_sigkill_at_random_moments_then_one_scan_gives_the_uninterrupted_counts(
    tmp_path: Path,
) -> None:
    truth = generate(tmp_path / "c", seed=4242, sessions=40, target_bytes=20_000_000, now=NOW)
    reference = write_config(tmp_path, truth, tmp_path / "uninterrupted")
    cold = timed_scan(reference)  # start-up + reading 20 MB in 4 KB chunks
    noop = timed_scan(reference)  # start-up alone, near enough
    want = counts(reference)
    assert want == truth.counts(None)

    rng = random.Random(7)
    kills = partial = rounds = 0
    while rounds < 5 and (kills < 6 or partial < 2):
        # One round: a fresh state, scans killed until one gets to finish, then a last scan.
        rounds += 1
        state = tmp_path / f"killed-{rounds}"
        cfg = write_config(tmp_path, truth, state)
        progress: list[int] = []  # hits stored after each kill
        for _ in range(8):
            proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd", "scan"],
                env=env_for(cfg),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(rng.uniform(0.5 * noop, noop + 0.6 * (cold - noop)))
            if proc.poll() is not None:  # finished first: nothing left to interrupt
                assert proc.returncode == 0
                break
            proc.send_signal(signal.SIGKILL)
            if proc.wait() == 0:  # it finished in the instant between poll and kill
                break
            assert proc.returncode == -signal.SIGKILL
            kills += 1
            progress.append(stored_hits(state))
            partial += 0 < progress[-1] < truth.total_hits
        assert progress == sorted(progress), "a kill never undoes committed hits"
        before = stored_hits(state)
        final = json.loads(memoryd(cfg, "scan", "--json"))
        assert final["new_hits"] == truth.total_hits - before
        assert counts(cfg) == want, f"round {rounds}, hits after each kill: {progress}"
        # A first scan builds the hit indexes at its end; killed before that, the next
        # open builds them.
        assert hit_indexes(state) == {"hits_by_path_ts", "hits_by_ts"}
    assert kills >= 3, f"only {kills} kills landed while a scan was running"
    assert partial >= 1, "no kill landed mid-ingest"


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
    rng = random.Random(3)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "scan"],
            env=env_for(cfg),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.1, 0.4))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
    memoryd(cfg, "scan")
    with open(biggest.path, "ab") as out:
        out.write(data[cut:])
    memoryd(cfg, "scan")
    assert counts(cfg) == truth.counts(None)
