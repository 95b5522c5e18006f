#!/usr/bin/env python3
"""Migration 10 on a heavy year's database: how long it holds the write lock, this version
against a baseline in the same run.

    .venv/bin/python bench/bench_strength_fill.py --baseline /tmp/base/daemon

Takes ``bench_decisions.py``'s install (416 k hits for seed 1; built there first), makes a
schema-9 copy of its state database once (the kept strength, its triggers and index, and
the anchors taken away), then opens a fresh copy of it with each version (a subprocess
each, ``PYTHONPATH``): the open migrates. Prints the open's wall and CPU time, the one
migration transaction's, and, for a version that fills the kept strength after it in
transactions of its own (``memoryd.kept_strength``), how many and the longest: what
another process's writer, whose busy timeout is 30 s, may have to wait.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from pathlib import Path
from memoryd import faults
import memoryd.store as st
db = Path(sys.argv[1])
marks = []
faults.hook("strength.committed", lambda: marks.append(time.perf_counter()))
spent = {}
orig = st.Store._migrate
def migrate(self):
    t = time.perf_counter(); orig(self); spent["migration"] = time.perf_counter() - t
    marks.append(time.perf_counter())
st.Store._migrate = migrate
cpu0, t0 = time.process_time(), time.perf_counter()
st.Store.open(db).close()
chunks = [b - a for a, b in zip(marks, marks[1:])]
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - cpu0,
                  "migration": spent.get("migration", 0.0), "fills": len(chunks),
                  "longest_fill": max(chunks, default=0.0), "fill": sum(chunks)}))
"""


def schema_9(src: Path, to: Path) -> None:
    """A copy of ``src`` as it was before migration 10 (made once)."""
    if to.exists():
        return
    shutil.copy(src, to)
    conn = sqlite3.connect(to, isolation_level=None)
    for name in ("hits_strength_insert", "hits_strength_delete"):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute("DROP INDEX IF EXISTS hits_by_session")
    conn.execute("ALTER TABLE hits DROP COLUMN anchor")
    conn.execute("ALTER TABLE hits DROP COLUMN strong_from")
    conn.execute("DELETE FROM meta WHERE key = 'hits.strength_pending'")
    conn.execute("PRAGMA user_version = 9")
    conn.execute("VACUUM")
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="the daemon/ folder of another version")
    ap.add_argument("--install", type=Path, default=Path("/tmp/memoryd-bench-decisions"))
    args = ap.parse_args()
    src = args.install / "oc" / "memoryd" / "state.db"
    if not src.is_file():
        raise SystemExit(f"no install at {args.install}: run bench/bench_decisions.py first")
    work = args.install / "fill"
    work.mkdir(exist_ok=True)
    v9 = work / "schema9.db"
    schema_9(src, v9)
    (hits,) = sqlite3.connect(v9).execute("SELECT count(*) FROM hits").fetchone()
    print(f"schema-9 database: {hits} hits; load average {os.getloadavg()[0]:.1f}")
    for name, daemon in (("this", ROOT / "daemon"), ("baseline", Path(args.baseline).resolve())):
        db = work / f"{name}.db"
        for ext in ("", "-wal", "-shm"):
            Path(f"{db}{ext}").unlink(missing_ok=True)
        shutil.copy(v9, db)
        env = {**os.environ, "PYTHONPATH": str(daemon)}
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(db)], env=env, capture_output=True, text=True
        )
        if out.returncode != 0:
            raise SystemExit(f"{name}: {out.stderr}")
        r = json.loads(out.stdout)
        print(
            f"  {name:8s} open {r['wall']:5.1f} s wall, {r['cpu']:4.1f} s CPU; migration "
            f"transaction {r['migration']:5.1f} s; then {r['fills']} fill transactions "
            f"(longest {r['longest_fill']:.2f} s, {r['fill']:.1f} s in all)"
        )
    print(f"  (load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
