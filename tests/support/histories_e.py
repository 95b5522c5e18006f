"""A fifth family of generated histories ("family E"): need driven by the world outside and
met by path reads, written apart from families A-D.

Families A-D (:mod:`support.histories`, ``histories_b``, ``histories_c``,
``histories_d``) mostly make need from a note's own life (bursts, rhythms, calendars of
study). Here the need of most notes comes from events outside the agent, on clocks the
notes' past use says nothing about, and much of it is met by a ``memory_get`` of a path
the agent knows (named in ``MEMORY.md``, dated, or a fixed place), not by a search. Written
for issue 28's harm measure: only the shared ``GenFile``/``GenHit``/``History`` types are
used from the other families.

The picture: a freelance operator (client work, a few servers, a household's papers):

* **clients**: each client's note is needed when a mail from the client arrives; mails
  come in threads (a thread opens at a Poisson rate per client, lasts days, with several
  needs), and a client may go quiet for many months and come back; some needs are met by
  reading ``memory/clients/<name>.md`` by path, the rest by searching its words (or a
  synonym it lacks: the engine understands some);
* **alerts and runbooks**: each server has a runbook ``memory/runbooks/<host>.md``; alerts
  fire as a clustered process (a storm of several alerts within hours, storms months
  apart); each alert reads the runbook by path;
* **the calendar**: meetings booked from outside; before each one the person's note
  ``memory/people/<name>.md`` is read by path (and sometimes searched);
* **deadlines set by others**: tax quarters, a yearly insurance renewal, a licence renewal
  every few years; each needs its note in the fortnight before, by path or search;
* **dated notes recalled by a dispute**: a daily note ``memory/YYYY-MM-DD.md`` on most
  workdays, needed that day; months later an outside event (an invoice dispute, an audit
  question) asks what happened on a day, and that day's note is read by path;
* **templates**: ``memory/templates/<kind>.md`` read by path whenever the outside world
  asks for that kind of document (a quote, an invoice, a report), at a rate per kind that
  changes when a new client signs;
* **imports**: a bulk import of old notes (created years earlier) on one day, most never
  needed, a few asked for by an outside event later.

Searches: one to three of the note's words (or its synonym); every note holding a query
word may come along, weighted by how many it holds; the needed note is first most times.
After a search the agent often reads the needed note by path. Pure function of the seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from .histories import GenFile, GenHit, History

DAY = 86400.0
HOUR = 3600.0

_HEADS = ("qu", "br", "j", "w", "x", "y", "h", "c", "ph", "sp", "bl", "cr")
_MIDS = ("e", "o", "ia", "ue", "y", "ei")
_TAILS = ("ck", "ft", "rn", "x", "ll", "ve", "ss", "nt", "")
_GENERAL = ("client", "invoice", "server", "note", "meeting", "plan", "update", "todo")


@dataclass(frozen=True)
class FamilyEParams:
    days: int = 400
    clients: int = 14
    thread_rate: float = 1 / 40  # threads a day per client while it is active
    thread_needs: float = 4.0
    quiet_share: float = 0.4  # clients that go quiet for months, then come back
    hosts: int = 6
    storm_gap: float = 90.0  # mean days between two alert storms of one host
    storm_alerts: float = 3.0
    people: int = 25
    meetings_a_week: float = 4.0
    daily_share: float = 0.7
    disputes: float = 1 / 12  # a day: an outside question about a past day
    template_kinds: int = 5
    template_rate: float = 0.15  # a day per kind
    imports: int = 60
    import_asked: float = 0.15
    path_share: float = 0.55  # of client / person / deadline needs, met by a path read
    synonym: float = 0.25
    understand: float = 0.5
    results: int = 5
    read_after: float = 0.5


def sample_params_e(rng: random.Random) -> FamilyEParams:
    """Another operator: each parameter drawn from a plausible range."""
    return FamilyEParams(
        days=rng.randint(330, 480),
        clients=rng.randint(5, 30),
        thread_rate=rng.uniform(1 / 90, 1 / 20),
        thread_needs=rng.uniform(2.0, 7.0),
        quiet_share=rng.uniform(0.1, 0.6),
        hosts=rng.randint(2, 12),
        storm_gap=rng.uniform(40, 200),
        storm_alerts=rng.uniform(1.5, 6.0),
        people=rng.randint(8, 50),
        meetings_a_week=rng.uniform(1.0, 10.0),
        daily_share=rng.uniform(0.3, 0.95),
        disputes=rng.uniform(1 / 40, 1 / 5),
        template_kinds=rng.randint(2, 8),
        template_rate=rng.uniform(0.03, 0.4),
        imports=rng.randint(0, 150),
        import_asked=rng.uniform(0.02, 0.3),
        path_share=rng.uniform(0.3, 0.8),
        synonym=rng.uniform(0.05, 0.45),
        understand=rng.uniform(0.2, 0.8),
        results=rng.randint(3, 8),
        read_after=rng.uniform(0.2, 0.8),
    )


@dataclass
class _Need:
    ts: float
    path: str
    by_path: bool


class _World:
    """The notes, the outside events and the needs they cause (one seed)."""

    def __init__(self, seed: int, p: FamilyEParams):
        self.r = random.Random(seed)
        self.p = p
        self.start = datetime(2025, 2, 3, tzinfo=UTC).timestamp() + self.r.randint(0, 120) * DAY
        self.end = self.start + p.days * DAY
        self.used: set[str] = set()
        self.files: dict[str, GenFile] = {}
        self.synonyms: dict[str, str] = {}
        self.needs: list[_Need] = []

    # ----------------------------------------------------------------- notes

    def word(self) -> str:
        while True:
            w = "".join(self.r.choice(part) for part in (_HEADS, _MIDS, _TAILS, _MIDS, _TAILS))
            if len(w) >= 4 and w not in self.used:
                self.used.add(w)
                return w

    def note(self, path: str, created: float, kind: str, shared: tuple[str, ...] = ()) -> str:
        if path in self.files:
            return path
        own = tuple(self.word() for _ in range(self.r.randint(3, 7)))
        pool = [*own, *shared, *_GENERAL]
        lines = [f"# {own[0]} {own[1]}", "", " ".join(self.r.sample(own, len(own))) + "."]
        for _ in range(self.r.randint(2, 10)):
            lines.append(" ".join(self.r.choice(pool) for _ in range(self.r.randint(4, 12))) + ".")
        text = "\n".join(lines) + "\n"
        self.files[path] = GenFile(path, kind, created, len(text.encode()), text, 0, own)
        self.synonyms[path] = self.word()  # a word for it the note lacks
        return path

    def at(self, day: float, lo: float = 7.0, hi: float = 23.0) -> float:
        return self.start + math.floor(day) * DAY + self.r.uniform(lo, hi) * HOUR

    def need(self, ts: float, path: str, by_path: bool) -> None:
        f = self.files[path]
        if max(f.created, self.start) <= ts < self.end:
            self.needs.append(_Need(ts, path, by_path))

    def poisson_days(self, rate: float, lo: float, hi: float) -> list[float]:
        out, d = [], lo
        if rate <= 0:
            return out
        while True:
            d += self.r.expovariate(rate)
            if d >= hi:
                return out
            out.append(d)

    # ----------------------------------------------------------------- the world

    def build(self) -> None:
        p, r = self.p, self.r
        area = tuple(self.word() for _ in range(4))
        # clients: threads of mail; some go quiet for months
        for _ in range(p.clients):
            name = self.word()
            signed = r.uniform(-200, p.days * 0.7)
            path = self.note(f"memory/clients/{name}.md", self.start + signed * DAY, "client",
                             area)  # fmt: skip
            active = [(max(signed, 0.0), p.days)]
            if r.random() < p.quiet_share:
                q0 = r.uniform(signed, p.days)
                q1 = q0 + r.uniform(90, 300)
                active = [(max(signed, 0.0), q0), (q1, p.days)]
            for a, b in active:
                for d in self.poisson_days(p.thread_rate, a, b):
                    for _ in range(max(1, round(r.expovariate(1 / p.thread_needs)))):
                        self.need(self.at(d + r.expovariate(1 / 2.0)), path,
                                  r.random() < p.path_share)  # fmt: skip
        # hosts: storms of alerts read the runbook by path
        for _ in range(p.hosts):
            host = self.word()
            path = self.note(f"memory/runbooks/{host}.md", self.start - r.uniform(30, 400) * DAY,
                             "runbook")  # fmt: skip
            for d in self.poisson_days(1 / p.storm_gap, 0, p.days):
                t0 = self.at(d, 0, 24)
                for _ in range(max(1, round(r.expovariate(1 / p.storm_alerts)))):
                    self.need(t0 + r.uniform(0, 6) * HOUR, path, True)
        # people: meetings booked from outside, the person read before each
        people = []
        for _ in range(p.people):
            born = self.start - r.uniform(0, 300) * DAY
            people.append(self.note(f"memory/people/{self.word()}.md", born, "person"))
        weights = [r.paretovariate(1.2) for _ in people]
        for d in self.poisson_days(p.meetings_a_week / 7, 0, p.days):
            who = r.choices(people, weights)[0]
            self.need(self.at(d, 8, 18), who, r.random() < max(p.path_share, 0.6))
        # deadlines set by others
        tax = self.note("memory/finance/tax-quarter.md", self.start - 200 * DAY, "deadline")
        for d in range(p.days):
            day = datetime.fromtimestamp(self.start + d * DAY, UTC)
            if day.month in (1, 4, 7, 10) and 1 <= day.day <= 14 and r.random() < 0.25:
                self.need(self.at(d), tax, r.random() < p.path_share)
        for label, every in (("insurance", 365.0), ("licence", 730.0)):
            path = self.note(f"memory/finance/{label}-renewal.md", self.start - 300 * DAY,
                             "deadline")  # fmt: skip
            due = r.uniform(0, every)
            while due < p.days:
                for _ in range(r.randint(1, 4)):
                    self.need(self.at(due - r.uniform(0, 14)), path, r.random() < p.path_share)
                due += every
        # dated notes, and disputes that ask about a past day
        dailies: list[tuple[float, str]] = []
        for d in range(p.days):
            ts = self.start + d * DAY
            if datetime.fromtimestamp(ts, UTC).weekday() < 5 and r.random() < p.daily_share:
                name = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")
                path = self.note(f"memory/{name}.md", ts, "daily", area)
                dailies.append((d, path))
                for _ in range(r.randint(1, 2)):
                    self.need(self.at(d, 9, 23), path, r.random() < 0.5)
        for d in self.poisson_days(p.disputes, 30, p.days):
            older = [x for x in dailies if d - 400 < x[0] < d - 20]
            if older:
                _, path = r.choice(older)
                for k in range(r.randint(1, 3)):
                    self.need(self.at(d + k * 0.2), path, True)
        # templates: the outside world asks for a kind of document
        for _ in range(p.template_kinds):
            kind = self.word()
            path = self.note(f"memory/templates/{kind}.md", self.start - 100 * DAY, "template")
            rate = p.template_rate * r.uniform(0.2, 1.8)
            for d in self.poisson_days(rate, 0, p.days):
                self.need(self.at(d, 8, 20), path, True)
        # a bulk import of old notes (created years before, copied in on one day)
        day = r.uniform(p.days * 0.2, p.days * 0.6)
        for _ in range(p.imports):
            born = self.start - r.uniform(400, 2500) * DAY
            path = self.note(f"memory/imported/{self.word()}.md", born, "import", area)
            self.files[path].created = self.start + day * DAY  # first seen on the import day
            if r.random() < p.import_asked:
                self.need(self.at(r.uniform(day + 1, p.days)), path, r.random() < 0.3)

    # ----------------------------------------------------------------- calls and hits

    def history(self) -> History:
        p, r = self.p, self.r
        self.needs.sort(key=lambda n: (n.ts, n.path))
        index: dict[str, set[str]] = {}
        for f in self.files.values():
            for w in set(f.text.lower().replace(".", " ").split()):
                index.setdefault(w, set()).add(f.path)
        hits: list[GenHit] = []
        calls: list[tuple[str, float, str, str]] = []
        seen: set[float] = set()
        for n, need in enumerate(self.needs):
            ts = need.ts
            while ts in seen:  # one call at a time
                ts += 1.0
            if ts + 4 > self.end:
                continue
            seen.add(ts)
            f = self.files[need.path]
            f.needs.append(ts)
            session = f"s{int((ts - self.start) // (6 * HOUR))}"
            if need.by_path:
                hits.append(GenHit("main", f"g{n}", f.path, "get", ts, None, None, session))
                continue
            words = r.sample(f.words, min(len(f.words), r.randint(1, 3)))
            understood = True
            if r.random() < p.synonym:
                words = [self.synonyms[f.path], *words[1:]]
                understood = r.random() < p.understand
            if r.random() < 0.2:
                words.append(r.choice(_GENERAL))
            query = " ".join(words)
            call = f"c{n}"
            pool: dict[str, int] = {}
            for w in words:
                for q in sorted(index.get(w, ())):  # (in an order of its own: r draws for each)
                    g = self.files[q]
                    if g.path != f.path and g.created <= ts:
                        pool[q] = pool.get(q, 0) + 1
            along = sorted(pool, key=lambda q: (-pool[q] - r.random(), q))[: p.results - 1]
            results = ([f.path] if understood else []) + along
            if not results:  # the search found nothing: the agent opens the note by path
                hits.append(GenHit("main", f"g{n}", f.path, "get", ts, None, None, session))
                continue
            calls.append((call, ts, query, f.path))
            if understood and along and r.random() < 0.3:
                results.insert(1, results.pop(0))
            score = r.uniform(0.55, 0.9)
            for q in results:
                hits.append(GenHit("main", call, q, "search", ts, query, round(score, 4), session))
                score -= r.uniform(0.01, 0.08)
            if r.random() < p.read_after:
                hits.append(GenHit("main", f"r{n}", f.path, "get", ts + 4, None, None, session))
        for f in self.files.values():
            f.needs.sort()
        hits.sort(key=lambda h: (h.ts, h.call_id, h.path))
        files = sorted(self.files.values(), key=lambda f: (f.created, f.path))
        return History(self.start, self.end, p, files, hits, calls)  # type: ignore[arg-type]


def generate_e(seed: int, params: FamilyEParams | None = None) -> History:
    """One history of family E (module docstring)."""
    w = _World(seed, params or FamilyEParams())
    w.build()
    return w.history()
