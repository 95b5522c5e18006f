"""kill -9 of the daemon mid-ingest and mid-job, then a restart: counts exact, files intact."""

from __future__ import annotations

import hashlib
import signal
from pathlib import Path

import pytest

from support.daemon_harness import (
    DaemonProcess,
    append,
    clear_of_fires,
    done_jobs,
    hit_count,
    hit_lines,
    job_rows,
    jobs_log_lines,
    make_install,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)


def fingerprint(*folders: Path) -> dict[str, str]:
    out = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_kill_9_mid_ingest_then_restart_counts_every_hit_exactly_once(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    # Small chunks make many commits, so the kills land between (and inside) them.
    inst = make_install(tmp_path, "[ingest]\nchunk_bytes = 4096\nmax_line_bytes = 1048576\n")
    expected = 0
    for f in range(4):
        batch = b"".join(
            hit_lines([f"memory/n{(i + f) % 20:03d}.md", f"memory/n{(i + 7) % 20:03d}.md"])
            for i in range(700)
        )
        append(inst.transcript(f"big{f}"), batch)
        expected += 700 * 2 if (f - 7) % 20 else 700
    progress = [0]
    # The daemon kills itself (MEMORYD_FAULT) after its n-th batch or commit of the
    # catch-up scan: mid-ingest on any machine, however fast or loaded.
    for fault in ("scan.committed:3", "scan.batch:40", "scan.committed:2"):
        d = DaemonProcess(inst, env_extra={"MEMORYD_FAULT": fault}).start()
        daemons.append(d)
        assert d.proc is not None
        assert d.proc.wait(120) == -signal.SIGKILL, fault
        seen = hit_count(inst.db)
        assert progress[-1] <= seen < expected, (fault, progress, seen)
        progress.append(seen)
        # OpenClaw keeps writing while memoryd is down.
        append(inst.transcript("live"), hit_lines(["MEMORY.md"]))
        expected += 1
    assert progress[-1] > 0, "the kills happened mid-ingest"
    before = fingerprint(inst.sessions, inst.workspace)
    d = DaemonProcess(inst).start()
    daemons.append(d)
    d.wait_ready(timeout=60)
    assert hit_count(inst.db) == expected
    assert d.stop() == 0
    assert hit_count(inst.db) == expected
    assert fingerprint(inst.sessions, inst.workspace) == before


def test_kill_9_mid_job_then_restart_runs_that_period_once_more_and_files_stay(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires()
    inst = make_install(tmp_path)
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    before = fingerprint(inst.workspace, inst.sessions)
    d = DaemonProcess(inst, env_extra={"FAKE_JOB_SLEEP_ORGANIZE": "30"}).start()
    daemons.append(d)
    d.wait_ready()
    wait_until(lambda: any(ln.startswith("start organize") for ln in jobs_log_lines(inst)))
    d.kill9()
    assert job_rows(inst.db) == [], "an interrupted run records nothing"

    d = DaemonProcess(inst).start()
    daemons.append(d)
    d.wait_ready()
    wait_until(lambda: sorted(done_jobs(inst)) == ["expire", "organize", "reflect"])
    assert d.stop() == 0
    starts = [ln.split()[1] for ln in jobs_log_lines(inst) if ln.startswith("start ")]
    assert starts.count("organize") == 2
    assert [(job, status) for job, _p, status in job_rows(inst.db)] == [
        ("expire", "ok"),
        ("organize", "ok"),
        ("reflect", "ok"),
    ]
    assert hit_count(inst.db) == 1
    assert fingerprint(inst.workspace, inst.sessions) == before
