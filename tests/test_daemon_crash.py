"""kill -9 of the daemon mid-ingest and mid-job, then a restart: counts exact, files intact."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from daemon_harness import (
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

pytestmark = pytest.mark.timeout(90)


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
    kills = 0
    seen = 0
    for _round in range(3):
        d = DaemonProcess(inst).start()
        daemons.append(d)
        target = seen + 300
        try:
            wait_until(lambda t=target: hit_count(inst.db) >= t, timeout=20, step=0.005)
        except AssertionError:
            break
        d.kill9()
        kills += 1
        seen = hit_count(inst.db)
        if seen >= expected:
            break
        # OpenClaw keeps writing while memoryd is down.
        append(inst.transcript("live"), hit_lines(["MEMORY.md"]))
        expected += 1
    assert kills >= 2, "the kills happened mid-ingest"
    assert seen < expected
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
