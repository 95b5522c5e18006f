"""The long-running daemon's memory levels off: jobs leave no working set behind, and its
descriptors, threads and memos stay bounded while transcripts keep growing.

One real ``memoryd run`` (real jobs, no stand-ins) on an install with a history of hits
already recorded, so the jobs that read every hit (reflect each day, expire each month)
have a working set of some size. The test plays scan cycles (hits appended to growing
transcripts, a new session now and then; a cycle ends when its marker hit is in the state
database) and moves the daemon's clock a day at a time (``MEMORYD_CLOCK_OFFSET_FILE``), which
makes it rescan and run the periods that fell due. After each job the daemon logs
``memory.released`` (debug) with its resident set and Python's allocated blocks, after each
full rescan ``daemon.footprint`` with its memos. Every wait is on a condition.

Before the fix, a reflect's hit rows stayed as cyclic garbage and glibc kept the freed pages:
each day's job left the daemon larger (bench/bench_daemon_memory.py; docs/benchmarks.md).
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from support import transcripts as tx
from support.daemon_harness import (
    DaemonProcess,
    NotifySocket,
    hit_count,
    job_rows,
    make_install,
    wait_until,
)

pytestmark = pytest.mark.timeout(240)

HISTORY_HITS = 30_000  # recorded before the daemon starts: what reflect reads every day
DAYS = 5  # day jumps after the warm-up: reflect runs each time (and organize)
CYCLES_PER_DAY = 10  # (memos that grew per cycle would show after 60 cycles as after 150)
# Python's allocated blocks after each job, against those before any job ran: the job's
# working set (≈ 6 blocks a hit row) must be gone, not waiting for a full collection.
BLOCKS_GROWTH_LIMIT = 1.25
# Resident memory after the last job vs after the first: generous (the machine's allocator,
# a scan running beside the job), far under what a day's working set left before the fix.
RSS_GROWTH_LIMIT_KB = 12_000
EXTRA = '[log]\nformat = "json"\nlevel = "debug"\n'


def threads_and_fds(pid: int) -> tuple[int, int]:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    threads = next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")
def test_jobs_leave_no_working_set_and_handles_and_memos_stay_bounded(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path, EXTRA, memory_files=20)
    notes = sorted(str(p.relative_to(inst.workspace)) for p in inst.workspace.rglob("*.md"))
    tx.reset_history(
        inst.sessions, notes, HISTORY_HITS, random.Random(20261130), days=40, queries=200
    )
    offset_file = tmp_path / "clock_offset"
    offset_file.write_text("0")
    d = DaemonProcess(
        inst,
        env_extra={"MEMORYD_CLOCK_OFFSET_FILE": str(offset_file)},
        notify=notify,
        fake_jobs=False,
    ).start()
    daemons.append(d)
    notify.wait_for("READY", "1", timeout=120)
    assert d.proc is not None
    # After the catch-up scan of the history, before any job: Python's heap of the daemon.
    before_jobs = int(d.wait_event("daemon.footprint")[0]["py_blocks"])
    pid = d.proc.pid
    rng = random.Random(7)
    live = [inst.transcript(f"live{i}") for i in range(3)]
    for p in live:
        p.write_bytes(tx.header(p.stem, ts=time.time()))
    n = 0
    offset = 0.0

    def cycle(tag: str) -> None:
        """Hits appended to growing transcripts; done when its marker hit is stored."""
        nonlocal n
        for _ in range(3):
            n += 1
            cid = f"toolu_live_{n:06d}"
            t = time.time()
            paths = rng.sample(notes, 2)
            with open(rng.choice(live), "ab") as fh:
                fh.write(tx.call(cid, ts=t) + tx.result(cid, tx.search_payload(paths), t + 0.5))
        if rng.random() < 0.05:
            live.append(inst.transcript(f"live{len(live)}"))
            live[-1].write_bytes(tx.header(live[-1].stem, ts=time.time()))
        marker = f"settle-{tag}"
        with open(live[0], "ab") as fh:
            t = time.time()
            fh.write(tx.call(marker, ts=t) + tx.result(marker, tx.search_payload(["MEMORY.md"]), t))
        wait_until(lambda: hit_count(inst.db, "call_id = ?", (marker,)) == 1, timeout=90)
        notify.drain()

    def next_day() -> dict[str, object]:
        """A day and an hour later: the daemon rescans and runs organize and reflect.
        Returns what it logged after the last of them."""
        nonlocal offset
        done, released = len(job_rows(inst.db)), len(d.events("memory.released"))
        offset += 86400 + 3600
        offset_file.write_text(repr(offset))
        wait_until(lambda: len(job_rows(inst.db)) >= done + 2, timeout=120)
        ran = len(job_rows(inst.db)) - done
        # (each job run is followed by its release; a catch-up may submit more than ran)
        return d.wait_event("memory.released", count=released + ran, timeout=120)[-1]

    for i in range(CYCLES_PER_DAY):
        cycle(f"warm{i}")
    first = next_day()  # the first reflect over the whole history: the warm level
    warm_threads, warm_fds = threads_and_fds(pid)
    after: list[dict[str, object]] = []
    for day in range(DAYS):
        for i in range(CYCLES_PER_DAY):
            cycle(f"{day}-{i}")
        after.append(next_day())
    end_threads, end_fds = threads_and_fds(pid)

    # Every hit read, the history included: the daemon did the work it is measured on.
    assert hit_count(inst.db, "call_id LIKE 'toolu_%'") == HISTORY_HITS + 2 * n
    reflects = [e for e in d.events("job.done") if e.get("job") == "reflect"]
    assert len(reflects) >= DAYS + 1, reflects

    blocks = [int(e["py_blocks"]) for e in (first, *after)]  # type: ignore[call-overload]
    rss = [int(e["rss_kb"]) for e in (first, *after)]  # type: ignore[call-overload]
    print(f"py_blocks before jobs {before_jobs}; after each day's jobs {blocks}, rss_kb {rss}")
    assert max(blocks) < before_jobs * BLOCKS_GROWTH_LIMIT, (before_jobs, blocks)
    assert rss[-1] - rss[0] < RSS_GROWTH_LIMIT_KB, rss
    assert end_threads == warm_threads, (warm_threads, end_threads)
    assert end_fds <= warm_fds + 1, (warm_fds, end_fds)  # (a scan may hold one file open)

    # The memos that live as long as the daemon hold what is there, nothing per cycle.
    footprint = d.events("daemon.footprint")[-1]
    memos = footprint["memos"]
    assert memos["path_keys"] <= len(notes) + 1, memos  # one per memory file written
    assert memos["bare_ids"] == 0 and memos["queued_paths"] <= len(live), memos
    assert memos.get("classified_paths", 0) <= len(notes) + 1, memos
    assert footprint["fds"] is not None and footprint["threads"] >= 5, footprint

    d.send(signal.SIGTERM)
    assert d.proc.wait(60) == 0
    assert not [e for e in d.logs() if e.get("level") in ("error", "critical") or "raw" in e]
