#!/usr/bin/env python3
"""Scan and read-command speed, each as a ratio to a baseline timed in the same interleaved run.

Generates a seeded corpus in a temp dir and times whole processes, as a user or cron runs them:

  memoryd scan, cold        a fresh state dir each time; "one process" forbids the helper
                            (``ingest.parallel_min_bytes = 0``), "helper allowed" is the default
  prototype                 bench/prototype_scan.py: json.loads on every line (the baseline)
  grep floor                cat FILES | grep -c -F memory_   (reading the bytes at all)
  floor                     bench/floor_scan.py: read, find, orjson-decode every needle line and
                            write memoryd's rows given ready-made (what no exact scanner avoids)
  memoryd scan, no-op       nothing new since the last scan: stat, compare, exit

Corpora: ``--corpus bench`` (the issue's 100 MB, about 12 % of lines name a memory tool) or
``--corpus heavy`` (68 MB, about 64 %: an agent that searches its memory all the time).
``--scale 1,4,16`` copies the corpus into that many agents and scans each size cold (one
process), with the bytes the scan process wrote (``write_bytes`` of /proc/<pid>/io) next
to the database size. ``--reads`` tops a scanned state up to 200 k hits and times
``status`` and ``hits --json --no-scan`` (and the interpreter's own start-up).
``--busy`` keeps every other core busy with a spinning process, as on a workstation where
the agent runs; the figures are then those of one core.

Every contender runs ``--repeat`` times, interleaved (A B C, A B C, …), after a warm-up run
that fills the page cache and the bytecode caches. Both scanners' counts are checked against
the generator's (a fast wrong answer is no answer). Nothing is asserted; ``--json-out FILE``
keeps the figures.

    .venv/bin/python bench/bench_scan.py --corpus heavy --busy --scale 1,4,16 --reads
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOW = 1_790_000_000.0  # pinned: the corpus and every window are computed against it
CORPORA = {
    # name: (sessions, MB, transcript bytes per memory call)
    "bench": (145, 100.0, 0),  # 0 = the generator's everyday traffic
    "heavy": (145, 68.0, 5600),
}
READ_HITS = 200_000

# ``memoryd ARGS`` as the console script runs it (``memoryd.command``; ``memoryd.cli.main`` for a
# version from before it), plus what /proc/self/io says the process wrote (to stderr, at exit).
IO_PROBE = (
    "import atexit, sys\n"
    "def probe():\n"
    "    with open('/proc/self/io') as fh:\n"
    "        sys.stderr.write('PROCIO ' + ' '.join(fh.read().split()) + '\\n')\n"
    "atexit.register(probe)\n"
    "try:\n"
    "    from memoryd import command\n"
    "except ImportError:\n"
    "    from memoryd.cli import main\n"
    "    sys.exit(main(sys.argv[1:]))\n"
    "command()\n"
)


class Run:
    """One timed process: wall seconds, CPU seconds, stdout, the probe's /proc/self/io figures.

    CPU time (user + system, of the process and the children it waited for) is the figure
    a loaded machine disturbs least: wall time there includes waiting for a core.
    """

    def __init__(self, seconds: float, cpu: float, out: str, err: str) -> None:
        self.seconds = seconds
        self.cpu = cpu
        self.out = out
        self.io: dict[str, int] = {}
        for line in err.splitlines():
            if line.startswith("PROCIO "):
                words = line.split()[1:]
                self.io = {
                    k.rstrip(":"): int(v) for k, v in zip(words[::2], words[1::2], strict=True)
                }


def run(cmd: list[str] | str, env: dict[str, str], *, shell: bool = False) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    p = subprocess.run(cmd, env=env, shell=shell, check=False, capture_output=True, text=True)
    if p.returncode != 0:  # say why, not only that it failed
        sys.stderr.write(p.stderr[-3000:])
        raise subprocess.CalledProcessError(p.returncode, cmd, p.stdout, p.stderr)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, p.stdout, p.stderr)


def counts_of(doc: dict) -> dict[str, int]:
    got = {f["path"]: f["hits"] for f in doc["files"]}
    got.update({p: 0 for p in doc["never_hit"]})
    return got


def med(runs: list[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def best(runs: list[Run]) -> float:
    return min(r.seconds for r in runs)


def cpu(runs: list[Run]) -> float:
    return statistics.median(r.cpu for r in runs)


@contextmanager
def busy_cores(on: bool) -> Iterator[int]:
    """Every core but one spinning in a process of its own while the block runs."""
    spinners: list[subprocess.Popen] = []
    if on:
        for _ in range(max(1, (os.cpu_count() or 2) - 1)):
            spinners.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    try:
        yield len(spinners)
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def interleave(contenders: dict[str, Callable[[int], Run]], repeat: int) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {name: [] for name in contenders}
    for n in range(repeat):
        for name, fn in contenders.items():
            out[name].append(fn(n))
    return out


def memory_line_share(files: list[str]) -> float:
    lines = mem = 0
    for f in files:
        for line in Path(f).read_bytes().splitlines():
            lines += 1
            mem += b"memory_search" in line or b"memory_get" in line
    return mem / max(lines, 1)


def generate_corpus(
    root: Path, corpus: str, seed: int, sessions: int | None = None, mb: float | None = None
) -> Any:
    """One of ``CORPORA`` (its sessions and size, unless given), generated under ``root``."""
    sys.path.insert(0, str(HERE.parent / "daemon"))
    sys.path.insert(0, str(HERE.parent / "tests"))  # tests/support: not in the wheel
    from support.corpus import generate

    default_sessions, default_mb, call_every = CORPORA[corpus]
    kwargs = {"call_every_bytes": call_every} if call_every else {}
    return generate(
        root,
        seed=seed,
        sessions=sessions or default_sessions,
        target_bytes=int((mb or default_mb) * 1e6),
        now=NOW,
        **kwargs,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="bench")
    ap.add_argument("--sessions", type=int, help="transcripts (default: the corpus's)")
    ap.add_argument("--mb", type=float, help="corpus size (default: the corpus's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="keep every other core busy")
    ap.add_argument("--scale", default="", help="e.g. 1,4,16: cold one-process scans of copies")
    ap.add_argument("--reads", action="store_true", help=f"time read commands at {READ_HITS} hits")
    ap.add_argument(
        "--no-cold", action="store_true", help="skip the cold scans (with --reads or --scale)"
    )
    ap.add_argument("--json-out", type=Path, help="write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="keep the corpus and print where it is")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="the daemon/ folder of another version (e.g. `git archive REV daemon | tar -x`): "
        "its cold scans and read commands are timed in the same interleaved run",
    )
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memoryd-bench-"))
    figures: dict[str, Any] = {"corpus": args.corpus, "busy": args.busy, "repeat": args.repeat}
    try:
        t0 = time.perf_counter()
        truth = generate_corpus(tmp / "corpus", args.corpus, args.seed, args.sessions, args.mb)
        gen_s = time.perf_counter() - t0
        files = [str(t.path) for t in truth.transcripts]
        share = memory_line_share(files)
        figures.update(
            transcripts=len(files),
            mb=round(truth.transcript_bytes / 1e6, 1),
            memory_line_share=round(share, 3),
            hits=truth.total_hits,
        )
        print(
            f"corpus {args.corpus}: {len(files)} transcripts, "
            f"{truth.transcript_bytes / 1e6:.1f} MB, {share:.0%} of lines name a memory tool, "
            f"{truth.total_hits} hits, "
            f"{len(truth.ignored)} decoy files (generated in {gen_s:.1f} s, seed {args.seed})"
        )
        load = os.getloadavg()
        print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f}")
        figures["load_before"] = round(load[0], 2)

        # Bytecode caching on, as for an installed package (pip compiles .pyc files); the
        # warm-up runs below write the caches, so no contender pays for compiling.
        env = dict(os.environ, MEMORYD_NOW=str(NOW))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        memoryd = [sys.executable, "-c", IO_PROBE]

        def config(
            name: str, state_dir: Path, one_process: bool, ingest: str = ""
        ) -> dict[str, str]:
            cfg = tmp / f"{name}.toml"
            ingest += "parallel_min_bytes = 0\n" if one_process else ""
            cfg.write_text(
                f"[openclaw]\nstate_dir = {json.dumps(str(state_dir))}\n"
                f"workspace = {json.dumps(str(truth.workspace))}\n"
                f"[state]\ndir = {json.dumps(str(tmp / name))}\n"
                + (f"[ingest]\n{ingest}" if ingest else ""),
                encoding="utf-8",
            )
            shutil.rmtree(tmp / name, ignore_errors=True)
            _CONFIGS[name] = str(cfg)
            return dict(env, MEMORYD_CONFIG=str(cfg))

        def proto_cmd(state_dir: Path) -> list[str]:
            return [
                sys.executable,
                str(HERE / "prototype_scan.py"),
                "--state-dir",
                str(state_dir),
                "--workspace",
                str(truth.workspace),
                "--now",
                str(NOW),
                "--json",
            ]

        grep_cmd = "cat " + " ".join(shlex.quote(f) for f in files) + " | grep -c -F memory_"
        proto = proto_cmd(truth.state_dir)
        run(grep_cmd, env, shell=True)  # warm the page cache
        run([*memoryd, "scan"], config("warm", truth.state_dir, True))
        sys.path.insert(0, str(HERE))
        from floor_scan import write_plan

        plan = tmp / "floor.plan"
        write_plan(str(plan), str(tmp / "warm" / "state.db"), files)

        def floor(n: int) -> Run:
            db = tmp / f"floor-{n}.db"
            for leftover in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                leftover.unlink(missing_ok=True)
            return run(
                [sys.executable, str(HERE / "floor_scan.py"), "--plan", str(plan), "--db", str(db)],
                env,
            )

        floor(0)  # warm: the plan file and orjson's pages in the cache
        if args.baseline:
            run([*memoryd, "scan"], dict(config("warm-b", truth.state_dir, True), **base(args)))
        run(proto, env)

        with busy_cores(args.busy) as spinning:
            if spinning:
                print(f"busy: {spinning} spinning process(es) keep the other core(s) busy")
            if not args.no_cold:
                figures["cold"] = cold_scans(
                    args, truth, memoryd, config, proto, grep_cmd, env, floor
                )
            if args.scale:
                factors = [int(x) for x in args.scale.split(",")]
                figures["scale"] = scaling(args, truth, tmp, factors, memoryd, config, proto_cmd)
            if args.reads:
                figures["reads"] = reads(args, truth, memoryd, config, proto, env)
        figures["load_after"] = round(os.getloadavg()[0], 2)
        if args.json_out:
            args.json_out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        if args.keep:
            print(f"\ncorpus kept in {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def row(label: str, runs: list[Run], note: str = "") -> str:
    return (
        f"  {label:<30}{best(runs) * 1000:8.0f} {med(runs) * 1000:8.0f} ms"
        f" {cpu(runs) * 1000:8.0f} ms   {note}"
    )


def base(args) -> dict[str, str]:
    """The environment that runs the ``--baseline`` version instead of this one."""
    return {"PYTHONPATH": str(args.baseline.resolve())}


def cold_scans(args, truth, memoryd, config, proto, grep_cmd, env, floor) -> dict[str, Any]:
    """Cold scans of the corpus, one process and helper allowed, against the baseline."""
    always = 'helper = "always"\n'
    contenders = {
        "one": lambda n: run([*memoryd, "scan"], config(f"one-{n}", truth.state_dir, True)),
        "helper": lambda n: run([*memoryd, "scan"], config(f"hlp-{n}", truth.state_dir, False)),
        "always": lambda n: run(
            [*memoryd, "scan"], config(f"alw-{n}", truth.state_dir, False, always)
        ),
        "noop": lambda n: run([*memoryd, "scan"], again(env, f"one-{n}")),
        "proto": lambda n: run(proto, env),
        "grep": lambda n: run(grep_cmd, env, shell=True),
        "floor": floor,
    }
    if args.baseline:
        contenders["base_one"] = lambda n: run(
            [*memoryd, "scan"], dict(config(f"b-one-{n}", truth.state_dir, True), **base(args))
        )
        contenders["base_helper"] = lambda n: run(
            [*memoryd, "scan"], dict(config(f"b-hlp-{n}", truth.state_dir, False), **base(args))
        )
    runs = interleave(contenders, args.repeat)
    want = truth.counts(None)
    got = run([*memoryd, "hits", "--all", "--json", "--no-scan"], again(env, "one-0"))
    memoryd_ok = counts_of(json.loads(got.out)) == want
    proto_ok = counts_of(json.loads(runs["proto"][-1].out)) == want
    one, hlp, p, g = med(runs["one"]), med(runs["helper"]), med(runs["proto"]), med(runs["grep"])
    wrote = statistics.median(r.io.get("write_bytes", 0) for r in runs["one"])
    print(f"\ncold scan ({args.repeat} interleaved runs):       best   median (wall)    CPU")
    print(row("memoryd scan, one process", runs["one"], f"counts exact: {memoryd_ok}"))
    print(row("memoryd scan, helper allowed", runs["helper"], "(ingest.helper = auto)"))
    print(row("memoryd scan, helper always", runs["always"], "(ingest.helper = always)"))
    if args.baseline:
        print(row("baseline, one process", runs["base_one"], str(args.baseline)))
        print(row("baseline, helper allowed", runs["base_helper"]))
    print(row("prototype (json.loads)", runs["proto"], f"counts exact: {proto_ok}"))
    print(row("cat | grep -c memory_", runs["grep"], "(I/O floor)"))
    print(row("floor: read, decode, write", runs["floor"], "(bench/floor_scan.py)"))
    print(row("memoryd scan, no-op", runs["noop"]))
    pc = cpu(runs["proto"])
    print("ratios of medians, memoryd / prototype (lower is faster): wall, CPU")
    print(f"  one process           {one / p:5.2f}x  {cpu(runs['one']) / pc:5.2f}x")
    print(f"  helper allowed        {hlp / p:5.2f}x  {cpu(runs['helper']) / pc:5.2f}x")
    alw = med(runs["always"])
    print(f"  helper always         {alw / p:5.2f}x  {cpu(runs['always']) / pc:5.2f}x")
    if args.baseline:
        for key, label in (
            ("base_one", "baseline, one process"),
            ("base_helper", "baseline, helper"),
        ):
            print(f"  {label:<22}{med(runs[key]) / p:5.2f}x  {cpu(runs[key]) / pc:5.2f}x")
    fc = cpu(runs["floor"])
    print(f"  floor (no deciding)   {med(runs['floor']) / p:5.2f}x  {fc / pc:5.2f}x")
    print(f"  one process / grep floor {one / g:5.2f}x")
    print(f"  one process wrote {wrote / 1e6:.1f} MB (write_bytes)")
    return {
        "one_process_ms": round(one * 1000),
        "helper_ms": round(hlp * 1000),
        "prototype_ms": round(p * 1000),
        "grep_ms": round(g * 1000),
        "floor_cpu_ms": round(fc * 1000),
        "floor_cpu_ratio": round(fc / pc, 3),
        "noop_ms": round(med(runs["noop"]) * 1000),
        "one_process_ratio": round(one / p, 3),
        "helper_ratio": round(hlp / p, 3),
        "one_process_cpu_ms": round(cpu(runs["one"]) * 1000),
        "helper_cpu_ms": round(cpu(runs["helper"]) * 1000),
        "prototype_cpu_ms": round(pc * 1000),
        "one_process_cpu_ratio": round(cpu(runs["one"]) / pc, 3),
        "write_bytes": int(wrote),
        "counts_exact": memoryd_ok and proto_ok,
        "helper_always_ms": round(alw * 1000),
        "helper_always_cpu_ms": round(cpu(runs["always"]) * 1000),
        **(
            {
                "baseline_one_process_ms": round(med(runs["base_one"]) * 1000),
                "baseline_one_process_cpu_ms": round(cpu(runs["base_one"]) * 1000),
                "baseline_helper_ms": round(med(runs["base_helper"]) * 1000),
                "baseline_helper_cpu_ms": round(cpu(runs["base_helper"]) * 1000),
            }
            if args.baseline
            else {}
        ),
    }


# name → the config file written for it (a state dir of that name under the run's temp dir).
_CONFIGS: dict[str, str] = {}


def again(env: dict[str, str], name: str) -> dict[str, str]:
    """The environment of an earlier ``config(name, …)``, its state kept (a rescan, a read)."""
    return dict(env, MEMORYD_CONFIG=_CONFIGS[name])


def scaling(args, truth, tmp: Path, factors: list[int], memoryd, config, proto_cmd) -> list[dict]:
    """×N copies of the corpus (N agents, one workspace): one-process cold scans, bytes written."""
    results = []
    for factor in factors:
        state = tmp / f"x{factor}"
        shutil.rmtree(state, ignore_errors=True)
        shutil.copytree(truth.state_dir, state, copy_function=shutil.copy2)
        src = state / "agents" / "main"
        for k in range(1, factor):
            shutil.copytree(src, state / "agents" / f"copy{k:02d}", copy_function=shutil.copy2)
        proto = proto_cmd(state)
        env0 = config(f"x{factor}-warm", state, True)
        run([*memoryd, "scan"], env0)  # warm the page cache with this size
        runs = interleave(
            {
                "memoryd": lambda n, f=factor, s=state: run(
                    [*memoryd, "scan"], config(f"x{f}-{n}", s, True)
                ),
                "proto": lambda n, p=proto: run(p, os.environ | {"MEMORYD_NOW": str(NOW)}),
            },
            args.repeat,
        )
        m, p = med(runs["memoryd"]), med(runs["proto"])
        db = tmp / f"x{factor}-0" / "state.db"
        db_bytes = db.stat().st_size
        wrote = statistics.median(r.io.get("write_bytes", 0) for r in runs["memoryd"])
        want = {path: n * factor for path, n in truth.counts(None).items()}
        got = run(
            [*memoryd, "hits", "--all", "--json", "--no-scan"],
            again(dict(os.environ, MEMORYD_NOW=str(NOW)), f"x{factor}-0"),
        )
        exact = counts_of(json.loads(got.out)) == want
        results.append(
            {
                "factor": factor,
                "memoryd_ms": round(m * 1000),
                "prototype_ms": round(p * 1000),
                "ratio_to_prototype": round(m / p, 3),
                "memoryd_cpu_ms": round(cpu(runs["memoryd"]) * 1000),
                "prototype_cpu_ms": round(cpu(runs["proto"]) * 1000),
                "write_bytes": int(wrote),
                "db_bytes": db_bytes,
                "counts_exact": exact,
            }
        )
        shutil.rmtree(state, ignore_errors=True)
    first = results[0]
    print(f"\nscaling, one process, cold ({args.repeat} interleaved runs, medians):")
    print("   copies   memoryd  prototype  memoryd/proto  time vs first (CPU)   written / db size")
    for r in results:
        grow = r["memoryd_ms"] / first["memoryd_ms"]
        grow_cpu = r["memoryd_cpu_ms"] / first["memoryd_cpu_ms"]
        times = r["factor"] // first["factor"]
        print(
            f"  {r['factor']:>6}x {r['memoryd_ms']:>8} ms {r['prototype_ms']:>8} ms"
            f" {r['ratio_to_prototype']:>10.2f}x   {grow:>6.1f}x ({grow_cpu:.1f}x) for {times}x"
            f"   {r['write_bytes'] / 1e6:7.1f} MB / {r['db_bytes'] / 1e6:.1f} MB"
            f" = {r['write_bytes'] / max(r['db_bytes'], 1):.2f}x   exact: {r['counts_exact']}"
        )
    return results


def reads(args, truth, memoryd, config, proto, env) -> dict[str, Any]:
    """``status`` and ``hits --json --no-scan`` on a state topped up to READ_HITS hits.

    With ``--baseline``, that version reads a state of its own (scanned by it, topped up
    the same way), interleaved with this one's runs.
    """
    renv = config("reads", truth.state_dir, True)
    run([*memoryd, "scan"], renv)
    db = Path(json.loads(run([*memoryd, "status", "--json"], renv).out)["state_db"])
    top_up(db, READ_HITS)
    contenders = {
        "status": lambda n: run([*memoryd, "status"], renv),
        "hits": lambda n: run([*memoryd, "hits", "--json", "--no-scan"], renv),
    }
    if args.baseline:
        benv = dict(config("reads-b", truth.state_dir, True), **base(args))
        run([*memoryd, "scan"], benv)
        bdb = Path(json.loads(run([*memoryd, "status", "--json"], benv).out)["state_db"])
        top_up(bdb, READ_HITS)
        contenders["base_status"] = lambda n: run([*memoryd, "status"], benv)
        contenders["base_hits"] = lambda n: run([*memoryd, "hits", "--json", "--no-scan"], benv)
    contenders["python"] = lambda n: run([sys.executable, "-c", "pass"], env)
    contenders["proto"] = lambda n: run(proto, env)
    for fn in contenders.values():
        fn(0)  # warm
    # The same report from both versions, or the timing means nothing.
    if args.baseline and contenders["hits"](0).out != contenders["base_hits"](0).out:
        print("WARNING: hits --json differs from the baseline's")
    runs = interleave(contenders, args.repeat * 3)
    p = med(runs["proto"])
    print(
        f"\nread commands at {READ_HITS} hits ({args.repeat * 3} interleaved runs):"
        "  best  median (wall)  CPU"
    )
    labels = {
        "status": "memoryd status",
        "hits": "memoryd hits --json --no-scan",
        "base_status": "baseline status",
        "base_hits": "baseline hits --json --no-scan",
    }
    for name, label in labels.items():
        if name in runs:
            mine = runs[name]
            note = f"{med(mine) / p:.3f}x prototype"
            if not name.startswith("base_") and f"base_{name}" in runs:
                note += f", CPU {cpu(mine) / cpu(runs[f'base_{name}']):.2f}x baseline"
            print(row(label, mine, note))
    print(row("python -c pass", runs["python"], "(interpreter start-up)"))
    print(row("prototype (json.loads)", runs["proto"], "(the baseline)"))
    out = {
        "hits": READ_HITS,
        "status_ms": round(med(runs["status"]) * 1000),
        "hits_json_ms": round(med(runs["hits"]) * 1000),
        "python_ms": round(med(runs["python"]) * 1000),
        "prototype_ms": round(p * 1000),
        "status_cpu_ms": round(cpu(runs["status"]) * 1000),
        "hits_json_cpu_ms": round(cpu(runs["hits"]) * 1000),
        "python_cpu_ms": round(cpu(runs["python"]) * 1000),
        "status_ratio": round(med(runs["status"]) / p, 4),
        "hits_json_ratio": round(med(runs["hits"]) / p, 4),
    }
    if args.baseline:
        out["baseline_status_cpu_ms"] = round(cpu(runs["base_status"]) * 1000)
        out["baseline_hits_json_cpu_ms"] = round(cpu(runs["base_hits"]) * 1000)
    return out


def top_up(db: Path, target: int) -> None:
    """Copies of the scanned hits (new call ids, a day earlier per round) up to ``target``."""
    conn = sqlite3.connect(db)
    (have,) = conn.execute("SELECT COUNT(*) FROM hits").fetchone()
    k = 0
    while have < target:
        k += 1
        conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query, score, start_line, "
            "end_line, session, source_id) SELECT agent, call_id || '#' || ?, memory_path, kind, "
            "ts - ? * 86400.0, query, score, start_line, end_line, session, source_id FROM hits "
            "WHERE id <= (SELECT MIN(id) FROM hits) + ? - 1 AND call_id NOT LIKE '%#%'",
            (k, k, target - have),
        )
        conn.commit()
        (have,) = conn.execute("SELECT COUNT(*) FROM hits").fetchone()
    conn.close()


if __name__ == "__main__":
    sys.exit(main())
