"""A third family of generated histories ("family C"), written apart from families A and B.

Families A (:mod:`support.histories`) and B (:mod:`support.histories_b`)
were the ground the default policy was fitted on. This family was written without reading
their generators or anything fitted on them, from another picture of a heavy user whose
two agents ("main": personal, evenings and mornings, reads notes by path more often;
"work": weekdays, terse keyword searches, more results) share one memory folder:

* **a drifting knowledge base**: notes whose popularity is Zipf-like and drifts (a random
  walk on log-popularity, week by week), so a favourite fades and an old note rises again;
* **due-date tasks**: needed when created, then in a burst that grows towards a deadline
  weeks or months later, maybe once for the wrap-up, then never;
* **calendar events**: tax in spring, a yearly review, birthdays, renewals (needed only in a
  window before one date a year) and quarterly notes (before each quarter's date);
* **dailies rolled up into weeklies**: a daily note is needed the day it is written and the
  next; the Sunday roll-up reads the week's dailies and writes a weekly note, which is then
  needed on Monday and at the month's review, and the dailies rarely after;
* **people**: a person's note is needed at each meeting, whose rate switches abruptly
  (a new colleague, a project ends, someone goes quiet);
* **runbooks**: needed when an incident recurs (clustered incidents: an incident makes more
  likely in the next days), any hour of the day;
* **clippings**: saved once, mostly never needed again, a few recalled once months later.

Searches are scored by a small retrieval model of its own: a query is made of a note's
words (its own, its topic's, a synonym the note lacks that the engine understands only
sometimes, or a too general word); notes score by the share of the query's weight (idf)
they contain, long notes get a little pull, and a few same-topic "semantic neighbours"
come along. Dailies mention the notes worked on that day, so they come along with searches
for them. The needed note is usually in the results, not always first, sometimes absent.

How it differs from A and B (as their docstrings describe them; their generators were not
read): the need truth comes from calendar dates, deadlines, switching meeting rates,
clustered incidents and a drifting popularity law, not from note lives, bursts, rituals or
constant rates; two agents with their own habits share the notes; and the results are what
the scoring of every note a query reaches gives, so the needed note can be missing, where A
and B place it among notes that come along. Pure function of the seed.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .histories import GenFile, GenHit, History

DAY = 86400.0
HOUR = 3600.0
EPOCH = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
AGENTS = ("main", "work")

_ONSETS = ("br", "kl", "st", "m", "v", "sh", "t", "dr", "p", "gr", "n", "f", "z", "qu", "h")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ou", "ee")
_CODAS = ("n", "sk", "lt", "m", "x", "r", "th", "", "", "p", "nd")
# Words a note's prose is made of and words an agent pads its questions with: never indexed.
_PROSE = ("and", "then", "with", "check", "see", "later", "also", "done", "next", "keep",
          "first", "after", "before", "needs", "ok", "fixed", "asked", "sent", "moved")  # fmt: skip
_ASK = ("what did we say about {}", "find my notes on {}", "remind me of {}",
        "is there anything about {}", "what was the {} thing", "{} again")  # fmt: skip


@dataclass(frozen=True)
class FamilyCParams:
    """How a family-C history looks (counts for the whole span unless said per year; days)."""

    days: float = 400.0
    topics: int = 12  # topics, each belonging to one agent
    work_topics: float = 0.5  # share of the topics that are work's
    crossover: float = 0.12  # chance a need is met by the other agent
    # knowledge base
    kb_notes: int = 90
    kb_at_start: float = 0.45  # share of them already there in the first week
    kb_rate: float = 3.5  # needs a day across the base
    kb_spread: float = 1.3  # sd of the initial log-popularity (a Zipf-like spread)
    kb_drift: float = 0.35  # sd of a week's step of log-popularity
    # due-date tasks
    due_per_year: float = 28.0
    due_lead: float = 40.0  # median days from creation to the deadline
    due_burst: float = 6.0  # mean needs in the run-up to the deadline
    # calendar
    annual: int = 9
    quarterly: int = 3
    # dailies and weeklies
    daily_share: float = 0.55  # chance a weekday has a daily note (weekends: half of it)
    rollup_share: float = 0.8  # chance a week is rolled up into a weekly note
    daily_late: float = 0.25  # expected later needs of a rolled-up daily (3x if not rolled up)
    # people
    people: int = 22
    meet_every: float = 18.0  # median days between meetings with an active person
    switch_every: float = 80.0  # mean days between changes of a person's meeting rate
    # runbooks
    runbooks: int = 10
    incident_every: float = 90.0  # median days between a runbook's independent incidents
    aftershocks: float = 0.5  # mean follow-ups each incident sets off (below 1: clusters end)
    # clippings
    clips: int = 45
    clip_recall: float = 0.15  # chance a clipping is recalled once later
    # how the agents ask
    get_share: tuple[float, float] = (0.35, 0.15)  # main, work: a need met by memory_get
    read_share: tuple[float, float] = (0.6, 0.45)  # reading the needed note after a search
    max_results: tuple[int, int] = (6, 8)
    synonym_share: float = 0.2  # queries written with a synonym the note does not contain
    synonym_understood: float = 0.6  # chance the engine still matches such a synonym
    general_share: float = 0.12  # queries too general (a common word and the topic)
    read_along: float = 0.06  # chance of reading a came-along note instead
    min_score: float = 0.3
    noise: float = 0.07  # sd of the score noise


def sample_params_c(rng: random.Random) -> FamilyCParams:
    """A different kind of user: every parameter drawn from a plausible range."""
    return FamilyCParams(
        days=rng.uniform(330, 480),
        topics=rng.randint(6, 20),
        work_topics=rng.uniform(0.2, 0.8),
        crossover=rng.uniform(0.0, 0.3),
        kb_notes=rng.randint(30, 160),
        kb_at_start=rng.uniform(0.2, 0.8),
        kb_rate=rng.uniform(1.0, 5.0),
        kb_spread=rng.uniform(0.6, 2.0),
        kb_drift=rng.uniform(0.1, 0.7),
        due_per_year=rng.uniform(8, 60),
        due_lead=rng.uniform(14, 100),
        due_burst=rng.uniform(2, 10),
        annual=rng.randint(3, 18),
        quarterly=rng.randint(0, 6),
        daily_share=rng.uniform(0.15, 0.65),
        rollup_share=rng.uniform(0.3, 1.0),
        daily_late=rng.uniform(0.05, 0.8),
        people=rng.randint(6, 50),
        meet_every=rng.uniform(5, 40),
        switch_every=rng.uniform(30, 200),
        runbooks=rng.randint(2, 25),
        incident_every=rng.uniform(30, 250),
        aftershocks=rng.uniform(0.1, 0.8),
        clips=rng.randint(10, 120),
        clip_recall=rng.uniform(0.03, 0.35),
        get_share=(rng.uniform(0.1, 0.6), rng.uniform(0.05, 0.4)),
        read_share=(rng.uniform(0.3, 0.85), rng.uniform(0.2, 0.7)),
        max_results=(rng.randint(4, 8), rng.randint(5, 10)),
        synonym_share=rng.uniform(0.05, 0.4),
        synonym_understood=rng.uniform(0.3, 0.9),
        general_share=rng.uniform(0.03, 0.25),
        read_along=rng.uniform(0.0, 0.15),
        min_score=rng.uniform(0.2, 0.4),
        noise=rng.uniform(0.03, 0.12),
    )


@dataclass
class _Note:
    path: str
    kind: str
    created: float
    topic: int
    agent: str  # the agent that usually needs it
    own: list[str]
    title: str
    get_bias: float = 0.0  # added to the agent's get share (dailies are read by date)
    pull: float = 1.0  # a long note's pull on searches
    lines: int = 4
    header: list[str] = field(default_factory=list)  # lines under the title (a due date)
    mentions: list[str] = field(default_factory=list)
    needs: list[float] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)  # every indexed word (filled once)


class _Gen:
    def __init__(self, seed: int, p: FamilyCParams) -> None:
        self.rng = random.Random(seed)
        self.p = p
        self.start = EPOCH + self.rng.randrange(0, 120) * DAY
        self.end = self.start + p.days * DAY
        self.used: set[str] = set(_PROSE) | {w for a in _ASK for w in a.split()}
        self.notes: list[_Note] = []
        self.paths: set[str] = set()
        n_work = max(1, min(p.topics - 1, round(p.topics * p.work_topics)))
        self.topic_agent = ["work" if t < n_work else "main" for t in range(p.topics)]
        self.topic_words = [[self.word() for _ in range(self.rng.randint(2, 4))]
                            for _ in range(p.topics)]  # fmt: skip
        self.general = [self.word() for _ in range(10)]
        self.synonyms: dict[str, str] = {}  # a synonym -> the word it means

    # ------------------------------------------------------------------ words and notes

    def word(self) -> str:
        r = self.rng
        while True:
            w = "".join(r.choice(_ONSETS) + r.choice(_NUCLEI) for _ in range(r.randint(1, 2)))
            w += r.choice(_CODAS)
            if len(w) >= 4 and w not in self.used:
                self.used.add(w)
                return w

    def note(self, folder: str, kind: str, created: float, topic: int, n_own: int = 3,
             slug: str | None = None, agent: str | None = None) -> _Note:  # fmt: skip
        r = self.rng
        own = [self.word() for _ in range(n_own)]
        if slug is None:
            slug = own[0] if folder == "people/" else "-".join(own[: r.randint(1, 2)])
        path = f"memory/{folder}{slug}.md"
        while path in self.paths:  # (a safety: slugs are unique words, dates, weeks)
            path = path[:-3] + "-2.md"
        self.paths.add(path)
        n = _Note(path, kind, created, topic, agent or self.topic_agent[topic], own,
                  title=" ".join(own[:2]).title())  # fmt: skip
        n.lines = max(2, min(120, round(math.exp(r.gauss(1.8, 0.8)))))
        n.pull = 1.0 + 0.25 * math.log1p(n.lines)
        self.notes.append(n)
        return n

    def topic_of(self, agent: str | None = None) -> int:
        ts = [t for t in range(self.p.topics) if agent is None or self.topic_agent[t] == agent]
        return self.rng.choice(ts or list(range(self.p.topics)))

    def at(self, day_ts: float, agent: str) -> float:
        """A time on the day starting at ``day_ts`` (UTC midnight) when ``agent`` is active."""
        r = self.rng
        weekend = datetime.fromtimestamp(day_ts, UTC).weekday() >= 5
        if agent == "work":
            h = r.uniform(10, 16) if weekend else r.triangular(8.5, 18.5, 11)
        else:
            u = r.random()
            h = (r.uniform(7, 9.5) if u < 0.3 else r.uniform(12, 13.5) if u < 0.45
                 else r.triangular(18, 23.5, 21))  # fmt: skip
            if weekend and r.random() < 0.5:
                h = r.uniform(9, 22)
        return day_ts + h * HOUR

    def midnight(self, ts: float) -> float:
        return ts - (ts - EPOCH) % DAY

    # ------------------------------------------------------------------ need processes

    def knowledge_base(self) -> None:
        p, r = self.p, self.rng
        kb = []
        for _ in range(p.kb_notes):
            if r.random() < p.kb_at_start:
                created = self.start + r.uniform(0, 7) * DAY
            else:
                created = self.start + r.uniform(7, p.days - 3) * DAY
            n = self.note("", "reference", created, self.topic_of(), n_own=r.randint(3, 6))
            n.lines = max(n.lines, round(math.exp(r.gauss(2.5, 0.9))))
            n.pull = 1.0 + 0.25 * math.log1p(n.lines)
            kb.append((n, r.gauss(0, p.kb_spread)))
            if r.random() < 0.5:  # written because it was needed then
                n.needs.append(created + r.uniform(0.05, 3) * HOUR)
        notes = [n for n, _ in kb]
        logpop = [lp for _, lp in kb]
        for d in range(int(p.days)):
            day = self.midnight(self.start) + d * DAY
            if d % 7 == 0 and d:
                logpop = [0.985 * x + r.gauss(0, p.kb_drift) for x in logpop]
            weekend = datetime.fromtimestamp(day, UTC).weekday() >= 5
            k = _poisson(r, p.kb_rate * (0.6 if weekend else 1.1))
            live = [i for i, n in enumerate(notes) if n.created < day + DAY - HOUR]
            if not live or not k:
                continue
            weights = [math.exp(logpop[i]) for i in live]
            for i in r.choices(live, weights, k=k):
                n = notes[i]
                n.needs.append(max(self.at(day, n.agent), n.created + 0.2 * HOUR))

    def due_tasks(self) -> None:
        p, r = self.p, self.rng
        for _ in range(_poisson(r, p.due_per_year * p.days / 365)):
            topic = self.topic_of()
            day = self.midnight(self.start + r.uniform(0, p.days - 1) * DAY)
            agent = self.topic_agent[topic]
            created = self.at(day, agent)
            n = self.note("tasks/", "due", created, topic, n_own=r.randint(2, 4))
            n.needs.append(created + r.uniform(0.05, 1) * HOUR)
            for _ in range(r.randint(0, 2)):  # the start of the work
                n.needs.append(self.at(day + r.randint(0, 2) * DAY, agent))
            deadline = created + max(5.0, p.due_lead * math.exp(r.gauss(0, 0.6))) * DAY
            if r.random() < 0.3:  # a check half way
                n.needs.append(self.at(self.midnight(created + (deadline - created) / 2), agent))
            span = r.uniform(1, 10) * DAY
            for _ in range(1 + _poisson(r, max(0.0, p.due_burst - 1))):
                t = deadline - span * r.random() ** 2  # denser as the deadline nears
                n.needs.append(self.at(self.midnight(t), agent))
            if r.random() < 0.25:  # the wrap-up
                n.needs.append(self.at(self.midnight(deadline) + r.randint(1, 3) * DAY, agent))
            n.header.append("due: " + _date(deadline))

    def calendar(self) -> None:
        p, r = self.p, self.rng
        specs = [("tax", 75, 115, "main", 10, 30), ("yearly-review", 350, 365, "work", 3, 12),
                 ("birthday", 0, 364, "main", 1, 6), ("renewal", 0, 364, "main", 4, 20),
                 ("conference", 0, 364, "work", 5, 25)]  # fmt: skip
        years = range(datetime.fromtimestamp(self.start, UTC).year - 1,
                      datetime.fromtimestamp(self.end, UTC).year + 2)  # fmt: skip
        for i in range(p.annual):
            name, lo, hi, agent, lead_lo, lead_hi = specs[0] if i == 0 else r.choice(specs)
            doy = r.randint(lo, hi)
            lead = r.uniform(lead_lo, lead_hi) * DAY
            anchors = [datetime(y, 1, 1, tzinfo=UTC).timestamp() + doy * DAY for y in years]
            self._event(name, "annual", agent, anchors, lead, r.randint(2, 6))
        for _ in range(p.quarterly):
            offset = r.randint(0, 20)
            anchors = [datetime(y, m, 1, tzinfo=UTC).timestamp() + offset * DAY
                       for y in years for m in (1, 4, 7, 10)]  # fmt: skip
            agent = r.choice(AGENTS)
            self._event("quarterly", "quarterly", agent, anchors, r.uniform(2, 10) * DAY,
                        r.randint(1, 4))  # fmt: skip

    def _event(self, name: str, kind: str, agent: str, anchors: list[float], lead: float,
               per: int) -> None:  # fmt: skip
        r = self.rng
        windows = [a for a in anchors if a - lead < self.end and a + DAY > self.start]
        if not windows:
            return
        topic = self.topic_of(agent)
        if r.random() < 0.6:  # last year's note, already there
            created = self.start + r.uniform(0, 3) * DAY
        else:  # written the first time the event came round
            created = max(self.start, windows[0] - lead) + r.uniform(0, 2) * HOUR
        n = self.note("dates/", kind, created, topic, slug=None, agent=agent)
        n.own.insert(0, name)  # the event's name is a word of the note (not unique)
        n.title = f"{name.replace('-', ' ').title()} {n.title}"
        n.header.append("date: " + datetime.fromtimestamp(windows[0], UTC).strftime("%m-%d"))
        for a in windows:
            for _ in range(per + _poisson(r, 0.5)):
                t = a - lead * r.random() ** 1.5 + r.uniform(-0.3, 1) * DAY
                n.needs.append(self.at(self.midnight(t), agent))

    def dailies(self) -> None:
        p, r = self.p, self.rng
        first = self.midnight(self.start)
        week: list[_Note] = []
        for d in range(int(p.days)):
            day = first + d * DAY
            date = datetime.fromtimestamp(day, UTC)
            share = p.daily_share * (0.5 if date.weekday() >= 5 else 1.0)
            if r.random() < share:
                created = day + r.uniform(7, 11) * HOUR
                n = self.note("", "daily", created, 0, n_own=2, slug=date.strftime("%Y-%m-%d"),
                              agent="main")  # fmt: skip
                n.own.insert(0, date.strftime("%Y-%m-%d"))
                n.title = date.strftime("%Y-%m-%d")
                n.topic = p.topics  # the journal
                n.get_bias = 0.35
                for _ in range(1 + _poisson(r, 1.2)):
                    t = self.at(day, r.choice(AGENTS))
                    n.needs.append(t if t > created else created + r.uniform(0.1, 2) * HOUR)
                if r.random() < 0.5:
                    n.needs.append(self.at(day + DAY, "main"))
                week.append(n)
            if date.weekday() == 6 and day + DAY < self.end:
                self._rollup(day, date, week)
                week = []

    def _rollup(self, day: float, date: datetime, week: list[_Note]) -> None:
        p, r = self.p, self.rng
        rolled = bool(week) and r.random() < p.rollup_share
        late = p.daily_late * (1 if rolled else 3)
        if rolled:
            t = day + r.uniform(18, 22) * HOUR
            iso = date.isocalendar()
            w = self.note("weekly/", "weekly", t + 0.5 * HOUR, p.topics, n_own=2,
                          slug=f"{iso.year}-W{iso.week:02d}", agent="main")  # fmt: skip
            w.own.insert(0, f"{iso.year}-W{iso.week:02d}")
            w.title = f"Week {iso.week} {iso.year}"
            w.get_bias = 0.2
            for n in week:
                n.needs.append(t + r.uniform(0, 20) * 60)  # the roll-up reads its dailies
                w.mentions.extend(n.own[1:])
            if r.random() < 0.8:  # Monday planning
                w.needs.append(self.at(day + DAY, r.choice(AGENTS)))
            month_end = (date.replace(day=28) + timedelta(days=4)).replace(day=1)
            if r.random() < 0.5:  # the month's review
                w.needs.append(self.at(month_end.timestamp() - DAY, "main"))
            for _ in range(_poisson(r, 0.6)):  # later, less and less
                w.needs.append(self.at(self.midnight(t + r.expovariate(1 / 60) * DAY), "main"))
        for n in week:
            for _ in range(_poisson(r, late)):
                later = self.midnight(n.created + (7 + r.expovariate(1 / 45)) * DAY)
                n.needs.append(self.at(later, r.choice(AGENTS)))

    def people(self) -> None:
        p, r = self.p, self.rng
        for _ in range(p.people):
            agent = "work" if r.random() < 0.6 else "main"
            topic = self.topic_of(agent)
            pre = r.random() < 0.5
            meetings: list[float] = []
            t = self.start
            while t < self.end:
                change = t + r.expovariate(1 / p.switch_every) * DAY
                active = r.random() < 0.65
                rate = 1 / (p.meet_every * math.exp(r.gauss(0, 0.7))) if active else 0.0
                if not pre and not meetings and rate == 0.0 and r.random() < 0.5:
                    rate = 1 / p.meet_every  # someone new who shows up
                s = t
                while rate > 0:
                    s += r.expovariate(rate) * DAY
                    if s >= min(change, self.end):
                        break
                    meetings.append(self.at(self.midnight(s), agent))
                t = change
            if not meetings and not pre:
                continue
            created = (self.start + r.uniform(0, 5) * DAY if pre
                       else meetings[0] - r.uniform(0.1, 2) * HOUR)  # fmt: skip
            n = self.note("people/", "person", created, topic, n_own=3, agent=agent)
            n.title = n.own[0].title()  # the person's name, and the note's name
            for m in meetings:
                n.needs.append(m)
                if r.random() < 0.3:  # writing down what was said
                    n.needs.append(m + r.uniform(0.5, 2) * HOUR)

    def runbooks(self) -> None:
        p, r = self.p, self.rng
        for _ in range(p.runbooks):
            agent = "work" if r.random() < 0.75 else "main"
            topic = self.topic_of(agent)
            every = p.incident_every * math.exp(r.gauss(0, 0.6))
            incidents: list[float] = []
            t = self.start
            while True:
                t += r.expovariate(1 / every) * DAY
                if t >= self.end:
                    break
                todo = [t]
                while todo and len(incidents) < 400:  # each sets off follow-ups in days
                    x = todo.pop()
                    incidents.append(x)
                    for _ in range(_poisson(r, min(p.aftershocks, 0.9))):
                        y = x + r.expovariate(1 / 2.5) * DAY
                        if y < self.end:
                            todo.append(y)
            incidents = sorted(x for x in incidents if x < self.end)
            pre = r.random() < 0.7
            if not incidents and not pre:
                continue
            if pre:
                created = self.start + r.uniform(0, 10) * DAY
            else:  # written after the first incident was solved
                created = incidents[0] + r.uniform(1, 6) * HOUR
                incidents = incidents[1:]
            n = self.note("runbooks/", "runbook", created, topic, n_own=r.randint(3, 5),
                          agent=agent)  # fmt: skip
            n.lines = max(n.lines, 8)
            for x in incidents:
                for _ in range(1 + _poisson(r, 0.7)):
                    n.needs.append(x + r.uniform(0.05, 2) * HOUR)

    def clippings(self) -> None:
        p, r = self.p, self.rng
        for _ in range(p.clips):
            created = self.start + r.uniform(0, p.days - 1) * DAY
            n = self.note("clips/", "clip", created, self.topic_of(), n_own=r.randint(3, 5))
            n.lines = max(n.lines, round(math.exp(r.gauss(3, 0.7))))
            n.pull = 1.0 + 0.25 * math.log1p(n.lines)
            if r.random() < 0.4:
                n.needs.append(created + r.uniform(0.02, 1) * HOUR)
            if r.random() < p.clip_recall:
                later = created + r.expovariate(1 / 90) * DAY
                n.needs.append(self.at(self.midnight(later), n.agent))

    # ------------------------------------------------------------------ the corpus

    def settle(self) -> None:
        """Keep needs inside the note's life and the span; dailies mention what was needed."""
        for n in self.notes:
            kept: list[float] = []
            for t in sorted(n.needs):
                t = max(t, n.created + 60)
                if t < self.end - 120 and (not kept or t - kept[-1] >= 90):  # (reads: < 90 s)
                    kept.append(round(t, 3))
            n.needs = kept
        by_day: dict[float, list[_Note]] = {}
        for n in self.notes:
            if n.kind not in ("daily", "weekly"):
                for t in n.needs:
                    by_day.setdefault(self.midnight(t), []).append(n)
        for n in self.notes:
            if n.kind == "daily":
                worked = by_day.get(self.midnight(n.created), [])
                for m in self.rng.sample(worked, min(len(worked), self.rng.randint(0, 3))):
                    n.mentions.append(m.own[-1])
        for n in self.notes:  # synonyms: words other people would use for the note's words
            for w in n.own:
                if w not in self.synonyms.values() and self.rng.random() < 0.7:
                    self.synonyms[self.word()] = w

    def text(self, n: _Note) -> str:
        r = self.rng
        words = self.indexed(n)
        lines = [f"# {n.title}", "", *n.header]
        if r.random() < 0.3:
            lines.append("tags: " + " ".join(f"#{w}" for w in self.topic_words_of(n)[:2]))
        for i in range(n.lines):
            k = r.randint(4, 12)
            line = [r.choice(_PROSE) for _ in range(k)]
            if i < len(words):
                line.insert(r.randrange(len(line) + 1), words[i])
            lines.append("- " + " ".join(line))
        if len(words) > n.lines:
            lines.append("- " + " ".join(words[n.lines :]))
        return "\n".join(lines) + "\n"

    def topic_words_of(self, n: _Note) -> list[str]:
        return self.topic_words[n.topic] if n.topic < len(self.topic_words) else []

    def indexed(self, n: _Note) -> list[str]:
        """Every indexed word of the note: its own, its topic's, a common one, its mentions."""
        if not n.terms:
            general = self.rng.sample(self.general, self.rng.randint(1, 2))
            n.terms = list(dict.fromkeys(n.own + self.topic_words_of(n) + general + n.mentions))
        return n.terms

    # ------------------------------------------------------------------ needs to calls

    def calls(self) -> tuple[list[GenHit], list[tuple[str, float, str, str]]]:
        p, r = self.p, self.rng
        order = sorted(range(len(self.notes)), key=lambda i: self.notes[i].created)
        created = [self.notes[i].created for i in order]
        postings: dict[str, list[int]] = {}  # word -> positions in ``order`` (by creation)
        for pos, i in enumerate(order):
            for w in self.indexed(self.notes[i]):
                postings.setdefault(w, []).append(pos)
        total = len(self.notes)
        idf = {w: math.log(1 + total / len(ps)) for w, ps in postings.items()}
        by_topic: dict[int, list[int]] = {}
        for pos, i in enumerate(order):
            by_topic.setdefault(self.notes[i].topic, []).append(pos)
        needs = sorted((t, i) for i, n in enumerate(self.notes) for t in n.needs)
        hits: list[GenHit] = []
        calls: list[tuple[str, float, str, str]] = []
        last: dict[str, tuple[float, str]] = {}
        sessions = 0
        for t, i in needs:
            n = self.notes[i]
            agent = n.agent if r.random() >= p.crossover else _other(n.agent)
            a = AGENTS.index(agent)
            prev = last.get(agent)
            if prev is None or t - prev[0] > 40 * 60:
                sessions += 1
                session = f"{agent}-{sessions:05d}"
            else:
                session = prev[1]
            last[agent] = (t, session)
            cid = f"c{len(hits):06d}"
            if r.random() < min(0.95, p.get_share[a] + n.get_bias):
                hits.append(GenHit(agent, cid, n.path, "get", t, None, None, session))
                continue
            query, mapped = self.query(n, agent)
            alive = bisect.bisect_right(created, t)
            scores: dict[int, float] = {}
            weight = sum(m * idf.get(w, 1.0) for w, m in mapped) or 1.0
            for w, m in mapped:
                for pos in postings.get(w, ()):
                    if pos >= alive:
                        break
                    scores[pos] = scores.get(pos, 0.0) + m * idf[w] / weight
            for pos in list(scores):
                note = self.notes[order[pos]]
                scores[pos] = (0.3 + 0.55 * scores[pos] + 0.04 * note.pull
                               + r.gauss(0, p.noise))  # fmt: skip
            near = [pos for pos in by_topic.get(n.topic, ()) if pos < alive]
            for pos in r.sample(near, min(len(near), r.randint(1, 3))):  # semantic neighbours
                note = self.notes[order[pos]]
                s = 0.15 + 0.2 * r.random() + 0.05 * note.pull
                scores[pos] = max(scores.get(pos, 0.0), s)
            ranked = sorted(scores.items(), key=lambda kv: -kv[1])
            keep = [(pos, s) for pos, s in ranked if s >= p.min_score][: p.max_results[a]]
            if not keep:
                keep = ranked[:1]
            calls.append((cid, t, query, n.path))
            results = []
            for pos, s in keep:
                path = self.notes[order[pos]].path
                results.append(path)
                hits.append(GenHit(agent, cid, path, "search", t,
                                   query, round(min(s, 0.999), 4), session))  # fmt: skip
            read: str | None = None
            if n.path in results:
                rank = results.index(n.path)
                if r.random() < p.read_share[a] * 0.85**rank:
                    read = n.path
            elif r.random() < 0.3:  # the agent knew the note after all
                read = n.path
            if read is None and len(results) > 1 and r.random() < p.read_along:
                read = r.choice([x for x in results if x != n.path])
            if read is not None:
                gid = f"c{len(hits):06d}"
                hits.append(GenHit(agent, gid, read, "get", t + r.uniform(2, 90), None, None,
                                   session))  # fmt: skip
        hits.sort(key=lambda x: (x.ts, x.call_id))
        return hits, calls

    def query(self, n: _Note, agent: str) -> tuple[str, list[tuple[str, float]]]:
        """The query's text and the indexed words it reaches (with how strongly)."""
        p, r = self.p, self.rng
        topic = self.topic_words_of(n)
        u = r.random()
        words: list[str] = []
        if u < p.general_share:
            words = [r.choice(self.general)] + ([r.choice(topic)] if topic else [])
        elif u < p.general_share + p.synonym_share:
            syns = [s for s, w in self.synonyms.items() if w in n.own]
            words = [r.choice(syns)] if syns else [r.choice(n.own)]
            if topic and r.random() < 0.6:
                words.append(r.choice(topic))
        else:
            words = r.sample(n.own, min(len(n.own), r.randint(1, 2)))
            if topic and r.random() < 0.4:
                words.append(r.choice(topic))
        mapped: list[tuple[str, float]] = []
        for w in words:
            if w in self.synonyms:
                if r.random() < p.synonym_understood:
                    mapped.append((self.synonyms[w], 0.7))
            else:
                mapped.append((w, 1.0))
        text = " ".join(words)
        if agent == "main" and r.random() < 0.6:  # asks in a sentence
            text = r.choice(_ASK).format(text)
        return text, mapped


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def _other(agent: str) -> str:
    return "work" if agent == "main" else "main"


def _poisson(r: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(r.gauss(lam, math.sqrt(lam))))
    limit, k, prod = math.exp(-lam), 0, r.random()
    while prod > limit:
        k += 1
        prod *= r.random()
    return k


def generate_c(seed: int, params: FamilyCParams | None = None) -> History:
    """One family-C history: a pure function of ``seed`` (and ``params``)."""
    p = params or FamilyCParams()
    g = _Gen(seed, p)
    g.knowledge_base()
    g.due_tasks()
    g.calendar()
    g.dailies()
    g.people()
    g.runbooks()
    g.clippings()
    g.settle()
    files = []
    for n in g.notes:
        text = g.text(n)
        files.append(GenFile(n.path, n.kind, n.created, len(text.encode()), text,
                             n.topic, tuple(n.own), list(n.needs)))  # fmt: skip
    hits, calls = g.calls()
    return History(g.start, g.end, p, files, hits, calls)  # type: ignore[arg-type]
