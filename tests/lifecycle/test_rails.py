"""Rails on the scheduled expire: jobs switched off, no archiving before the user's yes, a cap.

The daemon tests run the real daemon with the real expire job (no stand-ins) on a workspace
whose file ages are set against a pinned clock (``MEMORYD_NOW``), and a local HTTP server in
place of Telegram, so what the user would read is what the test reads.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from memoryd.clock import iso
from memoryd.config import Config, ConfigError, Paths, ScheduleConfig, parse_config
from memoryd.policy import rails
from memoryd.service.cron_trigger import build_triggers
from memoryd.service.schedule import due_jobs
from memoryd.store import Store
from support.daemon_harness import (
    DaemonProcess,
    Install,
    done_jobs,
    make_install,
    run_cli,
    wait_until,
)
from support.telegram_bot import Bot

DAY = 86400.0
UTCZ = ZoneInfo("UTC")
JOBS = ("organize", "reflect", "expire")


@pytest.fixture
def bot():
    b = Bot()
    yield b
    b.server.shutdown()
    b.server.server_close()


# =========================================================================== pure


@pytest.mark.parametrize("job", JOBS)
def test_every_scheduled_job_can_be_switched_off_and_is_never_due(job: str) -> None:
    cfg = parse_config({"schedule": {job: "off"}})
    triggers = build_triggers(cfg, UTCZ)
    assert job not in triggers and len(triggers) == len(JOBS) - 1
    store = Store.memory()  # nothing ever ran: every job that is on is owed
    assert job not in due_jobs(store, triggers, time.time(), UTCZ)
    assert job not in build_triggers(parse_config({"schedule": {job: " Off "}}), UTCZ)


@pytest.mark.parametrize("job", JOBS)
def test_an_empty_schedule_is_refused_with_a_message_that_names_off(job: str) -> None:
    with pytest.raises(ConfigError, match=rf'schedule\.{job}: "" is not a schedule; write "off"'):
        parse_config({"schedule": {job: ""}})


def test_the_new_expire_keys_are_validated() -> None:
    cfg = Config()
    assert (cfg.expire.auto, cfg.expire.max_fraction_per_run) == (False, 0.25)
    assert cfg.expire.restore_on_demand is True
    with pytest.raises(ConfigError, match=r"expire\.max_fraction_per_run: must be between 0 and 1"):
        parse_config({"expire": {"max_fraction_per_run": 1.5}})
    with pytest.raises(ConfigError, match=r"expire\.auto: expected true or false"):
        parse_config({"expire": {"auto": "yes"}})
    assert parse_config({"expire": {"max_fraction_per_run": 1}}).expire.max_fraction_per_run == 1.0


def test_consent_comes_from_the_config_or_the_recorded_yes_and_nothing_else() -> None:
    assert rails.consent_of(False, None) == rails.Consent(False, None)
    assert rails.consent_of(True, None).by == "expire.auto"
    recorded = rails.consent_record(1_780_000_000.0)
    c = rails.consent_of(False, recorded)
    assert c.given and c.by == "expire --schedule" and c.at == 1_780_000_000.0
    assert "expire --schedule" in c.describe()
    # The yes an `expire --force` of an earlier memoryd recorded stays a yes.
    older = rails.consent_of(False, '{"by": "expire --force", "at": 1780000000.0}')
    assert older.given and older.by == "expire --force" and "expire --force" in older.describe()
    for damaged in ("", "{", "[]", '{"by": "someone"}', "null"):
        assert not rails.consent_of(False, damaged).given
    assert "report only" in rails.consent_of(False, None).describe()


def test_the_cap_never_exceeds_its_share_and_takes_the_surest_first() -> None:
    assert [rails.run_limit(n, 0.25) for n in (0, 3, 4, 7, 8, 100)] == [0, 0, 1, 1, 2, 25]
    assert rails.run_limit(10, 1.0) == 10 and rails.run_limit(10, 0.0) == 0
    items = [("a", 5.0), ("b", 1.0), ("c", 3.0), ("d", 0.0)]
    take, held = rails.cap(items, 8, 0.25, surest_first=lambda it: it[1])
    assert take == [("b", 1.0), ("d", 0.0)]  # the two surest, in the plan's own order
    assert held == [("a", 5.0), ("c", 3.0)]
    assert rails.cap(items, 100, 0.25, surest_first=lambda it: it[1]) == (items, [])


# =========================================================================== status: off


@pytest.mark.parametrize("job", JOBS)
def test_status_says_off_for_a_job_switched_off(tmp_path: Path, job: str) -> None:
    inst = make_install(tmp_path, f'[schedule]\ntimezone = "UTC"\n{job} = "off"\n')
    proc = run_cli(inst, "status", "--json")
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    assert jobs[job]["off"] is True and jobs[job]["next_run"] is None
    assert all(not j["off"] and j["next_run"] for name, j in jobs.items() if name != job)
    text = run_cli(inst, "status").stdout
    assert f'{job:<9} off (schedule.{job} = "off")' in text


@pytest.mark.timeout(90)
@pytest.mark.parametrize("job", JOBS)
def test_the_daemon_never_runs_a_job_switched_off(
    tmp_path: Path, daemons: list[DaemonProcess], job: str
) -> None:
    """Every period is owed (memoryd "ran" here since January); the job that is off is not."""
    inst = make_install(tmp_path, f'[schedule]\ntimezone = "UTC"\n{job} = "off"\n')
    d = DaemonProcess(inst).start()
    daemons.append(d)
    d.wait_ready()
    others = sorted(set(JOBS) - {job})
    wait_until(lambda: sorted(done_jobs(inst)) == others, timeout=30)
    # The runner is idle once the others are done: anything it would run has been submitted.
    assert d.stop() == 0
    assert sorted(done_jobs(inst)) == others
    assert not [e for e in d.events("job.catch_up") if e.get("job") == job]


# =========================================================================== real expire runs


def _age(inst: Install, rel: str, mtime: float, text: str | None = None) -> None:
    p = inst.workspace / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if text is not None or not p.exists():
        p.write_text(text or f"# {rel}\nsomething written once\n", encoding="utf-8")
    os.utime(p, (mtime, mtime))


def _memory_files(inst: Install) -> set[str]:
    return {
        p.relative_to(inst.workspace).as_posix() for p in (inst.workspace / "memory").rglob("*.md")
    }


def _moves(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return list(conn.execute("SELECT batch, state FROM moves WHERE op = 'move' ORDER BY id"))
    finally:
        conn.close()


def _run_daemon_once(inst: Install, daemons: list[DaemonProcess], now: float) -> DaemonProcess:
    """Start a real daemon at ``now`` (pinned), wait until its expire catch-up is done, stop."""
    d = DaemonProcess(inst, env_extra={"MEMORYD_NOW": iso(now) or ""}, fake_jobs=False).start()
    daemons.append(d)
    d.wait_ready(timeout=60)
    d.wait_event("job.done", timeout=60)
    assert d.stop() == 0
    return d


@pytest.mark.timeout(240)
def test_scheduled_expire_reports_until_the_user_says_yes_then_moves_at_most_its_share(
    tmp_path: Path, daemons: list[DaemonProcess], bot: Bot
) -> None:
    t1 = float(int(time.time()))
    t2 = t1 + 35 * DAY  # a later month: the next scheduled expire is owed
    inst = make_install(
        tmp_path,
        '[schedule]\ntimezone = "UTC"\norganize = "off"\nreflect = "off"\n'
        '[notify.telegram]\nenabled = true\ntoken = "7:tok"\nchat_id = "42"\n'
        f'base_url = "{bot.url}"\n',
        memory_files=0,
    )
    old = [f"memory/old-{i}.md" for i in range(8)]
    young = [f"memory/young-{i}.md" for i in range(4)]
    for rel in old:
        _age(inst, rel, t1 - 90 * DAY)
    for rel in young:
        _age(inst, rel, t1 - 2 * DAY)
    before = _memory_files(inst)

    # 1. A fresh install's first scheduled expire: a report, nothing moved.
    d = _run_daemon_once(inst, daemons, t1)
    [done] = [e for e in d.events("job.done") if e["job"] == "expire"]
    assert done["report_only"] is True and done["would_archive"] == 8 and done["changed"] is False
    assert done["summary"].startswith("expire (report only): would archive 8 of 13 memory files")
    assert _memory_files(inst) == before and _moves(inst.db) == []
    [(_, msg)] = bot.requests
    assert msg["text"].startswith("expire (report only): would archive 8 of 13")
    assert "memoryd expire --schedule" in msg["text"]
    assert all(f"would archive {rel}" in msg["text"] for rel in old)
    assert "once allowed, a scheduled run moves at most 3 of these 13 files" in msg["text"]
    status = json.loads(run_cli(inst, "status", "--json").stdout)
    assert status["expire"]["consent"]["given"] is False
    assert status["jobs"]["expire"]["last_summary"].startswith("expire (report only)")
    text = run_cli(inst, "status").stdout
    assert "archiving:   report only: scheduled runs move nothing until you say yes" in text
    assert "expire (report only): would archive 8 of 13" in text

    # 2. `expire --force` by hand: exactly the printed plan, uncapped (8 of 13 > 25 %); it
    # says nothing about the months to come (issue 22): `--schedule` is that yes.
    env = {"MEMORYD_NOW": iso(t1) or ""}
    shown = run_cli(inst, "expire", "--dry-run", env_extra=env).stdout
    assert "until you say yes to it with `memoryd expire --schedule`" in shown
    printed = json.loads(run_cli(inst, "expire", "--dry-run", "--json", env_extra=env).stdout)
    forced = run_cli(inst, "expire", "--force", "--json", env_extra=env)
    assert forced.returncode == 0, forced.stderr
    doc = json.loads(forced.stdout)
    assert [(a["path"], a["to"]) for a in doc["archive"]] == [
        (a["path"], a["to"]) for a in printed["archive"]
    ]
    assert len(doc["archive"]) == 8 and "consent" not in doc
    assert _memory_files(inst) == set(young)
    status = json.loads(run_cli(inst, "status", "--json").stdout)["expire"]["consent"]
    assert status["given"] is False
    yes = run_cli(inst, "expire", "--schedule", env_extra=env)
    assert yes.returncode == 0 and yes.stdout.startswith("yes recorded: "), yes.stderr
    assert _memory_files(inst) == set(young)  # the yes alone moves nothing
    status = json.loads(run_cli(inst, "status", "--json").stdout)["expire"]["consent"]
    assert status["given"] and status["by"] == "expire --schedule" and status["at"] == iso(t1)
    assert "allowed by `memoryd expire --schedule`" in run_cli(inst, "status").stdout

    shown = run_cli(inst, "expire", "--dry-run", env_extra=env).stdout
    assert "your yes" not in shown

    # 3. Ten more old files a month later: the scheduled run now moves, at most a quarter.
    later = [f"memory/later-{i}.md" for i in range(10)]
    for rel in later:
        _age(inst, rel, t1 - 60 * DAY)
    # memoryd listed them a month ago (else they are an import, new at t2: issue 28)
    with sqlite3.connect(inst.db) as conn:
        conn.executemany(
            "INSERT INTO files_seen(path, first_seen) VALUES (?, ?)", [(r, t1) for r in later]
        )
    for rel in young:
        _age(inst, rel, t2 - 2 * DAY)
    requests_before = len(bot.requests)
    d = _run_daemon_once(inst, daemons, t2)
    [done] = [e for e in d.events("job.done") if e["job"] == "expire"]
    participants = 1 + len(young) + len(later)  # MEMORY.md, 4 young, 10 old = 15
    limit = rails.run_limit(participants, 0.25)
    assert limit == 3
    assert done["report_only"] is False and done["consent"] == "expire --schedule"
    assert (done["archived"], done["held_back"]) == (limit, len(later) - limit)
    left = _memory_files(inst)
    assert set(young) <= left and len(set(later) - left) == limit
    assert "held back by the cap (expire.max_fraction_per_run = 0.25" in done["summary"]
    msg = bot.requests[requests_before][1]["text"]
    assert msg.startswith(f"expire: archived {limit} of {participants} memory files")
    assert msg.count("◦ held back memory/later-") == len(later) - limit
    text = run_cli(inst, "status").stdout
    assert "archiving:   allowed by `memoryd expire --schedule`" in text


@pytest.mark.timeout(120)
def test_expire_auto_in_the_config_is_a_yes_and_the_cap_still_holds(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    t1 = float(int(time.time()))
    inst = make_install(
        tmp_path,
        '[schedule]\ntimezone = "UTC"\norganize = "off"\nreflect = "off"\n'
        "[expire]\nauto = true\nmax_fraction_per_run = 0.5\n",
        memory_files=0,
    )
    for i in range(6):
        _age(inst, f"memory/old-{i}.md", t1 - 90 * DAY)
    d = _run_daemon_once(inst, daemons, t1)
    [done] = [e for e in d.events("job.done") if e["job"] == "expire"]
    # 7 files take part (MEMORY.md too): at most 3 move, the other 3 planned ones wait.
    assert (done["archived"], done["held_back"], done["consent"]) == (3, 3, "expire.auto")
    assert len(_memory_files(inst)) == 3
    status = json.loads(run_cli(inst, "status", "--json").stdout)["expire"]["consent"]
    assert status["by"] == "expire.auto"
    assert all(batch.startswith("expire:") and st == "done" for batch, st in _moves(inst.db))


def test_a_config_with_every_job_off_still_loads_and_runs_by_hand(tmp_path: Path) -> None:
    inst = make_install(
        tmp_path,
        '[schedule]\ntimezone = "UTC"\norganize = "off"\nreflect = "off"\nexpire = "off"\n',
    )
    cfg = parse_config({"schedule": {"organize": "off", "reflect": "off", "expire": "off"}})
    assert build_triggers(cfg, UTCZ) == {}
    assert cfg.schedule != ScheduleConfig()
    proc = run_cli(inst, "expire", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dry_run"] is True


def test_the_next_expire_notification_names_the_files_needed_again(
    tmp_path: Path, bot: Bot
) -> None:
    """Restores on demand since the last run are the archive's mistakes: the report says so."""
    from memoryd.config import load_config, resolve_paths
    from memoryd.jobs import expire as job
    from memoryd.ondemand_outcomes import RECENT_META, push_recent

    t1 = float(int(time.time()))
    inst = make_install(
        tmp_path,
        '[notify.telegram]\nenabled = true\ntoken = "7:tok"\nchat_id = "42"\n'
        f'base_url = "{bot.url}"\n',
        memory_files=0,
    )
    _age(inst, "memory/old-0.md", t1 - 90 * DAY)
    cfg = load_config(str(inst.config))
    paths = resolve_paths(cfg, {})
    with Store.open(inst.db) as store:
        with store.transaction():
            store.record_job("expire", "2026-01", "ok", t1 - 40 * DAY, "earlier")
            before = {"at": t1 - 50 * DAY, "outcome": "restored", "path": "memory/y.md"}
            after = {"at": time.time() + 1, "outcome": "restored", "path": "memory/x.md"}
            after["query"] = "boat"
            failed = {"at": time.time() + 2, "outcome": "failed", "path": "memory/z.md"}
            failed["query"] = "zebra"
            recent = push_recent(push_recent(push_recent(None, before), after), failed)
            store.set_meta(RECENT_META, recent)
        result = job.run_scheduled(cfg, paths, store, t1)
    assert result.data["report_only"] is True
    [(_, msg)] = bot.requests
    assert "since the last expire, 2 archived file(s) were needed again:" in msg["text"]
    assert "↩ memory/x.md restored — search “boat”" in msg["text"]
    assert "↩ memory/z.md could not be restored — search “zebra”" in msg["text"]
    assert "memory/y.md" not in msg["text"]  # restored before the last run: reported then


def _half_a_month_allowed(tmp_path: Path, now: float) -> tuple[Install, Config, Paths]:
    """An install whose scheduled expire may move half its files a run (expire.auto), with
    six old notes and MEMORY.md: 7 files take part, at most 3 move."""
    from memoryd.config import load_config, resolve_paths

    inst = make_install(
        tmp_path,
        '[schedule]\ntimezone = "UTC"\n[expire]\nauto = true\nmax_fraction_per_run = 0.5\n',
        memory_files=0,
    )
    for i in range(6):
        _age(inst, f"memory/old-{i}.md", now - 90 * DAY)
    cfg = load_config(str(inst.config))
    return inst, cfg, resolve_paths(cfg, {})


def test_a_second_scheduled_run_of_the_month_counts_what_the_first_moved_against_the_cap(
    tmp_path: Path,
) -> None:
    """The daemon may die after a run's moves, before it records the run; its catch-up runs
    the month again. Together they still move at most the cap's share."""
    from memoryd.jobs import expire as job

    t1 = float(int(time.time()))
    inst, cfg, paths = _half_a_month_allowed(tmp_path, t1)
    with Store.open(inst.db) as store:
        first = job.run_scheduled(cfg, paths, store, t1)
        assert len(first.data["moved"]) == 3  # 7 files take part (MEMORY.md too)
        again = job.run_scheduled(cfg, paths, store, t1)
    assert again.data["moved"] == [] and len(again.data["held_back"]) == 3
    assert "3 of them moved earlier this month" in again.summary
    assert len(_memory_files(inst)) == 3


def test_files_restored_by_hand_count_once_against_the_month_cap(tmp_path: Path) -> None:
    """A file the first run of the month moved and the person restored by hand takes part
    once, not twice: a catch-up run of the same month still moves at most the month's share
    of the files there are (7 files at 0.5: 3 moves in all, not 3 and then 2 more)."""
    from memoryd.jobs import expire as job

    t1 = float(int(time.time()))
    inst, cfg, paths = _half_a_month_allowed(tmp_path, t1)
    with Store.open(inst.db) as store:
        first = job.run_scheduled(cfg, paths, store, t1)
    assert len(first.data["moved"]) == 3
    restore = run_cli(inst, "restore", "--last", "--json")
    assert restore.returncode == 0, restore.stderr
    assert len(json.loads(restore.stdout)["restored"]) == 3 and len(_memory_files(inst)) == 6
    with Store.open(inst.db) as store:
        again = job.run_scheduled(cfg, paths, store, t1)
    assert again.data["moved"] == [] and len(again.data["held_back"]) == 3
    assert len(again.data["undone"]) == 3  # (restored by the person: kept, not waiting)
    assert again.log["files"] == 7 and again.log["moved_earlier"] == 3
    assert "at most 3 of 7 files a run, 3 of them moved earlier this month" in again.summary
    assert len(_memory_files(inst)) == 6


@pytest.mark.timeout(120)
def test_a_job_switched_on_again_waits_for_its_next_fire(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    """Fires a job slept through while "off" were not missed: a reload that switches it on
    (or a restart) does not run it on the spot. Every period is owed otherwise (memoryd
    "ran" here since January)."""
    from support.daemon_harness import NotifySocket, clear_of_fires

    clear_of_fires(margin=90.0)  # a real monthly fire of expire would be a run, rightly
    off = '[schedule]\ntimezone = "UTC"\norganize = "off"\nreflect = "off"\nexpire = "off"\n'
    inst = make_install(tmp_path, off)
    notify = NotifySocket()
    try:
        d = DaemonProcess(inst, notify=notify).start()
        daemons.append(d)
        notify.wait_for("READY", "1", timeout=60)
        inst.write_config('[schedule]\ntimezone = "UTC"\norganize = "off"\nreflect = "off"\n')
        mark = notify.index()
        d.send(signal.SIGHUP)
        ready = notify.wait_for("READY", "1", after=mark, timeout=60)
        assert "configuration reloaded" in ready["STATUS"]
        assert d.stop() == 0
        assert not d.events("job.catch_up") and done_jobs(inst) == []

        # A restart with it on: still nothing owed (it was off until the daemon stopped).
        d = DaemonProcess(inst).start()
        daemons.append(d)
        d.wait_ready(timeout=60)
        assert d.stop() == 0
        assert not d.events("job.catch_up") and done_jobs(inst) == []
    finally:
        notify.close()


def test_the_next_months_run_keeps_what_the_person_restored_from_a_scheduled_run(
    tmp_path: Path,
) -> None:
    """``restore --last`` after a scheduled run is the person's no to those moves: the next
    month's run archived the very notes again, unasked (as the restore on demand's, the
    restore is no hit). They stay, said so, for the same 60 days; ``expire --force`` by
    hand still plans them, and the other notes still wait their turn."""
    from memoryd.jobs import expire as job

    t1 = float(int(time.time()))
    inst, cfg, paths = _half_a_month_allowed(tmp_path, t1)
    with Store.open(inst.db) as store:
        first = job.run_scheduled(cfg, paths, store, t1)
    undone = sorted(m["path"] for m in first.data["moved"])
    assert len(undone) == 3
    restore = run_cli(inst, "restore", "--last", "--json")
    assert restore.returncode == 0, restore.stderr
    next_month = t1 + 32 * DAY
    with Store.open(inst.db) as store:
        again = job.run_scheduled(cfg, paths, store, next_month)
    assert sorted(s["path"] for s in again.data["undone"]) == undone
    moved = {m["path"] for m in again.data["moved"]}
    assert moved and not moved & set(undone)
    assert "3 kept: you restored them in the last 60 days" in again.summary
    dry = run_cli(inst, "expire", "--json", env_extra={"MEMORYD_NOW": str(next_month)})
    assert set(undone) <= {a["path"] for a in json.loads(dry.stdout)["archive"]}
