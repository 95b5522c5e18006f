"""Benchmark: ``memoryd expire --dry-run`` on 1,000 memory files with 100,000 hits.

Target (issue 3): under 300 ms wall for the whole command, process start included.
Data is generated at run time from a seed (nothing is committed). Printed:

* the wall time of ``memoryd expire --dry-run --json`` as a subprocess (median of runs);
* the in-process time of planning alone (signals + policy + destinations);
* two baselines measured in the same run, both listing the workspace themselves:
  one indexed SQL query per file (a careful script), and the seed prototype's way,
  every hit loaded and scanned again for each file;
* ratios between them.

The baselines implement the seed rule, so the plans are compared with ``--policy seed``
(the default here); ``--policy likely`` times the default policy of ``[expire]`` instead
(it reads every hit row for their strength) and skips the comparison.

Usage: ``.venv/bin/python bench/bench_expire.py [--files 1000] [--hits 100000] [--seed 7]
[--policy seed|likely|…]``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memoryd.clock import parse_instant
from memoryd.config import Config, ExpireConfig, OpenClawConfig, resolve_paths
from memoryd.policy.expire_plan import build_plan
from memoryd.signals import snapshot
from memoryd.store import Store

NOW = "2026-11-03T10:00:00Z"


def build(root: Path, files: int, hits: int, seed: int) -> tuple[Path, Path, list[str]]:
    rng = random.Random(seed)
    state = root / "oc"
    ws = state / "workspace"
    (ws / "memory" / "projects").mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# long-term\n")
    now = parse_instant(NOW)
    rels = ["MEMORY.md"]
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(files - 1):
        if i % 4 == 3:
            rel = f"memory/projects/topic-{i:04d}.md"
        else:
            day = (start + timedelta(days=i)).strftime("%Y-%m-%d")
            rel = f"memory/{day}.md"
        p = ws / rel
        p.write_text(f"# note {i}\n" + "words " * rng.randint(5, 200))
        t = now - rng.uniform(0, 400) * 86400
        os.utime(p, (t, t))
        rels.append(rel)
    weights = [1.0 / (k + 1) for k in range(len(rels))]
    rng.shuffle(weights)
    chosen = rng.choices(rels, weights=weights, k=hits)
    with Store.open(state / "memoryd" / "state.db") as store, store.transaction():
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
            "VALUES ('main', ?, ?, 'search', ?, ?)",
            (
                (f"call-{n}", rel, now - rng.expovariate(1 / 60) * 86400, f"q{n % 500}")
                for n, rel in enumerate(chosen)
            ),
        )
    return state, ws, rels


def _listing(ws: Path) -> list[str]:
    rels = [n for n in ("MEMORY.md", "memory.md") if (ws / n).is_file()]
    for dirpath, _dirs, names in os.walk(ws / "memory"):
        rels += [(Path(dirpath) / n).relative_to(ws).as_posix() for n in names if n.endswith(".md")]
    return sorted(rels)


def naive_plan(db: Path, now: float) -> list[str]:
    """Baseline 1: list the files, then a query per file and a Python loop over its hits."""
    import sqlite3

    from memoryd.signals import created_time

    conn = sqlite3.connect(db)
    ws = db.parent.parent / "workspace"
    out = []
    for rel in _listing(ws):
        if rel in ("MEMORY.md", "memory.md"):
            continue
        created, _ = created_time(rel, (ws / rel).stat().st_mtime)
        recent = 0
        for (ts,) in conn.execute("SELECT ts FROM hits WHERE memory_path = ?", (rel,)):
            if now - 30 * 86400 <= ts <= now:
                recent += 1
        if (now - created) / 86400 > 30 and recent <= 2:
            out.append(rel)
    conn.close()
    return out


def naive_loop_plan(db: Path, now: float) -> list[str]:
    """Baseline 2, the seed prototype's way: every hit loaded, every file counts them all."""
    import sqlite3

    from memoryd.signals import created_time

    conn = sqlite3.connect(db)
    hits = conn.execute("SELECT memory_path, ts FROM hits").fetchall()
    conn.close()
    ws = db.parent.parent / "workspace"
    cut = now - 30 * 86400
    out = []
    for rel in _listing(ws):
        if rel in ("MEMORY.md", "memory.md"):
            continue
        created, _ = created_time(rel, (ws / rel).stat().st_mtime)
        recent = sum(1 for path, ts in hits if path == rel and cut <= ts <= now)
        if (now - created) / 86400 > 30 and recent <= 2:
            out.append(rel)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--hits", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--policy", default="seed", help="[expire] policy to time (default seed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state, _, _ = build(Path(tmp), args.files, args.hits, args.seed)
        env = {**os.environ, "OPENCLAW_STATE_DIR": str(state), "MEMORYD_NOW": NOW}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as when installed
        config = Path(tmp) / "memoryd.toml"
        config.write_text(f'[expire]\npolicy = "{args.policy}"\n')
        env["MEMORYD_CONFIG"] = str(config)
        cmd = [sys.executable, "-m", "memoryd", "expire", "--dry-run", "--json"]
        walls = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            walls.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import memoryd.cli"], env=env, check=True)
        startup = time.perf_counter() - t0

        now = parse_instant(NOW)
        cfg = Config(
            openclaw=OpenClawConfig(state_dir=str(state)), expire=ExpireConfig(policy=args.policy)
        )
        paths = resolve_paths(cfg, env)
        plans, naive = [], []
        for _ in range(args.runs):
            with Store.open(paths.db, readonly=True) as store:
                t0 = time.perf_counter()
                plan = build_plan(cfg, snapshot(cfg, paths, store, now))
                plans.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            expected = naive_plan(paths.db, now)
            naive.append(time.perf_counter() - t0)
        if args.policy == "seed":
            assert sorted(a.path for a in plan.archive) == sorted(expected), "plans differ"
        t0 = time.perf_counter()
        looped = naive_loop_plan(paths.db, now)
        loop_t = time.perf_counter() - t0
        assert sorted(looped) == sorted(expected), "plans differ"

    wall, plan_t, naive_t = (statistics.median(x) for x in (walls, plans, naive))
    print(f"workspace: {args.files} files, {args.hits} hits, seed {args.seed}, "
          f"policy {args.policy}")  # fmt: skip
    print(f"archive plan: {len(plan.archive)} files, keep {len(plan.keep)}")
    print(f"memoryd expire --dry-run --json, wall (median of {args.runs}): {wall * 1000:.0f} ms"
          f"  [target < 300 ms: {'met' if wall < 0.3 else 'MISSED'}]")  # fmt: skip
    print(f"  of which interpreter + imports: {startup * 1000:.0f} ms")
    print(f"planning in-process (signals + policy): {plan_t * 1000:.0f} ms")
    print(f"baseline 1, one indexed query per file + Python count: {naive_t * 1000:.0f} ms")
    print(f"baseline 2, naive Python loop over all hits per file: {loop_t * 1000:.0f} ms (1 run)")
    print(f"ratio baseline 1 / memoryd planning: {naive_t / plan_t:.2f}x")
    print(f"ratio baseline 2 / memoryd planning: {loop_t / plan_t:.1f}x")
    print("(memoryd's planning also builds every decision's reason and the archive destinations)")


if __name__ == "__main__":
    main()
