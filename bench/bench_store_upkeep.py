#!/usr/bin/env python3
"""What the state of sessions gone from the transcript store costs a scan, kept or forgotten.

A store of ``--live`` sessions (small conversations), read once; then the state database is
given ``--gone`` cursors of sessions that OpenClaw deleted long ago (as a year of use leaves
them: one cursor per session ever read). Each case then times scans that each follow one new
row (what the daemon does all day), in-process CPU time of ``Scanner.scan`` (median of
``--repeat``), in a fresh process per case, the cases interleaved, all in one run:

  base, none      the other version (``--baseline``, its daemon/ folder), no gone cursors
  base, kept      the other version with the gone cursors (it never drops them)
  this, none      this version, no gone cursors
  this, noted     this version within the grace period: the cursors, and a "gone since" row each
  this, forgotten this version once they were gone for the grace period: deleted

Asserts nothing; prints medians, spreads and the ratios to "base, none".

    .venv/bin/python bench/bench_store_upkeep.py [--live 50] [--gone 20000] [--repeat 7]
        [--rounds 3] [--windows 0] [--baseline /tmp/base/daemon]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# One case, run in a process of its own with the version under test on PYTHONPATH: it times
# `repeat` scans, each after one new row, and prints the CPU seconds of each as JSON.
WORKER = r"""
import json, os, sqlite3, sys, time
from memoryd.config import load_config, resolve_paths
from memoryd.ingest.scan import Scanner
from memoryd.store import Store

cfg_path, db, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
cfg = load_config(cfg_path)
paths = resolve_paths(cfg, {})
store = Store.open(paths.db)
oc = sqlite3.connect(db, isolation_level=None)
times = []
for i in range(repeat):
    seq = oc.execute("SELECT MAX(seq) FROM transcript_events WHERE session_id = 'live-0'")
    top = seq.fetchone()[0]
    text = json.dumps({"type": "message", "id": f"x{top}", "message": {"role": "user",
                       "content": [{"type": "text", "text": "more"}]}})
    oc.execute("INSERT INTO transcript_events VALUES ('live-0', ?, ?, 0)", (top + 1, text))
    os.utime(db, ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))  # settled
    t0 = time.process_time()
    stats = Scanner(cfg, paths, store).scan()
    times.append(time.process_time() - t0)
    assert stats.errors == 0, stats
print(json.dumps(times))
"""


def make_store(root: Path, live: int, windows: int = 0) -> Path:
    """An agent store of ``live`` sessions, 40 rows each (no memory calls: only reading); with
    ``windows``, a ``session_windows`` table of the live sessions and that many more (of
    sessions deleted, as a year of use leaves them), 30 % continuing the one before."""
    db = root / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    (root / "state" / "agents" / "main" / "sessions").mkdir()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute(
        "CREATE TABLE transcript_events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
        "event_json TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq))"
    )
    rows = []
    for s in range(live):
        for q in range(40):
            text = json.dumps({"type": "message", "id": f"{s}-{q}", "message": {"role": "user"}})
            rows.append((f"live-{s}", q, text, 0))
    conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?)", rows)
    if windows:
        conn.execute(
            "CREATE TABLE session_windows(session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL, "
            "previous_session_id TEXT, reason TEXT, created_at INTEGER)"
        )
        rnd = random.Random(1)
        names = [f"live-{s}" for s in range(live)] + [f"w-{i:08d}" for i in range(windows)]
        conn.executemany(
            "INSERT INTO session_windows VALUES (?, 'agent:main:main', ?, 'initial', 0)",
            [
                (sid, names[i - 1] if i > live and rnd.random() < 0.3 else None)
                for i, sid in enumerate(names)
            ],
        )
    conn.close()
    return db


def config(root: Path, name: str) -> Path:
    ws = root / "workspace"
    ws.mkdir(exist_ok=True)
    cfg = root / f"{name}.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(root / 'state'))}\n"
        f"workspace = {json.dumps(str(ws))}\n"
        f"[state]\ndir = {json.dumps(str(root / f'md-{name}'))}\n"
        "[ingest]\nparallel_min_bytes = 0\n",
        encoding="utf-8",
    )
    return cfg


def run(pythonpath: Path, cfg: Path, db: Path, repeat: int, env: dict[str, str]) -> list[float]:
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(cfg), str(db), str(repeat)],
        env=dict(env, PYTHONPATH=str(pythonpath)),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker failed: {proc.stderr.strip()[-600:]}")
    return list(json.loads(proc.stdout))


def add_gone_cursors(state_db: Path, gone: int) -> None:
    conn = sqlite3.connect(state_db, isolation_level=None)
    (source_id,) = conn.execute("SELECT id FROM sources WHERE kind = 'store'").fetchone() or (
        conn.execute("SELECT MAX(source_id) FROM transcript_db_cursors").fetchone()
    )
    conn.executemany(
        "INSERT INTO transcript_db_cursors(source_id, session_id, seq) VALUES (?, ?, ?)",
        [(source_id, f"gone-{i:08d}-{'x' * 28}", 300) for i in range(gone)],
    )
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--live", type=int, default=50)
    ap.add_argument("--gone", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--windows", type=int, default=0, help="session_windows rows beyond the live")
    ap.add_argument("--baseline", type=Path, required=True)
    args = ap.parse_args()
    this = ROOT / "daemon"
    tmp = Path(tempfile.mkdtemp(prefix="memoryd-bench-upkeep-"))
    env = dict(os.environ)
    env.pop("MEMORYD_CLOCK_OFFSET", None)
    try:
        db = make_store(tmp, args.live, args.windows)
        cases: dict[str, tuple[Path, Path]] = {}
        for name, version, gone in (
            ("base, none", args.baseline, 0),
            ("base, kept", args.baseline, args.gone),
            ("this, none", this, 0),
            ("this, noted", this, args.gone),
            ("this, forgotten", this, args.gone),
        ):
            cfg = config(tmp, name.replace(", ", "-"))
            run(version, cfg, db, 1, env)  # the first read: the state database made
            if gone:
                add_gone_cursors(tmp / f"md-{name.replace(', ', '-')}" / "state.db", gone)
                run(version, cfg, db, 1, env)  # (this version: notes them gone)
            if name == "this, forgotten":
                later = dict(env, MEMORYD_CLOCK_OFFSET=str(8 * 86400))
                run(version, cfg, db, 1, later)  # gone for the grace period: forgotten
            cases[name] = (version, cfg)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (version, cfg) in cases.items():
                times[name] += run(version, cfg, db, args.repeat, env)
        ref = statistics.median(times["base, none"])
        print(
            f"store: {args.live} live sessions; {args.windows} more windows; "
            f"{args.gone} cursors of gone sessions; "
            f"{args.rounds} rounds x {args.repeat} scans, each after one new row"
        )
        print(f"{'case':<16} {'median ms':>10} {'min':>7} {'max':>7} {'x base,none':>12}")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(
                f"{name:<16} {med * 1e3:>10.2f} {min(ts) * 1e3:>7.2f} {max(ts) * 1e3:>7.2f} "
                f"{med / ref:>12.2f}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
