"""Generated year-long memory histories with a known *need* behind every search.

Hits cannot tell a note the agent needed from one that merely came along with a
search; a generator can. Each note here has a life (a daily note that fades and
sometimes comes back for a follow-up, a reference note needed every few weeks,
a monthly and a seasonal note, a project that burns, dies and sometimes
revives, a one-off), and every moment it is needed becomes one of:

* a ``memory_get`` of it (the agent knew where to look), or
* a ``memory_search`` whose query is written from the note's own words: the
  results are the needed note plus notes that merely come along (mostly from
  the same topic), ranked with noise both ways (the needed note is not always
  first, a note that came along sometimes is), and the agent then reads the
  needed note with some probability (a came-along one rarely).

:func:`sample_params` draws the generator's parameters too, so policies are
judged on histories unlike the ones they were chosen on. Everything is a pure
function of the seed (``random.Random``), never of the clock.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memoryd.policy import harm as hm
    from memoryd.policy import replay as rp

DAY = 86400.0

_SYLLABLES = (
    "ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "da", "pe", "gu", "ri", "zo", "fa",
    "be", "no", "tu", "la", "xi", "mo", "ha", "ke", "yu", "wi",
)  # fmt: skip
_COMMON = ("notes", "todo", "meeting", "update", "plan", "list", "call", "ideas", "status")


@dataclass(frozen=True)
class GenParams:
    """How a generated history looks (counts are for a year; times in days)."""

    days: int = 400
    daily_per_day: float = 0.5  # a daily note on about half the days
    daily_fade_needs: float = 1.5  # needs after the first days, fading (mean)
    daily_follow_up: float = 0.15  # chance of a follow-up weeks later
    references: int = 25
    reference_gap: tuple[float, float] = (8.0, 50.0)  # each note's mean gap, drawn in here
    monthly: int = 5
    monthly_skip: float = 0.15  # chance a month passes without the note
    seasonal: int = 5
    projects: int = 14
    project_burn: tuple[float, float] = (15.0, 80.0)
    project_rate: tuple[float, float] = (0.3, 1.5)  # needs a day while burning
    project_revive: float = 0.3
    one_offs: int = 110
    get_share: float = 0.15  # needs served by a direct memory_get
    results: tuple[int, int] = (1, 6)  # results of a search
    first_share: float = 0.7  # the needed note is the first result
    read_share: float = 0.45  # the agent then reads the needed note
    read_along: float = 0.04  # ... or reads a note that came along
    same_topic: float = 0.7  # a came-along note is from the needed note's topic
    along_spread: float = 1.5  # log-normal sigma of how readily a note comes along
    sessions_per_day: float = 2.0


def sample_params(rng: random.Random) -> GenParams:
    """A different, still plausible, kind of user: every parameter drawn from a range."""
    lo = rng.uniform(6, 15)
    return GenParams(
        days=rng.randint(330, 480),
        daily_per_day=rng.uniform(0.2, 0.9),
        daily_fade_needs=rng.uniform(0.5, 3.0),
        daily_follow_up=rng.uniform(0.05, 0.3),
        references=rng.randint(10, 45),
        reference_gap=(lo, rng.uniform(30, 70)),
        monthly=rng.randint(2, 9),
        monthly_skip=rng.uniform(0.0, 0.3),
        seasonal=rng.randint(2, 8),
        projects=rng.randint(6, 25),
        project_burn=(rng.uniform(7, 20), rng.uniform(40, 120)),
        project_rate=(rng.uniform(0.2, 0.5), rng.uniform(0.8, 2.5)),
        project_revive=rng.uniform(0.1, 0.5),
        one_offs=rng.randint(40, 180),
        get_share=rng.uniform(0.05, 0.3),
        results=(rng.randint(1, 3), rng.randint(4, 6)),
        first_share=rng.uniform(0.5, 0.9),
        read_share=rng.uniform(0.2, 0.7),
        read_along=rng.uniform(0.0, 0.1),
        same_topic=rng.uniform(0.4, 0.9),
        along_spread=rng.uniform(0.8, 2.2),
        sessions_per_day=rng.uniform(1.0, 4.0),
    )


@dataclass
class GenFile:
    path: str
    kind: str  # daily | reference | monthly | seasonal | project | one-off
    created: float
    size: int
    text: str
    topic: int
    words: tuple[str, ...]  # the note's own words (queries are written from them)
    needs: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class GenHit:
    """A row of the ``hits`` table."""

    agent: str
    call_id: str
    path: str
    kind: str  # search | get
    ts: float
    query: str | None
    score: float | None
    session: str


@dataclass
class History:
    start: float
    end: float
    params: GenParams
    files: list[GenFile]
    hits: list[GenHit]
    calls: list[tuple[str, float, str, str]]  # (call_id, ts, query, needed path)

    @property
    def needs(self) -> dict[str, list[float]]:
        return {f.path: sorted(f.needs) for f in self.files if f.needs}


def _word(rng: random.Random, used: set[str]) -> str:
    while True:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if w not in used:
            used.add(w)
            return w


def generate(seed: int, params: GenParams | None = None) -> History:
    """One history: notes with their needs, and the hits those needs caused."""
    rng = random.Random(seed)
    p = params or GenParams()
    start = datetime(2025, 1, 6, tzinfo=UTC).timestamp() + rng.randint(0, 200) * DAY
    end = start + p.days * DAY
    used: set[str] = set()
    topics = [tuple(_word(rng, used) for _ in range(6)) for _ in range(10)]
    files: list[GenFile] = []
    names: set[str] = set()

    def new(kind: str, created: float, dated: bool = False) -> GenFile:
        topic = rng.randrange(len(topics))
        own = tuple(_word(rng, used) for _ in range(rng.randint(4, 8)))
        if dated:
            day = datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%d")
            path = f"memory/{day}.md"
            created = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
        else:
            path = f"memory/{kind}-{own[0]}.md"
        if path in names:
            path = path.replace(".md", f"-{own[1]}.md")
        names.add(path)
        body = [f"# {' '.join(own[:2])}", ""]
        pool = list(own) + list(topics[topic]) + list(_COMMON)
        for _ in range(rng.randint(3, 12)):
            body.append(" ".join(rng.choice(pool) for _ in range(rng.randint(5, 14))) + ".")
        if rng.random() < 0.3:
            body.append(f"tags: {topics[topic][0]}, {own[0]}")
        text = "\n".join(body) + "\n"
        f = GenFile(path, kind, created, len(text.encode()), text, topic, own)
        files.append(f)
        return f

    def at(day: float) -> float:
        """A time on ``day`` (days from start) during waking hours."""
        return start + math.floor(day) * DAY + rng.uniform(8, 22) * 3600

    # daily notes: needed on their day, fading after, sometimes a follow-up
    for d in range(p.days):
        if rng.random() < p.daily_per_day:
            f = new("daily", start + d * DAY + 7 * 3600, dated=True)
            f.needs += [at(d) for _ in range(rng.randint(1, 3))]
            for _ in range(_poisson(rng, p.daily_fade_needs)):
                f.needs.append(at(d + rng.expovariate(1 / 6)))
            if rng.random() < p.daily_follow_up:
                back = d + rng.uniform(20, 150)
                f.needs += [at(back) for _ in range(rng.randint(1, 2))]
    # reference notes: each with its own mean gap, irregular
    for _ in range(p.references):
        c = rng.uniform(0, p.days * 0.6)
        f = new("reference", start + c * DAY)
        mean = rng.uniform(*p.reference_gap)
        d = c + rng.uniform(0, 3)
        while d < p.days:
            f.needs.append(at(d))
            d += max(1.0, rng.gammavariate(3.0, mean / 3.0))
    # monthly notes: the first days of each month
    for _ in range(p.monthly):
        c = rng.uniform(0, p.days * 0.3)
        f = new("monthly", start + c * DAY)
        first = datetime.fromtimestamp(f.created, UTC).replace(day=1)
        while (t := first.timestamp()) < end:
            if t > f.created and rng.random() >= p.monthly_skip:
                day = (t - start) / DAY + rng.choice((0, 0, 1, 2, 3))
                f.needs += [at(day) for _ in range(rng.randint(1, 3))]
            first = (first + timedelta(days=32)).replace(day=1)
    # seasonal notes: a few weeks once a year (the same weeks each year)
    for _ in range(p.seasonal):
        f = new("seasonal", start - rng.uniform(30, 300) * DAY)
        season = rng.uniform(0, 365)
        for year in range(-1, 3):
            s0 = season + 365 * year
            for _ in range(rng.randint(2, 6)):
                d = s0 + rng.uniform(0, 21)
                if 0 <= d < p.days:
                    f.needs.append(at(d))
    # projects: burn, die, sometimes revive
    for _ in range(p.projects):
        c = rng.uniform(0, p.days * 0.8)
        f = new("project", start + c * DAY)
        burn, rate = rng.uniform(*p.project_burn), rng.uniform(*p.project_rate)
        for d in range(int(burn)):
            for _ in range(_poisson(rng, rate * (1 - 0.5 * d / burn))):
                f.needs.append(at(c + d))
        if rng.random() < p.project_revive:
            r = c + burn + rng.uniform(45, 200)
            for d in range(int(rng.uniform(4, 20))):
                for _ in range(_poisson(rng, rate * 0.7)):
                    f.needs.append(at(r + d))
    # one-offs: a day or two of use
    for _ in range(p.one_offs):
        c = rng.uniform(0, p.days)
        f = new("one-off", start + c * DAY)
        f.needs += [at(c + rng.choice((0, 0, 0, 1, 2))) for _ in range(rng.randint(1, 3))]
    for f in files:
        f.needs = sorted(t for t in f.needs if max(f.created, start) <= t < end)
    return _searches(rng, p, start, end, files, topics)


def _poisson(rng: random.Random, lam: float) -> int:
    n, t = 0, rng.expovariate(1.0) if lam > 0 else math.inf
    while t < lam:
        n += 1
        t += rng.expovariate(1.0)
    return n


def _searches(
    rng: random.Random,
    p: GenParams,
    start: float,
    end: float,
    files: list[GenFile],
    topics: list[tuple[str, ...]],
) -> History:
    """Turn every need into hits: a get, or a search with notes that come along."""
    by_created = sorted(files, key=lambda f: f.created)
    created = [f.created for f in by_created]
    by_topic: dict[int, list[GenFile]] = {}
    for f in files:
        by_topic.setdefault(f.topic, []).append(f)
    hits: list[GenHit] = []
    calls: list[tuple[str, float, str, str]] = []
    events = sorted((t, f.path, i) for i, f in enumerate(files) for t in f.needs)
    # How readily a note comes along with searches for others: a few notes (long,
    # generic) come along with many searches, most with few.
    pull = {id(f): rng.lognormvariate(0.0, p.along_spread) for f in files}
    n = 0
    import bisect

    for ts, _path, i in events:
        f = files[i]
        n += 1
        session = f"s{int((ts - start) / DAY * p.sessions_per_day)}"
        if rng.random() < p.get_share:
            hits.append(GenHit("main", f"c{n}", f.path, "get", ts, None, None, session))
            continue
        k = rng.randint(*p.results)
        existing = by_created[: bisect.bisect_right(created, ts)]
        along: list[GenFile] = []
        same = [g for g in by_topic[f.topic] if g.created <= ts and g is not f]
        for _ in range(k - 1):
            pool = same if same and rng.random() < p.same_topic else existing
            g = rng.choices(pool, [pull[id(x)] for x in pool])[0]
            if g is not f and g not in along:
                along.append(g)
        results = [f, *along]
        if along and rng.random() >= p.first_share:
            results.insert(rng.randint(1, len(along)), results.pop(0))
        words = list(rng.sample(f.words, min(len(f.words), rng.randint(1, 3))))
        if rng.random() < 0.4:
            words.append(rng.choice(topics[f.topic]))
        if rng.random() < 0.25:
            words.append(rng.choice((*_COMMON, "maybe", "again", "latest")))
        rng.shuffle(words)
        query = " ".join(words)
        call = f"c{n}"
        calls.append((call, ts, query, f.path))
        score = rng.uniform(0.6, 0.9)
        for g in results:
            hits.append(GenHit("main", call, g.path, "search", ts, query, round(score, 4), session))
            score -= rng.uniform(0.01, 0.1)
        if rng.random() < p.read_share:
            hits.append(GenHit("main", f"r{n}", f.path, "get", ts + 5, None, None, session))
        for g in along:
            if rng.random() < p.read_along:
                hits.append(GenHit("main", f"ra{n}{g.path}", g.path, "get", ts + 6, None, None,
                                   session))  # fmt: skip
    # one hit per (call, file), as the hits table keeps them
    seen: set[tuple[str, str]] = set()
    unique = []
    for h in hits:
        if (h.call_id, h.path) not in seen:
            seen.add((h.call_id, h.path))
            unique.append(h)
    unique.sort(key=lambda h: (h.ts, h.call_id, h.path))
    return History(start, end, p, files, unique, calls)


def with_params(base: GenParams, **changes: object) -> GenParams:
    return replace(base, **changes)  # type: ignore[arg-type]


def monthly_fire_times(start: float, end: float, hour: int = 4) -> list[float]:
    """The default expire cron (``0 4 1 * *``) in UTC between ``start`` and ``end``."""
    out = []
    d = datetime.fromtimestamp(start, UTC).replace(day=1, hour=hour, minute=0, second=0,
                                                   microsecond=0)  # fmt: skip
    while d.timestamp() <= end:
        if d.timestamp() >= start:
            out.append(d.timestamp())
        d = (d + timedelta(days=32)).replace(day=1)
    return out


def replay_inputs(h: History, horizon_days: float = 60) -> dict[str, object]:
    """The history as :func:`memoryd.policy.replay.replay` takes it (hits with strength)."""
    from memoryd.policy.replay import Call, ReplayFile, ReplayHit, run_times
    from memoryd.strength import HitRow, hit_strengths

    rows = [HitRow(x.agent, x.call_id, x.path, x.kind, x.ts, x.score, x.session) for x in h.hits]
    strengths = hit_strengths(rows)
    hits = [
        ReplayHit(r.path, r.ts, r.kind, s.rank, s.read_at if r.kind == "search" else None)
        for r, s in zip(rows, strengths, strict=True)
    ]
    files = [
        ReplayFile(f.path, f.created, f.size, False, "daily" if f.kind == "daily" else "topic")
        for f in h.files
    ]
    first = min((x.ts for x in h.hits), default=None)
    runs = run_times(monthly_fire_times(h.start, h.end), first, h.end, horizon_days)
    calls = [Call(ts, q, needed) for _, ts, q, needed in h.calls]
    texts = {f.path: f.text for f in h.files}
    return {"files": files, "hits": hits, "runs": runs, "needs": h.needs, "calls": calls,
            "texts": texts}  # fmt: skip


def write_history(h: History, workspace: object, db: object, upto: float | None = None) -> None:
    """Put the history on disk as memoryd would find it: the notes in the workspace (mtime
    = created), its hits and calls in the state database (only those at or before ``upto``)."""
    import os
    from pathlib import Path

    from memoryd.store import Store

    ws = Path(str(workspace))
    for f in h.files:
        p = ws / f.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f.text, encoding="utf-8")
        os.utime(p, (f.created, f.created))
    limit = h.end if upto is None else upto
    with Store.open(Path(str(db))) as store, store.transaction():
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query, score, session) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (x.agent, x.call_id, x.path, x.kind, x.ts, x.query, x.score, x.session)
                for x in h.hits
                if x.ts <= limit
            ],
        )
        calls: dict[str, tuple[str, str, float, str | None, str]] = {}
        for x in h.hits:
            if x.ts <= limit and x.call_id not in calls:
                tool = "memory_search" if x.kind == "search" else "memory_get"
                calls[x.call_id] = (x.agent, x.call_id, x.ts, x.query, tool)
        store.conn.executemany(
            "INSERT INTO calls(agent, call_id, ts, query, tool, answered) "
            "VALUES (?, ?, ?, ?, ?, 1)",
            list(calls.values()),
        )


def generated_need_events(
    needs: Mapping[str, Sequence[float]],
    calls: Sequence[rp.Call],
    hits: Iterable[rp.ReplayHit],
) -> list[hm.NeedEvent]:
    """The need events of a generated history (for :func:`memoryd.policy.harm.harm`): each
    need is a search written for it (a call whose ``needed`` is the note, at that time), a
    ``memory_get`` of the note at that time, or neither (``other``). A search *found* the
    note when its results in the history hold it (the generators rank every note a query
    reaches, archived or not: an index that holds the note)."""
    from memoryd.policy import harm as hm

    searches = {(c.needed, c.ts): i for i, c in enumerate(calls) if c.needed is not None}
    gets: dict[str, set[float]] = {}
    returned: set[tuple[str, float]] = set()
    for h in hits:
        if h.kind == "get":
            gets.setdefault(h.path, set()).add(h.ts)
        elif h.kind == "search":
            returned.add((h.path, h.ts))
    out = []
    for path, times in needs.items():
        for ts in times:
            i = searches.get((path, ts))
            if i is not None:
                out.append(hm.NeedEvent(path, ts, hm.SEARCH, i, (path, ts) in returned))
            elif ts in gets.get(path, ()):
                out.append(hm.NeedEvent(path, ts, hm.READ))
            else:
                out.append(hm.NeedEvent(path, ts, hm.OTHER, found=False))
    out.sort(key=lambda e: (e.ts, e.path))
    return out
