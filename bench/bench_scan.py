#!/usr/bin/env python3
"""Cold scan, prototype, grep floor and no-op rescan on one generated corpus, in one run.

Generates the issue's corpus (145 sessions, about 100 MB, seeded) in a temp dir, then
times whole processes, as a user or cron would run them:

  memoryd scan (cold)   a fresh state dir each time
  prototype             bench/prototype_scan.py: json.loads on every line (the seed's way)
  grep floor            cat FILES | grep -c -F memory_   (reading the bytes at all)
  memoryd scan (no-op)  nothing new since the last scan: stat, compare, exit

Each figure is the best and the median of --repeat interleaved runs, after a warm-up
read (page cache warm for every contender). It checks that memoryd and the prototype
both report the generator's counts (a fast wrong answer is no answer) and prints
ratios; it asserts nothing.

    .venv/bin/python bench/bench_scan.py [--sessions 145] [--mb 100] [--seed 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOW = 1_790_000_000.0  # pinned: the corpus and every window are computed against it


def timed(cmd: list[str] | str, env: dict[str, str], *, shell: bool = False) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(
        cmd, env=env, shell=shell, check=True, capture_output=True, text=True
    ).stdout
    return time.perf_counter() - started, out


def counts_of(doc: dict) -> dict[str, int]:
    got = {f["path"]: f["hits"] for f in doc["files"]}
    got.update({p: 0 for p in doc["never_hit"]})
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=145)
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the corpus and print where it is")
    args = ap.parse_args()

    sys.path.insert(0, str(HERE.parent / "daemon"))
    from memoryd.testing.corpus import generate

    tmp = Path(tempfile.mkdtemp(prefix="memoryd-bench-"))
    try:
        t0 = time.perf_counter()
        truth = generate(
            tmp / "corpus",
            seed=args.seed,
            sessions=args.sessions,
            target_bytes=int(args.mb * 1e6),
            now=NOW,
        )
        gen_s = time.perf_counter() - t0
        files = [str(t.path) for t in truth.transcripts]
        print(
            f"corpus: {len(files)} transcripts, {truth.transcript_bytes / 1e6:.1f} MB, "
            f"{truth.stats.get('counted.call.search', 0) + truth.stats.get('counted.call.get', 0)}"
            f" memory calls, {truth.total_hits} hits, {len(truth.ignored)} decoy files "
            f"(generated in {gen_s:.1f} s, seed {args.seed})"
        )

        # Bytecode caching on, as for an installed package (pip compiles .pyc files); the
        # warm-up runs below write the caches, so no contender pays for compiling.
        env = dict(os.environ, MEMORYD_NOW=str(NOW))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        # The installed console script, as a person runs it (else the module, same code).
        script = Path(sys.executable).with_name("memoryd")
        memoryd = [str(script)] if script.exists() else [sys.executable, "-m", "memoryd"]

        def fresh_config(n: int) -> dict[str, str]:
            cfg = tmp / f"memoryd-{n}.toml"
            cfg.write_text(
                f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
                f"workspace = {json.dumps(str(truth.workspace))}\n"
                f"[state]\ndir = {json.dumps(str(tmp / f'state-{n}'))}\n",
                encoding="utf-8",
            )
            return dict(env, MEMORYD_CONFIG=str(cfg))

        grep_cmd = "cat " + " ".join(shlex.quote(f) for f in files) + " | grep -c -F memory_"
        proto = [
            sys.executable,
            str(HERE / "prototype_scan.py"),
            "--state-dir",
            str(truth.state_dir),
            "--workspace",
            str(truth.workspace),
            "--now",
            str(NOW),
            "--json",
        ]
        subprocess.run(grep_cmd, shell=True, check=True, capture_output=True)  # warm the cache
        subprocess.run([*memoryd, "scan"], env=fresh_config(99), check=True, capture_output=True)
        subprocess.run(proto, env=env, check=True, capture_output=True)

        cold, protos, greps, noops = [], [], [], []
        for n in range(args.repeat):
            menv = fresh_config(n)
            s, _ = timed([*memoryd, "scan"], menv)
            cold.append(s)
            s, _ = timed([*memoryd, "scan"], menv)
            noops.append(s)
            s, proto_out = timed(proto, env)
            protos.append(s)
            s, _ = timed(grep_cmd, env, shell=True)
            greps.append(s)

        # Correctness of both contenders against the generator's reference.
        want = truth.counts(None)
        _, out = timed([*memoryd, "hits", "--all", "--json", "--no-scan"], fresh_config(0))
        memoryd_ok = counts_of(json.loads(out)) == want
        proto_ok = counts_of(json.loads(proto_out)) == want

        med = statistics.median
        m, p, g = med(cold), med(protos), med(greps)

        def row(label: str, runs: list[float], note: str) -> str:
            return f"  {label:<24}{min(runs) * 1000:7.0f} {med(runs) * 1000:7.0f} ms   {note}"

        print(f"\nwall time, whole processes ({args.repeat} runs):   best  median")
        print(row("memoryd scan, cold", cold, f"counts exact: {memoryd_ok}"))
        print(row("prototype (json.loads)", protos, f"counts exact: {proto_ok}"))
        print(row("cat | grep -c memory_", greps, "(I/O floor)"))
        print(row("memoryd scan, no-op", noops, "(target < 150 ms)"))
        print("\nratios of medians (of bests):")
        print(
            f"  prototype / memoryd    {p / m:6.2f}x ({min(protos) / min(cold):.2f}x)"
            "   target >= 3, aim 4"
        )
        print(
            f"  memoryd / grep floor   {m / g:6.2f}x ({min(cold) / min(greps):.2f}x)"
            "   target about 3"
        )
        print(f"  cold scan throughput   {truth.transcript_bytes / 1e6 / m:6.0f} MB/s")
        if args.keep:
            print(f"\ncorpus kept in {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
