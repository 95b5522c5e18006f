#!/usr/bin/env python3
"""``memoryd sections``' own work on a large MEMORY.md: sections found, every hit placed.

A 1 MB MEMORY.md (about 900 topics of bullet entries) and a year of hits on it (one anchor
per hit, built by the parser's own ``chunk_anchor`` from the file's lines, a tenth of them from
a version of the file whose topics have since moved and a twentieth whose text is gone), then
``section_report.sections_report`` as the command runs it, best of 5. The issue's bound is
300 ms for ``sections`` on such a file. Loaded figures on a shared machine: the CPU time
says more than the wall time when other work runs.

    .venv/bin/python bench/bench_sections.py [--hits 60000] [--mb 1.0]
"""

from __future__ import annotations

import argparse
import random
import time

from memoryd.bootstrap_cut import bootstrap_cuts
from memoryd.section_map import chunk_anchor
from memoryd.section_report import HitRow, sections_report


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hits", type=int, default=60_000)
    ap.add_argument("--mb", type=float, default=1.0)
    args = ap.parse_args()
    rng = random.Random(33)
    text = memory_md(args.mb, rng)
    lines = text.split("\n")
    gone = memory_md(0.05, random.Random(34)).split("\n")
    now = 1_796_000_000.0
    rows = []
    for _ in range(args.hits):
        src = gone if rng.random() < 0.05 else lines
        first = rng.randrange(1, len(src) - 8)
        last = first + rng.randint(2, 8)
        snippet = "\n".join(src[first - 1 : last]) + f"\n\nSource: MEMORY.md#L{first}-L{last}"
        rows.append(HitRow(now - rng.random() * 365 * 86400, first, last,
                           chunk_anchor(first, last, snippet)))
    cut = bootstrap_cuts({"MEMORY.md": text})["MEMORY.md"]
    best = cpu = float("inf")
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        rep = sections_report(text, rows, now, cut)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    print(f"MEMORY.md {len(text) / 1e6:.2f} MB, {len(rep.sections)} sections, {len(rows)} hits "
          f"({rep.tally.unplaced_total} unplaced): sections_report best of 5 "
          f"{best * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU")


if __name__ == "__main__":
    main()
