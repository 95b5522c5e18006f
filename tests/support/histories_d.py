"""A fourth family of generated histories ("family D"), written apart from families A, B and C.

Families A (:mod:`support.histories`), B (:mod:`support.histories_b`) and C
(:mod:`support.histories_c`) were the ground the default policy was developed on. This
family is sealed held-out evidence: it was written without reading their generators, the
policies or anything fitted on them (only the shared ``GenFile``/``GenHit``/``History`` types
and the replay helpers), and no policy was run on it while it was written.

The picture: one person's agent ("main") over an academic year, starting in late summer: a
student who also does research in a lab and runs a household and a few hobbies. The truth
(every moment a note is needed) comes from these processes:

* **terms and exam crunches**: each term has courses; a lecture note is written each week,
  needed right after the lecture and for that week's homework, hardly during the term, then
  intensely in the fortnight before the course's exam (late at night, more so near the
  exam), then not at all over the break; a course that is a prerequisite of one next term
  has its notes needed again in the first weeks of that term. A syllabus note per course;
* **spaced repetition**: flashcard decks whose cards are reviewed at growing intervals (1 day,
  then about ``sr_growth`` times longer each time, back to one day when a card is failed),
  all due cards of a deck in one sitting; some decks are abandoned for good;
* **habits formed and dropped**: a habit note needed almost daily for a few weeks, then not
  at all, sometimes resumed months later for a shorter run;
* **superseded versions**: a document (thesis chapter, CV, grant) is rewritten as v1, v2,
  v3...; the current version is needed while the document is worked on; a superseded one
  almost never (a look back at what was cut), yet it shares most words with its successor
  and so keeps coming along with the searches for it;
* **index notes followed by links**: a few MEMORY.md-like index notes (one per part of life)
  are read by path for themselves (at the start of a session) and on the way to a note they
  link: a share of the needs of a linked note (each from that note's own process) is met by
  reading the index, then the note, both by path; being long and made of their notes' titles
  the index notes also come along with many searches;
* **seasonal hobbies**: each hobby has a season (a bump around a day of the year); its notes
  are needed only in season, favourites more, and again a year later if the span reaches it;
* **a household**: recipes cooked on a weekly rotation that slowly changes (a clipped recipe
  to try joins, a favourite is dropped and then almost never needed); notes on how to fix
  things, needed in a burst when the thing breaks again (months apart, memoryless); trips
  whose notes are needed more and more as the departure nears, daily on the trip, once after;
  a packing list reused before every trip;
* **a lab notebook**: a daily note ``memory/YYYY-MM-DD.md`` on most workdays (more in the
  summer and breaks than in term), needed that day and maybe the next morning; when a report
  is written up, the dailies of an experiment weeks earlier are all read again;
* **an inbox**: quick captures processed in the next days, rarely recalled once later.

Searches: a query is one to four words drawn from the needed note (its own words, its topic's
words, a synonym the note lacks that the engine understands only in some queries, or a word
so general that many notes have it); every note the query reaches is scored by the idf share
of the query it holds, plus a fixed per-note pull (longer notes and some embeddings are
"hubby") and noise; the best few are returned, so the needed note is usually there but not
always first, and sometimes missing (then the agent may open it by path a little later).
After a search the agent often reads the needed note in the same session and now and then a
note that came along. Gets have no query and no score.

How it differs from A, B and C (as their docstrings describe them): its need truth comes from
an academic calendar (lectures, exam crunches, breaks, carry-over to the next term), review
schedules with growing intervals, habit streaks, version supersession, index-then-link reads,
seasonal bumps and a changing weekly rotation, none of which are note lives, project bursts,
weekly rituals, constant rates, deadlines, meeting rates, incident clusters or a drifting
popularity law; there is one agent, whose index reads are needs in their own right and lead
to the note read next; and superseded notes are a large population that comes along but is
not needed. Pure function of the seed (``random.Random``), never of the clock.
"""

from __future__ import annotations

import bisect
import math
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .histories import GenFile, GenHit, History

DAY = 86400.0
HOUR = 3600.0

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "sh", "tr",
           "pl", "gr")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "", "n", "r", "l", "s", "m")


@dataclass(frozen=True)
class FamilyDParams:
    span_days: int = 365
    tz_hours: float = 1.0  # the person's offset from UTC (hours of day are local)
    # terms and exams
    courses_per_term: int = 4
    lectures: int = 12
    exam_intensity: float = 1.0  # scales the needs of a lecture note in its exam crunch
    carry_over: float = 0.25  # chance a course's notes are needed again next term
    # spaced repetition
    decks: int = 3
    cards_per_deck: int = 14
    sr_growth: float = 2.6
    sr_fail: float = 0.12
    sr_quit: float = 0.3
    # habits
    habits: int = 6
    habit_days: float = 21.0
    habit_resume: float = 0.35
    # superseded versions
    documents: int = 4
    draft_rate: float = 0.35  # needs a workday of the current version of an active document
    old_version_rate: float = 0.004  # needs a day of a superseded version
    # index notes
    indexes: int = 3
    index_reads: float = 0.8  # a day, read for themselves (at the start of a session)
    via_index: float = 0.25  # share of a linked note's needs met by reading the index first
    # hobbies
    hobbies: int = 3
    hobby_notes: int = 8
    hobby_rate: float = 0.5  # needs a day at the season's peak
    # household
    recipes: int = 40
    rotation: int = 10
    meals_per_week: float = 4.0
    churn: float = 0.08  # chance a week that the rotation changes
    fixes: int = 18
    break_days: float = 150.0  # mean days between two breakdowns of one thing
    trips: int = 4
    # lab notebook and inbox
    lab_days: float = 0.6  # share of workdays with a daily note
    writeups: int = 3
    inbox: int = 50
    # searching and reading
    get_share: float = 0.3
    results: int = 5
    noise: float = 0.07
    synonym: float = 0.2
    understand: float = 0.6
    general: float = 0.1
    read_share: float = 0.55
    read_along: float = 0.05
    fallback_get: float = 0.35  # the needed note was not found: opened by path anyway
    session_gap_min: float = 35.0


def sample_params_d(rng: random.Random) -> FamilyDParams:
    """Another kind of user: every parameter drawn from a plausible range."""
    return FamilyDParams(
        span_days=rng.randint(330, 480),
        tz_hours=float(rng.randint(-8, 9)),
        courses_per_term=rng.randint(2, 5),
        lectures=rng.randint(8, 14),
        exam_intensity=rng.uniform(0.4, 2.0),
        carry_over=rng.uniform(0.05, 0.5),
        decks=rng.randint(1, 6),
        cards_per_deck=rng.randint(5, 25),
        sr_growth=rng.uniform(1.8, 3.5),
        sr_fail=rng.uniform(0.03, 0.25),
        sr_quit=rng.uniform(0.0, 0.6),
        habits=rng.randint(2, 12),
        habit_days=rng.uniform(10, 40),
        habit_resume=rng.uniform(0.1, 0.6),
        documents=rng.randint(1, 8),
        draft_rate=rng.uniform(0.15, 0.7),
        old_version_rate=rng.uniform(0.0005, 0.015),
        indexes=rng.randint(1, 4),
        index_reads=rng.uniform(0.2, 3.0),
        via_index=rng.uniform(0.05, 0.5),
        hobbies=rng.randint(1, 5),
        hobby_notes=rng.randint(4, 15),
        hobby_rate=rng.uniform(0.15, 1.2),
        recipes=rng.randint(10, 60),
        rotation=rng.randint(5, 16),
        meals_per_week=rng.uniform(1.5, 7.0),
        churn=rng.uniform(0.02, 0.2),
        fixes=rng.randint(5, 35),
        break_days=rng.uniform(60, 400),
        trips=rng.randint(1, 8),
        lab_days=rng.uniform(0.2, 0.9),
        writeups=rng.randint(0, 5),
        inbox=rng.randint(10, 70),
        get_share=rng.uniform(0.1, 0.55),
        results=rng.randint(3, 9),
        noise=rng.uniform(0.03, 0.14),
        synonym=rng.uniform(0.05, 0.4),
        understand=rng.uniform(0.3, 0.9),
        general=rng.uniform(0.0, 0.25),
        read_share=rng.uniform(0.3, 0.85),
        read_along=rng.uniform(0.0, 0.12),
        fallback_get=rng.uniform(0.1, 0.6),
        session_gap_min=rng.uniform(15, 60),
    )


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


@dataclass(eq=False)
class _Note:
    path: str
    kind: str
    topic: int
    created: float
    words: list[str]  # its own words
    title: str
    domain: str  # the index that links it ("" for none)
    lines: list[str]
    needs: list[float]
    pull: float = 0.0
    mentions: list[str] | None = None


class _Gen:
    def __init__(self, seed: int, p: FamilyDParams) -> None:
        self.rng = random.Random(seed)
        self.p = p
        rng = self.rng
        first = datetime(2024, 8, 1, tzinfo=UTC) + timedelta(days=rng.randint(0, 40))
        self.first_date = first.date()
        # local midnight of day 0, in UTC
        self.t0 = first.timestamp() - p.tz_hours * HOUR
        self.span = p.span_days
        self.end = self.t0 + self.span * DAY
        self.used: set[str] = set()
        self.notes: list[_Note] = []
        self.by_path: dict[str, _Note] = {}
        self.topics: list[list[str]] = []
        self.general = [self.word() for _ in range(8)]
        self.synonyms: dict[str, str] = {}  # synonym -> the note word it stands for
        self.forced_get: set[tuple[str, float]] = set()

    # -- words and notes ------------------------------------------------------------------

    def word(self) -> str:
        rng = self.rng
        while True:
            w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 3)))
            w += rng.choice(_CODAS)
            if w not in self.used and len(w) >= 4:
                self.used.add(w)
                return w

    def topic(self) -> int:
        self.topics.append([self.word() for _ in range(self.rng.randint(5, 9))])
        return len(self.topics) - 1

    def note(self, path: str, kind: str, topic: int, created: float, domain: str = "",
             title: str = "", n_words: int = 0) -> _Note:  # fmt: skip
        rng = self.rng
        words = [self.word() for _ in range(n_words or rng.randint(3, 5))]
        for w in words:
            if rng.random() < 0.5:
                self.synonyms[self.word()] = w
        n = _Note(path, kind, topic, max(self.t0, created), words,
                  title or " ".join(w.capitalize() for w in words[:2]), domain, [], [])  # fmt: skip
        self.notes.append(n)
        self.by_path[path] = n
        return n

    def slug(self, folder: str) -> str:
        while True:
            path = f"memory/{folder}/{self.word()}.md" if folder else f"memory/{self.word()}.md"
            if path not in self.by_path:
                return path

    def at(self, day: float, lo: float, hi: float) -> float:
        """A moment on local ``day`` between hours ``lo`` and ``hi`` (hi may pass midnight)."""
        return self.t0 + math.floor(day) * DAY + self.rng.uniform(lo, hi) * HOUR

    def weekday(self, day: int) -> int:
        return (self.first_date.weekday() + day) % 7

    def need(self, n: _Note, t: float, get: bool = False) -> None:
        if n.created <= t < self.end - 600:
            n.needs.append(t)
            if get:
                self.forced_get.add((n.path, t))

    # -- processes ------------------------------------------------------------------------

    def terms(self) -> list[tuple[int, int, int]]:
        """(first day, last teaching day, end of exams) of each term in the span."""
        rng, out = self.rng, []
        start = rng.randint(10, 24)
        spring = True
        while start < self.span - 14:
            teach_end = start + 98
            out.append((start, teach_end, teach_end + 14))
            start = teach_end + 14 + (rng.randint(20, 35) if spring else rng.randint(95, 120))
            spring = not spring
        return out

    def academic(self, terms: list[tuple[int, int, int]]) -> None:
        rng, p = self.rng, self.p
        prerequisites: list[tuple[list[_Note], int]] = []  # (notes, term index they return in)
        for ti, (start, teach_end, _) in enumerate(terms):
            for _ in range(p.courses_per_term):
                topic = self.topic()
                code = self.word()
                wd = rng.randint(0, 4)
                exam = teach_end + rng.randint(2, 13)
                syl = self.note(f"memory/courses/{code}/syllabus.md", "syllabus", topic,
                                self.at(start - rng.randint(0, 3), 9, 20), "study",
                                f"{code.capitalize()} syllabus")  # fmt: skip
                syl.lines.append(f"exam: {(self.first_date + timedelta(days=exam)).isoformat()}")
                for d in range(start, exam + 1):
                    rate = 0.4 if d < start + 14 else 0.07 if d < exam - 14 else 0.5
                    if rng.random() < rate:
                        self.need(syl, self.at(d, 9, 23))
                weight = rng.lognormvariate(0, 0.4)
                notes = [syl]
                lecture_day = start + (wd - self.weekday(start)) % 7
                for k in range(min(p.lectures, 14)):
                    day = lecture_day + 7 * k
                    if day >= self.span:
                        break
                    n = self.note(f"memory/courses/{code}/lecture-{k + 1:02d}.md", "lecture",
                                  topic, self.at(day, 9, 17), "study",
                                  f"{code.capitalize()} lecture {k + 1}")  # fmt: skip
                    notes.append(n)
                    if rng.random() < 0.8:
                        self.need(n, n.created + rng.uniform(0.3, 3) * HOUR)
                    for _ in range(_poisson(rng, 1.2)):
                        self.need(n, self.at(day + rng.randint(1, 6), 14, 24))
                    quiet = range(day + 7, exam - 14)
                    for _ in range(_poisson(rng, 0.012 * len(quiet))):
                        self.need(n, self.at(rng.choice(quiet), 10, 23))
                    for _ in range(_poisson(rng, p.exam_intensity * 3.5 * weight)):
                        before = math.ceil(14 * rng.random() ** 1.6)
                        self.need(n, self.at(exam - before, 13, 26))
                if rng.random() < p.carry_over and ti + 1 < len(terms):
                    prerequisites.append((notes, ti + 1))
        for notes, ti in prerequisites:
            start = terms[ti][0]
            for n in notes:
                if n.kind == "syllabus" or rng.random() < 0.45:
                    for _ in range(1 + _poisson(rng, 0.8)):
                        self.need(n, self.at(start + rng.randint(0, 35), 10, 24))

    def spaced_repetition(self) -> None:
        rng, p = self.rng, self.p
        for _ in range(p.decks):
            topic = self.topic()
            deck = self.word()
            start = rng.randint(0, int(self.span * 0.7))
            quit_day = start + rng.randint(30, 200) if rng.random() < p.sr_quit else self.span
            hour = rng.uniform(7, 22)
            sittings: dict[int, float] = {}  # day -> the sitting's start
            for _ in range(p.cards_per_deck):
                day = start + rng.randint(0, 40)
                if day >= self.span:
                    continue
                card = self.note(f"memory/cards/{deck}/{self.word()}.md", "card", topic,
                                 self.at(day, hour - 0.5, hour - 0.1), "research")  # fmt: skip
                interval = 1.0
                while True:
                    t = sittings.setdefault(day, self.at(day, hour, hour + 0.01))
                    self.need(card, t + rng.uniform(0, 1200))
                    if rng.random() < p.sr_fail:
                        interval = 1.0
                    else:
                        interval *= p.sr_growth * rng.lognormvariate(0, 0.2)
                    day += max(1, round(interval))
                    if day >= min(quit_day, self.span):
                        break

    def habits(self) -> None:
        rng, p = self.rng, self.p
        topics = [self.topic(), self.topic()]
        for _ in range(p.habits):
            day = rng.randint(0, self.span - 20)
            morning = rng.random() < 0.5
            lo, hi = (6.5, 9) if morning else (20, 23.5)
            n = self.note(self.slug("habits"), "habit", rng.choice(topics),
                          self.at(day, lo - 0.5, lo - 0.1))  # fmt: skip
            length = max(5.0, rng.lognormvariate(math.log(p.habit_days), 0.4))
            while day < self.span:
                for d in range(day, min(self.span, day + round(length))):
                    if rng.random() < 0.85:
                        self.need(n, self.at(d, lo, hi))
                if rng.random() >= p.habit_resume:
                    break
                day += round(length) + 20 + round(rng.expovariate(1 / 80))
                length = max(4.0, length * rng.uniform(0.4, 0.9))

    def documents(self) -> None:
        rng, p = self.rng, self.p
        for _ in range(p.documents):
            topic = self.topic()
            name = self.word()
            begin = rng.randint(0, max(1, self.span - 60))
            length = rng.randint(60, 250)
            stop = min(self.span, begin + length)
            versions = rng.randint(2, 4)
            cuts = sorted(rng.sample(range(begin + 10, max(begin + 11, stop - 5)),
                                     min(versions - 1, max(0, stop - begin - 16))))  # fmt: skip
            starts = [begin, *cuts]
            prev: _Note | None = None
            for v, first in enumerate(starts, 1):
                n = self.note(f"memory/writing/{name}-v{v}.md", "draft", topic,
                              self.at(first, 9, 18), "research", f"{name.capitalize()} v{v}")
                if prev is not None:  # the rewrite keeps most of the words it replaces
                    kept = [w for w in prev.words if rng.random() < 0.75]
                    n.words = kept + n.words[: max(1, len(n.words) - len(kept) // 2)]
                    self.need(prev, n.created - rng.uniform(60, 3600))
                last = starts[v] if v < len(starts) else stop
                for d in range(first, last):
                    rate = p.draft_rate * (1.0 if self.weekday(d) < 5 else 0.4)
                    for _ in range(_poisson(rng, rate)):
                        self.need(n, self.at(d, 9, 23))
                after = self.span - last
                lam = p.old_version_rate if v < len(starts) else 0.008
                for _ in range(_poisson(rng, lam * after)):
                    soon = rng.random() < 0.5
                    self.need(n, self.at(last + (rng.randint(0, 14) if soon
                                                 else rng.randint(0, max(0, after - 1))),
                                         9, 23))  # fmt: skip
                prev = n

    def hobbies(self) -> None:
        rng, p = self.rng, self.p
        for _ in range(p.hobbies):
            topic = self.topic()
            hobby = self.word()
            peak = rng.randint(0, 364)
            width = rng.randint(45, 110)
            start_doy = self.first_date.timetuple().tm_yday
            times = []
            for d in range(self.span):
                dist = abs((start_doy + d - peak) % 365)
                dist = min(dist, 365 - dist)
                bump = max(0.0, math.cos(math.pi / 2 * dist / width)) if dist < width else 0.0
                for _ in range(_poisson(rng, p.hobby_rate * bump)):
                    times.append(self.at(d, 8, 22))
            times.sort()
            if not times:
                continue
            made = sorted({0, *rng.sample(range(len(times)), min(p.hobby_notes, len(times)))})
            notes = []
            for i in made[: p.hobby_notes]:
                notes.append(self.note(self.slug(f"hobbies/{hobby}"), "hobby", topic,
                                       times[i] - rng.uniform(60, 900), "hobbies"))  # fmt: skip
            favour = [rng.lognormvariate(0, 1.0) for _ in notes]
            for t in times:
                k = bisect.bisect_right([n.created for n in notes], t)
                n = rng.choices(notes[:k], favour[:k])[0]
                self.need(n, t)

    def household(self) -> None:
        rng, p = self.rng, self.p
        cooking = self.topic()
        pool = [self.note(self.slug("recipes"), "recipe", cooking,
                          self.at(rng.randint(0, 30) if i < p.rotation
                                  else rng.randint(0, self.span - 1), 8, 22), "home")
                for i in range(p.recipes)]  # fmt: skip
        rotation = pool[: p.rotation]
        favour = {n.path: rng.lognormvariate(0, 0.6) for n in pool}
        dropped: list[_Note] = []
        dropped_at: list[float] = []
        for week in range(self.span // 7 + 1):
            day0 = week * 7
            if rotation and rng.random() < p.churn:
                ready = [n for n in pool if n not in rotation and n not in dropped
                         and n.created <= self.t0 + day0 * DAY]  # fmt: skip
                if ready:
                    gone = rng.choice(rotation)
                    rotation.remove(gone)
                    dropped.append(gone)
                    dropped_at.append(self.t0 + day0 * DAY)
                    new = rng.choice(ready)
                    rotation.append(new)
                    self.need(new, self.at(day0 + rng.randint(0, 6), 16.5, 19.5))
            if not rotation:
                continue
            for _ in range(_poisson(rng, p.meals_per_week)):
                n = rng.choices(rotation, [favour[r.path] for r in rotation])[0]
                self.need(n, self.at(day0 + rng.randint(0, 6), 16.5, 19.5))
            if rng.random() < 0.3:
                sunday = day0 + (6 - self.weekday(day0)) % 7
                for n in rng.sample(rotation, min(len(rotation), rng.randint(2, 3))):
                    self.need(n, self.at(sunday, 10, 12))
        for n, gone_at in zip(dropped, dropped_at, strict=True):
            for _ in range(_poisson(rng, 0.003 * (self.end - gone_at) / DAY)):
                self.need(n, rng.uniform(gone_at, self.end))

        repairs = self.topic()
        for _ in range(p.fixes):
            n = self.note(self.slug("home"), "fix", repairs,
                          self.at(rng.randint(0, self.span - 1), 7, 23), "home")  # fmt: skip
            gap = p.break_days * rng.lognormvariate(0, 0.7)
            t = n.created + 60
            while t < self.end:
                for _ in range(1 + _poisson(rng, 1.0)):
                    self.need(n, t + rng.uniform(0, 2 * DAY))
                t += rng.expovariate(1 / gap) * DAY

        days = sorted(rng.sample(range(30, max(31, self.span - 10)), p.trips))
        packing: _Note | None = None
        for day in days:
            topic = self.topic()
            place = self.word()
            length = rng.randint(3, 14)
            plan = rng.randint(14, 60)
            created = self.at(day - plan, 8, 22)
            if packing is None:
                packing = self.note("memory/trips/packing.md", "trip", topic,
                                    created, "home", "Packing list")  # fmt: skip
            for _ in range(1 + _poisson(rng, 0.7)):
                self.need(packing, self.at(day - rng.randint(0, 3), 8, 22))
            notes = [self.note(f"memory/trips/{place}-{part}.md", "trip", topic, created, "home",
                               f"{place.capitalize()} {part}")
                     for part in ("itinerary", "bookings", "places")]  # fmt: skip
            itinerary, bookings, places = notes
            for n in notes:
                for _ in range(_poisson(rng, 4.0)):
                    before = plan * (1 - math.sqrt(rng.random()))
                    self.need(n, self.at(day - before, 8, 23))
            self.need(bookings, self.at(day, 6, 10))
            self.need(bookings, self.at(day + length - 1, 6, 10))
            for d in range(day, day + length):
                if rng.random() < 0.8:
                    self.need(itinerary, self.at(d, 7, 10))
                for _ in range(_poisson(rng, 0.5)):
                    self.need(places, self.at(d, 10, 21))
            if rng.random() < 0.5:
                self.need(rng.choice(notes), self.at(day + length + rng.randint(0, 14), 9, 22))

    def lab(self, teaching: list[tuple[int, int]]) -> None:
        rng, p = self.rng, self.p
        lab = self.topic()
        dailies: list[_Note] = []
        for d in range(self.span):
            if self.weekday(d) >= 5:
                continue
            in_term = any(a <= d <= b for a, b in teaching)
            if rng.random() >= min(0.95, p.lab_days * (0.6 if in_term else 1.3)):
                continue
            date = self.first_date + timedelta(days=d)
            n = self.note(f"memory/{date.isoformat()}.md", "daily", lab,
                          self.at(d, 8.5, 11), "", f"Lab {date.isoformat()}", 2)  # fmt: skip
            n.mentions = []
            dailies.append(n)
            self.need(n, n.created + rng.uniform(60, 900))
            for _ in range(_poisson(rng, 1.2)):
                self.need(n, self.at(d, 11, 19))
            if rng.random() < 0.4:
                self.need(n, self.at(d + 1, 8, 11))
        for _ in range(p.writeups):
            if len(dailies) < 10:
                break
            day = rng.randint(60, self.span - 1)
            stop = day - rng.randint(7, 60)
            first = stop - rng.randint(14, 42)
            for n in dailies:
                day_of = (n.created - self.t0) / DAY
                if first <= day_of <= stop and rng.random() < 0.65:
                    self.need(n, self.at(day + rng.randint(0, 2), 9, 19))
        self.dailies = dailies

    def inbox(self) -> None:
        rng, p = self.rng, self.p
        topic = self.topic()
        for _ in range(p.inbox):
            n = self.note(self.slug("inbox"), "inbox", topic,
                          self.at(rng.randint(0, self.span - 1), 7, 24))  # fmt: skip
            for _ in range(_poisson(rng, 1.0)):
                self.need(n, n.created + rng.uniform(0.05, 3) * DAY)
            if rng.random() < 0.12:
                self.need(n, n.created + rng.uniform(20, 200) * DAY)

    def indexes(self) -> None:
        rng, p = self.rng, self.p
        domains = ["study", "home", "research", "hobbies"][: max(1, p.indexes)]
        weights = [rng.lognormvariate(0, 0.5) for _ in domains]
        idx = {d: self.note(f"memory/{d}-index.md", "index", self.topic(), self.t0 + 9 * HOUR,
                            "", f"{d.capitalize()} index", 2)
               for d in domains}  # fmt: skip
        linked = {d: sorted((n.created, n.path) for n in self.notes if n.domain == d)
                  for d in domains}  # fmt: skip
        for day in range(self.span):
            for _ in range(_poisson(rng, p.index_reads)):
                self.need(idx[rng.choices(domains, weights)[0]], self.at(day, 8, 23.5), get=True)
        # the way to a linked note: some of its needs (each from its own process) are met by
        # reading its index, then the note, both by path
        for n in self.notes:
            if n.domain not in idx:
                continue
            for t in n.needs:
                if rng.random() < p.via_index:
                    self.need(idx[n.domain], t - rng.uniform(20, 120), get=True)
                    self.forced_get.add((n.path, t))
        self.linked = linked

    # -- text -----------------------------------------------------------------------------

    def texts(self) -> None:
        rng = self.rng
        # a daily mentions some of the notes needed on its day (the work it records)
        if self.dailies:
            by_day: dict[int, list[_Note]] = {}
            for n in self.notes:
                if n.kind in ("daily", "index"):
                    continue
                for t in n.needs:
                    by_day.setdefault(int((t - self.t0) // DAY), []).append(n)
            for dn in self.dailies:
                day = int((dn.created - self.t0) // DAY)
                work = by_day.get(day, [])
                for n in rng.sample(work, min(len(work), rng.randint(1, 3))):
                    dn.mentions.append(n.words[0])  # type: ignore[union-attr]
        for n in self.notes:
            tw = self.topics[n.topic]
            lines = [f"# {n.title}", ""]
            body = [*n.words, *rng.sample(tw, min(len(tw), rng.randint(2, 4)))]
            body += [g for g in self.general if rng.random() < 0.15]
            rng.shuffle(body)
            while body:
                k = rng.randint(2, 5)
                lines.append("- " + " ".join(body[:k]))
                body = body[k:]
            lines += n.lines
            if n.mentions:
                lines.append("worked on: " + ", ".join(n.mentions))
            if n.kind == "index":
                domain = n.path[len("memory/"):-len("-index.md")]
                for _, path in self.linked.get(domain, []):
                    ln = self.by_path[path]
                    lines.append(f"- [{ln.title}]({path[len('memory/'):]}) {ln.words[0]}")
            n.lines = lines
            size = len("\n".join(lines))
            n.pull = 0.03 * math.log(size / 300) + rng.gauss(0, 0.03)

    # -- tool calls -----------------------------------------------------------------------

    def run(self) -> History:
        p, rng = self.p, self.rng
        terms = self.terms()
        self.academic(terms)
        self.spaced_repetition()
        self.habits()
        self.documents()
        self.hobbies()
        self.household()
        self.lab([(a, c) for a, _, c in terms])
        self.inbox()
        self.indexes()
        self.texts()

        # the search engine's index: word -> notes (by creation), idf over all notes
        post: dict[str, list[tuple[float, int]]] = {}
        bags: list[set[str]] = []
        for i, n in enumerate(self.notes):
            bag = {w for line in n.lines for w in re.findall(r"[a-z]+", line.lower())}
            bags.append(bag)
            for w in bag:
                post.setdefault(w, []).append((n.created, i))
        for v in post.values():
            v.sort()
        total = len(self.notes)
        idf = {w: math.log(1 + total / len(v)) for w, v in post.items()}
        reverse: dict[str, list[str]] = {}
        for s, w in self.synonyms.items():
            reverse.setdefault(w, []).append(s)

        needs = sorted((t, n.path) for n in self.notes for t in n.needs)
        hits: list[GenHit] = []
        calls: list[tuple[str, float, str, str]] = []
        gap = p.session_gap_min * 60
        session, last, ncall = 0, -1e18, 0

        def get(path: str, t: float, sess: str) -> None:
            nonlocal ncall
            ncall += 1
            hits.append(GenHit("main", f"d{ncall:06d}", path, "get", t, None, None, sess))

        def reach(words: list[str], understood: bool, t: float) -> dict[int, float]:
            """The notes existing at ``t`` a query reaches, with the idf weight they hold."""
            got: dict[int, float] = {}
            for w in words:
                if w not in idf and understood and w in self.synonyms:
                    w, wt = self.synonyms[w], 0.8
                else:
                    wt = 1.0
                plist = post.get(w, [])
                for _, i in plist[: bisect.bisect_right(plist, (t, total))]:
                    got[i] = got.get(i, 0.0) + wt * idf[w]
            return got

        for t, path in needs:
            if t - last > gap:
                session += 1
            last = t
            sess = f"main-{session:05d}"
            n = self.by_path[path]
            share = {"index": 1.0, "daily": 0.6, "card": 0.5}.get(n.kind, p.get_share)
            if (path, t) in self.forced_get or rng.random() < share:
                get(path, t, sess)
                continue
            # a query written from the note's words
            words: list[str] = []
            for _ in range(rng.choice((1, 2, 2, 3, 3, 4))):
                r = rng.random()
                if r < p.synonym and reverse.get(own := rng.choice(n.words)):
                    words.append(rng.choice(reverse[own]))
                elif r < p.synonym + p.general:
                    words.append(rng.choice(self.general))
                elif r < p.synonym + p.general + 0.3:
                    words.append(rng.choice(self.topics[n.topic]))
                else:
                    words.append(rng.choice(n.words))
            words = list(dict.fromkeys(words))
            understood = rng.random() < p.understand
            got = reach(words, understood, t)
            if not got:  # nothing the engine knows yet: the agent adds one of the note's words
                words.append(rng.choice([w for w in n.words if w not in words] or n.words))
                words = list(dict.fromkeys(words))
                got = reach(words, understood, t)
            whole = sum(idf.get(w, math.log(1 + total)) for w in words)
            scored = sorted(
                ((0.2 + 0.65 * s / whole + self.notes[i].pull + rng.gauss(0, p.noise), i)
                 for i, s in got.items()), reverse=True)  # fmt: skip
            top = scored[: max(1, p.results + rng.randint(-1, 1))]
            shown = [x for x in top if x[0] >= 0.3] or top[:1]
            ncall += 1
            cid = f"d{ncall:06d}"
            query = " ".join(words)
            calls.append((cid, t, query, path))
            for score, i in shown:
                hits.append(GenHit("main", cid, self.notes[i].path, "search", t, query,
                                   round(score, 4), sess))  # fmt: skip
            found = any(self.notes[i].path == path for _, i in shown)
            if found and rng.random() < p.read_share:
                get(path, t + rng.uniform(4, 90), sess)
            elif not found and rng.random() < p.fallback_get:
                get(path, t + rng.uniform(30, 240), sess)
            for _, i in shown:
                if self.notes[i].path != path and rng.random() < p.read_along:
                    get(self.notes[i].path, t + rng.uniform(4, 120), sess)
        hits.sort(key=lambda x: (x.ts, x.call_id, x.path))

        files = []
        for n in self.notes:
            text = "\n".join(n.lines) + "\n"
            files.append(GenFile(n.path, n.kind, n.created, len(text.encode()), text, n.topic,
                                 tuple(n.words), sorted(n.needs)))  # fmt: skip
        return History(self.t0, self.end, p, files, hits, calls)  # type: ignore[arg-type]


def generate_d(seed: int, params: FamilyDParams | None = None) -> History:
    """A family-D history: a pure function of ``seed`` (and ``params``)."""
    return _Gen(seed, params or FamilyDParams()).run()
