#!/usr/bin/env python3
"""Cold one-process scans against a baseline and the prototype, with the spread of every figure.

``bench_scan.py`` prints medians; to tell a gain of a few per cent from the noise of a
shared machine this one also prints each contender's lowest and highest CPU time and, per
round, the ratio to the prototype measured in that same round (median, lowest, highest).
Whole processes, interleaved (this version, the baseline, the prototype; round after
round), after a warm-up of each; the counts of both scanners are checked against the
generator's. The corpus is bench_scan.py's (same seed, same generator).

    .venv/bin/python bench/bench_walk.py --corpus heavy --busy --repeat 7 \\
        --baseline /tmp/base_main/daemon
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scan  # noqa: E402  (its corpus, process runner and busy cores)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", choices=sorted(bench_scan.CORPORA), default="heavy")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--busy", action="store_true", help="keep every other core busy")
    ap.add_argument("--baseline", type=Path, required=True, help="another version's daemon/")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memoryd-walk-"))
    try:
        truth = bench_scan.generate_corpus(tmp / "corpus", args.corpus, args.seed)
        env = dict(os.environ, MEMORYD_NOW=str(bench_scan.NOW))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        memoryd = [sys.executable, "-c", bench_scan.IO_PROBE, "scan"]
        base_env = {"PYTHONPATH": str(args.baseline.resolve())}

        def config(name: str) -> dict[str, str]:
            cfg = tmp / f"{name}.toml"
            cfg.write_text(
                f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
                f"workspace = {json.dumps(str(truth.workspace))}\n"
                f"[state]\ndir = {json.dumps(str(tmp / name))}\n"
                "[ingest]\nparallel_min_bytes = 0\n",
                encoding="utf-8",
            )
            shutil.rmtree(tmp / name, ignore_errors=True)
            return dict(env, MEMORYD_CONFIG=str(cfg))

        proto = [
            sys.executable,
            str(HERE / "prototype_scan.py"),
            "--state-dir",
            str(truth.state_dir),
            "--workspace",
            str(truth.workspace),
            "--now",
            str(bench_scan.NOW),
            "--json",
        ]
        contenders = {
            "this": lambda n: bench_scan.run(memoryd, config(f"this-{n}")),
            "baseline": lambda n: bench_scan.run(memoryd, dict(config(f"base-{n}"), **base_env)),
            "prototype": lambda n: bench_scan.run(proto, env),
        }
        for fn in contenders.values():
            fn(-1)  # warm-up: page cache, bytecode caches
        with bench_scan.busy_cores(args.busy):
            runs = bench_scan.interleave(contenders, args.repeat)
        want = truth.counts(None)
        hits = [sys.executable, "-c", bench_scan.IO_PROBE, "hits", "--all", "--json", "--no-scan"]
        for name, extra in (("this", {}), ("base", base_env)):
            got = bench_scan.run(
                hits, dict(env, MEMORYD_CONFIG=str(tmp / f"{name}-0.toml"), **extra)
            )
            print(f"{name}: counts exact: {bench_scan.counts_of(json.loads(got.out)) == want}")
        print(
            f"\n{args.corpus}, {args.repeat} interleaved rounds, CPU ms:  median   lowest  highest"
        )
        for name, rs in runs.items():
            cpu = [r.cpu * 1000 for r in rs]
            print(f"  {name:<28}{statistics.median(cpu):8.0f} {min(cpu):8.0f} {max(cpu):8.0f}")
        print("ratio to the prototype of the same round:   median   lowest  highest")
        for name in ("this", "baseline"):
            ratios = [a.cpu / p.cpu for a, p in zip(runs[name], runs["prototype"], strict=True)]
            print(
                f"  {name:<28}{statistics.median(ratios):8.3f} {min(ratios):8.3f} "
                f"{max(ratios):8.3f}"
            )
        gains = [a.cpu / b.cpu for a, b in zip(runs["this"], runs["baseline"], strict=True)]
        print(
            f"  this / baseline             {statistics.median(gains):8.3f} "
            f"{min(gains):8.3f} {max(gains):8.3f}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
