#!/usr/bin/env python3
"""Instructions of one cold scan, this version against a baseline: a measure without the noise.

On the shared 2-core machine two runs of the same code differ by ±5 % in CPU time, so a
change worth 1 % cannot be told from the noise by timing whole processes. The number of
instructions a scan executes barely moves: with the string hash seed pinned and the
bytecode compiled first, the same code counts the same to about 1 M in 3,800 M. This
runs ``Scanner.scan()`` in process under valgrind's callgrind, once with the scan and once
with everything but the scan (imports, configuration, opening the state database), for
each version, and prints the difference: the scan's own instructions. The corpus is
``bench_scan.py``'s (same generator, seed and sizes); both versions' counts are checked
against the generator's.

    .venv/bin/python bench/count_scan.py --corpus heavy --baseline /tmp/base/daemon [--top 25]

``--top N`` also prints the N C functions whose own instructions changed the most (from
``callgrind_annotate``), which names costs a Python profiler does not see (the sqlite3
module adapting a parameter, a string encoded for orjson…). A run takes about a minute
per version on the memory-heavy corpus (valgrind runs the scan about 50 times slower).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_scan  # noqa: E402  (its corpus generator and pinned time)

# The child: set up as ``memoryd scan`` does, then scan (or not). Everything before the scan
# is the same in both runs, so the difference of their counts is the scan's.
CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
try:
    from memoryd.commands.context import Context
except ImportError:  # (a baseline from before the command layer moved)
    from memoryd.cli import Context
from memoryd.config import load_config
from memoryd.ingest.scan import Scanner
ctx = Context(load_config(sys.argv[2]), sys.argv[2])
scanner = Scanner(ctx.cfg, ctx.paths, ctx.store())
hits = scanner.scan().new_hits if sys.argv[3] == "scan" else None
ctx.close()
print(json.dumps({"hits": hits}))
"""
_TOTALS = re.compile(r"^totals:\s*(\d+)", re.MULTILINE)
_SELF = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[.*\])?$")


def count(daemon: Path, config: Path, what: str, out: Path) -> tuple[int, int | None]:
    """Instructions of the child (Python frames and what they call) and its new hits."""
    env = dict(os.environ, PYTHONHASHSEED="0", MEMORYD_NOW=str(bench_scan.NOW))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=*_PyEval_EvalFrameDefault*",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            CHILD,
            str(daemon),
            str(config),
            what,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = _TOTALS.search(out.read_text(errors="replace"))
    if found is None:
        raise SystemExit(f"no totals in {out}")
    return int(found.group(1)), json.loads(proc.stdout.strip().splitlines()[-1])["hits"]


def own_costs(out: Path) -> dict[str, int]:
    """Each C function's own instructions in a callgrind output."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    costs: dict[str, int] = {}
    for line in text.splitlines():
        m = _SELF.match(line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r"'\d+", "", m.group(2))  # recursion levels of one function together
            costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", choices=sorted(bench_scan.CORPORA), default="heavy")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--baseline", type=Path, help="another version's daemon/ folder")
    ap.add_argument("--top", type=int, default=0, help="C functions that changed the most")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("count_scan.py: valgrind is not installed", file=sys.stderr)
        return 2

    versions = {"this": HERE.parent / "daemon"}
    if args.baseline is not None:
        versions["baseline"] = args.baseline.resolve()
    tmp = Path(tempfile.mkdtemp(prefix="memoryd-count-"))
    try:
        truth = bench_scan.generate_corpus(tmp / "corpus", args.corpus, args.seed)
        print(
            f"corpus {args.corpus}: {len(truth.transcripts)} transcripts, "
            f"{truth.transcript_bytes / 1e6:.1f} MB, {truth.total_hits} hits (seed {args.seed})"
        )
        scans: dict[str, int] = {}
        for name, daemon in versions.items():
            compileall.compile_dir(str(daemon), quiet=1)  # as installed: no compiling counted
            runs = {}
            for what in ("setup", "scan"):
                state = tmp / f"state-{name}-{what}"
                config = tmp / f"{name}-{what}.toml"
                config.write_text(
                    f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
                    f"workspace = {json.dumps(str(truth.workspace))}\n"
                    f"[state]\ndir = {json.dumps(str(state))}\n"
                    "[ingest]\nparallel_min_bytes = 0\n",
                    encoding="utf-8",
                )
                runs[what] = count(daemon, config, what, tmp / f"cg.{name}.{what}")
            scans[name] = runs["scan"][0] - runs["setup"][0]
            exact = runs["scan"][1] == truth.total_hits
            print(
                f"  {name:9s} scan {scans[name] / 1e6:9,.1f} M instructions "
                f"(set-up {runs['setup'][0] / 1e6:,.1f} M)   counts exact: {exact}   {daemon}"
            )
        if "baseline" in scans:
            this, before = scans["this"], scans["baseline"]
            print(f"  this / baseline {this / before:.4f}  ({(this - before) / 1e6:+,.1f} M)")
            if args.top:
                a = own_costs(tmp / "cg.baseline.scan")
                b = own_costs(tmp / "cg.this.scan")
                moved = sorted(set(a) | set(b), key=lambda k: abs(b.get(k, 0) - a.get(k, 0)))
                print("  C functions whose own instructions moved most (this - baseline):")
                for name in reversed(moved[-args.top :]):
                    print(f"    {(b.get(name, 0) - a.get(name, 0)) / 1e6:+9.2f} M  {name[-100:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
