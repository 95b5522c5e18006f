#!/usr/bin/env python3
"""``memoryd sections`` on a large MEMORY.md: sections found, every hit placed, against a baseline.

A 1 MB MEMORY.md (about 1,100 topics of bullet entries) and a year of hits on it (one anchor
per hit, built by the parser's own ``chunk_anchor`` from the file's lines, a tenth of them from
a version of the file whose topics have since moved and a twentieth whose text is gone). Two
measures, each for the code under ``--baseline`` (a ``daemon`` folder of another checkout,
run through ``PYTHONPATH``: ``git archive main daemon | tar -x -C /tmp/base``) and for this
checkout, interleaved in the same run:

- ``sections_report`` on the rows, in a child of each version, best of 5 (the collector
  paused, as the command pauses it; the command itself now has SQLite group the rows first);
- the whole command as a process, ``python -m memoryd sections MEMORY.md --no-scan --json``
  on a real state database holding the hits, made and migrated by that version (start-up,
  the query, the file, the cut, the output), best of ``--repeat``; both versions' outputs
  must be the same, byte for byte (but for the install's folder).

The issue's bound is 300 ms for ``sections`` on such a file. On a shared machine the CPU
time says more than the wall time when other work runs; the load is printed.

    .venv/bin/python bench/bench_sections.py --baseline /tmp/base/daemon [--hits 60000]
        [--mb 1.0] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_796_000_000.0
DAY = 86400.0


def memory_md(mb: float, rng: random.Random) -> str:
    out = ["# Long-term memory", ""]
    size, i = 0, 0
    while size < mb * 1_000_000:
        block = [f"## Topic {i} {rng.randrange(10**6)}"]
        block += [f"- entry {i}.{j}: " + " ".join(f"w{rng.randrange(10**5)}" for _ in range(24))
                  for j in range(rng.randint(2, 8))]
        block.append("")
        out += block
        size += sum(len(b) + 1 for b in block)
        i += 1
    return "\n".join(out)


def hit_rows(text: str, hits: int) -> list[tuple[float, int, int, str]]:
    """(ts, start, end, anchor) of a year of hits on ``text`` (seeded: the same every run)."""
    from memoryd.section_map import chunk_anchor

    rng = random.Random(33)
    lines = text.split("\n")
    gone = memory_md(0.05, random.Random(34)).split("\n")
    rows = []
    for _ in range(hits):
        src = gone if rng.random() < 0.05 else lines
        first = rng.randrange(1, len(src) - 8)
        last = first + rng.randint(2, 8)
        snippet = "\n".join(src[first - 1 : last]) + f"\n\nSource: MEMORY.md#L{first}-L{last}"
        rows.append((NOW - rng.random() * 365 * DAY, first, last,
                     chunk_anchor(first, last, snippet)))
    return rows


# The child that times sections_report in one version (its PYTHONPATH): best of 5.
_CHILD = r"""
import gc, hashlib, json, sys, time
gc.disable()  # (as the command runs: memoryd.cli pauses the collector for one-shot commands)
from memoryd.bootstrap_cut import bootstrap_cuts
from memoryd.section_report import HitRow, sections_report
text = open(sys.argv[1], encoding="utf-8").read()
rows = [HitRow(*r) for r in json.load(open(sys.argv[2]))]
cut = bootstrap_cuts({"MEMORY.md": text})["MEMORY.md"]
best = cpu = float("inf")
for _ in range(5):
    t0, c0 = time.perf_counter(), time.process_time()
    rep = sections_report(text, rows, float(sys.argv[3]), cut)
    best = min(best, time.perf_counter() - t0)
    cpu = min(cpu, time.process_time() - c0)
print(json.dumps({"wall": best, "cpu": cpu, "sections": len(rep.sections),
                  "unplaced": rep.tally.unplaced_total,
                  "digest": hashlib.sha256(repr((rep.sections, rep.tally)).encode()).hexdigest()}))
"""


def build(
    root: Path, text: str, rows: list[tuple[float, int, int, str]], daemon: str
) -> dict[str, str]:
    """An install (config, workspace with MEMORY.md, a state database holding the hits, made
    and migrated by the code under ``daemon``: each version reads the database it makes);
    the environment a command runs in."""
    state = root / "state"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    ws = root / "workspace"
    ws.mkdir()
    (ws / "MEMORY.md").write_text(text, encoding="utf-8")
    cfg = root / "memoryd.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = "{state}"\nworkspace = "{ws}"\n'
                   f'[state]\ndir = "{root / "md"}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW),
               PYTHONPATH=daemon)
    subprocess.run([sys.executable, "-m", "memoryd", "scan"], env=env, check=True,
                   capture_output=True)
    db = next((root / "md").glob("*.db"))
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO hits (agent, call_id, memory_path, kind, ts, start_line, end_line, "
            "anchor) VALUES ('main', ?, 'MEMORY.md', 'search', ?, ?, ?, ?)",
            [(f"c{i}", *r) for i, r in enumerate(rows)],
        )
    conn.close()
    # (the scan after the rows: a first scan of a backlog builds the hit indexes at its end)
    subprocess.run([sys.executable, "-m", "memoryd", "scan"], env=env, check=True,
                   capture_output=True)
    return env


def run_command(env: dict[str, str]) -> tuple[float, float, bytes]:
    """One ``sections`` process in the install of ``env``: wall, CPU, its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "memoryd", "sections", "MEMORY.md",
                           "--no-scan", "--json"], env=env, capture_output=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="another checkout's daemon folder")
    ap.add_argument("--hits", type=int, default=60_000)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "daemon"))
    here = str(ROOT / "daemon")
    versions = {"baseline": os.path.abspath(args.baseline), "this": here}
    text = memory_md(args.mb, random.Random(33))
    rows = hit_rows(text, args.hits)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; MEMORY.md "
          f"{len(text) / 1e6:.2f} MB, {args.hits:,} hits over a year")
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-sections-") as tmp:
        root = Path(tmp)
        (root / "MEMORY.md").write_text(text, encoding="utf-8")
        (root / "rows.json").write_text(json.dumps(rows))
        report = {}
        for name, daemon in versions.items():
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(root / "MEMORY.md"), str(root / "rows.json"),
                 str(NOW)], env={**os.environ, "PYTHONPATH": daemon},
                capture_output=True, text=True, check=True).stdout
            report[name] = json.loads(out)
        if report["baseline"]["digest"] != report["this"]["digest"]:
            raise SystemExit("sections_report: the two versions' reports differ")
        envs = {name: build(root / name, text, rows, daemon) for name, daemon in versions.items()}
        best = {n: [float("inf"), float("inf")] for n in versions}
        outputs: dict[str, bytes] = {}
        for _ in range(args.repeat):
            for name in versions:  # interleaved: the same load on both
                wall, cpu, out = run_command(envs[name])
                best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
                outputs[name] = out
        if outputs["baseline"].replace(b"/baseline/", b"/this/") != outputs["this"]:
            raise SystemExit("sections: the two versions' outputs differ")
    b, t = report["baseline"], report["this"]
    print(f"{t['sections']} sections, {t['unplaced']} hits unplaced; outputs identical")
    print(f"sections_report, best of 5:   baseline {b['cpu'] * 1000:5.0f} ms CPU "
          f"({b['wall'] * 1000:.0f} wall)   this {t['cpu'] * 1000:5.0f} ms CPU "
          f"({t['wall'] * 1000:.0f} wall)   this / baseline {t['cpu'] / b['cpu']:.3f}")
    bb, tt = best["baseline"], best["this"]
    print(f"memoryd sections, best of {args.repeat}: baseline {bb[1] * 1000:5.0f} ms CPU "
          f"({bb[0] * 1000:.0f} wall)   this {tt[1] * 1000:5.0f} ms CPU "
          f"({tt[0] * 1000:.0f} wall)   this / baseline {tt[1] / bb[1]:.3f}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
