"""Benchmark: organize and recall on a 10,000-note tier store (issue 4).

Targets: organize on 10,000 notes under 2 s; recall over it under 300 ms wall.
Data is generated at run time from a seed (nothing is committed): notes spread
over hot/ warm/ gist/ forgotten/ as a settled store looks, with Chinese and
English text, and transcript hits on a quarter of them. Printed:

* organize, first run (records 10,000 new notes) and an hourly steady-state run
  in which some notes are due to move (in-process, ``organize.run``);
* ``memoryd organize --json`` as a subprocess (process start included);
* recall: a word found in warm/ (search + rotation + hit recorded), and a word found
  nowhere (every tier read: the worst case), in-process and as a subprocess;
* baselines measured in the same run: the seed's own method for each job, i.e. a
  naive organize (``stat`` per file plus one SQL query per note for its last
  retrieval) and ``grep -ril`` over the four tiers; with ratios.

Usage: ``.venv/bin/python bench/bench_tiers.py [--notes 10000] [--hits 40000] [--seed 4]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memoryd.config import Config, OpenClawConfig, resolve_paths
from memoryd.jobs import organize
from memoryd.store import Store
from memoryd.tierstore import DAY, HOUR
from memoryd.tierstore.recall import recall

NOW = 1_780_000_000.0
ZH = [
    "数据库",
    "迁移",
    "服务器",
    "周六",
    "会议",
    "预算",
    "划船",
    "咖啡",
    "配方",
    "部署",
    "回滚",
    "监控",
    "报警",
    "日志",
    "测试",
]
EN = [
    "budget",
    "meeting",
    "deploy",
    "rollback",
    "sailing",
    "espresso",
    "router",
    "invoice",
    "backup",
    "kernel",
]


def text(rng: random.Random, i: int) -> str:
    words = [rng.choice(ZH if rng.random() < 0.5 else EN) for _ in range(rng.randint(20, 120))]
    return f"# Note {i}\n\n" + " ".join(words) + "。\n\n## Details\n" + " ".join(words[:10]) + "\n"


def build(base: Path, notes: int, hits: int, seed: int) -> tuple[Config, object]:
    rng = random.Random(seed)
    state = base / "oc"
    state.mkdir()
    cfg = Config(openclaw=OpenClawConfig(state_dir=str(state)))
    paths = resolve_paths(cfg, {})
    root = paths.tiers_root
    for tier in ("hot", "warm", "gist", "forgotten"):
        (root / tier).mkdir(parents=True)

    def put(rel: str, body: str, mtime: float) -> None:
        p = root / rel
        p.write_text(body, encoding="utf-8")
        os.utime(p, (mtime, mtime))

    names = []
    retrieved = []  # notes a settled store keeps out of forgotten/: they are being used
    for i in range(notes):
        name = f"note-{i:05d}.md"
        names.append(name)
        r = rng.random()
        body = text(rng, i)
        if r < 0.02:  # hot, some of them about to cool down
            put(f"hot/{name}", body, NOW - rng.uniform(0, 3.5) * HOUR)
        elif r < 0.30:  # warm, young
            put(f"warm/{name}", body, NOW - rng.uniform(0.2, 6.9) * DAY)
        elif r < 0.70:  # warm with its gist, still retrieved
            put(f"warm/{name}", body, NOW - rng.uniform(7.1, 25) * DAY)
            retrieved.append(name)
            put(f"gist/{name}", f"# Note {i}\n标签: {rng.choice(ZH)}\n" + body[:80], NOW - DAY)
        else:  # forgotten with its summary
            put(f"forgotten/{name}", body, NOW - rng.uniform(20, 40) * DAY)
            put(f"forgotten/note-{i:05d}.gist.md", f"# Note {i}\n", NOW - 10 * DAY)
    put(
        "warm/espresso-ratio.md",
        "# Espresso\n\nratio 1:2, 28 s, the zebraword grinder.\n",
        NOW - 2 * DAY,
    )
    with Store.open(paths.db) as store, store.transaction():
        rows = []
        for k, name in enumerate(retrieved):  # each retrieved within the last 12 days
            rows.append((f"r{k}", f"tiers/{name}", NOW - rng.uniform(0, 12) * DAY))
        for k in range(max(0, hits - len(retrieved))):
            name = rng.choice(retrieved)
            rows.append((f"c{k}", f"tiers/{name}", NOW - rng.uniform(0, 30) * DAY))
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
            "VALUES ('main', ?, ?, 'search', ?, 'q')",
            rows,
        )
    return cfg, paths


def naive_organize(root: Path, db: Path) -> int:
    """The seed's organize.py done plainly: stat each file, ask for each note's last hit."""
    conn = sqlite3.connect(db)
    due = 0
    for tier in ("hot", "warm", "gist", "forgotten"):
        for name in os.listdir(root / tier):
            st = (root / tier / name).stat()
            last = conn.execute(
                "SELECT MAX(ts) FROM hits WHERE memory_path = ?", (f"tiers/{name}",)
            ).fetchone()[0]
            if (tier == "hot" and NOW - st.st_mtime > 3 * HOUR) or (
                tier in ("warm", "gist") and NOW - (last or st.st_mtime) > 14 * DAY
            ):
                due += 1
    conn.close()
    return due


def timed(fn, repeat: int = 1, warm_up: bool = False) -> float:
    if warm_up:  # a first run writes the bytecode caches, as an install would have them
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--hits", type=int, default=40_000)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-tiers-"))
    try:
        t = time.perf_counter()
        cfg, paths = build(base, args.notes, args.hits, args.seed)
        print(
            f"store: {args.notes} notes, {args.hits} hits, built in {time.perf_counter() - t:.1f} s"
        )
        root = paths.tiers_root
        # bytecode caching on, as for an installed package (pip compiles .pyc files)
        env = {**os.environ, "OPENCLAW_STATE_DIR": str(paths.state_dir)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        with Store.open(paths.db) as store:
            first_res = {}

            def first_run() -> None:
                first_res["r"] = organize.run(cfg, paths, store, NOW)

            first = timed(first_run)
            organize.run(cfg, paths, store, NOW + 60)  # settle what the first run left
            idle_res = {}

            def idle_run() -> None:
                idle_res["r"] = organize.run(cfg, paths, store, NOW + 120)

            idle = timed(idle_run, repeat=3)
            hourly_res = {}

            def hourly() -> None:
                hourly_res["r"] = organize.run(cfg, paths, store, NOW + HOUR)

            hourly_t = timed(hourly)
        counts = hourly_res["r"].data["counts"]
        naive = timed(lambda: naive_organize(root, paths.db), repeat=3)
        env_now = {**env, "MEMORYD_NOW": str(NOW + 2 * HOUR)}
        cli = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "memoryd", "organize", "--json"],
                env=env_now,
                capture_output=True,
                check=True,
            ),
            repeat=3,
            warm_up=True,
        )
        print(
            f"organize first run (records every note):  {first * 1000:8.0f} ms  "
            f"({first_res['r'].summary})"
        )
        idle_summary = idle_res["r"].summary
        print(f"organize idle run (nothing due):          {idle * 1000:8.0f} ms  ({idle_summary})")
        print(
            f"organize hourly run ({counts['move']} moves, {counts['gist']} gists, "
            f"{counts['delete']} deletions): {hourly_t * 1000:8.0f} ms"
        )
        print(f"memoryd organize --json (subprocess):     {cli * 1000:8.0f} ms   target < 2000 ms")
        print(f"baseline naive organize (plan only):      {naive * 1000:8.0f} ms")
        print(f"ratio idle organize / naive plan:         {idle / naive:8.2f}")

        with Store.open(paths.db) as store:
            miss = timed(
                lambda: recall(cfg, paths, store, ["zzqx"], NOW + 3 * HOUR, rotate=False),
                repeat=5,
            )
            hit_out = {}

            def hit() -> None:
                hit_out["o"] = recall(cfg, paths, store, ["zebraword"], NOW + 3 * HOUR)

            hit_t = timed(hit)
        grep_cmd = ["grep", "-ril", "zzqx"] + [
            str(root / t) for t in ("hot", "warm", "gist", "forgotten")
        ]
        grep = timed(lambda: subprocess.run(grep_cmd, capture_output=True), repeat=5)
        cli_recall = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "memoryd", "recall", "--peek", "--json", "zzqx"],
                env=env_now,
                capture_output=True,
                check=True,
            ),
            repeat=3,
            warm_up=True,
        )
        o = hit_out["o"]
        print(
            f"recall, found in {o.tier}/ ({o.matches} match, rotated, counted): "
            f"{hit_t * 1000:5.0f} ms   target < 300 ms"
        )
        print(f"recall, found nowhere (all tiers read):   {miss * 1000:8.0f} ms   target < 300 ms")
        print(f"memoryd recall --peek (subprocess):       {cli_recall * 1000:8.0f} ms")
        print(f"baseline grep -ril over the tiers:        {grep * 1000:8.0f} ms")
        print(f"ratio recall-nowhere / grep:              {miss / grep:8.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
