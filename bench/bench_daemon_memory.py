"""Long run of the real daemon: its memory per scan cycle, and where that memory sits.

Starts ``python -m memoryd --config FILE run`` on an OpenClaw install in a temporary folder
and drives it in *cycles*. A cycle is: a few OpenClaw-like writes (memory_search /
memory_get calls and their answers appended to growing transcripts, now and then a new
session, a ``/reset``, a delete, a compaction successor), then a marker hit of its own, and
the cycle ends when that hit is in the state database (so every earlier write has been
read: no sleep decides anything). Every ``--jobs-every`` cycles the daemon's clock is moved
an hour (plus a day now and then) through ``MEMORYD_CLOCK_OFFSET_FILE``: it sees a wall-clock
jump, rescans, and runs the organize / reflect / expire periods that fell due (the real jobs,
on a tier store and a workspace with notes of several ages).

Every ``--sample-every`` cycles it prints one row: VmRSS and its anonymous part
(``/proc/PID/status``), threads, open file descriptors, and what a probe inside the daemon
says (a ``sitecustomize`` on ``PYTHONPATH``, answering SIGUSR2 on the daemon's main thread):
glibc's ``mallinfo2`` (bytes in use vs free but kept), SQLite's ``sqlite3_memory_used``,
live sqlite3 connections, Python's allocated blocks, gc objects, and (``--tracemalloc``)
Python's traced heap. The probe is the bench's, not memoryd's.

Linux only (``/proc``, glibc). Run: ``.venv/bin/python bench/bench_daemon_memory.py --cycles 3000``
(``--env MALLOC_ARENA_MAX=2`` to try an environment setting; ``--json`` for raw rows).
Nothing is committed; the data is generated at run time from ``--seed``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the tests' transcript builders and harness

from support import transcripts as tx  # noqa: E402
from support.daemon_harness import (  # noqa: E402
    DaemonProcess,
    NotifySocket,
    hit_count,
    job_rows,
    make_install,
    wait_until,
)

PROBE = r"""
import os, signal, sys

def _probe_install():
    out = os.environ.get("MEMORYD_BENCH_PROBE")
    if not out:
        return
    if os.environ.get("MEMORYD_BENCH_TRACEMALLOC"):
        import tracemalloc
        tracemalloc.start(int(os.environ["MEMORYD_BENCH_TRACEMALLOC"]))

    def answer(signum, frame):
        import ctypes, gc, json, sqlite3, threading
        row = {"blocks": sys.getallocatedblocks(), "threads": threading.active_count(),
               "thread_names": sorted(t.name for t in threading.enumerate())}
        try:
            import tracemalloc
            if tracemalloc.is_tracing():
                row["traced"] = tracemalloc.get_traced_memory()[0]
                if os.environ.get("MEMORYD_BENCH_TOP"):
                    snap = tracemalloc.take_snapshot()
                    row["top"] = [str(s) for s in snap.statistics("lineno")[:12]]
                    if tracemalloc.get_traceback_limit() > 1:
                        for st in snap.statistics("traceback")[:6]:
                            row["top"].append(f"{st.size // 1024} KiB in {st.count}:")
                            row["top"].extend(st.traceback.format()[-16:])
        except Exception as exc:
            row["traced_error"] = repr(exc)
        row["gc_counts"] = list(gc.get_count())
        row["gc_enabled"] = gc.isenabled()
        if os.environ.get("MEMORYD_BENCH_COLLECT"):
            row["gc_objects_before"] = len(gc.get_objects())
            row["collected"] = gc.collect()
        if os.environ.get("MEMORYD_BENCH_PYMALLOC"):  # (other threads' stderr lines go there too)
            import tempfile
            with tempfile.TemporaryFile() as tmp:
                saved = os.dup(2)
                os.dup2(tmp.fileno(), 2)
                try:
                    sys._debugmallocstats()
                finally:
                    os.dup2(saved, 2)
                    os.close(saved)
                tmp.seek(0)
                for line in tmp.read().decode(errors="replace").splitlines():
                    for key, name in (("# arenas allocated current", "arenas"),
                                      ("# arenas highwater mark", "arenas_high"),
                                      ("# bytes in allocated blocks", "pymalloc_used"),
                                      ("# bytes in available blocks", "pymalloc_free")):
                        if line.startswith(key):
                            row[name] = int(line.split("=")[1].replace(",", ""))
        objs = gc.get_objects()
        row["gc_objects"] = len(objs)
        if os.environ.get("MEMORYD_BENCH_TYPES"):
            from collections import Counter
            row["types"] = Counter(type(o).__name__ for o in objs).most_common(15)
        row["connections"] = sum(1 for o in objs if isinstance(o, sqlite3.Connection))
        try:
            libc = ctypes.CDLL("libc.so.6")
            class MI(ctypes.Structure):
                _fields_ = [(n, ctypes.c_size_t) for n in (
                    "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                    "fsmblks", "uordblks", "fordblks", "keepcost")]
            libc.mallinfo2.restype = MI
            mi = libc.mallinfo2()
            row["malloc_arena"] = mi.arena
            row["malloc_mmap"] = mi.hblkhd
            row["malloc_used"] = mi.uordblks
            row["malloc_free"] = mi.fordblks
        except Exception as exc:
            row["mallinfo_error"] = repr(exc)
        try:
            lib = None
            with open("/proc/self/maps") as fh:
                for line in fh:
                    if "libsqlite3" in line:
                        lib = line.split()[-1]
                        break
            if lib:
                sq = ctypes.CDLL(lib)
                sq.sqlite3_memory_used.restype = ctypes.c_int64
                row["sqlite_used"] = sq.sqlite3_memory_used()
        except Exception as exc:
            row["sqlite_error"] = repr(exc)
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")

    signal.signal(signal.SIGUSR2, answer)

_probe_install()
"""


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM", "Threads", "VmSize"):
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def anon_mappings(pid: int, top: int = 6) -> list[tuple[str, int, int]]:
    """The largest anonymous mappings by resident kB: (name or address, size kB, rss kB)."""
    maps: list[tuple[str, int, int]] = []
    name, size = "", 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and not head[0].endswith(":"):
            name = head[5] if len(head) > 5 else head[0]
        elif head[0] == "Size:":
            size = int(head[1])
        elif head[0] == "Rss:" and (name.startswith("[heap]") or "-" in name):
            maps.append((name, size, int(head[1])))
    return sorted(maps, key=lambda m: -m[2])[:top]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Writer:
    """OpenClaw-like appends to growing transcripts; the daemon must read them all."""

    def __init__(self, sessions: Path, rng: random.Random, notes: list[str]) -> None:
        self.dir, self.rng, self.notes = sessions, rng, notes
        self.live: list[Path] = []
        self.n = 0
        self.expected = 0
        for _ in range(4):
            self.new_session()

    def new_session(self) -> Path:
        sid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        path = self.dir / f"{sid}.jsonl"
        path.write_bytes(tx.header(sid, ts=time.time()))
        self.live.append(path)
        return path

    def append(self, path: Path, data: bytes) -> None:
        with open(path, "ab") as fh:
            fh.write(data)

    def hit(self, big: bool, unanswered: float = 0.0) -> None:
        self.n += 1
        cid = f"toolu_bench_{self.n:07d}"
        path = self.rng.choice(self.live)
        now = time.time()
        if self.rng.random() < unanswered:  # an aborted run: a call whose answer never comes
            self.append(path, tx.call(cid, query=f"boat trip {self.n % 50}", ts=now))
            return
        if self.rng.random() < 0.7:
            files = self.rng.sample(self.notes, self.rng.randint(1, 3))
            data = tx.call(cid, query=f"boat trip {self.n % 50}", ts=now) + tx.result(
                cid, tx.search_payload(files), ts=now + 0.5
            )
            self.expected += len(files)
        else:
            note = self.rng.choice(self.notes)
            text = "a long note read whole\n" * (12_000 if big else 2)
            data = tx.call(cid, "memory_get", path=note, ts=now) + tx.result(
                cid, {"path": note, "text": text}, ts=now + 0.5, tool="memory_get"
            )
            self.expected += 1
        self.append(path, data)

    def churn(self) -> None:
        """Now and then what OpenClaw does to whole files: new, reset, delete, compact."""
        r = self.rng.random()
        if r < 0.02:
            self.new_session()
        elif r < 0.03 and len(self.live) > 2:  # /reset: renamed aside, a fresh one at its name
            p = self.rng.choice(self.live)
            p.rename(p.with_name(f"{p.name}.reset.{tx.iso(time.time()).replace(':', '-')}"))
            p.write_bytes(tx.header(str(uuid.uuid4()), ts=time.time()))
        elif r < 0.035 and len(self.live) > 3:  # deleted
            p = self.rng.choice(self.live)
            self.live.remove(p)
            p.rename(p.with_name(f"{p.name}.deleted.{tx.iso(time.time()).replace(':', '-')}"))


def probe(d: DaemonProcess, probe_file: Path) -> dict[str, object]:
    assert d.proc is not None
    before = len(probe_file.read_text().splitlines()) if probe_file.exists() else 0
    d.send(signal.SIGUSR2)

    def answered() -> dict[str, object] | None:
        d.check_alive()
        if not probe_file.exists():
            return None
        lines = probe_file.read_text().splitlines()
        return json.loads(lines[-1]) if len(lines) > before else None

    return wait_until(answered, timeout=60, step=0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--hits-per-cycle", type=int, default=3)
    ap.add_argument("--sample-every", type=int, default=250)
    ap.add_argument("--jobs-every", type=int, default=50, help="cycles between clock jumps")
    ap.add_argument("--big-share", type=float, default=0.02, help="memory_get of ~280 kB")
    ap.add_argument("--rescan-seconds", type=float, default=60.0, help="daemon.rescan_seconds")
    ap.add_argument("--unanswered", type=float, default=0.0, help="share of calls never answered")
    ap.add_argument("--preload-hits", type=int, default=0, help="a history read at start")
    ap.add_argument("--day-every", type=int, default=10, help="clock jumps between day jumps")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--tracemalloc", type=int, default=0, help="frames (0: off)")
    ap.add_argument("--top", action="store_true", help="tracemalloc's top lines each sample")
    ap.add_argument("--collect", action="store_true", help="gc.collect() before each sample")
    ap.add_argument("--types", action="store_true", help="the 15 commonest object types")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the daemon")
    ap.add_argument("--daemon", type=Path, help="run this memoryd source folder instead")
    ap.add_argument("--maps", action="store_true", help="the largest anonymous mappings")
    ap.add_argument("--pymalloc", action="store_true", help="pymalloc's arenas (1 MiB each)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="mdmem"))
    extra = (
        '[expire]\npolicy = "seed"\nmin_age_days = 30\n[log]\nformat = "json"\nlevel = "warning"\n'
        f'[schedule]\ntimezone = "UTC"\n[daemon]\nrescan_seconds = {args.rescan_seconds}\n'
    )
    inst = make_install(root, extra, memory_files=40)
    notes = sorted(str(p.relative_to(inst.workspace)) for p in inst.workspace.rglob("*.md"))
    for i, rel in enumerate(("memory/2025-01-03.md", "memory/2025-02-14.md")):
        p = inst.workspace / rel
        p.write_text(f"# old {i}\nzebra crossing minutes\n")
        old = time.time() - 400 * 86400
        os.utime(p, (old, old))
    hot = root / "state" / "memory_fs" / "hot"
    hot.mkdir(parents=True)
    for i, age in enumerate((0.0, 1.0, 2.0, 10.0, 20.0)):
        p = hot / f"t{i}.md"
        p.write_text(f"# checkpoint {i}\n" + "the ferry timetable\n" * 20)
        os.utime(p, (time.time() - age * 86400,) * 2)
    probe_dir = root / "probe"
    probe_dir.mkdir()
    (probe_dir / "sitecustomize.py").write_text(PROBE)
    probe_file = root / "probe.jsonl"
    offset_file = root / "clock_offset"
    offset_file.write_text("0")
    env = {
        "PYTHONPATH": os.pathsep.join(
            [str(probe_dir), *([str(args.daemon.resolve())] if args.daemon else [])]
        ),
        "MEMORYD_BENCH_PROBE": str(probe_file),
        "MEMORYD_CLOCK_OFFSET_FILE": str(offset_file),
    }
    if args.tracemalloc:
        env["MEMORYD_BENCH_TRACEMALLOC"] = str(args.tracemalloc)
    if args.top:
        env["MEMORYD_BENCH_TOP"] = "1"
    if args.collect:
        env["MEMORYD_BENCH_COLLECT"] = "1"
    if args.types:
        env["MEMORYD_BENCH_TYPES"] = "1"
    if args.pymalloc:
        env["MEMORYD_BENCH_PYMALLOC"] = "1"
    for item in args.env:
        k, _, v = item.partition("=")
        env[k] = v
    if args.preload_hits:
        tx.reset_history(
            inst.sessions, notes, args.preload_hits, random.Random(args.seed + 1),
            days=60, queries=300,
        )
    notify = NotifySocket()
    d = DaemonProcess(inst, env_extra=env, notify=notify, fake_jobs=False).start()
    rng = random.Random(args.seed)
    writer = Writer(inst.sessions, rng, notes)
    offset = 0.0
    rows = []
    t0 = time.monotonic()
    try:
        notify.wait_for("READY", "1", timeout=120)
        assert d.proc is not None
        pid = d.proc.pid
        for cycle in range(args.cycles + 1):
            if cycle:
                for _ in range(args.hits_per_cycle):
                    writer.hit(big=rng.random() < args.big_share, unanswered=args.unanswered)
                writer.churn()
                if cycle % args.jobs_every == 0:  # the jobs of the hours (days) skipped run
                    day = cycle % (args.jobs_every * args.day_every) == 0
                    offset += 3600 + (86400 if day else 0)
                    done = len(job_rows(inst.db))
                    offset_file.write_text(repr(offset))
                    wait_until(lambda n=done + 1 + day: len(job_rows(inst.db)) >= n, 300)
                cid = f"settle-{cycle}"
                writer.append(
                    writer.live[0],
                    tx.call(cid, ts=time.time())
                    + tx.result(cid, tx.search_payload(["MEMORY.md"]), time.time()),
                )
                wait_until(lambda c=cid: hit_count(inst.db, "call_id = ?", (c,)) == 1, 120)
                notify.drain()
            if cycle % args.sample_every == 0:
                row: dict[str, object] = {"cycle": cycle, **proc_status(pid)}
                row["cpu_s"] = round(cpu_seconds(pid), 2)
                row.update(probe(d, probe_file))
                row["files"] = len(list(inst.sessions.iterdir()))
                if args.maps:
                    row["maps"] = anon_mappings(pid)
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print_row(row, first=cycle == 0)
        hits = hit_count(inst.db, "call_id NOT LIKE 'settle-%'")
        print(
            f"# {args.cycles} cycles in {time.monotonic() - t0:.0f} s wall; hits {hits} "
            f"(written {writer.expected}); env {args.env or 'default'}; "
            f"memoryd {args.daemon or 'this tree'}",
            flush=True,
        )
        d.stop()
    finally:
        d.cleanup()
        notify.close()
        if not args.keep:
            import shutil

            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"# kept {root}")
    return 0


COLS = (
    ("cycle", "cycle", 1),
    ("VmRSS", "rss_kB", 1),
    ("RssAnon", "anon_kB", 1),
    ("Threads", "thr", 1),
    ("fds", "fds", 1),
    ("malloc_used", "malloc_used_kB", 1024),
    ("malloc_free", "malloc_free_kB", 1024),
    ("malloc_mmap", "mmap_kB", 1024),
    ("sqlite_used", "sqlite_kB", 1024),
    ("connections", "conns", 1),
    ("blocks", "py_blocks", 1),
    ("arenas", "py_arenas", 1),
    ("pymalloc_free", "py_free_kB", 1024),
    ("traced", "traced_kB", 1024),
    ("gc_objects", "gc_objs", 1),
    ("files", "files", 1),
    ("cpu_s", "cpu_s", 1),
)


def print_row(row: dict[str, object], first: bool) -> None:
    if first:
        print(" ".join(f"{h:>14}" for _, h, _ in COLS), flush=True)
    cells = []
    for key, _, div in COLS:
        v = row.get(key)
        cells.append(f"{'-' if v is None else (v if div == 1 else int(v) // div):>14}")  # type: ignore[operator]
    print(" ".join(cells), flush=True)
    for t in row.get("top", []) or []:  # type: ignore[union-attr]
        print("   ", t)
    if "maps" in row:
        print("    anon maps (name, size kB, rss kB):", row["maps"])
    if "types" in row:
        print("    types:", row["types"])
    if "collected" in row:
        print(f"    gc.collect(): {row['collected']} of {row['gc_objects_before']}")


if __name__ == "__main__":
    sys.exit(main())
