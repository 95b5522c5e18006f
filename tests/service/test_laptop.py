"""A laptop's life: sleep and wake, SIGSTOP / SIGCONT, time zones, DST, clocks set by hand or NTP.

The real daemon runs as a subprocess and is stopped with real signals; a wall clock that moves
while it is stopped comes from memoryd's clock seam (``MEMORYD_CLOCK_OFFSET_FILE``), a system
time-zone change from a ``$TZ`` symlink re-pointed as ``timedatectl`` re-points
``/etc/localtime``. Nothing waits "long enough": every wait is on a condition.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.ingest.timestamps import line_epoch, to_epoch
from memoryd.jobs import period_key
from memoryd.service.schedule import due_jobs, last_fire_time
from memoryd.store import Store
from support.daemon_harness import (
    DaemonProcess,
    NotifySocket,
    append,
    clear_of_fires,
    done_jobs,
    hit_count,
    hit_lines,
    job_rows,
    jobs_log_lines,
    make_install,
    process_state,
    start,
    wait_until,
)
from support.schedule_helpers import at, record, triggers

BERLIN = ZoneInfo("Europe/Berlin")
UTCZ = ZoneInfo("UTC")
ZONEINFO = Path("/usr/share/zoneinfo")


def owed_after(now: float, later: float, tz) -> set[str]:
    """The default jobs with a fire in (now, later]: what a wake at ``later`` owes."""
    trig = triggers(tz)
    return {
        name
        for name, t in trig.items()
        if last_fire_time(t, later, tz).timestamp() > last_fire_time(t, now, tz).timestamp()
    }


# =========================================================================== APScheduler


def _run_missed_fire(job_defaults: dict) -> tuple[int, int]:
    """A real BackgroundScheduler whose hourly job last ran 9 hours ago (a laptop that slept).

    Returns (runs, missed events) once APScheduler has decided about the overdue fires.
    """
    from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MISSED
    from apscheduler.schedulers.background import BackgroundScheduler

    runs: list[float] = []
    missed: list[object] = []
    decided = threading.Event()

    def listener(event) -> None:
        if event.code == EVENT_JOB_MISSED:
            missed.append(event)
        decided.set()

    scheduler = BackgroundScheduler(timezone=UTCZ, job_defaults=job_defaults)
    scheduler.add_listener(listener, EVENT_JOB_EXECUTED | EVENT_JOB_MISSED)
    hourly = triggers(UTCZ)["organize"]
    before_sleep = datetime.now(UTC) - timedelta(hours=9)
    scheduler.add_job(
        lambda: runs.append(time.time()),
        hourly,
        id="organize",
        next_run_time=hourly.get_next_fire_time(None, before_sleep),
    )
    scheduler.start()
    try:
        assert decided.wait(60), "APScheduler decided nothing about the overdue fires"
    finally:
        scheduler.shutdown(wait=True)
    return len(runs), len(missed)


def test_a_fire_missed_by_a_long_sleep_runs_once_with_the_daemons_scheduler_settings() -> None:
    from memoryd.service.main import SCHEDULER_JOB_DEFAULTS

    clear_of_fires(margin=10)  # (the latest fire is then more than 10 s old)
    # Nine hourly fires slept through: one run (coalesced), not nine, not none.
    assert _run_missed_fire(SCHEDULER_JOB_DEFAULTS) == (1, 0)
    # What APScheduler does with its own default grace of 1 s: the run is dropped.
    assert _run_missed_fire({**SCHEDULER_JOB_DEFAULTS, "misfire_grace_time": 1}) == (0, 1)


# =========================================================================== pure decisions


def test_a_clock_set_back_owes_no_job_and_runs_none_twice() -> None:
    """The clock set back a week (by hand, a bad NTP server): periods already run stay run."""
    store = Store.memory()
    trig = triggers(UTCZ)
    now = at("2026-12-02T10:00:00+00:00")
    for job in trig:
        record(store, job, now, UTCZ, trig)
    assert due_jobs(store, trig, now - 7 * 86400, UTCZ) == []
    assert due_jobs(store, trig, now - 3600, UTCZ) == []
    # Once the clock is right again, the next fires are owed as usual.
    assert due_jobs(store, trig, now + 3600, UTCZ) == ["organize"]


def test_runs_recorded_while_the_clock_was_ahead_do_not_block_the_periods_to_come() -> None:
    """A dual-boot laptop starts with its clock 2 hours ahead; NTP sets it right minutes later."""
    from memoryd.service.schedule import OFF_UNTIL, SCHEDULED_SINCE, forget_the_future

    store = Store.memory()
    trig = triggers(UTCZ)
    real = at("2026-11-30T02:00:00+00:00")
    for job in trig:
        record(store, job, real - 3600, UTCZ, trig)  # the night before, clock right
    ahead = real + 2 * 3600  # 04:00 on the wrong clock: past today's 03:30 reflect
    assert due_jobs(store, trig, ahead, UTCZ) == ["organize", "reflect"]
    for job in ("organize", "reflect"):
        record(store, job, ahead, UTCZ, trig)  # labels still to come, in the jobs table
    with store.transaction():
        store.set_meta(OFF_UNTIL.format(job="expire"), repr(ahead))
    # Set right at 02:05: without forgetting, organize would wait two hours, reflect a day.
    corrected = real + 300
    assert due_jobs(store, trig, at("2026-11-30T02:06:00+00:00"), UTCZ) == []
    assert due_jobs(store, trig, at("2026-11-30T03:31:00+00:00"), UTCZ) == []
    found = forget_the_future(store, corrected, 120.0)
    assert sorted((job, period) for job, period, _ in found.runs) == [
        ("organize", "2026-11-30T03Z"),
        ("reflect", "2026-11-30"),
    ]
    assert found.marks == [OFF_UNTIL.format(job="expire")]
    assert float(store.get_meta(OFF_UNTIL.format(job="expire"))) == corrected
    assert store.get_meta(SCHEDULED_SINCE) is None  # (never set here: left alone)
    assert due_jobs(store, trig, at("2026-11-30T02:06:00+00:00"), UTCZ) == ["organize"]
    assert due_jobs(store, trig, at("2026-11-30T03:31:00+00:00"), UTCZ) == ["organize", "reflect"]
    # A second look finds nothing; a record a few seconds ahead (NTP's small steps) stays.
    assert not forget_the_future(store, corrected, 120.0)
    record(store, "organize", corrected + 60, UTCZ, trig)
    assert not forget_the_future(store, corrected, 120.0)


def test_a_daily_job_at_a_local_time_dst_skips_runs_once_that_day() -> None:
    """reflect at 02:30 in Berlin: 2026-03-29 has no 02:30; it fires at 03:30 CEST, once."""
    trig = triggers(BERLIN, reflect="30 2 * * *")
    store = Store.memory()
    record(store, "reflect", at("2026-03-28T12:00:00+00:00"), BERLIN, trig)
    fire = trig["reflect"].get_next_fire_time(None, datetime(2026, 3, 29, 0, 0, tzinfo=BERLIN))
    assert fire.timestamp() == at("2026-03-29T03:30:00+02:00")
    assert due_jobs(store, {"reflect": trig["reflect"]}, fire.timestamp(), BERLIN) == ["reflect"]
    record(store, "reflect", fire.timestamp(), BERLIN, trig)
    assert due_jobs(store, {"reflect": trig["reflect"]}, fire.timestamp() + 7200, BERLIN) == []
    # The next day is its own period again, at 02:30 CEST.
    next_day = at("2026-03-30T02:30:00+02:00")
    assert due_jobs(store, {"reflect": trig["reflect"]}, next_day, BERLIN) == ["reflect"]


def test_a_daily_job_at_a_local_time_that_happens_twice_runs_once() -> None:
    """reflect at 02:30 in Berlin on 2026-10-25: 02:30 CEST, then 02:30 CET an hour later."""
    trig = triggers(BERLIN, reflect="30 2 * * *")
    store = Store.memory()
    first = at("2026-10-25T02:30:00+02:00")
    second = at("2026-10-25T02:30:00+01:00")
    fires = [trig["reflect"].get_next_fire_time(None, datetime.fromtimestamp(first - 60, BERLIN))]
    fires.append(
        trig["reflect"].get_next_fire_time(fires[0], datetime.fromtimestamp(first + 1, BERLIN))
    )
    assert [f.timestamp() for f in fires] == [first, second]  # APScheduler fires at both
    assert due_jobs(store, trig, first, BERLIN) == ["organize", "reflect", "expire"]
    record(store, "reflect", first, BERLIN, trig)
    assert "reflect" not in due_jobs(store, trig, second, BERLIN)  # the same day: not again


@settings(max_examples=200, deadline=None)
@given(
    instant=st.datetimes(
        min_value=datetime(2001, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
    ),
    offset_minutes=st.integers(-14 * 60, 14 * 60),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]),
)
def test_transcript_times_become_the_same_utc_instant_whatever_the_local_zone(
    instant: datetime, offset_minutes: int, zone: str
) -> None:
    """Hits are stored as epoch seconds (UTC): the process's zone never shifts them."""
    from datetime import timezone

    written = instant.astimezone(timezone(timedelta(minutes=offset_minutes)))
    z_form = instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"
    saved = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        assert to_epoch(written.isoformat()) == pytest.approx(instant.timestamp(), abs=1e-6)
        assert line_epoch(z_form) == pytest.approx(
            instant.replace(microsecond=instant.microsecond // 1000 * 1000).timestamp()
        )
        # A time without a zone names no instant: never read in the local zone.
        assert to_epoch(instant.replace(tzinfo=None).isoformat()) is None
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


# =========================================================================== the real daemon


def run_daemon(inst, daemons, notify=None, **env: str) -> DaemonProcess:
    d = start(inst, daemons, notify, **env)
    d.wait_ready()
    return d


@pytest.mark.timeout(300)
def test_an_expire_missed_while_the_laptop_was_off_on_the_1st_runs_once_at_the_next_start(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires()
    inst = make_install(tmp_path)
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-10-20T12:00:00Z")
    wait_until(lambda: len(done_jobs(inst)) == 3)
    assert d.stop() == 0
    # Off from 28 October to 3 November: the expire of 1 November 04:00 was missed.
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-11-03T08:00:00Z")
    wait_until(lambda: len(done_jobs(inst)) == 6)
    assert d.stop() == 0
    catch_ups = {e["job"]: e["reason"] for e in d.events("job.catch_up")}
    assert catch_ups == {"organize": "start", "reflect": "start", "expire": "start"}
    # Started again the same day (a reboot): the month's expire is not run again.
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-11-03T09:30:00Z")
    wait_until(lambda: len(done_jobs(inst)) == 7)  # the new hour's organize only
    assert d.stop() == 0
    assert sorted(done_jobs(inst)).count("expire") == 2
    assert [p for job, p, _ in job_rows(inst.db) if job == "expire"] == ["2026-10", "2026-11"]


@pytest.mark.timeout(300)
def test_a_daemon_stopped_mid_scan_over_a_long_gap_loses_nothing_and_counts_nothing_twice(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """SIGSTOP in the middle of a scan batch (the closest thing to a laptop's sleep), lines
    written and the wall clock moved 9 hours while stopped, then SIGCONT."""
    clear_of_fires(margin=60, shifted=9 * 3600)
    threshold = 3.0
    inst = make_install(
        tmp_path,
        f"[daemon]\nrescan_seconds = 3600.0\nclock_jump_seconds = {threshold}\n"
        '[log]\nlevel = "debug"\n',  # (to see APScheduler's jobs added again)
    )
    offset = tmp_path / "clock-offset"
    offset.write_text("0")
    d = run_daemon(
        inst,
        daemons,
        notify,
        WATCHDOG_USEC="2000000",
        MEMORYD_CLOCK_OFFSET_FILE=str(offset),
        MEMORYD_FAULT="scan.batch:1:stop",  # the first batch stops the process, uncommitted
    )
    wait_until(lambda: len(done_jobs(inst)) == 3)  # the start's catch-up
    s1, s2 = inst.transcript("s1"), inst.transcript("s2")
    append(s1, hit_lines(["memory/n001.md", "memory/n002.md"]))
    assert d.proc is not None
    wait_until(lambda: process_state(d.proc.pid) == "T")
    stopped_at = time.monotonic()
    # Written while the daemon is stopped; the wall clock moves on 9 hours.
    append(s1, hit_lines(["memory/n003.md", "memory/n004.md", "memory/n005.md"]))
    append(s2, hit_lines(["MEMORY.md"]))
    real_now = time.time()
    offset.write_text(str(9 * 3600))
    owed = owed_after(real_now, real_now + 9 * 3600, UTCZ)
    # Stopped for longer than the threshold (a lower bound this test sets, not a speed bound).
    time.sleep(max(0.0, threshold + 2 - (time.monotonic() - stopped_at)))
    before_resume = notify.index()
    d.send(signal.SIGCONT)

    wait_until(lambda: hit_count(inst.db) == 6, timeout=60)
    notify.wait_for("WATCHDOG", "1", after=before_resume)  # pings again at once
    # (the gap of the clock move: a loaded machine may have added a short "suspended" one)
    gap = wait_until(lambda: [e for e in d.events("daemon.gap") if e["clock_step"] > 3600])[0]
    assert gap["kind"] == "clock set forward"
    assert gap["clock_step"] == pytest.approx(9 * 3600, abs=60)
    assert gap["stopped"] >= threshold  # the stop itself is in the same line
    assert "rescanning transcripts" in gap["message"]

    # APScheduler timed its wait on a clock that does not see the move: its jobs are added
    # again, each next fire computed from the clock now (APScheduler logs each one added).
    def scheduler_rearmed() -> bool:
        logs = d.logs()
        return any(e.get("logger", "").startswith("apscheduler") for e in logs[logs.index(gap) :])

    wait_until(scheduler_rearmed)
    wait_until(lambda: len(done_jobs(inst)) == 3 + len(owed))
    rescans = [
        e for e in d.events("ingest.rescan") if e.get("reason", "").startswith("after a gap")
    ]
    assert rescans, "the gap triggers a full rescan"
    # A second look: the hits and the jobs stay as they are (nothing read or run twice).
    append(s2, hit_lines(["memory/n006.md"]))
    wait_until(lambda: hit_count(inst.db) == 7, timeout=60)

    # Stopped from outside with the wall clock left alone (kill -STOP, a frozen VM): the
    # daemon sees every clock move on but itself, and says so.
    def suspended() -> list[dict]:
        return [e for e in d.events("daemon.gap") if e["kind"] == "suspended"]

    seen = len(suspended())
    d.send(signal.SIGSTOP)
    wait_until(lambda: process_state(d.proc.pid) == "T")
    stopped_at = time.monotonic()
    time.sleep(threshold + 2)  # a lower bound on the stop, not a bound on speed
    before_resume = notify.index()
    d.send(signal.SIGCONT)
    resumed = wait_until(lambda: suspended()[seen:])[0]
    assert threshold <= resumed["stopped"] <= time.monotonic() - stopped_at + 1
    assert "stopped for" in resumed["message"]
    notify.wait_for("WATCHDOG", "1", after=before_resume)
    assert d.stop() == 0
    assert hit_count(inst.db) == 7
    assert sorted(done_jobs(inst)[3:]) == sorted(owed)
    big_gaps = [e for e in d.events("daemon.gap") if abs(e["clock_step"]) > 3600]
    assert len(big_gaps) == 1, "one line about the gap"
    assert d.events("daemon.health") == [], "no thread died over the stop"


@pytest.mark.timeout(300)
def test_a_clock_run_ahead_then_set_back_while_running_blocks_no_period_to_come(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires(margin=60, shifted=26 * 3600)
    inst = make_install(tmp_path, "[daemon]\nrescan_seconds = 3600.0\nclock_jump_seconds = 5.0\n")
    offset = tmp_path / "clock-offset"
    offset.write_text("0")
    d = run_daemon(inst, daemons, MEMORYD_CLOCK_OFFSET_FILE=str(offset))
    wait_until(lambda: len(done_jobs(inst)) == 3)
    real_now = time.time()
    owed = owed_after(real_now, real_now + 26 * 3600, UTCZ)
    offset.write_text(str(26 * 3600))  # a clock a day and two hours ahead: jobs run on it
    wait_until(lambda: len(done_jobs(inst)) == 3 + len(owed))
    offset.write_text("0")  # NTP sets it right
    ahead = d.wait_event("clock.records_ahead")[0]
    assert sorted(r.split()[0] for r in ahead["runs"]) == sorted(owed)
    # (the job runner may forget those runs, after its last one, before the main loop's next
    # tick sees the clock set back: wait for that tick's line too)
    back = wait_until(
        lambda: [e for e in d.events("daemon.gap") if e["kind"] == "clock set back"]
    )
    assert back[0]["clock_step"] == pytest.approx(-26 * 3600, abs=60)
    assert d.stop() == 0
    assert len(done_jobs(inst)) == 3 + len(owed)  # the set-back itself runs nothing
    now = time.time()
    trig = triggers(UTCZ)
    with Store.open(inst.db) as store:
        (future,) = store.conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE started > ?", (now + 60,)
        ).fetchone()
        assert future == 0
        # The next hour's organize is owed when it comes (not blocked for 26 hours).
        coming = trig["organize"].get_next_fire_time(None, datetime.fromtimestamp(now, UTCZ))
        assert "organize" in due_jobs(store, trig, coming.timestamp() + 1, UTCZ)


@pytest.mark.timeout(300)
@pytest.mark.skipif(
    not (ZONEINFO / "Asia/Tokyo").exists(), reason="needs the system's zoneinfo files"
)
def test_the_daemon_follows_the_systems_time_zone_when_it_changes(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """``schedule.timezone = ""``: the laptop lands in Tokyo; cron times, period labels and
    "today" follow the new zone without a restart."""
    clear_of_fires("Europe/Berlin", margin=60)
    clear_of_fires("Asia/Tokyo", margin=60)
    localtime = tmp_path / "localtime"
    localtime.symlink_to(ZONEINFO / "Europe/Berlin")
    inst = make_install(tmp_path, '[schedule]\ntimezone = ""\n')
    d = run_daemon(inst, daemons, notify, TZ=str(localtime))
    wait_until(lambda: len(done_jobs(inst)) == 3)
    assert "CE" in notify.wait_for("READY", "1")["STATUS"]  # CET or CEST
    # Re-pointed atomically, as timedatectl re-points /etc/localtime.
    new_link = tmp_path / "localtime.new"
    new_link.symlink_to(ZONEINFO / "Asia/Tokyo")
    os.replace(new_link, localtime)
    changed = d.wait_event("timezone.changed")[0]
    assert (changed["old"], changed["new"]) == ("Europe/Berlin", "Asia/Tokyo")
    tokyo = ZoneInfo("Asia/Tokyo")

    def status_in_tokyo() -> bool:
        notify.drain()
        return any("JST" in m.get("STATUS", "") for m in notify.messages)

    wait_until(status_in_tokyo, timeout=60)  # STATUS= is refreshed at once on a change
    assert d.stop() == 0
    # The hour organized in Berlin is the same (UTC) hour in Tokyo: it is not organized again.
    organize = [p for job, p, _ in job_rows(inst.db) if job == "organize"]
    latest = last_fire_time(triggers(tokyo)["organize"], time.time(), tokyo)
    assert period_key("organize", latest.timestamp(), tokyo) in organize
    catch_up = [e for e in d.events("job.catch_up") if e["reason"] == "time zone change"]
    assert "organize" not in {e["job"] for e in catch_up}
    assert len(d.events("timezone.changed")) == 1
    starts = [ln for ln in jobs_log_lines(inst) if ln.startswith("start organize")]
    assert len(starts) == len(organize)  # each organize period ran once


# =========================================================================== review (revlap)


def idle_daemon(tmp_path: Path, extra_config: str = ""):
    """The daemon's object, its state open and its job runner built, without its threads:
    a test calls its gap handling and runs its jobs in this thread, in an order it chooses."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.service.job_runner import JobRunner
    from memoryd.service.main import Daemon

    inst = make_install(tmp_path, extra_config)
    cfg = load_config(str(inst.config))
    daemon = Daemon(cfg, resolve_paths(cfg, {}), config_file=str(inst.config), environ={})
    daemon.store = Store.open(inst.db)
    daemon.jobs = JobRunner(daemon.schedule_snapshot, daemon.forget_runs_ahead)
    return inst, daemon


def test_after_a_clock_set_back_apscheduler_fires_at_the_real_next_time(tmp_path: Path) -> None:
    """The clock ran a day ahead, then NTP set it right. APScheduler computed each job's next
    fire on the clock that was ahead (a day from now, really): woken only, it would wait that
    day, and no organize would fire for 26 hours. After the gap, every cron job's next fire is
    computed again from the clock as it is now."""
    from apscheduler.schedulers.background import BackgroundScheduler

    from memoryd.service.main import SCHEDULER_JOB_DEFAULTS
    from memoryd.service.schedule import Gap

    _inst, daemon = idle_daemon(tmp_path)
    scheduler = BackgroundScheduler(timezone=UTCZ, job_defaults=SCHEDULER_JOB_DEFAULTS)
    daemon.scheduler = scheduler
    scheduler.start(paused=True)  # (nothing fires during the test)
    try:
        real_now = datetime.now(UTC)
        for name, trigger in daemon.triggers.items():
            # What APScheduler computed while the wall clock read 26 hours later.
            ahead = trigger.get_next_fire_time(None, real_now + timedelta(hours=26))
            scheduler.add_job(print, trigger, id=name, next_run_time=ahead)
        daemon._after_gap(Gap("clock set back", -26 * 3600.0, 0.0, 0.0, -26 * 3600.0))
        organize = scheduler.get_job("organize")
        real_next = daemon.triggers["organize"].get_next_fire_time(None, datetime.now(UTC))
        assert organize.next_run_time <= real_next
        assert organize.next_run_time > real_now - timedelta(hours=1)
        assert {job.id for job in scheduler.get_jobs()} == set(daemon.triggers)
    finally:
        scheduler.shutdown(wait=False)
        daemon.store.close()


def test_a_job_running_while_the_clock_is_set_back_leaves_no_run_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scheduled run starts while the clock is a day ahead; NTP sets it right while it
    runs, and the main loop forgets the runs recorded ahead (there is none yet: this one is
    still running). The run's row, written when it ends, must not block the periods to come."""
    from memoryd import faults
    from memoryd.service.schedule import Gap

    inst, daemon = idle_daemon(tmp_path)
    monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", str(26 * 3600))

    def set_right_while_running() -> None:
        monkeypatch.setenv("MEMORYD_CLOCK_OFFSET", "0")
        daemon._after_gap(Gap("clock set back", -26 * 3600.0, 0.0, 0.0, -26 * 3600.0))

    faults.hook("job.started", set_right_while_running)
    try:
        daemon.jobs._run_one("reflect", "test")
    finally:
        faults.hook("job.started", None)
    now = time.time()
    assert [r for r in job_rows(inst.db) if r[0] == "reflect"] == [], "the run ahead is forgotten"
    with Store.open(inst.db) as store:
        (ahead,) = store.conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE started > ?", (now + 60,)
        ).fetchone()
    assert ahead == 0
    # Today's reflect is owed again when its fire comes (not a day later).
    trig = triggers(UTCZ)
    fire = last_fire_time(trig["reflect"], now + 86400, UTCZ).timestamp()
    with Store.open(inst.db) as store:
        assert "reflect" in due_jobs(store, trig, fire + 1, UTCZ)
    daemon.store.close()


@pytest.mark.timeout(300)
def test_a_main_loop_tick_kept_busy_by_a_locked_database_is_no_gap(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """SIGHUP while a command holds the state database's write lock: the reload waits for it
    (SQLite's busy timeout), longer than ``clock_jump_seconds``. The daemon ran all along:
    no "stopped" gap, no rescan, no catch-up."""
    import sqlite3

    clear_of_fires(margin=60)
    threshold = 10.0  # (a loaded machine may keep a thread waiting for seconds)
    config = f"[daemon]\nrescan_seconds = 3600.0\nclock_jump_seconds = {threshold}\n"
    inst = make_install(tmp_path, config + '[schedule]\ntimezone = "UTC"\nexpire = "off"\n')
    d = run_daemon(inst, daemons, notify, WATCHDOG_USEC="2000000")
    wait_until(lambda: len(done_jobs(inst)) == 2)
    before = notify.index()
    holder = sqlite3.connect(inst.db, isolation_level=None, timeout=30.0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        d.send(signal.SIGHUP)
        notify.wait_for("RELOADING", "1", after=before)
        # The reload records "expire is off until now": it waits for the lock (a lower bound
        # on the wait, not a bound on speed).
        time.sleep(threshold + 2)
    finally:
        holder.rollback()
        holder.close()
    reloaded = notify.wait_for("READY", "1", after=before)
    after = notify.messages.index(reloaded)
    # Two pings after the reload: the second comes from a tick that looked for a gap after it.
    first = notify.messages.index(notify.wait_for("WATCHDOG", "1", after=after + 1))
    notify.wait_for("WATCHDOG", "1", after=first + 1)
    assert d.events("daemon.reloaded")
    assert d.events("daemon.gap") == []
    assert not [e for e in d.events("ingest.rescan") if "gap" in e.get("reason", "")]
    assert d.stop() == 0


def test_a_gap_threshold_below_the_main_loops_tick_is_refused() -> None:
    """``clock_jump_seconds = 0`` (meant as "off", or "as soon as possible") made every one-second
    tick a gap: a full rescan of every transcript and a job catch-up each second, forever."""
    from memoryd.config import ConfigError, parse_config
    from memoryd.service.schedule import Clocks, find_gap

    normal_tick = (Clocks(1000.0, 50.0, 70.0), Clocks(1001.002, 51.001, 71.001))
    assert find_gap(*normal_tick, 1.0, 0.0) is not None  # why: any threshold below a tick
    for bad in (0, 0.5, 1.9):
        with pytest.raises(ConfigError, match=r"daemon\.clock_jump_seconds"):
            parse_config({"daemon": {"clock_jump_seconds": bad}})
    cfg = parse_config({"daemon": {"clock_jump_seconds": 2}})
    assert find_gap(*normal_tick, 1.0, cfg.daemon.clock_jump_seconds) is None


def test_a_new_system_zone_is_followed_once_two_looks_in_a_row_read_it() -> None:
    """What the main loop does with the zone it reads at each tick (1 s apart)."""
    from memoryd.service.schedule import zone_to_follow

    def follow(followed: str, reads: list[str]) -> list[str]:
        """The zone the schedule is read in after each look."""
        pending: str | None = None
        out = []
        for read in reads:
            switch, pending = zone_to_follow(followed, pending, read)
            followed = read if switch else followed
            out.append(followed)
        return out

    berlin, tokyo, utc = "Europe/Berlin", "Asia/Tokyo", "UTC"
    # /etc/localtime removed and linked again: one look reads the fallback, UTC.
    assert follow(berlin, [berlin, utc, berlin, berlin]) == [berlin] * 4
    # A real change: followed at the second look, and kept.
    assert follow(berlin, [tokyo, tokyo, tokyo]) == [berlin, tokyo, tokyo]
    # A zone that flips at every look is never followed; once it settles, it is.
    assert follow(berlin, [tokyo, utc, tokyo, utc, utc]) == [berlin] * 4 + [utc]
    # Back and forth between two zones, each held for two looks: each change followed once.
    assert follow(berlin, [tokyo, tokyo, berlin, berlin]) == [berlin, tokyo, tokyo, berlin]
    # A transient read between two looks of a new zone starts the count again.
    assert follow(berlin, [tokyo, utc, tokyo, tokyo]) == [berlin, berlin, berlin, tokyo]


def test_a_boot_clock_the_kernel_refuses_reads_as_none() -> None:
    """A clock id the kernel does not know (as ``CLOCK_BOOTTIME`` in some sandboxes): the
    main loop reads the other clocks and goes on, instead of dying of ``EINVAL`` each tick."""
    from memoryd.clock import read_clocks
    from memoryd.service.schedule import find_gap

    unknown = 0x7FFF  # no kernel has such a clock
    with pytest.raises(OSError):
        time.clock_gettime(unknown)
    first, second = read_clocks(unknown), read_clocks(unknown)
    assert first.boot is None and second.wall >= first.wall - 1
    assert find_gap(first, second, 1.0, 120.0) is None


def test_runs_labelled_in_another_zone_are_not_ahead() -> None:
    """After a flight east to west the labels recorded in Tokyo are later than this zone's:
    they were recorded at real instants, so none of them is forgotten (whether a run is
    ahead is read from when it started, never from its label)."""
    from memoryd.service.schedule import forget_the_future

    tokyo = ZoneInfo("Asia/Tokyo")
    store = Store.memory()
    now = at("2026-11-30T12:00:00+00:00")
    trig = triggers(tokyo)
    for job in trig:
        record(store, job, now - 600, tokyo, trig)
        assert period_key(job, now, tokyo) >= period_key(job, now, UTCZ)
    assert not forget_the_future(store, now, 120.0)
    assert len(job_rows_of(store)) == 3


def job_rows_of(store: Store) -> list[tuple[str, str]]:
    return list(store.conn.execute("SELECT job, period FROM jobs ORDER BY job"))


@pytest.mark.timeout(300)
def test_an_expire_that_ran_on_a_clock_far_ahead_is_forgotten_but_its_moves_can_be_undone(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    """``expire --force`` by hand on a clock 400 days ahead archives every note (they all
    look old). The daemon, started on the right clock, forgets that run (this month's expire
    is owed when it comes), and never the move journal: ``restore --last`` undoes the moves."""
    from support.daemon_harness import run_cli

    clear_of_fires(margin=60)
    inst = make_install(tmp_path)
    notes = sorted(p.name for p in (inst.workspace / "memory").glob("*.md"))
    ahead = run_cli(inst, "expire", "--force", env_extra={"MEMORYD_CLOCK_OFFSET": str(400 * 86400)})
    assert ahead.returncode == 0, ahead.stderr
    assert sorted(p.name for p in (inst.workspace / "memory").glob("*.md")) == []
    d = run_daemon(inst, daemons)
    forgotten = d.wait_event("clock.records_ahead")[0]
    assert [r.split()[:2] for r in forgotten["runs"]] == [
        ["expire", period_key("expire", time.time() + 400 * 86400, UTCZ)]
    ]
    wait_until(lambda: len(done_jobs(inst)) == 3)  # this month's expire among them
    assert d.stop() == 0
    undo = run_cli(inst, "restore", "--last")
    assert undo.returncode == 0, undo.stderr
    assert sorted(p.name for p in (inst.workspace / "memory").glob("*.md")) == notes
