#!/usr/bin/env python3
"""What the reflect page adds to ``reflect``: the page's own work against the whole job's.

The install of ``bench_sections.py`` (a 1 MB MEMORY.md, a year of hits on it, 60,000 by
default) plus ``--notes`` notes with a year of hits each, in a real state database. In one
process, interleaved, best of ``--repeat``: ``jobs.reflect.run`` as ``memoryd reflect`` runs
it (the report and the page), and the page alone on the same snapshot (``build_page`` and
``write_page``: the MEMORY.md rows, their placement by week, the bootstrap cut, the journal,
the HTML). The page's share of the job is the figure; CPU time, the load printed.

    .venv/bin/python bench/bench_report_page.py [--hits 60000] [--notes 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "daemon"))

import bench_sections  # noqa: E402  (the same MEMORY.md and hits)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hits", type=int, default=60_000)
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--note-hits", type=int, default=100, help="hits per note over the year")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from memoryd.config import load_config, resolve_paths
    from memoryd.jobs import reflect
    from memoryd.report_page import build_page, write_page
    from memoryd.signals import snapshot
    from memoryd.store import Store

    text = bench_sections.memory_md(1.0, random.Random(33))
    rows = bench_sections.hit_rows(text, args.hits)
    now = bench_sections.NOW
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-page-") as tmp:
        root = Path(tmp)
        env = bench_sections.build(root, text, rows, str(ROOT.parent / "daemon"))
        ws = root / "workspace"
        (ws / "memory").mkdir()
        rng = random.Random(7)
        notes = []
        for i in range(args.notes):
            rel = f"memory/note-{i}.md"
            (ws / rel).write_text(f"# Note {i}\n- a fact\n", encoding="utf-8")
            notes += [(f"n{i}.{j}", rel, now - rng.random() * 365 * 86400)
                      for j in range(args.note_hits)]  # fmt: skip
        conn = sqlite3.connect(root / "md" / "state.db")
        with conn:
            conn.executemany(
                "INSERT INTO hits (agent, call_id, memory_path, kind, ts, start_line, end_line)"
                " VALUES ('main', ?, ?, 'search', ?, 1, 2)", notes,
            )
        conn.close()
        os.environ.update({k: v for k, v in env.items() if k.startswith("MEMORYD_")})
        cfg = load_config(env["MEMORYD_CONFIG"])
        paths = resolve_paths(cfg)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; MEMORY.md "
              f"1 MB with {args.hits:,} hits, {args.notes} notes with {args.note_hits} each")
        job = page = float("inf")
        with Store.open(paths.db) as store:
            for _ in range(args.repeat):
                c0 = time.process_time()
                result = reflect.run(cfg, paths, store, now)
                job = min(job, time.process_time() - c0)
                snap = snapshot(cfg, paths, store, now)
                assert snap.hits is not None  # (read by the job before the page: its pairs)
                c0 = time.process_time()
                write_page(paths.reports_dir, "bench", build_page(paths, store, snap,
                                                                  result.document, now))
                page = min(page, time.process_time() - c0)
        size = (paths.reports_dir / "bench.html").stat().st_size
    print(f"reflect (report and page): {job * 1000:.0f} ms CPU; the page alone "
          f"{page * 1000:.0f} ms CPU = {page / job:.1%} of the job; page {size / 1024:.0f} KiB")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
