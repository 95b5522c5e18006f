"""Benchmark ``memoryd on-read`` (issue 28): what the plugin's read hook costs a ``memory_get``.

Builds an install in a temporary folder with ``--notes`` memory notes and as many archived by
expire (journaled moves, as ``expire --force`` makes them), then times, interleaved run by run:

* ``present``: ``memoryd on-read`` of a note that is in the workspace (what nearly every
  ``memory_get`` is: nothing to do);
* ``none``: of a path memoryd never archived;
* ``restore``: of an archived note's path (the note comes back; put back in the archive
  between runs by a journaled move, outside the timing);
* ``baseline``: ``python -c 'import sys'`` with the same interpreter: the floor any program
  the hook starts pays on this machine at this load.

Prints median and p95 per case and each as a ratio of the baseline's median (a busy machine
moves them all alike). Run: ``.venv/bin/python bench/bench_read_hook.py [--runs 30]``.
Nothing is committed; the data is generated at run time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def _install(root: Path, notes: int) -> tuple[Path, Path]:
    state = root / "oc"
    ws = state / "workspace"
    (ws / "memory").mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    for i in range(2 * notes):
        (ws / "memory" / f"note-{i:04d}.md").write_text(f"# note {i}\n\nsome text {i}\n")
    cfg = root / "memoryd.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = "{state}"\n')
    code = (
        "import sys\n"
        "from memoryd.config import load_config, resolve_paths\n"
        "from memoryd.mover import mover_for\n"
        "from memoryd.store import Store\n"
        "paths = resolve_paths(load_config(sys.argv[1]), {})\n"
        "paths.memoryd_dir.mkdir(parents=True, exist_ok=True)\n"
        "store = Store.open(paths.db)\n"
        "mover = mover_for(store, paths)\n"
        f"for i in range({notes}):\n"
        "    rel = f'memory/note-{i:04d}.md'\n"
        "    dst = paths.workspace / 'memory-archive' / '2026-11' / rel\n"
        "    dst.parent.mkdir(parents=True, exist_ok=True)\n"
        "    mover.move(paths.workspace / rel, dst, reason='bench', batch='expire:bench')\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(cfg)], check=True)
    return cfg, ws


def _rearchive(cfg: Path, rel: str) -> None:
    code = (
        "import sys\n"
        "from memoryd.config import load_config, resolve_paths\n"
        "from memoryd.mover import mover_for\n"
        "from memoryd.store import Store\n"
        "paths = resolve_paths(load_config(sys.argv[1]), {})\n"
        "store = Store.open(paths.db)\n"
        "dst = paths.workspace / 'memory-archive' / '2026-11' / sys.argv[2]\n"
        "mover_for(store, paths).move(paths.workspace / sys.argv[2], dst, reason='bench', "
        "batch='expire:bench-again')\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(cfg), rel], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_read_hook")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--notes", type=int, default=200, help="archived notes (and as many kept)")
    args = parser.parse_args(argv)
    program = str(Path(sys.executable).parent / "memoryd")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-read-") as tmp:
        cfg, _ws = _install(Path(tmp), args.notes)
        kept = f"memory/note-{args.notes:04d}.md"
        archived = "memory/note-0000.md"
        cases = {
            "baseline": [sys.executable, "-c", "import sys"],
            "present": [program, "--config", str(cfg), "on-read", "--json", "--", kept],
            "none": [program, "--config", str(cfg), "on-read", "--json", "--", "memory/x.md"],
            "restore": [program, "--config", str(cfg), "on-read", "--json", "--", archived],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, argv_ in cases.items():
                t0 = time.perf_counter()
                out = subprocess.run(argv_, env=env, capture_output=True, text=True, check=True)
                times[name].append((time.perf_counter() - t0) * 1000)
                if name == "restore":
                    assert '"restored"' in out.stdout, out.stdout
                    _rearchive(cfg, archived)
        base = statistics.median(times["baseline"])
        load = os.getloadavg()[0]
        print(f"{args.runs} runs each, {args.notes} archived notes, load {load:.1f}, "
              f"{os.cpu_count()} cores")  # fmt: skip
        for name, values in times.items():
            med = statistics.median(values)
            print(f"{name:9s} median {med:7.1f} ms  p95 {_p95(values):7.1f} ms  "
                  f"× baseline {med / base:5.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
