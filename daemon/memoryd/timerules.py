"""The rules of time every layer reads alike: cron expressions, their next fire, time zones,
a schedule switched "off", and the period a job's run belongs to.

A leaf: it imports nothing of memoryd and raises plain :class:`ValueError`s, which the
configuration turns into messages naming the key. Everything that reads schedules, zones and
periods reads them here, so they agree without importing the daemon or APScheduler.

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

``tests/service/test_cron.py`` checks :func:`next_fire` against APScheduler's
``CronTrigger``; the daemon fires by it too, so ``status`` shows what it fires.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import NamedTuple

# The jobs the daemon fires on a schedule (``[schedule]`` keys), in schedule order.
SCHEDULED_JOBS = ("organize", "reflect", "expire")

SCHEDULE_OFF = "off"  # a job's schedule that switches it off


def schedule_is_off(expr: str) -> bool:
    return expr.strip().lower() == SCHEDULE_OFF


# crontab weekday numbers 0..7 → names (0 and 7 are Sunday), see crontab_weekdays.
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


# --------------------------------------------------------------------------- zones


def zone_named(name: str) -> tzinfo:
    """The time zone ``name`` names (``""`` = the local one); ValueError when there is none.

    The one resolution of the zone (through :func:`memoryd.config.schedule_timezone`).
    """
    if not name:
        return local_zone()
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r} "
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
    import calendar  # (only ``status`` and the daemon read fire times)

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


# --------------------------------------------------------------------------- periods


def period_key(name: str, now: float, tz: tzinfo) -> str:
    """The period a run of job ``name`` at ``now`` belongs to.

    reflect and promote are daily, expire monthly: their keys are wall-clock labels in the
    configured time zone, so a DST change never makes two days out of one. organize is
    hourly, and its key is the UTC hour (``2026-11-30T18Z``): an hour is an hour in any zone,
    and a laptop flown west must not find its local hours "already done" under the labels of
    the zone it left (the daemon follows the system's zone, and periods are compared in order).
    """
    if name == "organize":
        return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%HZ")
    local = datetime.fromtimestamp(now, tz)
    if name == "expire":
        return local.strftime("%Y-%m")
    return local.strftime("%Y-%m-%d")


def local_midnight(now: float, tz: tzinfo) -> float:
    """Start of the local day containing ``now`` (for "hits today")."""
    day = datetime.fromtimestamp(now, tz).date()
    return datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()
