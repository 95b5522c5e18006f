"""A second family of generated histories, written apart from the first (issue 24).

:mod:`support.histories` ("family A") was the ground the default policy was fitted
and chosen on, so numbers measured on it are not evidence about other users. This module
("family B") draws histories from other need processes and another search model, written
without looking at anything fitted on family A, so a policy can be fitted or chosen on one
family and judged on the other:

* **bursty projects with long revivals**: a project is worked on in bursts; after a burst
  it sleeps for a heavy-tailed while (weeks to most of a year) and often comes back;
* **weekly rituals**: a note needed on one weekday (a review, a standup list), with weeks
  skipped, and a ritual that may stop for good;
* **reference notes searched by synonyms**: the agent asks for them in words the note does
  not contain (the search engine still finds it: semantic search), so only some queries
  name the note;
* **memoryless notes**: needed at random times at a constant rate, unrelated to how often
  they were hit before (nothing in the past predicts them);
* **hubs**: long index-like notes that are almost never needed but come along with many
  searches, often near the top;
* **journal days**: a dated note per workday, needed that day, at the next weekly review
  and sometimes at the month's end.

The output is the same :class:`support.histories.History` (hits with scores and
sessions, so strength can be derived; queries; the need behind each search), so the same
replay, the same ``write_history`` and the same bench read both families. Pure function
of the seed.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .histories import GenFile, GenHit, History

DAY = 86400.0

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_FILLER = ("please", "find", "where", "was", "that", "about", "the", "again", "info", "thing")


@dataclass(frozen=True)
class FamilyBParams:
    """How a family-B history looks (times in days)."""

    days: int = 420
    journal_workdays: float = 0.6  # chance a workday has a journal note
    journal_review: float = 0.5  # chance it is needed again at the next weekly review
    journal_month_end: float = 0.15  # ... and at the month's end review
    projects: int = 10
    project_bursts: tuple[int, int] = (1, 5)
    project_sleep: float = 1.3  # Pareto shape of the sleep between bursts (scale 20 days)
    rituals: int = 4
    ritual_skip: float = 0.25
    ritual_stop: float = 0.01  # chance a week is the ritual's last
    synonym_refs: int = 15
    synonym_rate: tuple[float, float] = (1 / 40, 1 / 8)  # needs a day, per note
    synonym_query: float = 0.6  # a query for it uses synonyms only
    memoryless: int = 30
    memoryless_rate: tuple[float, float] = (1 / 200, 1 / 30)
    hubs: int = 6
    scratch: int = 80  # notes used a day or two, then never
    get_share: float = 0.1
    results: tuple[int, int] = (2, 8)
    rank_decay: float = 0.65  # the needed note is first with this chance, else lower
    hub_pull: float = 0.5  # share of came-along slots a hub takes
    read_top: float = 0.6  # the agent reads the needed note when it was first
    read_lower: float = 0.35  # ... when it was lower
    read_other: float = 0.06  # a came-along note is read
    sessions_per_day: float = 3.0


def sample_params_b(rng: random.Random) -> FamilyBParams:
    """Another family-B user: every parameter drawn from its own range."""
    return FamilyBParams(
        days=rng.randint(360, 500),
        journal_workdays=rng.uniform(0.2, 0.95),
        journal_review=rng.uniform(0.2, 0.8),
        journal_month_end=rng.uniform(0.0, 0.3),
        projects=rng.randint(4, 18),
        project_bursts=(1, rng.randint(3, 8)),
        project_sleep=rng.uniform(0.8, 2.0),
        rituals=rng.randint(1, 8),
        ritual_skip=rng.uniform(0.05, 0.5),
        ritual_stop=rng.uniform(0.0, 0.03),
        synonym_refs=rng.randint(5, 30),
        synonym_rate=(rng.uniform(1 / 80, 1 / 30), rng.uniform(1 / 15, 1 / 5)),
        synonym_query=rng.uniform(0.3, 0.9),
        memoryless=rng.randint(10, 60),
        memoryless_rate=(rng.uniform(1 / 400, 1 / 150), rng.uniform(1 / 60, 1 / 20)),
        hubs=rng.randint(2, 12),
        scratch=rng.randint(30, 150),
        get_share=rng.uniform(0.02, 0.25),
        results=(rng.randint(1, 3), rng.randint(5, 10)),
        rank_decay=rng.uniform(0.4, 0.9),
        hub_pull=rng.uniform(0.2, 0.7),
        read_top=rng.uniform(0.3, 0.8),
        read_lower=rng.uniform(0.15, 0.6),
        read_other=rng.uniform(0.0, 0.12),
        sessions_per_day=rng.uniform(1.5, 5.0),
    )


def _name(rng: random.Random, used: set[str]) -> str:
    while True:
        w = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 3)))
        w += rng.choice(_CONSONANTS)
        if w not in used:
            used.add(w)
            return w


def generate_b(seed: int, params: FamilyBParams | None = None) -> History:
    """One family-B history: notes with their needs, and the hits those needs caused."""
    rng = random.Random(seed * 7919 + 17)
    p = params or FamilyBParams()
    start = datetime(2025, 2, 3, tzinfo=UTC).timestamp() + rng.randint(0, 150) * DAY
    end = start + p.days * DAY
    used: set[str] = set()
    areas = [tuple(_name(rng, used) for _ in range(8)) for _ in range(7)]
    files: list[GenFile] = []
    synonyms: dict[str, tuple[str, ...]] = {}
    names: set[str] = set()

    def note(kind: str, created: float, *, dated: bool = False, long: bool = False) -> GenFile:
        area = rng.randrange(len(areas))
        own = tuple(_name(rng, used) for _ in range(rng.randint(3, 7)))
        if dated:
            day = datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%d")
            path = f"memory/{day}.md"
            created = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
        else:
            path = f"memory/{own[0]}-{own[1]}.md"
        while path in names:
            path = path.replace(".md", "-2.md")
        names.add(path)
        pool = list(own) + list(areas[area]) * 2
        lines = [f"# {own[0]} {own[1]}", ""]
        for _ in range(rng.randint(20, 60) if long else rng.randint(2, 10)):
            lines.append(" ".join(rng.choice(pool) for _ in range(rng.randint(4, 12))))
        text = "\n".join(lines) + "\n"
        f = GenFile(path, kind, created, len(text.encode()), text, area, own)
        files.append(f)
        return f

    def at(day: float, lo: float = 7.0, hi: float = 23.0) -> float:
        return start + math.floor(day) * DAY + rng.uniform(lo, hi) * 3600

    def weekday(day: int) -> int:
        return datetime.fromtimestamp(start + day * DAY, UTC).weekday()

    # journal days: workdays, needed that day, at the Friday review, sometimes at month end
    for d in range(p.days):
        if weekday(d) < 5 and rng.random() < p.journal_workdays:
            f = note("daily", start + d * DAY + 6 * 3600, dated=True)
            f.needs += [at(d) for _ in range(rng.randint(1, 4))]
            if rng.random() < p.journal_review:
                f.needs.append(at(d + (4 - weekday(d)) % 7 + (7 if weekday(d) == 4 else 0)))
            if rng.random() < p.journal_month_end:
                dt = datetime.fromtimestamp(start + d * DAY, UTC)
                next_month = (dt.replace(day=28) + timedelta(days=4)).replace(day=1)
                month_end = next_month.timestamp() - DAY
                f.needs.append(at((month_end - start) / DAY))
    # bursty projects: bursts separated by heavy-tailed sleeps
    for _ in range(p.projects):
        c = rng.uniform(0, p.days * 0.7)
        f = note("project", start + c * DAY)
        d = c
        for _b in range(rng.randint(*p.project_bursts)):
            length = rng.uniform(3, 30)
            rate = rng.uniform(0.4, 2.5)
            for k in range(int(length)):
                for _ in range(_poisson(rng, rate)):
                    f.needs.append(at(d + k))
            d += length + min(20 * rng.paretovariate(p.project_sleep), 400)
    # weekly rituals
    for _ in range(p.rituals):
        c = rng.uniform(0, p.days * 0.5)
        f = note("ritual", start + c * DAY)
        d = int(c) + 1
        while weekday(d) != f.topic % 7:
            d += 1
        while d < p.days:
            if rng.random() >= p.ritual_skip:
                f.needs += [at(d, 8, 11) for _ in range(rng.randint(1, 2))]
            if rng.random() < p.ritual_stop:
                break
            d += 7
    # reference notes asked for in other words
    for _ in range(p.synonym_refs):
        c = rng.uniform(0, p.days * 0.5)
        f = note("synonym", start + c * DAY)
        synonyms[f.path] = tuple(_name(rng, used) for _ in range(4))
        rate = rng.uniform(*p.synonym_rate)
        d = c + rng.expovariate(rate)
        while d < p.days:
            f.needs.append(at(d))
            d += rng.expovariate(rate)
    # memoryless notes: a constant rate, whatever happened before
    for _ in range(p.memoryless):
        c = rng.uniform(-100, p.days * 0.8)
        f = note("memoryless", start + c * DAY)
        rate = math.exp(rng.uniform(math.log(p.memoryless_rate[0]), math.log(p.memoryless_rate[1])))
        d = max(c, 0) + rng.expovariate(rate)
        while d < p.days:
            f.needs.append(at(d))
            d += rng.expovariate(rate)
    # hubs: long notes, rarely needed, often in results
    hubs = []
    for _ in range(p.hubs):
        f = note("hub", start - rng.uniform(10, 200) * DAY, long=True)
        d = rng.expovariate(1 / 150)
        while d < p.days:
            f.needs.append(at(d))
            d += rng.expovariate(1 / 150)
        hubs.append(f)
    # scratch notes: a day or two
    for _ in range(p.scratch):
        c = rng.uniform(0, p.days)
        f = note("scratch", start + c * DAY)
        f.needs += [at(c + rng.choice((0, 0, 1))) for _ in range(rng.randint(1, 2))]
    for f in files:
        f.needs = sorted(t for t in f.needs if max(f.created, start) <= t < end)
    return _hits(rng, p, start, end, files, hubs, areas, synonyms)


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    limit, k, prod = math.exp(-lam), 0, rng.random()
    while prod > limit:
        k += 1
        prod *= rng.random()
    return k


def _hits(
    rng: random.Random,
    p: FamilyBParams,
    start: float,
    end: float,
    files: list[GenFile],
    hubs: list[GenFile],
    areas: list[tuple[str, ...]],
    synonyms: dict[str, tuple[str, ...]],
) -> History:
    """Every need becomes a get or a search: ranked results, reads, queries."""
    by_created = sorted(files, key=lambda f: f.created)
    created = [f.created for f in by_created]
    hits: list[GenHit] = []
    calls: list[tuple[str, float, str, str]] = []
    events = sorted((t, i) for i, f in enumerate(files) for t in f.needs)
    for n, (ts, i) in enumerate(events):
        f = files[i]
        session = f"b{int((ts - start) / DAY * p.sessions_per_day)}"
        call = f"q{n}"
        if rng.random() < p.get_share:
            hits.append(GenHit("main", call, f.path, "get", ts, None, None, session))
            continue
        k = rng.randint(*p.results)
        alive = [g for g in by_created[: bisect.bisect_right(created, ts)] if g is not f]
        near = [g for g in alive if g.topic == f.topic]
        along: list[GenFile] = []
        for _ in range(k - 1):
            live_hubs = [h for h in hubs if h.created <= ts and h is not f]
            if live_hubs and rng.random() < p.hub_pull:
                g = rng.choice(live_hubs)
            elif near and rng.random() < 0.6:
                g = rng.choice(near)
            elif alive:
                g = rng.choice(alive)
            else:
                continue
            if g not in along:
                along.append(g)
        rank = 0
        while rank < len(along) and rng.random() > p.rank_decay:
            rank += 1
        results = [*along[:rank], f, *along[rank:]]
        if f.path in synonyms and rng.random() < p.synonym_query:
            words = rng.sample(synonyms[f.path], rng.randint(1, 3))
        else:
            words = rng.sample(f.words, min(len(f.words), rng.randint(1, 2)))
            words += rng.sample(areas[f.topic], rng.randint(0, 2))
        if rng.random() < 0.5:
            words.append(rng.choice(_FILLER))
        rng.shuffle(words)
        query = " ".join(words)
        calls.append((call, ts, query, f.path))
        score = rng.uniform(0.5, 0.95)
        for g in results:
            hits.append(GenHit("main", call, g.path, "search", ts, query, round(score, 4), session))
            score -= rng.uniform(0.005, 0.08)
        if rng.random() < (p.read_top if rank == 0 else p.read_lower):
            hits.append(GenHit("main", f"{call}r", f.path, "get", ts + 20, None, None, session))
        for g in along:
            if rng.random() < p.read_other:
                hits.append(
                    GenHit("main", f"{call}o{g.path}", g.path, "get", ts + 30, None, None, session)
                )
    seen: set[tuple[str, str]] = set()
    unique = []
    for h in hits:
        if (h.call_id, h.path) not in seen:
            seen.add((h.call_id, h.path))
            unique.append(h)
    unique.sort(key=lambda h: (h.ts, h.call_id, h.path))
    return History(start, end, p, files, unique, calls)  # type: ignore[arg-type]
