#!/usr/bin/env python3
"""The same conversations as JSONL files and as OpenClaw's SQLite store: cold scan and no-op.

Generates the benchmark corpus (145 sessions, about 100 MB, seeded; as bench_scan.py
does), then writes the same conversations as a schema-24 transcript store, compressed
as OpenClaw compresses it (zstd level 1 for events of 1 KiB – 4 MiB that shrink by
10 % and 64 bytes), with :mod:`support.openclaw_store`. Times whole processes
(wall and CPU time, one process: no helper), interleaved in one run so all sides see the
same machine:

  JSONL scan (cold)    a fresh memoryd state each time
  JSONL scan (no-op)   nothing new since the last scan
  store scan (cold)    the same for the store install
  store scan (no-op)   an unchanged store: a stat or two, the database not opened

With ``--baseline DIR`` (the daemon/ folder of another version, e.g. ``git archive REV daemon |
tar -x``) the same cold scans by that version (run through PYTHONPATH) are timed in the
same interleaved run. ``--busy`` keeps every other core spinning.

Each figure is the best and the median of --repeat runs, after a warm-up of each side.
CPU time (user + system of the process) is the figure a loaded machine disturbs least.
Both sides are checked against the generator's counts; a scan that fails is reported
(exit code and its last line) instead of timed. Asserts nothing; prints ratios.

    .venv/bin/python bench/bench_store.py [--sessions 145] [--mb 100] [--seed 1] [--repeat 3]
        [--baseline /tmp/base_main/daemon] [--busy]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_scan import busy_cores, counts_of  # noqa: E402  (the same busy cores and counts)

NOW = 1_790_000_000.0  # pinned: the corpus and every window are computed against it
AIM_COLD_RATIO = 1.3  # issue 9: the store no slower than 1.3x the JSONL scan, cold


class ScanFailed(Exception):
    """A memoryd run that did not succeed: what a person would need to see, in one line."""


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU time and stdout of one whole process; ScanFailed when it exits non-zero."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else proc.stdout.strip()[-200:]
        raise ScanFailed(f"`{' '.join(cmd[-3:])}` exited {proc.returncode}: {last}")
    return elapsed, cpu, proc.stdout


def store_facts(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows, packed, raw, frames = conn.execute(
        "SELECT COUNT(*), COUNT(event_zstd), COALESCE(SUM(event_utf8_bytes), 0), "
        "COALESCE(SUM(LENGTH(event_zstd)), 0) FROM transcript_events"
    ).fetchone()
    conn.close()
    return (
        f"{rows} rows, {packed} compressed ({raw / 1e6:.1f} MB of events in "
        f"{frames / 1e6:.1f} MB of frames), database {db.stat().st_size / 1e6:.1f} MB"
    )


class Side:
    """One install (JSONL or store) and how to scan it with a fresh memoryd state."""

    def __init__(self, name: str, state_dir: Path, workspace: Path, tmp: Path, env: dict) -> None:
        self.name = name  # also names the state folders: unique per side
        self.state_dir = state_dir
        self.workspace = workspace
        self.tmp = tmp
        self.env = env
        self.cold: list[float] = []
        self.noop: list[float] = []
        self.cold_cpu: list[float] = []
        self.noop_cpu: list[float] = []
        self.noop_read: tuple[int, int] | None = None  # (files_read, bytes_read) of a no-op
        self.failure: str | None = None
        self.exact: bool | None = None

    def config(self, n: int | str) -> dict[str, str]:
        cfg = self.tmp / f"memoryd-{self.name}-{n}.toml"
        cfg.write_text(
            f"[openclaw]\nstate_dir = {json.dumps(str(self.state_dir))}\n"
            f"workspace = {json.dumps(str(self.workspace))}\n"
            f"[state]\ndir = {json.dumps(str(self.tmp / f'state-{self.name}-{n}'))}\n"
            "[ingest]\nparallel_min_bytes = 0\n",  # one process: CPU time is all of the work
            encoding="utf-8",
        )
        return dict(self.env, MEMORYD_CONFIG=str(cfg))

    def round(self, memoryd: list[str], n: int) -> None:
        """One cold scan and one no-op rescan, unless this side has already failed."""
        if self.failure:
            return
        env = self.config(n)
        try:
            s, c, _ = run([*memoryd, "scan", "--json"], env)
            self.cold.append(s)
            self.cold_cpu.append(c)
            s, c, out = run([*memoryd, "scan", "--json"], env)
            self.noop.append(s)
            self.noop_cpu.append(c)
            doc = json.loads(out)
            self.noop_read = (doc.get("files_read", -1), doc.get("bytes_read", -1))
        except ScanFailed as e:
            self.failure = str(e)

    def check(self, memoryd: list[str], want: dict[str, int]) -> None:
        if self.failure:
            return
        try:
            _, _, out = run([*memoryd, "hits", "--all", "--json", "--no-scan"], self.config(0))
            self.exact = counts_of(json.loads(out)) == want
        except ScanFailed as e:
            self.failure = str(e)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=145)
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep both installs and print where")
    ap.add_argument("--busy", action="store_true", help="keep every other core busy")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="the daemon/ folder of another version: its store and JSONL cold scans are "
        "timed in the same interleaved run",
    )
    args = ap.parse_args()

    sys.path.insert(0, str(HERE.parent / "daemon"))
    sys.path.insert(0, str(HERE.parent / "tests"))  # tests/support: not in the wheel
    from support.corpus import generate
    from support.openclaw_store import store_from_corpus

    tmp = Path(tempfile.mkdtemp(prefix="memoryd-bench-store-"))
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
        t0 = time.perf_counter()
        inst = store_from_corpus(truth, tmp / "store", schema=24, compress="openclaw")
        store_s = time.perf_counter() - t0
        print(
            f"corpus: {len(truth.transcripts)} transcripts, "
            f"{truth.transcript_bytes / 1e6:.1f} MB, {truth.total_hits} hits "
            f"(generated in {gen_s:.1f} s, seed {args.seed})"
        )
        for agent, db in inst.stores.items():
            print(f"store ({agent}, schema 24): {store_facts(db)} (written in {store_s:.1f} s)")

        env = dict(os.environ, MEMORYD_NOW=str(NOW))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as for an installed package
        script = Path(sys.executable).with_name("memoryd")
        memoryd = [str(script)] if script.exists() else [sys.executable, "-m", "memoryd"]
        jsonl = Side("jsonl", truth.state_dir, truth.workspace, tmp, env)
        store = Side("store", inst.state_dir, inst.workspace, tmp, env)
        sides: tuple[Side, ...] = (jsonl, store)
        if args.baseline:
            benv = dict(env, PYTHONPATH=str(args.baseline.resolve()))
            sides += (
                Side("base-jsonl", truth.state_dir, truth.workspace, tmp, benv),
                Side("base-store", inst.state_dir, inst.workspace, tmp, benv),
            )

        for side in sides:  # warm-up: page cache and bytecode for each
            side.round(memoryd, -1)
            side.cold.clear()
            side.noop.clear()
            side.cold_cpu.clear()
            side.noop_cpu.clear()
        with busy_cores(args.busy) as spinning:
            if spinning:
                print(f"busy: {spinning} spinning process(es) keep the other core(s) busy")
            for n in range(args.repeat):
                for side in sides if n % 2 == 0 else reversed(sides):
                    side.round(memoryd, n)
        want = truth.counts(None)
        for side in sides:
            side.check(memoryd, want)

        med = statistics.median
        print(
            f"\nwhole processes ({args.repeat} runs):  wall best  median    "
            "CPU best  median (min-max)"
        )
        for side in sides:
            if side.failure:
                print(f"  {side.name} scan FAILED: {side.failure}")
                continue
            for label, runs, cpus in (
                ("cold", side.cold, side.cold_cpu),
                ("no-op", side.noop, side.noop_cpu),
            ):
                note = (
                    f"counts exact: {side.exact}"
                    if label == "cold"
                    else (
                        f"files read {side.noop_read[0]}, bytes read {side.noop_read[1]}"
                        if side.noop_read
                        else ""
                    )
                )
                print(
                    f"  {side.name + ' scan, ' + label:<24}{min(runs) * 1000:7.0f} "
                    f"{med(runs) * 1000:7.0f} ms {min(cpus) * 1000:7.0f} "
                    f"{med(cpus) * 1000:7.0f} ms ({min(cpus) * 1000:.0f}-{max(cpus) * 1000:.0f})"
                    f"   {note}"
                )
        if any(side.failure for side in sides):
            print("\nno ratios: a scan failed (the store reader of issue 9 may not be in yet)")
            return 1
        cold = med(store.cold) / med(jsonl.cold)
        print("\nratios of medians (of bests):")
        print(
            f"  store / JSONL, cold CPU {med(store.cold_cpu) / med(jsonl.cold_cpu):5.2f}x "
            f"({min(store.cold_cpu) / min(jsonl.cold_cpu):.2f}x)"
        )
        if args.baseline:
            bj, bs = sides[2], sides[3]
            print(
                f"  baseline store / JSONL, cold CPU {med(bs.cold_cpu) / med(bj.cold_cpu):5.2f}x "
                f"({min(bs.cold_cpu) / min(bj.cold_cpu):.2f}x)"
            )
            print(
                f"  store / baseline store, cold CPU "
                f"{med(store.cold_cpu) / med(bs.cold_cpu):5.2f}x "
                f"({min(store.cold_cpu) / min(bs.cold_cpu):.2f}x)"
            )
        print(
            f"  store / JSONL, cold    {cold:6.2f}x "
            f"({min(store.cold) / min(jsonl.cold):.2f}x)   aim <= {AIM_COLD_RATIO}"
        )
        print(
            f"  store / JSONL, no-op   {med(store.noop) / med(jsonl.noop):6.2f}x "
            f"({min(store.noop) / min(jsonl.noop):.2f}x)   aim: a stat or two, as for files"
        )
        print(
            f"  store cold throughput  {truth.transcript_bytes / 1e6 / med(store.cold):6.0f} MB/s"
            " (of JSONL bytes)"
        )
        if args.keep:
            print(f"\ninstalls kept in {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
