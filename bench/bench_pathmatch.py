"""Benchmark: what matching recorded paths to listed files (docs/paths.md) costs on Linux.

A workspace of 5,000 notes and 200,000 hits (bench_expire's, plus 1 % more on notes deleted
since, the usual strays, and a few under another case of a listed name, as a model's typo
leaves them on ext4, where they name no file) is built from a seed. Each read-only command
runs as a subprocess with this checkout's ``daemon`` and with a base tree given by ``--base``
(``git archive <rev> daemon`` extracted), interleaved, several rounds; the children's CPU
time (user + system) is compared as medians and as the ratio taken in the same round.

Usage: ``.venv/bin/python bench/bench_pathmatch.py --base /tmp/base/daemon [--rounds 5]``
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_expire import build as build_workspace  # (bench/ is sys.path[0] when run)
from memoryd.clock import parse_instant
from memoryd.store import Store

NOW = "2026-11-03T10:00:00Z"
COMMANDS = (
    ("hits --no-scan", ["hits", "--no-scan", "--json"]),
    ("status", ["status", "--json"]),
    ("explain", ["explain", "memory/projects/topic-0003.md", "--json"]),
    ("expire --dry-run", ["expire", "--dry-run", "--json"]),
)


def build(root: Path, files: int, hits: int, seed: int, typos: int = 39) -> Path:
    """bench_expire's workspace and hits, plus strays: 1 % more hits on notes deleted since,
    and a few under another case of a listed name (a model's typo, no file on ext4)."""
    state, _ws, rels = build_workspace(root, files, hits, seed)
    rng = random.Random(seed + 1)
    now = parse_instant(NOW)
    deleted = [f"memory/gone-{i:04d}.md" for i in range(200)]
    swapped = [r[:7] + r[7:].swapcase() for r in rels[1 : 1 + typos]]
    strays = [rng.choice(deleted) for _ in range(hits // 100)] + swapped
    with Store.open(state / "memoryd" / "state.db") as store, store.transaction():
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
            "VALUES ('main', ?, ?, 'get', ?, NULL)",
            (
                (f"stray-{n}", rel, now - rng.expovariate(1 / 60) * 86400)
                for n, rel in enumerate(strays)
            ),
        )
    return state


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the base revision's daemon folder")
    ap.add_argument("--this", help="the daemon folder to compare (default: this checkout's)")
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--hits", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--typos", type=int, default=39, help="listed names hit in another case")
    args = ap.parse_args()
    here = args.this or Path(__file__).resolve().parent.parent / "daemon"
    trees = {"base": str(Path(args.base).resolve()), "this": str(Path(here).resolve())}
    with tempfile.TemporaryDirectory() as tmp:
        state = build(Path(tmp), args.files, args.hits, args.seed, args.typos)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.update(OPENCLAW_STATE_DIR=str(state), MEMORYD_NOW=NOW)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as when installed
        times: dict[tuple[str, str], list[float]] = {}
        ratios: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for label, argv in COMMANDS:
                got = {}
                for tree, path in trees.items():
                    cmd = [sys.executable, "-m", "memoryd", *argv]
                    got[tree] = cpu_of(cmd, {**env, "PYTHONPATH": path})
                    times.setdefault((label, tree), []).append(got[tree])
                ratios.setdefault(label, []).append(got["this"] / got["base"])
    print(
        f"{args.files} notes, {args.hits} hits ({args.typos} names also hit in another case), "
        f"seed {args.seed}, {args.rounds} rounds"
    )
    print(f"{'command':<18} {'base ms':>8} {'this ms':>8} {'ratio':>6}  (CPU, medians)")
    for label, _ in COMMANDS:
        base, this = (statistics.median(times[(label, t)]) * 1000 for t in ("base", "this"))
        ratio = statistics.median(ratios[label])
        print(f"{label:<18} {base:8.0f} {this:8.0f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
