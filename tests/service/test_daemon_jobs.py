"""The schedule: which periods are due, catch-up after downtime and wakes, DST, failures;
the learned calibration kept up to date between the jobs."""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from memoryd.config import Config, ConfigError, ScheduleConfig, schedule_timezone
from memoryd.jobs import period_key
from memoryd.own_history import LEARNED_FILE
from memoryd.service.main import JOB_STOP_GRACE_SECONDS
from memoryd.service.schedule import (
    Clocks,
    due_jobs,
    find_gap,
    last_fire_time,
    next_fire_time,
)
from memoryd.service.systemd import StatusFacts, status_line
from memoryd.store import Store
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
    run_cli,
    wait_until,
)
from support.histories import generate, write_history
from support.schedule_helpers import at, record, triggers

BERLIN = ZoneInfo("Europe/Berlin")
UTCZ = ZoneInfo("UTC")
DAY = 86400.0


# =========================================================================== pure


def test_last_fire_time_finds_the_latest_cron_time_at_or_before_now() -> None:
    trig = triggers(UTCZ)
    now = at("2026-11-15T10:02:00+00:00")
    assert last_fire_time(trig["organize"], now, UTCZ) == datetime(2026, 11, 15, 9, 5, tzinfo=UTC)
    assert last_fire_time(trig["organize"], at("2026-11-15T10:05:00+00:00"), UTCZ).hour == 10
    assert last_fire_time(trig["reflect"], now, UTCZ) == datetime(2026, 11, 15, 3, 30, tzinfo=UTC)
    assert last_fire_time(trig["expire"], now, UTCZ) == datetime(2026, 11, 1, 4, 0, tzinfo=UTC)
    yearly = triggers(UTCZ, expire="0 0 1 1 *")["expire"]
    assert last_fire_time(yearly, now, UTCZ) == datetime(2026, 1, 1, tzinfo=UTC)


def test_every_job_is_due_on_a_fresh_state_and_none_after_running() -> None:
    store = Store.memory()
    trig = triggers(UTCZ)
    now = at("2026-11-15T10:02:00+00:00")
    assert due_jobs(store, trig, now, UTCZ) == ["organize", "reflect", "expire"]
    for job in ("organize", "reflect", "expire"):
        record(store, job, now, UTCZ)
    assert due_jobs(store, trig, now, UTCZ) == []
    # Before 10:05 the hourly job has nothing new; after it, the new hour is due.
    assert due_jobs(store, trig, at("2026-11-15T10:04:00+00:00"), UTCZ) == []
    assert due_jobs(store, trig, at("2026-11-15T11:06:00+00:00"), UTCZ) == ["organize"]


def test_a_catch_up_after_midnight_does_not_stand_in_for_that_days_run() -> None:
    """Started at 00:05, the daemon catches up yesterday's 03:30 report; today's still runs."""
    store = Store.memory()
    trig = triggers(UTCZ)
    record(store, "reflect", at("2026-11-30T00:05:00+00:00"), UTCZ)
    assert "reflect" not in due_jobs(store, trig, at("2026-11-30T03:29:00+00:00"), UTCZ)
    assert "reflect" in due_jobs(store, trig, at("2026-11-30T03:30:00+00:00"), UTCZ)


def test_many_missed_periods_collapse_into_one_run() -> None:
    store = Store.memory()
    trig = triggers(UTCZ)
    t0 = at("2026-09-10T12:00:00+00:00")
    for job in ("organize", "reflect", "expire"):
        record(store, job, t0, UTCZ)
    # Down for two months: every job owes exactly one run.
    later = at("2026-11-15T12:00:00+00:00")
    assert due_jobs(store, trig, later, UTCZ) == ["organize", "reflect", "expire"]
    for job in ("organize", "reflect", "expire"):
        record(store, job, later, UTCZ)
    assert due_jobs(store, trig, later + 60, UTCZ) == []


def test_a_failed_run_is_retried_at_the_next_period_not_in_a_loop() -> None:
    store = Store.memory()
    trig = triggers(UTCZ)
    now = at("2026-11-15T10:06:00+00:00")
    record(store, "organize", now, UTCZ, status="failed")
    assert "organize" not in due_jobs(store, trig, now + 600, UTCZ)
    assert "organize" in due_jobs(store, trig, at("2026-11-15T11:05:00+00:00"), UTCZ)


def test_the_repeated_hour_of_a_dst_change_is_two_organize_hours_and_one_day() -> None:
    """organize's period is a real (UTC) hour; the day's jobs' period is the local date."""
    store = Store.memory()
    trig = triggers(BERLIN)
    # 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:10 happens twice.
    first = at("2026-10-25T00:10:00+00:00")  # 02:10 CEST
    second = at("2026-10-25T01:10:00+00:00")  # 02:10 CET, an hour later
    assert "organize" in due_jobs(store, trig, first, BERLIN)
    record(store, "organize", first, BERLIN)
    assert "organize" not in due_jobs(store, trig, first + 600, BERLIN)
    assert "organize" in due_jobs(store, trig, second, BERLIN)  # another hour really passed
    record(store, "organize", second, BERLIN)
    assert "organize" not in due_jobs(store, trig, second + 600, BERLIN)
    assert "organize" in due_jobs(store, trig, at("2026-10-25T02:06:00+00:00"), BERLIN)


def test_an_organize_hour_recorded_by_an_earlier_version_neither_blocks_nor_repeats() -> None:
    """Local-hour keys of earlier versions (``…T11``, no ``Z``) are not compared with UTC ones:
    a laptop east of UTC must not wait until its local label's hour comes round in UTC."""
    store = Store.memory()
    trig = triggers(BERLIN)
    now = at("2026-11-30T10:30:00+00:00")  # 11:30 CET
    with store.transaction():
        store.record_job("organize", "2026-11-30T11", "ok", now - 1500, None)
    assert "organize" in due_jobs(store, trig, now, BERLIN)
    record(store, "organize", now, BERLIN)
    assert "organize" not in due_jobs(store, trig, now + 60, BERLIN)


def test_a_laptop_flown_west_organizes_every_hour() -> None:
    """Tokyo's later local hours must not make Berlin's hours look done."""
    store = Store.memory()
    tokyo = ZoneInfo("Asia/Tokyo")
    left = at("2026-11-30T09:30:00+00:00")  # 18:30 in Tokyo
    record(store, "organize", left, tokyo, triggers(tokyo))
    landed = left + 3600  # an hour later the zone is Berlin's: 11:30 CET, "T11" < "T18"
    assert "organize" in due_jobs(store, triggers(BERLIN), landed, BERLIN)


def test_the_missing_hour_of_spring_forward_skips_nothing_else() -> None:
    store = Store.memory()
    trig = triggers(BERLIN)
    before = at("2026-03-28T12:00:00+00:00")
    for job in ("organize", "reflect"):
        record(store, job, before, BERLIN)
    # 2026-03-29 02:00 CET jumps to 03:00 CEST; reflect at 03:30 local still fires once.
    after = at("2026-03-29T02:00:00+00:00")  # 04:00 CEST
    fire = last_fire_time(trig["reflect"], after, BERLIN)
    assert fire == datetime(2026, 3, 29, 3, 30, tzinfo=BERLIN)
    assert due_jobs(store, {"reflect": trig["reflect"]}, after, BERLIN) == ["reflect"]


def test_crontab_weekday_numbers_mean_what_crontab_means() -> None:
    trig = triggers(UTCZ, organize="0 9 * * 1-5", reflect="0 9 * * 0", expire="0 9 * * 7")
    saturday = at("2026-11-14T12:00:00+00:00")
    assert next_fire_time(trig["organize"], saturday, UTCZ).strftime("%a") == "Mon"
    assert next_fire_time(trig["reflect"], saturday, UTCZ).strftime("%a") == "Sun"
    assert next_fire_time(trig["expire"], saturday, UTCZ).strftime("%a") == "Sun"


def test_bad_schedules_are_config_errors_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"schedule\.reflect"):
        triggers(UTCZ, reflect="30 3 * *")
    with pytest.raises(ConfigError, match=r"schedule\.organize"):
        triggers(UTCZ, organize="61 * * * *")
    with pytest.raises(ConfigError, match=r"schedule\.timezone"):
        schedule_timezone(Config(schedule=ScheduleConfig(timezone="Mars/Olympus")))


def test_a_gap_is_named_by_which_clock_ran_and_which_did_not() -> None:
    before = Clocks(wall=1000.0, mono=50.0, boot=70.0)
    # A normal tick of one second (NTP slewing by milliseconds included): no gap.
    assert find_gap(before, Clocks(1001.003, 51.0, 71.0), 1.0, 120.0) is None
    # Suspend to RAM for 9 hours: the boot clock and the wall clock ran, monotonic did not.
    slept = find_gap(before, Clocks(1001.0 + 9 * 3600, 51.0, 71.0 + 9 * 3600), 1.0, 120.0)
    assert slept is not None and slept.kind == "sleep"
    assert slept.slept == pytest.approx(9 * 3600) and slept.seconds == pytest.approx(9 * 3600)
    assert slept.clock_step == pytest.approx(0) and slept.stopped == pytest.approx(0)
    assert "slept 9.0 h" in slept.message()
    # SIGSTOP for 10 minutes: every clock ran, the process did not.
    stopped = find_gap(before, Clocks(1601.0, 651.0, 671.0), 1.0, 120.0)
    assert stopped is not None and stopped.kind == "suspended"
    assert stopped.stopped == pytest.approx(600) and stopped.slept == pytest.approx(0)
    # The clock set back an hour, or forward a day, while the machine ran.
    back = find_gap(before, Clocks(1001.0 - 3600, 51.0, 71.0), 1.0, 120.0)
    assert back is not None and back.kind == "clock set back"
    assert back.clock_step == pytest.approx(-3600) and "set back 60.0 min" in back.message()
    ahead = find_gap(before, Clocks(1001.0 + 86400, 51.0, 71.0), 1.0, 120.0)
    assert ahead is not None and ahead.kind == "clock set forward"
    # Without a boot clock a sleep is a wall-clock move forward, and still a gap.
    no_boot = Clocks(1000.0, 50.0, None)
    woke = find_gap(no_boot, Clocks(1001.0 + 9 * 3600, 51.0, None), 1.0, 120.0)
    assert woke is not None and woke.kind == "clock set forward"
    assert woke.seconds == pytest.approx(9 * 3600)
    # Below the threshold: a loaded machine's slow tick is no gap.
    assert find_gap(before, Clocks(1031.0, 81.0, 101.0), 1.0, 120.0) is None


def test_status_line_reads_well() -> None:
    at_ = datetime(2026, 11, 15, 14, 5, tzinfo=UTCZ)
    assert (
        status_line(StatusFacts(12, 1, "organize", at_))
        == "following 12 transcripts, 1 hit today, next organize at 2026-11-15 14:05 UTC"
    )
    assert status_line(StatusFacts(1, 0, None, None, "reloaded")).endswith("0 hits today; reloaded")


# =========================================================================== real daemons


def run_daemon(inst, daemons, **env: str) -> DaemonProcess:
    d = DaemonProcess(inst, env_extra=env).start()
    daemons.append(d)
    d.wait_ready()
    return d


@pytest.mark.timeout(300)
def test_missed_periods_run_exactly_once_after_downtime_across_a_dst_change(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires("Europe/Berlin")
    inst = make_install(tmp_path, '[schedule]\ntimezone = "Europe/Berlin"\n')
    # Saturday before the change: everything runs once.
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-10-24T10:00:00Z")
    wait_until(lambda: len(done_jobs(inst)) == 3)
    assert d.stop() == 0
    # Down over the night the clocks went back; back on Monday 10:00 CET.
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-10-26T09:00:00Z")
    wait_until(lambda: len(done_jobs(inst)) == 5)
    assert d.stop() == 0
    # The same moment again: nothing is owed.
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-10-26T09:00:00Z")
    assert d.stop() == 0
    assert not d.events("job.catch_up")
    assert sorted(done_jobs(inst)) == ["expire", "organize", "organize", "reflect", "reflect"]
    # Each run is recorded under the fire it answers: at 12:00 CEST the latest organize fire
    # was 11:05 (09:05 UTC), at 10:00 CET 09:05 (08:05 UTC).
    assert job_rows(inst.db) == [
        ("expire", "2026-10", "ok"),
        ("organize", "2026-10-24T09Z", "ok"),
        ("organize", "2026-10-26T08Z", "ok"),
        ("reflect", "2026-10-24", "ok"),
        ("reflect", "2026-10-26", "ok"),
    ]


@pytest.mark.timeout(300)
def test_a_wake_from_sleep_rescans_and_catches_up_missed_jobs(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires(shifted=86400)
    inst = make_install(tmp_path)
    offset = tmp_path / "clock-offset"
    offset.write_text("0")
    d = run_daemon(inst, daemons, MEMORYD_CLOCK_OFFSET_FILE=str(offset))
    wait_until(lambda: len(done_jobs(inst)) == 3)
    # The machine "sleeps" for a day: the wall clock jumps, the monotonic clock does not.
    now = time.time()
    owed = {"organize", "reflect"}
    trig = triggers(UTCZ)
    if period_key("expire", last_fire_time(trig["expire"], now + 86400, UTCZ).timestamp(), UTCZ) > (
        period_key("expire", now, UTCZ)
    ):
        owed.add("expire")
    offset.write_text("86400")
    gap = wait_until(lambda: [e for e in d.events("daemon.gap") if e["clock_step"] > 3600])[0]
    assert gap["kind"] == "clock set forward"  # (the offset file sets memoryd's clock)
    assert gap["seconds"] == pytest.approx(86400, abs=5)
    wait_until(lambda: len(done_jobs(inst)) == 3 + len(owed))
    rescans = [
        e for e in d.events("ingest.rescan") if e.get("reason", "").startswith("after a gap")
    ]
    assert rescans, "a wake triggers a rescan"
    time.sleep(1.5)  # a few more main-loop ticks: no second catch-up
    assert d.stop() == 0
    assert sorted(done_jobs(inst)[3:]) == sorted(owed)


@pytest.mark.timeout(300)
def test_a_failing_job_is_logged_with_its_traceback_and_the_daemon_keeps_counting(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires()
    inst = make_install(tmp_path)
    d = run_daemon(inst, daemons, FAKE_JOB_FAIL_ORGANIZE="1")
    failed = d.wait_event("job.failed")[0]
    assert failed["job"] == "organize"
    assert failed["level"] == "error"
    assert "organize failed on purpose" in str(failed["exception"])
    wait_until(lambda: sorted(done_jobs(inst)) == ["expire", "reflect"])
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: hit_count(inst.db) == 1, timeout=60)
    assert d.stop() == 0
    statuses = {job: status for job, _period, status in job_rows(inst.db)}
    assert statuses == {"organize": "failed", "reflect": "ok", "expire": "ok"}


@pytest.mark.timeout(300)
def test_sigterm_lets_a_running_job_finish_then_exits_0(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires()
    inst = make_install(tmp_path)
    started = time.time()
    d = run_daemon(inst, daemons, FAKE_JOB_SLEEP_ORGANIZE="2")
    wait_until(lambda: any(ln.startswith("start organize") for ln in jobs_log_lines(inst)))
    assert d.stop(signal.SIGTERM, timeout=JOB_STOP_GRACE_SECONDS + 30) == 0
    assert done_jobs(inst) == ["organize"]  # finished; the queued ones wait for next start
    # Recorded under the latest hourly fire (xx:05), not under the hour of the wall clock.
    fire = last_fire_time(triggers(UTCZ)["organize"], started, UTCZ)
    assert job_rows(inst.db) == [("organize", period_key("organize", fire.timestamp(), UTCZ), "ok")]
    d = run_daemon(inst, daemons)
    wait_until(lambda: sorted(done_jobs(inst)) == ["expire", "organize", "reflect"])
    assert d.stop() == 0


def test_fires_before_the_first_start_are_not_missed() -> None:
    """Installing memoryd must not archive notes on the spot: nothing before day one is owed."""
    from memoryd.service.schedule import SCHEDULED_SINCE

    store = Store.memory()
    trig = triggers(UTCZ)
    installed = at("2026-11-15T10:02:00+00:00")
    store.set_meta(SCHEDULED_SINCE, repr(installed))
    assert due_jobs(store, trig, installed, UTCZ) == []
    # The first fires after the installation are owed as usual, missed or not.
    assert due_jobs(store, trig, at("2026-11-15T11:06:00+00:00"), UTCZ) == ["organize"]
    assert due_jobs(store, trig, at("2026-12-01T05:00:00+00:00"), UTCZ) == [
        "organize",
        "reflect",
        "expire",
    ]


@pytest.mark.timeout(300)
def test_a_first_start_runs_no_job_until_its_first_fire(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    clear_of_fires()
    inst = make_install(tmp_path, scheduled_since=None)
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-11-15T10:02:00Z")
    assert d.stop() == 0
    assert not d.events("job.catch_up")
    assert job_rows(inst.db) == []
    # Restarted later (the hour's organize fire was missed while down): that one is owed.
    d = run_daemon(inst, daemons, MEMORYD_NOW="2026-11-15T11:30:00Z")
    wait_until(lambda: len(done_jobs(inst)) == 1)
    assert d.stop() == 0
    assert [row[0] for row in job_rows(inst.db)] == ["organize"]


@pytest.mark.timeout(300)
def test_the_daemon_learns_again_when_new_verdicts_are_due_so_no_command_has_to(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    """The first dry run, ``explain`` or ``reflect`` after new verdicts would learn the
    calibration again (2 s on a heavy year): a running daemon does it first, at start and
    the moment they come due, between two jobs, so the commands reuse what it saved."""
    h = generate(7)
    inst = make_install(tmp_path, '[expire]\nprotect = []\n[schedule]\ntimezone = "UTC"\n'
                        'organize = "off"\nreflect = "off"\nexpire = "off"\n',
                        memory_files=0)  # fmt: skip
    write_history(h, inst.workspace, inst.db)
    saved = inst.db.parent / LEARNED_FILE
    offset = tmp_path / "clock-offset"  # (the daemon's clock at the history's end, then later)
    offset.write_text(repr(h.end - time.time()))
    d = DaemonProcess(inst, fake_jobs=False,
                      env_extra={"MEMORYD_CLOCK_OFFSET_FILE": str(offset)}).start()  # fmt: skip
    daemons.append(d)
    d.wait_ready()
    [first] = d.wait_event("calibration.learned", timeout=120)
    assert first["reason"] == "start"
    learned_at = json.loads(saved.read_text())["at"]
    assert h.end <= learned_at < h.end + 120 and json.loads(saved.read_text())["calibrated"]
    # 40 days on, a monthly run has come within SHORT_BY of its 60 days: due again
    offset.write_text(repr(h.end + 40 * DAY - time.time()))
    [_, again] = d.wait_event("calibration.learned", count=2, timeout=120)
    assert again["reason"] == "verdicts due"
    relearned = json.loads(saved.read_text())["at"]
    assert relearned >= h.end + 40 * DAY
    # the clock set back (what was kept is of a later time): learned again at once
    offset.write_text(repr(h.end + DAY - time.time()))
    [*_, back] = d.wait_event("calibration.learned", count=3, timeout=120)
    assert back["reason"] == "clock set back"
    assert h.end + DAY <= json.loads(saved.read_text())["at"] < relearned
    # and forward again past the next verdicts
    offset.write_text(repr(h.end + 40 * DAY - time.time()))
    d.wait_event("calibration.learned", count=4, timeout=120)
    relearned = json.loads(saved.read_text())["at"]
    assert d.stop() == 0
    # a command now reuses it: nothing learned, the same "at"
    out = run_cli(inst, "expire", "--dry-run", "--no-scan", "--json",
                  env_extra={"MEMORYD_NOW": repr(relearned + 60)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(saved.read_text())["at"] == relearned


def test_a_job_whose_workspace_is_gone_waits_instead_of_reporting_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspace on a disk that came unmounted under a running daemon: every command
    stopped with "is not a folder", while the scheduled reflect ran "ok" on "0 memory files,
    0 hits" and that period's report was never redone. Now a job that reads the workspace
    (reflect, expire) is held, not run and not recorded, and runs once the folder is back,
    with no restart or new fire; organize, which keeps to the tier store, runs at once."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.service import job_runner
    from memoryd.service.cron_trigger import build_triggers
    from memoryd.store import Store

    monkeypatch.setattr(job_runner, "WORKSPACE_LOOK_SECONDS", 0.05)
    inst = make_install(tmp_path)
    cfg = load_config(str(inst.config))
    paths = resolve_paths(cfg, {})
    triggers = build_triggers(cfg, UTC)
    runner = job_runner.JobRunner(lambda: (cfg, paths, UTC, triggers), lambda store: None)
    away = inst.workspace.with_name("workspace.unmounted")
    inst.workspace.rename(away)

    def last(job: str) -> object:
        with Store.open(inst.db) as store:
            return store.last_job(job)

    runner.start()
    try:
        for job in ("reflect", "expire", "organize"):
            runner.submit(job, "test")
        wait_until(lambda: last("organize") is not None and not runner._wanted
                   and runner.current is None, timeout=60)  # fmt: skip
        assert last("reflect") is None and last("expire") is None
        assert not list(paths.reports_dir.glob("reflect-*"))
        away.rename(inst.workspace)  # the disk is back
        wait_until(lambda: last("reflect") is not None and last("expire") is not None, timeout=60)
    finally:
        runner.stop()
        runner.join(10)
    [report] = paths.reports_dir.glob("reflect-*.md")
    assert "21 memory files" in report.read_text(encoding="utf-8")  # (20 notes, MEMORY.md)
