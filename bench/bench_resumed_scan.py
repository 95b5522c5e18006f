#!/usr/bin/env python3
"""A resumed first scan against an uninterrupted one: CPU seconds per MB (issue 32, item 3).

Generates a seeded corpus, then, ``--repeat`` times, interleaved:

  uninterrupted   ``memoryd scan`` on a fresh state dir
  resumed         ``memoryd scan`` on a fresh state dir, stopped at a fault point after half
                  of its transcripts and interrupted there (``--stop int``: SIGINT, a Ctrl-C,
                  which commits what was read; ``--stop kill``: SIGKILL, which loses what the
                  last transaction had not committed), then ``memoryd scan`` again to the
                  end; both processes' CPU summed

and prints each one's CPU (user + system of the processes, from ``wait4``) per MB of
transcripts, with the ratio. Both final states must hold the same hits (checked). Nothing is
asserted; it measures.

    .venv/bin/python bench/bench_resumed_scan.py --mb 100 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

NOW = 1_790_000_000.0


def _cpu(args: list[str], env: dict[str, str], stop: str | None = None) -> tuple[int, float]:
    """Run a process; its exit status and its CPU seconds (user + system). With ``stop``,
    once it stopped itself at its fault point: that signal, then SIGCONT."""
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if stop is not None:
        _, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), "the fault point did not stop it"
        os.kill(proc.pid, signal.SIGINT if stop == "int" else signal.SIGKILL)
        os.kill(proc.pid, signal.SIGCONT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100, help="transcript megabytes (default 100)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stop", choices=("int", "kill"), default="int")
    opts = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # not in the wheel
    from support.corpus import generate_demo

    work = Path(tempfile.mkdtemp(prefix="memoryd-resumed-"))
    truth = generate_demo(work / "corpus", now=NOW, size_mb=opts.mb)
    sessions = truth.state_dir / "agents" / "main" / "sessions"
    mb = sum(p.stat().st_size for p in sessions.rglob("*") if p.is_file()) / (1 << 20)
    n_files = len(list(sessions.glob("*.jsonl*")))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    cmd = [sys.executable, "-m", "memoryd", "scan"]
    results: dict[str, list[float]] = {"uninterrupted": [], "resumed": []}
    hits: dict[str, set[int]] = {"uninterrupted": set(), "resumed": set()}
    for i in range(opts.repeat + 1):  # the first round warms the page cache; not counted
        for name in results:
            state = work / f"state-{name}-{i}"
            cfg = work / f"{name}-{i}.toml"
            cfg.write_text(
                f"[openclaw]\nstate_dir = {json.dumps(str(truth.state_dir))}\n"
                f"workspace = {json.dumps(str(truth.workspace))}\n"
                f"[state]\ndir = {json.dumps(str(state))}\n",
                encoding="utf-8",
            )
            env = dict(base, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
            cpu = 0.0
            if name == "resumed":
                halt = dict(env, MEMORYD_FAULT=f"scan.source_done:{max(n_files // 2, 1)}:stop")
                code, spent = _cpu(cmd, halt, opts.stop)
                assert code != 0, "the fault point did not stop the first run"
                cpu += spent
            code, spent = _cpu(cmd, env)
            assert code == 0
            cpu += spent
            with sqlite3.connect(state / "state.db") as db:
                (count,) = db.execute("SELECT COUNT(*) FROM hits").fetchone()
            hits[name].add(count)
            if i:
                results[name].append(cpu)
    assert hits["uninterrupted"] == hits["resumed"], hits
    load = os.getloadavg()[0]
    print(f"{mb:.0f} MB of transcripts, {n_files} files, stopped by SIG{opts.stop.upper()}; "
          f"load average {load:.1f}")
    med = {name: statistics.median(v) for name, v in results.items()}
    for name, v in results.items():
        runs = ", ".join(f"{x:.2f}" for x in v)
        print(f"  {name:<14} {med[name] / mb * 1000:6.1f} ms CPU per MB  (runs: {runs} s)")
    print(f"  resumed / uninterrupted: {med['resumed'] / med['uninterrupted']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
