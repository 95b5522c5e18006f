"""When the daemon's jobs fire, and which of them are due: the schedule, as pure decisions.

Everything here is a function over plain values (a config, a zone, an instant, a trigger,
the ``jobs`` table), so ``memoryd status`` and the daemon read a schedule the same way, and
``status`` can do so without importing the daemon, APScheduler or structlog: it uses the
pure cron reading below; only the daemon builds APScheduler triggers (:func:`build_triggers`,
imported lazily inside it).

The cron reading is APScheduler's reading of an expression:

* every field must match (APScheduler ANDs day-of-month and day-of-week, where classic cron
  ORs them when both are restricted);
* a weekday number is a crontab number (0 or 7 = Sunday), translated to a name first, exactly
  as the daemon translates it for APScheduler (:func:`crontab_weekdays`);
* the forms are APScheduler 3's: ``*``, ``*/n``, ``a``, ``a-b``, ``a-b/n``, ``a/n``, month and
  weekday names or name ranges (a step after a name is ignored, as APScheduler ignores it),
  and ``last`` for the day of month;
* wall-clock times are read in the schedule's zone: in a repeated hour (DST ends) both
  readings fire, a time skipped when DST starts fires at the same reading on the old offset
  (``02:30`` → ``03:30``).

A test (``tests/test_cron.py``) checks :func:`next_fire` against a minute-by-minute search and
against ``CronTrigger.get_next_fire_time`` over generated expressions, zones and instants. The
daemon fires by :func:`next_fire` too (:mod:`.cron_trigger`), so ``status`` shows what it fires.
"""

from __future__ import annotations

import calendar
import contextlib
import math
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..config import Config
    from ..store import Store

# The jobs the daemon fires on a schedule (``[schedule]`` keys), in schedule order.
SCHEDULED_JOBS = ("organize", "reflect", "expire")

# crontab weekday numbers 0..7 → names (0 and 7 are Sunday); APScheduler 3.x reads a bare
# number as Monday-based, names it reads right.
_CRONTAB_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
# APScheduler's weekday index: Monday = 0 (as date.weekday()).
_WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")

# Per field: the smallest and largest value (APScheduler's bounds; the day's real maximum is
# the month's length, applied when days are matched).
_BOUNDS = {"minute": (0, 59), "hour": (0, 23), "day": (1, 31), "month": (1, 12), "weekday": (0, 6)}

# The Gregorian calendar (weekdays included) repeats every 400 years: a schedule that does not
# fire within that never fires.
_HORIZON_YEARS = 400
# A DST change moves wall clocks by at most this much: candidates this close after the first
# one found may still be earlier instants (a repeated hour).
_MAX_SHIFT = timedelta(hours=3)


class CronSpec(NamedTuple):
    """A parsed schedule: the values each field allows (weekday 0 = Monday)."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    last_day: bool  # ``last``: the month's last day matches too
    months: frozenset[int]
    weekdays: frozenset[int]


def crontab_weekdays(field_text: str) -> str:
    """Crontab weekday numbers (0 or 7 = Sunday) as names, which APScheduler 3.x reads right.

    APScheduler 3.x counts 0 as Monday; translating to names keeps the config's meaning the
    one every crontab user expects. Other text is left for the parser to judge.
    """
    items = []
    for item in field_text.split(","):
        span, slash, step = item.partition("/")
        bounds = span.split("-")
        named = [_CRONTAB_WEEKDAYS[int(b)] if b.isdigit() and int(b) <= 7 else b for b in bounds]
        items.append("-".join(named) + slash + step)
    return ",".join(items)


def parse(expr: str) -> CronSpec:
    """``minute hour day month weekday`` → :class:`CronSpec`; ValueError names what is wrong."""
    fields = expr.split()
    if len(fields) != 5:
        raise ValueError(f"expected 5 fields (minute hour day month weekday), got {len(fields)}")
    minute, hour, day, month, weekday = fields
    days, last_day = _field(day, "day")
    return CronSpec(
        minutes=tuple(sorted(_field(minute, "minute")[0])),
        hours=tuple(sorted(_field(hour, "hour")[0])),
        days=days,
        last_day=last_day,
        months=_field(month, "month")[0],
        weekdays=_field(crontab_weekdays(weekday), "weekday")[0],
    )


def _field(text: str, name: str) -> tuple[frozenset[int], bool]:
    """The values one field allows, and whether it says ``last`` (day of month only)."""
    import re  # (compiled on first use: only ``status`` and the daemon read schedules)

    lo, hi = _BOUNDS[name]
    values: set[int] = set()
    last = False
    for item in re.split(" *, *", text.strip()):
        if m := re.match(r"\*(?:/(\d+))?$", item):
            step = _step(m[1])
            if step and step > hi - lo:
                raise ValueError(f"{name}: step {step} exceeds the range {lo}-{hi} in {item!r}")
            values.update(range(lo, hi + 1, step or 1))
            continue
        if m := re.match(r"(\d+)(?:-(\d+))?(?:/(\d+))?$", item):
            first, end, step = int(m[1]), _int(m[2]), _step(m[3])
            if end is None and step is None:
                end = first
            values.update(_span(name, item, first, end, step))
            continue
        names = {"month": _MONTH_NAMES, "weekday": _WEEKDAY_NAMES}.get(name)
        if names and (m := re.match(r"([a-z]+)(?:-([a-z]+))?", item, re.IGNORECASE)):
            # APScheduler matches a name range at the start of the item and ignores the rest.
            base = 1 if name == "month" else 0
            first = _name_index(names, m[1], name) + base
            end = _name_index(names, m[2], name) + base if m[2] else first
            values.update(_span(name, item, first, end, None))
            continue
        if name == "day" and re.match("last", item, re.IGNORECASE):
            last = True
            continue
        raise ValueError(f"{name}: {item!r} is not a cron value")
    return frozenset(values), last


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


def _step(text: str | None) -> int | None:
    step = _int(text)
    if step == 0:
        raise ValueError("a step must be at least 1")
    return step


def _name_index(names: tuple[str, ...], text: str, field: str) -> int:
    try:
        return names.index(text.lower())
    except ValueError:
        raise ValueError(f"{field}: unknown name {text!r}") from None


def _span(name: str, item: str, first: int, end: int | None, step: int | None) -> range:
    """``first[-end][/step]`` checked as APScheduler checks it, as the values it allows."""
    lo, hi = _BOUNDS[name]
    if end is not None and first > end:
        raise ValueError(f"{name}: {item!r} runs backwards")
    if first < lo:
        raise ValueError(f"{name}: {first} is below {lo} in {item!r}")
    if end is not None and end > hi:
        raise ValueError(f"{name}: {end} is above {hi} in {item!r}")
    if step and step > (end or hi) - first:  # (APScheduler's check: an end of 0 counts as hi)
        raise ValueError(f"{name}: step {step} exceeds the range in {item!r}")
    return range(first, (hi if end is None else end) + 1, step or 1)


# ------------------------------------------------------------------------- the configured schedule


def job_schedules(cfg: Config) -> dict[str, CronSpec]:
    """Each scheduled job's parsed schedule; a bad expression is a ConfigError naming its key.

    The one check of a schedule: configuration validation calls it for every command that
    loads a config (so a file is accepted or refused alike everywhere), ``status`` reads
    next fire times from what it returns, and the daemon's APScheduler triggers accept
    exactly what :func:`parse` accepts (a property test checks that). A job switched off
    (``"off"``) has no entry: nothing fires it.
    """
    from ..config import ConfigError, schedule_is_off

    out: dict[str, CronSpec] = {}
    for name in SCHEDULED_JOBS:
        expr = getattr(cfg.schedule, name)
        if schedule_is_off(expr):
            continue
        if not expr.strip():
            raise ConfigError(
                f'schedule.{name}: "" is not a schedule; write "off" to switch the job off, '
                "or a cron expression (five fields: minute hour day month weekday)"
            )
        try:
            out[name] = parse(expr)
        except ValueError as exc:
            raise ConfigError(
                f"schedule.{name}: {expr!r} is not a cron expression (minute hour day month "
                f'weekday) or "off": {exc}'
            ) from None
    return out


def zone_named(name: str) -> tzinfo:
    """The time zone ``schedule.timezone`` names (``""`` = the local one); ConfigError else.

    The one resolution of the zone: validation, ``status``, the lifecycle commands' period
    keys, ``simulate`` and the daemon all read schedules and periods in what this returns.
    """
    if not name:
        return local_zone()
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        from ..config import ConfigError

        raise ConfigError(
            f"schedule.timezone: unknown time zone {name!r} "
            "(an IANA name such as 'Europe/Berlin', or \"\" for the local zone)"
        ) from None


def local_zone(environ: Mapping[str, str] | None = None) -> tzinfo:
    """The system's named zone, DST rules included: ``$TZ``, else what ``/etc/localtime``
    links to (or holds), else ``/etc/timezone``, else UTC.

    Never a fixed offset taken from today's clock (a period label must not shift at a DST
    change). Found where tzlocal looks on Linux and macOS, without importing it: tzlocal costs
    a one-shot command tens of milliseconds of imports, and every command resolves the zone.
    """
    import os
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    env = os.environ if environ is None else environ
    tz_env = env.get("TZ", "").removeprefix(":")
    links = [os.path.realpath(tz_env)] if os.path.isabs(tz_env) else []
    links.append(os.path.realpath("/etc/localtime"))
    named = [tz_env] if tz_env and not os.path.isabs(tz_env) else []
    for link in links:
        if "/zoneinfo/" in link:
            named.append(link.split("/zoneinfo/", 1)[1])
    try:
        with open("/etc/timezone", encoding="utf-8") as fh:
            named.append(fh.read().strip())
    except (OSError, UnicodeDecodeError):
        pass
    for key in named:
        try:
            return ZoneInfo(key)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    for path in links:
        try:
            with open(path, "rb") as fh:
                return ZoneInfo.from_file(fh, key="localtime")
        except (OSError, ValueError):
            continue
    return UTC


def zone_to_follow(followed: str, pending: str | None, read: str) -> tuple[bool, str | None]:
    """Whether the daemon switches to the system zone ``read`` now, and the zone to remember.

    ``followed``: the zone the schedule is read in; ``pending``: a different zone the
    previous look read (else None). A new zone is followed once two looks in a row read it:
    ``/etc/localtime`` replaced by hand (removed, then linked again) reads as another zone
    for a moment, and one tick must not run the schedule in it; a zone that flips at every
    look is never followed.
    """
    if read == followed:
        return False, None
    if read != pending:
        return False, read  # seen once: followed if the next look reads it too
    return True, None


def schedule_timezone(cfg: Config) -> tzinfo:
    """The zone cron expressions and period keys are read in: configured, else the local one."""
    return zone_named(cfg.schedule.timezone)


# --------------------------------------------------------------------------- next fire


def next_fire(spec: CronSpec, after: float, tz: tzinfo) -> float | None:
    """The first fire time (epoch seconds) at or after ``after``, rounded up to a second.

    None when the schedule never fires (``0 0 30 2 *``). Fires are at second 0 of a matching
    wall-clock minute in ``tz``; what a DST change does is in the module docstring.
    """
    start = math.ceil(after)
    local = datetime.fromtimestamp(start, tz)
    # Wall clocks run back when DST ends: a reading shortly before ``local``'s may be later.
    begin = local.replace(tzinfo=None) - _MAX_SHIFT
    best: float | None = None
    first_wall: datetime | None = None
    for wall in _walls(spec, begin):
        if first_wall is not None and wall - first_wall > _MAX_SHIFT:
            break
        for ts in _instants(wall, tz):
            if ts >= start and (best is None or ts < best):
                best = ts
                if first_wall is None:
                    first_wall = wall
    return best


def _instants(wall: datetime, tz: tzinfo) -> tuple[float, ...]:
    """The instants a wall-clock reading names: two in a repeated hour, one elsewhere.

    A reading skipped by a DST change names the instant on the offset before the change.
    """
    early = wall.replace(tzinfo=tz, fold=0).timestamp()
    late = wall.replace(tzinfo=tz, fold=1).timestamp()
    if late > early:  # a repeated hour: both readings happen
        return (early, late)
    return (early,)


def _walls(spec: CronSpec, begin: datetime) -> Iterator[datetime]:
    """Matching wall-clock minutes from ``begin``'s minute (inclusive), in order."""
    day0 = begin.date()
    for d in _days(spec, day0):
        for h in spec.hours:
            if d == day0 and h < begin.hour:
                continue
            for m in spec.minutes:
                if d == day0 and h == begin.hour and m < begin.minute:
                    continue
                yield datetime(d.year, d.month, d.day, h, m)


def _days(spec: CronSpec, first: date) -> Iterator[date]:
    """Matching dates from ``first`` on, for as long as the calendar can still bring one."""

    year, month = first.year, first.month
    for _ in range(_HORIZON_YEARS * 12):
        if month in spec.months:
            length = calendar.monthrange(year, month)[1]
            start = first.day if (year, month) == (first.year, first.month) else 1
            for day in range(start, length + 1):
                if (day in spec.days or (spec.last_day and day == length)) and date(
                    year, month, day
                ).weekday() in spec.weekdays:
                    yield date(year, month, day)
        month += 1
        if month > 12:
            year, month = year + 1, 1
        if year > 9999:
            return


# --------------------------------------------------------------------------- the daemon's triggers


def build_triggers(cfg: Config, tz: tzinfo) -> dict[str, Any]:
    """One APScheduler trigger per scheduled job; a bad expression names its key.

    An expression is accepted as APScheduler's ``CronTrigger`` accepts it, and fired as
    :func:`next_fire` reads it (:class:`.cron_trigger.WallClockCron`: APScheduler's own
    trigger loses a day after a spring-forward DST change). A job whose schedule is
    ``"off"`` gets no trigger: the daemon neither fires it nor catches it up, and
    ``status`` says "off".
    """
    from apscheduler.triggers.cron import CronTrigger

    from ..config import ConfigError, schedule_is_off
    from .cron_trigger import WallClockCron

    triggers: dict[str, Any] = {}
    for name in SCHEDULED_JOBS:
        expr = getattr(cfg.schedule, name)
        if schedule_is_off(expr):
            continue
        fields = expr.split()
        if len(fields) != 5:
            raise ConfigError(
                f"schedule.{name}: expected 5 cron fields (minute hour day month weekday), "
                f"got {expr!r}"
            )
        try:
            CronTrigger(
                minute=fields[0],
                hour=fields[1],
                day=fields[2],
                month=fields[3],
                day_of_week=crontab_weekdays(fields[4]),
                timezone=tz,
            )
            triggers[name] = WallClockCron(parse(expr), tz, expr)
        except ValueError as exc:
            raise ConfigError(f"schedule.{name}: invalid cron expression {expr!r}: {exc}") from None
    return triggers


# Look-back windows for the latest fire time: short first, so an hourly job costs two steps.
_LOOKBACK_SECONDS = (600, 7200, 2 * 86400, 40 * 86400, 400 * 86400, 3000 * 86400)


def _local(ts: float, tz: tzinfo) -> datetime:
    """An aware local time from epoch seconds, with ``fold`` right in a repeated hour.

    All arithmetic here is on epoch seconds: adding a timedelta to an aware datetime (and
    comparing two of them) works on the wall-clock reading, which is wrong across a DST change.
    """
    return datetime.fromtimestamp(ts, tz)


def last_fire_time(trigger: Any, now: float, tz: tzinfo) -> datetime | None:
    """The latest time at or before ``now`` when ``trigger`` fires (None: never in 8 years)."""
    for window in _LOOKBACK_SECONDS:
        fire = trigger.get_next_fire_time(None, _local(now - window, tz))
        if fire is None or fire.timestamp() > now:
            continue
        while True:
            after = trigger.get_next_fire_time(fire, _local(fire.timestamp() + 1, tz))
            if after is None or after.timestamp() > now or after.timestamp() <= fire.timestamp():
                return fire
            fire = after
    return None


def next_fire_time(trigger: Any, now: float, tz: tzinfo) -> datetime | None:
    """The first fire time after ``now``."""
    return trigger.get_next_fire_time(None, _local(now + 1e-3, tz))


# --------------------------------------------------------------------------- what is due


SCHEDULED_SINCE = "schedule.since"  # meta key: when the daemon first ran on this state
OFF_UNTIL = "schedule.off_until.{job}"  # meta key: the latest time a daemon ran with it "off"


def mark_jobs_off(store: Store, jobs: Iterable[str], now: float) -> None:
    """Record that ``jobs`` were switched off until ``now``: their fires until then are not owed.

    Without it, switching a job on again (a reload, a restart) would count the fires it
    slept through as missed and run it on the spot; it waits for its next fire instead.
    """
    names = list(jobs)
    if names:
        with store.transaction():
            for name in names:
                store.set_meta(OFF_UNTIL.format(job=name), repr(now))


def switched_off(triggers: Mapping[str, Any]) -> list[str]:
    """The scheduled jobs without a trigger (``"off"``)."""
    return [name for name in SCHEDULED_JOBS if name not in triggers]


def job_is_due(store: Store, name: str, trigger: Any, now: float, tz: tzinfo) -> bool:
    """Whether ``name`` owes a run: its latest fire time's period has no recorded run yet.

    A run is recorded under the period of the fire it answers (the latest one at or before
    the moment it ran), so "no row at or after that period" means the fire was missed; a
    catch-up shortly after midnight answers yesterday's daily fire, not today's. Fires from
    before the daemon first ran on this state are not missed: installing memoryd must not
    archive notes on the spot; the first expire comes at its first fire.
    Any row counts, failed ones too: a failure is retried at the next fire, not in a loop.
    Several missed periods collapse into one run (nothing is gained by archiving the same
    files twice in a row). Fires while the job was switched off (:func:`mark_jobs_off`)
    were not missed either.
    """
    from ..jobs import period_key

    fire = last_fire_time(trigger, now, tz)
    if fire is None:
        return False
    scheduled_since = store.get_meta(SCHEDULED_SINCE)
    if scheduled_since is not None and fire.timestamp() < float(scheduled_since):
        return False  # that fire came before memoryd ever ran here: nothing was missed
    off_until = store.get_meta(OFF_UNTIL.format(job=name))
    with contextlib.suppress(ValueError, TypeError):
        if off_until is not None and fire.timestamp() <= float(off_until):
            return False  # the job was switched off then
    return not store.job_ran_since(name, period_key(name, fire.timestamp(), tz))


class FutureRecords(NamedTuple):
    """What :func:`forget_the_future` found recorded by a clock that was ahead."""

    runs: list[tuple[str, str, float]]  # (job, period, started) rows deleted
    marks: list[str]  # meta keys (first start, "off until") moved back to now

    def __bool__(self) -> bool:
        return bool(self.runs or self.marks)


def forget_the_future(store: Store, now: float, slack: float) -> FutureRecords:
    """Undo the schedule records a clock running ahead left behind (more than ``slack`` late).

    A laptop's clock can be ahead for a while: a dual-boot machine whose hardware clock keeps
    local time, a wrong manual setting, a bad NTP answer, later corrected back. A job run then
    is recorded under a period that has not come yet (organize ``T20`` at 18:00, tomorrow's
    reflect), and would make that period look done when it really comes: organize would not
    run for hours, a clock a year ahead would stop every job for a year. So the runs recorded
    later than now are deleted (the work they did stays done: moves are in the journal), and
    "first started" and "off until" marks from then are moved back to now. Called by the
    daemon at start and after a gap; a record less than ``slack`` ahead (NTP's small steps)
    is left alone.
    """
    limit = now + slack
    runs = store.runs_started_after(limit)
    marks: list[str] = []
    for key in (SCHEDULED_SINCE, *(OFF_UNTIL.format(job=name) for name in SCHEDULED_JOBS)):
        value = store.get_meta(key)
        with contextlib.suppress(ValueError, TypeError):
            if value is not None and float(value) > limit:
                marks.append(key)
    if runs or marks:
        with store.transaction():
            store.forget_runs_started_after(limit)
            for key in marks:
                store.set_meta(key, repr(now))
    return FutureRecords(runs, marks)


def due_jobs(store: Store, triggers: Mapping[str, Any], now: float, tz: tzinfo) -> list[str]:
    """The scheduled jobs whose latest period has not run yet, in schedule order."""
    return [name for name, trig in triggers.items() if job_is_due(store, name, trig, now, tz)]


class Clocks(NamedTuple):
    """One reading of the three clocks the daemon compares to notice a gap.

    ``wall``: memoryd's clock (:func:`memoryd.clock.now`, the real one in production);
    ``mono``: ``time.monotonic()``, which runs while the process runs and stops while the
    machine sleeps; ``boot``: a clock that runs on while the machine sleeps (Linux
    ``CLOCK_BOOTTIME``, macOS ``CLOCK_MONOTONIC``), None where there is none.
    """

    wall: float
    mono: float
    boot: float | None


class Gap(NamedTuple):
    """What happened between two readings that were meant to be ``expected`` seconds apart.

    ``slept``: the machine was suspended (boot clock ran, monotonic did not); ``stopped``: the
    process did not run although the machine did (SIGSTOP, a frozen VM, heavy swapping);
    ``clock_step``: the wall clock was set (+ forward, - back). Without a boot clock a sleep
    and a clock set forward look the same, and count as ``clock_step``.
    """

    kind: str  # "sleep", "suspended", "clock set forward" or "clock set back"
    seconds: float  # how far the wall clock moved beyond the expected wait (negative: back)
    slept: float
    stopped: float
    clock_step: float

    def message(self) -> str:
        """One line for the log: what happened, how long, and what the daemon does about it."""
        what = {
            "sleep": f"the machine slept {_span_text(self.slept)}",
            "suspended": f"the daemon was stopped for {_span_text(self.stopped)} "
            "(SIGSTOP, or the machine stalled)",
            "clock set forward": f"the wall clock moved {_span_text(self.clock_step)} forward "
            "(set by hand or NTP, or a sleep)",
            "clock set back": f"the wall clock was set back {_span_text(-self.clock_step)}",
        }[self.kind]
        if self.kind == "clock set back":
            return f"{what}; rescanning transcripts (no job runs twice for it)"
        return f"{what}; rescanning transcripts and running the jobs it missed"


def _span_text(seconds: float) -> str:
    """``45 s``, ``12.5 min``, ``9.0 h``, ``3.2 d``: a gap's length for a person."""
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def find_gap(prev: Clocks, cur: Clocks, expected: float, threshold: float) -> Gap | None:
    """The gap between two main-loop readings, when some part of it exceeds ``threshold``.

    ``expected``: how far apart the readings were meant to be, the loop's wait plus the time
    it spent working after the first reading (a reload waiting for the state database's lock
    is the daemon running, not stopped; on a loaded machine it can take longer than
    ``threshold``). Each clock's advance is compared with the others': monotonic time beyond
    ``expected`` is time the process did not run; boot-clock time beyond monotonic time is a sleep;
    wall time beyond boot-clock time (beyond monotonic time without a boot clock) is the
    clock being set. The largest part names the gap; None when every part is small (a
    normal tick, NTP slewing the clock by milliseconds).
    """
    d_wall, d_mono = cur.wall - prev.wall, cur.mono - prev.mono
    stopped = max(0.0, d_mono - expected)
    if cur.boot is not None and prev.boot is not None:
        d_boot = cur.boot - prev.boot
        slept = max(0.0, d_boot - d_mono)
        step = d_wall - max(d_boot, d_mono)
    else:
        slept, step = 0.0, d_wall - d_mono
    parts = {"sleep": slept, "suspended": stopped, "clock": abs(step)}
    kind = max(parts, key=lambda k: parts[k])
    if parts[kind] <= threshold:
        return None
    if kind == "clock":
        kind = "clock set forward" if step > 0 else "clock set back"
    return Gap(kind, d_wall - expected, slept, stopped, step)


def local_midnight(now: float, tz: tzinfo) -> float:
    """Start of the local day containing ``now`` (for "hits today")."""
    day = datetime.fromtimestamp(now, tz).date()
    return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()
