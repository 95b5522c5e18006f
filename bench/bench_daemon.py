"""Benchmark the daemon: append→committed-hit latency, idle CPU, resident memory.

Builds an OpenClaw install with N transcripts (default 1,000) in a temporary folder,
generated from a seed, starts a real ``memoryd run`` on it, and measures:

* latency from appending a memory_search call + result to its hit being committed
  (p50 / p95 over ``--appends`` appends, one at a time, to random transcripts), against the
  baseline of the same append read by an in-process ``Scanner.scan(only=[path])`` (the floor:
  what the daemon adds is event delivery, queueing and the worker hand-off);
* CPU used by the idle daemon over ``--idle-seconds`` (default 60), against the 1 % budget;
* resident memory with every transcript followed, against a bare interpreter that imports
  the same libraries (the baseline) and the 80 MB budget;
* the cost of one stat-only rescan of all transcripts (what runs every ``rescan_seconds``).

Run: ``.venv/bin/python bench/bench_daemon.py [--transcripts 1000] [--appends 300]``.
Nothing is committed; the data is generated at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def line(obj: object) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def hit_pair(call_id: str, paths: list[str], ts: float) -> bytes:
    iso = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ts))
    call = {
        "type": "message",
        "timestamp": iso,
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": call_id,
                    "name": "memory_search",
                    "arguments": {"query": "bench query"},
                }
            ],
        },
    }
    payload = {"results": [{"path": p, "score": 0.5, "source": "memory"} for p in paths]}
    result = {
        "type": "message",
        "timestamp": iso,
        "message": {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "memory_search",
            "content": [{"type": "text", "text": json.dumps(payload, indent=2)}],
            "isError": False,
        },
    }
    return line(call) + line(result)


def chatter(rng: random.Random, ts: float) -> bytes:
    text = " ".join(rng.choice(["plan", "boat", "code", "fix", "test"]) for _ in range(40))
    return line(
        {"type": "message", "timestamp": str(ts), "message": {"role": "user", "content": text}}
    )


def build(root: Path, n: int, rng: random.Random) -> tuple[Path, list[Path], Path]:
    state = root / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    ws = root / "workspace"
    (ws / "memory").mkdir(parents=True)
    notes = [f"memory/2026-01-{d:02d}.md" for d in range(1, 29)]
    for rel in notes:
        (ws / rel).write_text(f"# {rel}\n")
    files = []
    now = time.time()
    for i in range(n):
        p = sessions / f"{uuid.UUID(int=rng.getrandbits(128))}.jsonl"
        header = {
            "type": "session",
            "version": 3,
            "id": p.stem,
            "timestamp": "2026-01-01T00:00:00Z",
        }
        body = [line(header)]
        for j in range(rng.randint(5, 30)):
            body.append(chatter(rng, now))
            if j % 7 == 0:
                body.append(hit_pair(f"seed{i}_{j}", rng.sample(notes, 2), now - 3600))
        p.write_bytes(b"".join(body))
        files.append(p)
    cfg = root / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{state}"\nworkspace = "{ws}"\n'
        f'[state]\ndir = "{root / "md"}"\n[schedule]\ntimezone = "UTC"\n'
        # Jobs far away, so they don't disturb the idle measurement.
        'organize = "0 0 1 1 *"\nreflect = "0 0 1 1 *"\nexpire = "0 0 1 1 *"\n'
    )
    return cfg, files, root / "md" / "state.db"


def count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM hits").fetchone()[0]


def rss_kb(pid: int) -> int:
    for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
        if ln.startswith("VmRSS:"):
            return int(ln.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def baseline_latency(cfg_path: Path, files: list[Path], appends: int, rng: random.Random) -> float:
    """p50 of reading one appended pair with an in-process scanner (no daemon)."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.ingest.scan import Scanner
    from memoryd.store import Store

    cfg = load_config(str(cfg_path))
    paths = resolve_paths(cfg, {})
    store = Store.open(paths.db)
    scanner = Scanner(cfg, paths, store)
    scanner.scan()
    samples = []
    for k in range(appends):
        p = rng.choice(files)
        with open(p, "ab") as fh:
            fh.write(hit_pair(f"base{k}", ["memory/2026-01-01.md"], time.time()))
        t0 = time.perf_counter()
        scanner.scan([p])
        samples.append(time.perf_counter() - t0)
    store.close()
    return statistics.median(samples)


def bare_rss_kb() -> int:
    code = (
        "import sys, time, apscheduler.schedulers.background, watchdog.observers, structlog, "
        "orjson, sqlite3, memoryd.service.main, memoryd.ingest.scan; print('up', flush=True); "
        "time.sleep(30)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    kb = rss_kb(proc.pid)
    proc.kill()
    proc.wait()
    return kb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transcripts", type=int, default=1000)
    ap.add_argument("--appends", type=int, default=300)
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-"))
    try:
        # The baseline works on its own copy so that the daemon starts from zero.
        base_root = root / "baseline"
        base_root.mkdir()
        bcfg, bfiles, _ = build(base_root, args.transcripts, random.Random(args.seed))
        base_p50 = baseline_latency(bcfg, bfiles, min(args.appends, 100), rng)

        droot = root / "daemon"
        droot.mkdir()
        cfg, files, db = build(droot, args.transcripts, random.Random(args.seed))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "NOTIFY"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as when installed
        t_start = time.perf_counter()
        err = open(droot / "daemon.log", "wb")  # noqa: SIM115 - lives as long as the daemon
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "--config", str(cfg), "run"],
            stderr=err,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        log_path = droot / "daemon.log"
        while b"daemon.ready" not in log_path.read_bytes():
            if proc.poll() is not None:
                print(log_path.read_text()[-2000:])
                return 1
            time.sleep(0.01)
        catch_up = time.perf_counter() - t_start

        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        conn.execute("PRAGMA busy_timeout = 5000")
        followed = conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
        rss_ready = rss_kb(proc.pid)

        latencies = []
        for k in range(args.appends):
            p = rng.choice(files)
            before = count(conn)
            data = hit_pair(
                f"live{k}", [f"memory/2026-01-{rng.randint(1, 28):02d}.md"], time.time()
            )
            t0 = time.perf_counter()
            with open(p, "ab") as fh:
                fh.write(data)
            while count(conn) == before:
                if time.perf_counter() - t0 > 10:
                    print(f"append {k}: no hit after 10 s")
                    return 1
                time.sleep(0.001)
            latencies.append(time.perf_counter() - t0)
            time.sleep(rng.uniform(0.005, 0.05))
        rss_busy = rss_kb(proc.pid)

        time.sleep(3)  # let the last batch settle
        c0, w0 = cpu_seconds(proc.pid), time.perf_counter()
        time.sleep(args.idle_seconds)
        idle_cpu = (cpu_seconds(proc.pid) - c0) / (time.perf_counter() - w0)
        rss_idle = rss_kb(proc.pid)

        proc.terminate()
        t0 = time.perf_counter()
        code = proc.wait(60)
        stop_s = time.perf_counter() - t0
        err.close()
        conn.close()

        # One stat-only rescan of everything, as the daemon runs every rescan_seconds.
        from memoryd.config import load_config, resolve_paths
        from memoryd.ingest.scan import Scanner
        from memoryd.store import Store

        c = load_config(str(cfg))
        with Store.open(resolve_paths(c, {}).db) as store:
            scanner = Scanner(c, resolve_paths(c, {}), store)
            t0 = time.perf_counter()
            scanner.scan()
            rescan = time.perf_counter() - t0

        bare = bare_rss_kb()
        p50, p95 = statistics.median(latencies), pct(latencies, 0.95)
        print(f"transcripts followed          {followed}")
        print(f"catch-up scan to READY        {catch_up:.2f} s")
        print(
            f"append->hit latency p50       {p50 * 1000:.1f} ms  "
            f"(in-process scan baseline {base_p50 * 1000:.2f} ms, ratio {p50 / base_p50:.1f}x)"
        )
        print(
            f"append->hit latency p95       {p95 * 1000:.1f} ms  "
            f"(budget 1000 ms, ratio {p95 / 1.0:.3f})"
        )
        print(f"append->hit latency max       {max(latencies) * 1000:.1f} ms")
        print(
            f"idle CPU over {args.idle_seconds:.0f} s           {idle_cpu * 100:.3f} % of a core  "
            f"(budget 1 %, ratio {idle_cpu / 0.01:.3f})"
        )
        print(
            f"RSS ready / busy / idle       {rss_ready / 1024:.1f} / {rss_busy / 1024:.1f} / "
            f"{rss_idle / 1024:.1f} MB  (bare interpreter with the same imports "
            f"{bare / 1024:.1f} MB, ratio {max(rss_ready, rss_busy, rss_idle) / bare:.2f}x; "
            f"budget 80 MB)"
        )
        print(f"stat-only rescan of all files {rescan * 1000:.1f} ms")
        print(f"SIGTERM to exit               {stop_s:.2f} s (exit code {code})")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
