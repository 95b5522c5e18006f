"""The deciding commands at a year of heavy use (issue 32, item 2): today's code and the new.

    .venv/bin/python bench/bench_decisions.py --baseline /tmp/speed-base/daemon [--busy]
        [--seed 1] [--repeat 3] [--install /tmp/memoryd-bench-decisions]

Builds, once per seed (kept in ``--install`` and reused by later runs), a generated install
of a year of heavy use: ``support.histories`` with more notes and more searches
than its default user, written as memoryd finds it (notes in the workspace, hits and
calls in the state database): about 1,100 memory files and 416 k hits for seed 1. Then
times each command as a whole process (``python -m memoryd …``, start-up, reading,
deciding and printing), for the code under ``--baseline`` (a ``daemon`` folder of
another checkout, run through ``PYTHONPATH``; a worktree of the previous commit:
``git worktree add /tmp/speed-base <commit>``) and for this checkout, interleaved, in
the same run, and prints the table with the ratios.

Both versions keep the calibration they learned (``own_history.LEARNED_FILE``): the first
deciding command after new verdicts learns it, the later ones reuse it. Both are timed, for
each version: ``first`` with its saved calibration removed before the command, ``then``
with it in place (a baseline older than the saved calibration learns at every command when
no expire run has recorded one, as here: its two figures are then alike). The new code
runs on its own copy of the install, migrated first (untimed; the migration's time is
printed). Every command's output is compared between the two versions: the decisions must
be the same. ``--busy`` keeps one core busy with a spinning process while measuring.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "daemon"))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: not in the wheel

# A heavy user's year: ~1,100 notes, ~71 k searches of 3-8 results, ~416 k hits (seed 1).
HEAVY = {
    "days": 365,
    "daily_per_day": 0.9,
    "references": 200,
    "reference_gap": (1.0, 6.0),
    "monthly": 10,
    "seasonal": 10,
    "projects": 140,
    "project_rate": (5.0, 20.0),
    "one_offs": 420,
    "results": (3, 8),
}


def build(root: Path, seed: int) -> dict[str, object]:
    """The install under ``root`` (made once per seed; its ``bench.json`` says what it is)."""
    marker = root / "bench.json"
    want = {"seed": seed, "params": json.loads(json.dumps(HEAVY))}
    if marker.is_file():
        info = json.loads(marker.read_text())
        if {k: info.get(k) for k in want} == want:
            return info
    from support.histories import GenParams, generate, write_history

    if root.exists():
        import shutil

        shutil.rmtree(root)
    t0 = time.perf_counter()
    h = generate(seed, GenParams(**HEAVY))  # type: ignore[arg-type]
    state = root / "oc"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    (root / "home").mkdir()
    write_history(h, state / "workspace", state / "memoryd" / "state.db")
    with sqlite3.connect(state / "memoryd" / "state.db") as db:
        (busiest,) = db.execute(
            "SELECT memory_path FROM hits GROUP BY memory_path ORDER BY count(*) DESC, "
            "memory_path LIMIT 1"
        ).fetchone()
    built = round(time.perf_counter() - t0, 1)
    info = {**want, "files": len(h.files), "hits": len(h.hits), "searches": len(h.calls),
            "now": h.end, "explain": busiest, "built_s": built}  # fmt: skip
    marker.write_text(json.dumps(info))
    return info


def fresh_copy(state: Path, to: Path) -> Path:
    """A copy of the install's state folder at ``to``, its database migrated by this
    checkout's code (untimed: a migration runs once, at the daemon's first start)."""
    import shutil

    from memoryd.store import Store

    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(state, to)
    t0 = time.perf_counter()
    Store.open(to / "memoryd" / "state.db").close()
    print(f"new code's copy of the install migrated in {time.perf_counter() - t0:.1f} s")
    return to


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """One spinning process while measuring (the other core of a 2-core machine busy)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True, help="the daemon/ folder of today's code")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--install", type=Path, default=Path("/tmp/memoryd-bench-decisions"))
    ap.add_argument("--busy", action="store_true", help="keep one core busy while measuring")
    ap.add_argument("--only", default="", help="comma-separated command names to time")
    args = ap.parse_args()
    info = build(args.install, args.seed)
    print(f"install: {info['files']} memory files, {info['hits']} hits, {info['searches']} "
          f"searches, 365 days (seed {args.seed}; built in {info['built_s']} s)")  # fmt: skip
    state = args.install / "oc"
    # The new code's own copy of the install, migrated before timing (its schema may be newer
    # than today's code opens: migration 10 keeps each hit's strength), made again each run.
    state_new = fresh_copy(state, args.install / "oc-new")
    learned = {
        "today": state / "memoryd" / "calibration-learned.json",
        "new": state_new / "memoryd" / "calibration-learned.json",
    }
    # Both versions' bytecode written first, as an installed wheel has it: with
    # PYTHONDONTWRITEBYTECODE set (as on the shared machine) every command would compile
    # each module it imports again, tens of milliseconds a read command.
    import compileall

    for tree in (Path(args.baseline), ROOT / "daemon"):
        compileall.compile_dir(str(tree), quiet=1)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    base_env.update(HOME=str(args.install / "home"), MEMORYD_NOW=str(info["now"]))
    versions = {
        "today": {**base_env, "PYTHONPATH": str(Path(args.baseline).resolve()),
                  "OPENCLAW_STATE_DIR": str(state)},
        "new": {**base_env, "PYTHONPATH": str(ROOT / "daemon"),
                "OPENCLAW_STATE_DIR": str(state_new)},
    }  # fmt: skip
    commands = {  # the deciding ones first: a run cut short has their figures
        "explain FILE": ["explain", str(info["explain"]), "--no-scan", "--json"],
        "expire dry run": ["expire", "--dry-run", "--no-scan", "--json"],
        "reflect": ["reflect", "--no-scan", "--json"],
        "simulate": ["simulate", "--no-scan", "--json"],
        "status": ["status", "--json"],
        "hits --no-scan": ["hits", "--no-scan", "--json"],
    }
    if args.only:
        keep = {c.strip() for c in args.only.split(",")}
        commands = {k: v for k, v in commands.items() if k in keep}
    deciding = {"explain FILE", "expire dry run", "reflect", "simulate"}

    def run(version: str, argv: list[str], *, fresh: bool) -> tuple[float, float, str]:
        """(wall, CPU of the process: user + system, its output)."""
        if fresh:
            learned[version].unlink(missing_ok=True)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "memoryd", *argv], env=versions[version],
                             capture_output=True, text=True)  # fmt: skip
        took = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
        if out.returncode != 0:
            raise SystemExit(f"{version} {' '.join(argv)}: exit {out.returncode}\n{out.stderr}")
        return took, cpu, out.stdout

    times: dict[tuple[str, str, str], list[float]] = {}
    cpus: dict[tuple[str, str, str], list[float]] = {}
    same: dict[str, bool] = {}
    with busy_core(args.busy):
        load = os.getloadavg()[0]
        low = load
        for name, argv in commands.items():
            outputs: dict[str, str] = {}
            for _ in range(args.repeat):
                for version in versions:
                    kinds = ("first", "then") if name in deciding else ("",)
                    for kind in kinds:
                        took, cpu, out = run(version, argv, fresh=kind == "first")
                        times.setdefault((name, version, kind), []).append(took)
                        cpus.setdefault((name, version, kind), []).append(cpu)
                        if outputs.setdefault(version, out) != out:
                            raise SystemExit(f"{version} {name}: output differs between runs")
            # (the new code's copy of the install is in another folder: reflect names its report)
            new_out = outputs["new"].replace(str(state_new), str(state))
            same[name] = _comparable(outputs["today"]) == _comparable(new_out)
            done = {k: v for k, v in commands.items() if k in same}
            load, low = max(load, os.getloadavg()[0]), min(low, os.getloadavg()[0])
            print(f"  {name}: timed (load average {os.getloadavg()[0]:.1f})", flush=True)
            _table(done, deciding, times, same, only=name, cpu=cpus)
        load = max(load, os.getloadavg()[0])
    for title, figures in (("wall", times), ("CPU (user + system)", cpus)):
        busy = ", one core kept busy" if args.busy else ""
        print(f"\n{title} of the whole process, median of {args.repeat} (load average "
              f"{low:.1f} to {load:.1f}{busy})\n")  # fmt: skip
        _table(commands, deciding, figures, same)


def _table(
    commands: dict[str, list[str]],
    deciding: set[str],
    figures: dict[tuple[str, str, str], list[float]],
    same: dict[str, bool],
    *,
    only: str | None = None,
    cpu: dict[tuple[str, str, str], list[float]] | None = None,
) -> None:
    """The table (``only``: one command's row, wall then CPU, as soon as it is timed)."""
    if only is not None:
        for figs in (figures, cpu or {}):
            if figs:
                _table({only: commands[only]}, deciding, figs, same, only=None)
        return
    print("| command | today: then (first after new verdicts) | new: then (first) "
          "| new ÷ today | same output |", flush=True)
    print("|---|---|---|---|---|")
    for name in commands:
        if name in deciding:  # (then, and first after new verdicts in brackets)
            cells, ratio = [], ""
            for version in ("today", "new"):
                first = statistics.median(figures[(name, version, "first")])
                then = statistics.median(figures[(name, version, "then")])
                cells.append(f"{_fmt(then)} ({_fmt(first)})")
            t_first = statistics.median(figures[(name, "today", "first")])
            t_then = statistics.median(figures[(name, "today", "then")])
            n_first = statistics.median(figures[(name, "new", "first")])
            n_then = statistics.median(figures[(name, "new", "then")])
            ratio = f"{n_then / t_then:.3f}× ({n_first / t_first:.3f}×)"
            today_cell, cell = cells
        else:
            today = statistics.median(figures[(name, "today", "")])
            new = statistics.median(figures[(name, "new", "")])
            today_cell, cell, ratio = _fmt(today), _fmt(new), f"{new / today:.3f}×"
        print(f"| `{name}` | {today_cell} | {cell} | {ratio} | "
              f"{'yes' if same[name] else '**no**'} |")  # fmt: skip


def _comparable(out: str) -> object:
    """The output as a document (the same decisions print the same document)."""
    try:
        return json.loads(out)
    except ValueError:
        return out


def _fmt(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


if __name__ == "__main__":
    main()
