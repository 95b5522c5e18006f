#!/usr/bin/env python3
"""``memoryd retire --dry-run``'s own work on a 1 MB MEMORY.md with a year of hits: the hits
per section (``section_report.sections_report``, what ``memoryd sections`` does: the
baseline, in the same run) and then the plan (``policy.retire_plan.plan_retire``) down to
OpenClaw's 20,000-character budget. The issue's bound is 300 ms for the dry run. Best of 5;
the file is ``bench/bench_sections.py``'s (same seed); four hits in five fall on the first
tenth of it, the rest anywhere and more than 60 days ago, so most sections are stale and the
plan takes nearly all of them (its worst case).

    .venv/bin/python bench/bench_retire.py [--hits 60000] [--mb 1.0] [--budget 20000] [--command]

``--command`` also times the commands as a user runs them, on a real state database holding
those hits: ``memoryd retire --dry-run --no-scan`` against ``memoryd sections MEMORY.md
--no-scan`` (the baseline), each a fresh process, best of 5 wall.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from bench_sections import memory_md
from memoryd.bootstrap_cut import bootstrap_cuts
from memoryd.policy.retire_plan import Use, plan_retire
from memoryd.section_map import chunk_anchor
from memoryd.section_report import CUT, NOT_LOADED, HitRow, sections_report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hits", type=int, default=60_000)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--budget", type=int, default=20_000)
    ap.add_argument("--command", action="store_true")
    args = ap.parse_args()
    rng = random.Random(33)
    text = memory_md(args.mb, rng)
    lines = text.split("\n")
    now = 1_796_000_000.0
    rows = []
    hot = len(lines) // 10  # four hits in five on the first tenth of the file, over the year;
    for _ in range(args.hits):  # the rest anywhere, more than 60 days ago (stale sections)
        if rng.random() < 0.8:
            first, age = rng.randrange(1, hot), rng.random() * 365
        else:
            first, age = rng.randrange(1, len(lines) - 8), 60 + rng.random() * 305
        last = first + rng.randint(2, 8)
        snippet = "\n".join(lines[first - 1 : last])
        rows.append(HitRow(now - age * 86400, first, last, chunk_anchor(first, last, snippet)))
    cut = bootstrap_cuts({"MEMORY.md": text})["MEMORY.md"]
    report = plan = float("inf")
    for _ in range(5):
        c0 = time.process_time()
        rep = sections_report(text, rows, now, cut)
        c1 = time.process_time()
        uses = [
            Use(u.section, u.hits_30d, u.hits_90d, u.hits_total, u.last_hit,
                u.bootstrap in (CUT, NOT_LOADED))
            for u in rep.sections
        ]  # fmt: skip
        p = plan_retire(text, uses, args.budget, now, min_idle_days=30)
        c2 = time.process_time()
        report, plan = min(report, c1 - c0), min(plan, c2 - c1)
    load = os.getloadavg()[0]
    print(
        f"MEMORY.md {len(text) / 1e6:.2f} MB, {len(rep.sections)} sections, {len(rows)} hits, "
        f"load {load:.1f}: sections_report {report * 1000:.0f} ms CPU (baseline), "
        f"plan {plan * 1000:.0f} ms CPU ({plan / report:.2f}× the baseline): "
        f"{len(p.taken)} sections taken, {p.chars_before:,} → {p.chars_after:,} characters "
        f"(budget {p.budget:,}); the dry run's work {(report + plan) * 1000:.0f} ms CPU"
    )
    if args.command:
        _commands(text, rows, now)


def _commands(text: str, rows: list[HitRow], now: float) -> None:
    import subprocess
    import tempfile
    from pathlib import Path

    from memoryd.store import Store

    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-retire-"))
    state, ws = root / "state", root / "workspace"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    ws.mkdir()
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    cfg = root / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{state}"\nworkspace = "{ws}"\n[state]\ndir = "{root / "md"}"\n'
    )
    with Store.open(root / "md" / "state.db") as store, store.transaction() as conn:
        conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, start_line, end_line, "
            "anchor) VALUES ('main', ?, 'MEMORY.md', 'search', ?, ?, ?, ?)",
            [(f"c{i}", r.ts, r.start, r.end, r.anchor) for i, r in enumerate(rows)],
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(now))
    best: dict[str, float] = {}
    for _ in range(5):
        for name, argv in (("sections", ["sections", "MEMORY.md"]), ("retire", ["retire"])):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "memoryd", *argv, "--no-scan", "--json"],
                env=env, capture_output=True, text=True,
            )  # fmt: skip
            took = time.perf_counter() - t0
            assert proc.returncode == 0, proc.stderr
            best[name] = min(best.get(name, took), took)
    print(
        f"commands, wall, best of 5, load {os.getloadavg()[0]:.1f}: sections "
        f"{best['sections'] * 1000:.0f} ms (baseline), retire --dry-run "
        f"{best['retire'] * 1000:.0f} ms ({best['retire'] / best['sections']:.2f}×)"
    )


if __name__ == "__main__":
    main()
