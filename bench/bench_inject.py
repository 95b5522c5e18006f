"""Benchmark: ``memoryd inject --session --json``, the call a session's first turn waits for.

Issue 21: the OpenClaw plugin adds at most 150 ms (p95) to a turn. When its cached answer is
stale (a hot note, a bootstrap file or a config changed), the plugin runs memoryd, and the turn
waits for the whole process. Measured here, each as N runs of the real process (wall time,
spawn to exit), interleaved so that a burst of load elsewhere hits every variant alike:

* ``python -c pass``: CPython's own start, the floor (ratios are against it);
* ``memoryd inject --session --json``: the short path (``memoryd.commands.session_inject``);
* the same with ``--debug`` first: the full command line (argparse, every module it loads),
  which is what the command ran before the short path, answer byte for byte the same.

A hot note is touched before each memoryd run, as in the live harness. Both idle and with
one core kept busy by a spinning process (the machine has two). With bytecode cached, as an
installed package has it (the default), or with ``--no-bytecode``: every module compiled at
each run, as an editable install under ``PYTHONDONTWRITEBYTECODE=1`` (this CI) does.

Usage: ``.venv/bin/python bench/bench_inject.py [--runs 40] [--no-bytecode]``
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import memoryd


def pct(values: list[float], q: float) -> float:
    """The q-quantile by the nearest rank (p95 of 40 runs is the 38th fastest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, the child's own) of one run, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


Samples = dict[str, list[tuple[float, float]]]


def measure(
    variants: dict[str, list[str]], env: dict[str, str], runs: int, hot_note: Path
) -> Samples:
    out: Samples = {name: [] for name in variants}
    for _ in range(runs):
        for name, cmd in variants.items():
            os.utime(hot_note, None)  # as the harness: the plugin's cached answer is stale
            out[name].append(timed(cmd, env))
    return out


def report(title: str, samples: Samples) -> None:
    """Wall p50 / p95, CPU p50 (what load does not change much), and the ratios."""
    floor = pct([w for w, _ in samples["python -c pass"]], 0.5)
    floor_cpu = pct([c for _, c in samples["python -c pass"]], 0.5)
    print(f"\n{title}")
    print(f"  {'':<36} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} {'p50 / python':>13}"
          f" {'cpu / python':>13}")
    for name, values in samples.items():
        wall = [w for w, _ in values]
        cpu = pct([c for _, c in values], 0.5)
        p50, p95 = pct(wall, 0.5), pct(wall, 0.95)
        print(f"  {name:<36} {p50:8.1f} {p95:8.1f} {cpu:8.1f} {p50 / floor:12.1f}x"
              f" {cpu / max(floor_cpu, 0.1):12.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--no-bytecode", action="store_true", help="compile at every run")
    args = parser.parse_args()

    env = dict(os.environ)
    package = Path(memoryd.__file__).parent
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="memoryd-nopyc-")  # empty: no .pyc
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as when installed
        compileall.compile_dir(str(package), quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-inject-") as tmp:
        demo = Path(tmp) / "demo"
        subprocess.run(
            [sys.executable, "-m", "memoryd", "demo", str(demo)],
            env=env, stdout=subprocess.DEVNULL, check=True,
        )
        env["MEMORYD_CONFIG"] = str(demo / "memoryd.toml")
        script = Path(sys.executable).parent / "memoryd"
        memoryd_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "memoryd"]
        short = [*memoryd_cmd, "inject", "--session", "--json"]
        full = [*memoryd_cmd, "--debug", "inject", "--session", "--json"]
        same = [subprocess.run(c, env=env, capture_output=True, check=True).stdout
                for c in (short, full)]
        assert same[0] == same[1], "the short path must print what the full command prints"
        hot_note = next((demo / "state" / "memory_fs" / "hot").iterdir())
        variants = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "memoryd inject --session --json": short,
            "full command line (--debug)": full,
        }
        print(f"{args.runs} runs each; bytecode {'not cached' if args.no_bytecode else 'cached'}; "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
        report("idle (no process of this benchmark besides the one measured)",
               measure(variants, env, args.runs, hot_note))
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            report("one core kept busy by a spinning process",
                   measure(variants, env, args.runs, hot_note))
        finally:
            spinner.kill()
            spinner.wait()
        print(f"\nload {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
