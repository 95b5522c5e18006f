"""Benchmark: the plugin's cache check and memoryd's answer with thousands of notes in hot/.

Issue 30: with 5,000 notes in hot/, ``memoryd inject --session --json`` answered 566 KB, and
the plugin's check of its cached answer (one ``stat`` per stamp, ``stillValid`` in
``openclaw_plugin/logic.js``) took 46-57 ms at every session start instead of 1 ms. The
answer now stamps the newest ``WATCH_NOTES_MAX`` notes and holds for a minute only.

Measured here in one run, on one generated install: the answer of this memoryd, and the
same answer with every note stamped (``watch_list(..., notes_max=huge)``, what memoryd
answered before), each checked N times by the plugin's own ``stillValid`` in Node.
Ratios are of the baseline (every note stamped) to the capped answer.

Usage: ``.venv/bin/python bench/bench_many_hot_notes.py [--notes 5000] [--runs 41]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLUGIN = Path(__file__).resolve().parent.parent / "daemon" / "memoryd" / "openclaw_plugin"

CHECK = """
import { readFileSync } from "node:fs";
const logic = await import(process.argv[2] + "/logic.js");
const doc = JSON.parse(readFileSync(process.argv[3], "utf-8"));
doc.fetchedAtMs = Date.now();
const times = [];
for (let i = 0; i < Number(process.argv[4]); i++) {
  const t = process.hrtime.bigint();
  if (!(await logic.stillValid(doc))) throw new Error("the cached answer should hold");
  times.push(Number(process.hrtime.bigint() - t) / 1e6);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ p50: times[Math.floor(times.length / 2)],
  p95: times[Math.min(times.length - 1, Math.ceil(times.length * 0.95) - 1)] }));
"""


def build(root: Path, notes: int) -> Path:
    """An OpenClaw install whose tier store holds ``notes`` notes in hot/; its config."""
    state, ws = root / "state", root / "ws"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"defaults": {"workspace": str(ws)}}})
    )
    (ws / "MEMORY.md").write_text("# Memory\n\nShort answers.\n")
    hot = state / "memory_fs" / "hot"
    hot.mkdir(parents=True)
    now = time.time()
    for i in range(notes):
        note = hot / f"n{i:05d}.md"
        note.write_text(f"# Note {i}\n\n" + "words " * 40 + "\n")
        os.utime(note, (now - i, now - i))
    cfg = root / "memoryd.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = "{state}"\n[state]\ndir = "{root / "mstate"}"\n')
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=41)
    args = ap.parse_args()
    node = shutil.which("node")
    if node is None:
        print("needs node on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-hot-") as tmp:
        root = Path(tmp)
        cfg = build(root, args.notes)
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "memoryd",
                "--config",
                str(cfg),
                "inject",
                "--session",
                "--json",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        capped = json.loads(out)
        from memoryd.tierstore.inject import watch_list

        full = json.loads(out)
        hot = root / "state" / "memory_fs"
        others = [
            w["path"] for w in capped["session"]["watch"] if not w["path"].startswith(str(hot))
        ]
        full["session"]["watch"] = watch_list(hot, others, notes_max=10**9).stamps
        full["session"].pop("watch_partial", None)
        script = root / "check.mjs"
        script.write_text(CHECK)
        rows = []
        for name, doc in (("every note stamped (before)", full), ("newest stamped (now)", capped)):
            path = root / f"{name.split()[0]}.json"
            text = json.dumps(doc, indent=2, ensure_ascii=False)
            path.write_text(text)
            got = json.loads(
                subprocess.run(
                    [node, str(script), str(PLUGIN), str(path), str(args.runs)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            rows.append((name, len(text.encode()), len(doc["session"]["watch"]), got))
    print(f"{args.notes} notes in hot/, {args.runs} checks each (load {os.getloadavg()[0]:.1f})")
    print(f"{'answer':32} {'bytes':>9} {'stamps':>7} {'check p50 ms':>13} {'p95 ms':>8}")
    for name, size, stamps, t in rows:
        print(f"{name:32} {size:>9,} {stamps:>7} {t['p50']:>13.2f} {t['p95']:>8.2f}")
    (_, b_size, _, b_t), (_, n_size, _, n_t) = rows
    answer, check = b_size / n_size, b_t["p50"] / n_t["p50"]
    print(f"ratio (before / now): answer {answer:.1f}x, check p50 {check:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
