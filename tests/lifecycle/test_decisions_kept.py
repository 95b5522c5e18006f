"""Decisions read from what the database keeps: the same as from every hit ranked again.

``reflect`` takes every file's hit times (its trends, its page's heatmap) from the expire
plan's one read of (path, time, strength) and its pairs from the last 30 days' rows; the
replay (``simulate``, and the calibration a deciding command learns) takes each hit's
strength from the kept column instead of ranking every call again. Each is held here to
the way it was computed before, on generated installs (real SQLite, real files): at the
end of the history and a month before it, so that hits from the future, within the
clock-skew allowance and beyond it, are among them.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from memoryd import signals
from memoryd.policy import replay as rp
from support.histories import GenParams, generate, write_history

pytestmark = pytest.mark.unit
DAY = 86400.0


def _install(tmp_path: Path, seed: int, days: int = 150):  # type: ignore[no-untyped-def]
    """A generated install whose hits are recorded in no order of time (as transcripts
    read in another order than they were written leave them)."""
    import sqlite3

    from memoryd.config import Config, resolve_paths

    h = generate(seed, GenParams(days=days))
    db = tmp_path / "oc" / "memoryd" / "state.db"
    write_history(h, tmp_path / "oc" / "workspace", db)
    with sqlite3.connect(db) as conn:
        ids = [i for (i,) in conn.execute("SELECT id FROM hits")]
        order = random.Random(seed).sample(ids, len(ids))
        conn.executemany("UPDATE hits SET id = ? WHERE id = ?", [(-i, i) for i in ids])
        conn.executemany("UPDATE hits SET id = ? WHERE id = ?",
                         [(new, -old) for old, new in zip(ids, order, strict=True)])  # fmt: skip
    (tmp_path / "home").mkdir()
    env = {"OPENCLAW_STATE_DIR": str(tmp_path / "oc"), "HOME": str(tmp_path / "home")}
    return h, Config(), resolve_paths(Config(), env)


def _reflect_parts(cfg, paths, store, now: float, *, every_hit: bool):  # type: ignore[no-untyped-def]
    """What reflect builds (its document, the page's heatmap, every file's measures), from a
    snapshot whose hits are read first (``every_hit``: the way before the kept times) or not."""
    from memoryd.policy.expire_plan import build_plan, scores_of
    from memoryd.report_page import file_heat, week_starts
    from memoryd.reports import cooccurrence, reflect_document

    snap = signals.snapshot(cfg, paths, store, now)
    if every_hit:
        assert snap.hits is not None  # (read: every later measure takes it from there)
    scores = scores_of(cfg, snap)
    plan = build_plan(cfg, snap, scores)
    recent = snap.hits_since(now - 30 * DAY)
    pairs = cooccurrence(recent, now - 30 * DAY)
    doc = reflect_document(snap.signals, scores, {}, plan.as_dict(), pairs, now)
    starts = week_starts(now, snap.tz)
    heat = file_heat(snap.times_by_path(), {s.path for s in snap.signals}, starts, now,
                     [str(s) for s in starts])  # fmt: skip
    measures = {
        s.path: (s.hit_times, s.activation, s.fast_rate, s.slow_rate, s.trend, s.daily,
                 s.distinct_days)
        for s in snap.signals
    }  # fmt: skip
    recent_hits = {p: sorted(lst, key=repr) for p, lst in recent.items()}
    return doc, heat, measures, recent_hits, (snap._hits is None, snap._kept)


@pytest.mark.parametrize("seed", [4, 11])
def test_reflect_from_the_kept_times_says_what_every_hit_says(tmp_path: Path, seed: int) -> None:
    """Every file's hit times, activation, rates, trend and daily series, the report's
    document (top, rising, cooling, pairs, the plan) and the page's heatmap: the same from
    the plan's read as from every hit read as a :class:`memoryd.signals.Hit`."""
    from memoryd.store import Store

    h, cfg, paths = _install(tmp_path, seed)
    for now in (h.end, h.end - 30 * DAY):
        with Store.open(paths.db) as store:
            kept = _reflect_parts(cfg, paths, store, now, every_hit=False)
            again = _reflect_parts(cfg, paths, store, now, every_hit=True)
        assert kept[4][0] and kept[4][1], "the kept read was not the one taken"
        assert kept[:4] == again[:4]
        doc, _heat, measures, _recent, _ = kept
        assert doc["rising"] or doc["cooling"]  # (the trends compared are not all dormant)
        assert doc["together"]
        assert sum(len(m[0]) for m in measures.values()) > 1000


def _reference_rates(times: list[float], now: float) -> tuple[float, float]:
    fast = slow = 0.0
    for ts in times:
        age = max(now - ts, 0.0) / DAY
        fast += math.exp(-age / signals.FAST_TAU_DAYS)
        slow += math.exp(-age / signals.SLOW_TAU_DAYS)
    return fast / signals.FAST_TAU_DAYS, slow / signals.SLOW_TAU_DAYS


def test_the_rates_are_added_up_as_a_loop_adds_them() -> None:
    """Bit for bit, in the order given: the trends (and their order in the report) rest on
    them; hits after ``now`` (within the skew allowance) count as now."""
    rng = random.Random(3)
    now = 1.77e9
    for _ in range(400):
        n = rng.choice((0, 1, 2, rng.randint(3, 400)))
        times = sorted(now - rng.choice((rng.uniform(-DAY, 400 * DAY), rng.expovariate(1e-5)))
                       for _ in range(n))  # fmt: skip
        assert signals.rates(times, now) == _reference_rates(times, now)
        assert signals.rates(tuple(times), now) == _reference_rates(times, now)


def _replay_hits(tmp_path: Path, seed: int, now: float):  # type: ignore[no-untyped-def]
    from memoryd import own_history as oh
    from memoryd.store import Store
    from memoryd.strength import load_hit_rows

    h, _cfg, _paths = _install(tmp_path, seed)
    with Store.open(tmp_path / "oc" / "memoryd" / "state.db") as store:
        present = {f.path for f in h.files[: len(h.files) * 3 // 4]}  # (some files gone)
        got = oh.kept_replay(store.conn, None, present, now)
        assert got is not None
        ranked = oh.replay_hits_ranked(load_hit_rows(store.conn), present, now)
        assert oh.kept_replay(store.conn, ["main"], present, now) is None  # (one of several)
        queries = dict(((a, c), q) for a, c, q in store.conn.execute(
            "SELECT agent, call_id, query FROM calls"))  # fmt: skip
        rows = store.conn.execute("SELECT memory_path, ts FROM hits").fetchall()
    # each recorded path's first hit by now, and the calls with their queries, as from
    # every row: the same
    first: dict[str, float | None] = {}
    for path, ts in rows:
        first.setdefault(path, None)
        if ts <= now and (first[path] is None or ts < first[path]):  # type: ignore[operator]
            first[path] = ts
    assert got.first_hit == first
    _hits, calls = ranked
    assert got.calls == [(ts, queries.get(key)) for key, ts in calls.items()]
    return h, (got.hits, calls), ranked


@pytest.mark.parametrize("seed", [2, 7])
def test_the_replay_from_the_kept_strength_decides_as_ranking_every_call(
    tmp_path: Path, seed: int
) -> None:
    """The hits (path, time, kind), the calls, and each hit's strength at every moment from
    its own time on (the replay asks no other): the same from the kept column as from
    every call ranked again; and so is every policy's replay, run by run, its calibration
    included."""
    from memoryd.policy import candidates as pc

    h = generate(seed, GenParams(days=150))
    for now in (h.end, h.end - 30 * DAY):
        sub = tmp_path / f"at-{now:.0f}"
        sub.mkdir()
        _h, (kept, kept_calls), (ranked, ranked_calls) = _replay_hits(sub, seed, now)
        assert kept_calls == ranked_calls and list(kept_calls) == list(ranked_calls)
        assert [x[:3] for x in kept] == [x[:3] for x in ranked]
        assert len(kept) > 1000
        rng = random.Random(seed)
        for a, b in zip(kept, ranked, strict=True):
            assert a.strong == b.strong
            for t in (a.ts, a.ts + 1.0, a.ts + rng.uniform(0, 90 * DAY), math.inf):
                assert a.strong_at(t) == b.strong_at(t)
        assert any(not x.strong for x in kept) and any(x.rank == 2 and x.strong for x in kept)
        kinds = {f.path: "daily" if f.kind == "daily" else "topic" for f in h.files}
        files = [rp.ReplayFile(f.path, f.created, f.size, False, kinds[f.path]) for f in h.files]
        first = min(x.ts for x in kept)
        runs = [t for t in (first + 30 * DAY + k * 7 * DAY for k in range(30)) if t <= now]
        policies = [pc.policy_named(n) for n in ("seed", "cut30", pc.DEFAULT_POLICY)]
        got = rp.replay(files, kept, runs, policies, 60)
        want = rp.replay(files, ranked, runs, policies, 60)
        assert [rp.result_document(r, str) for r in got] == [
            rp.result_document(r, str) for r in want]  # fmt: skip
        assert [r.samples for r in got] == [r.samples for r in want]


def test_the_notes_archived_at_a_moment_are_those_of_every_episode_asked() -> None:
    """harm's :meth:`_Archive.all_at` (a prefix of the episodes by their start) against
    asking every episode (left < ts <= back), at their very edges too."""
    from memoryd.policy.harm import _Archive

    rng = random.Random(8)
    for _ in range(60):
        paths = [f"memory/n{i}.md" for i in range(rng.randint(1, 30))]
        hits = [rp.ReplayHit(rng.choice(paths), rng.uniform(0, 100) * DAY)
                for _ in range(rng.randint(0, 200))]  # fmt: skip
        decisions = [(rng.uniform(0, 100) * DAY, rng.sample(paths, rng.randint(0, len(paths))))
                     for _ in range(rng.randint(0, 12))]  # fmt: skip
        archive = _Archive(decisions, hits)
        moments = [rng.uniform(-1, 101) * DAY for _ in range(50)]
        moments += [x for _p, left, back in archive.episodes for x in (left, back)]
        for ts in moments:
            want = sorted({p for p, left, back in archive.episodes if left < ts <= back})
            assert archive.all_at(ts) == want


def _reference_recall_picks(query: str, texts: dict[str, str], limit: int = 3) -> list[str]:
    """What recall brings back of an archive, note by note through :func:`match_file` (as
    ``memoryd recall`` matches a file it reads)."""
    from memoryd.tierstore.search import (
        ARCHIVE,
        archive_brings_back,
        match_file,
        needs_unicode_fold,
        normalise_words,
    )

    words = normalise_words([query])
    if not words:
        return []
    fold = needs_unicode_fold(words)
    found = []
    for path, text in texts.items():
        got, occ, _tag, _snippet = match_file(text.encode("utf-8"), words, ARCHIVE, fold)
        if got:
            found.append((-len(got), -occ, path))
    found.sort()
    n = archive_brings_back([(-w, -o) for w, o, _ in found], limit)
    return [p for _, _, p in found[:n]]


def test_the_replayed_recall_picks_what_recall_matches_note_by_note() -> None:
    """simulate's harm replay asks recall of thousands of searches over the same archived
    notes (each note's text lowered once): the same picks as matching each note's bytes,
    for ASCII words, words that need Unicode case folding, and words of a caseless script,
    words inside longer ones and words with punctuation; also when the notes' words were
    indexed first (``ArchiveRecall(texts)``, as ``simulate`` asks it)."""
    from memoryd.tierstore.search import ArchiveRecall
    from support.reference_rules import archive_recall_picks

    rng = random.Random(12)
    vocab = ["kayak", "June", "june", "Straße", "STRASSE", "İstanbul", "部署", "notes", "ÉTÉ",
             "été", "river", "plan", "x", "kayaking", "xx", "e-mail", "plan:", "部署会议",
             "Notes.md"]  # fmt: skip
    for _ in range(200):
        texts = {
            f"memory/n{i}.md": rng.choice(("", "\n", "-")).join(
                rng.choices(vocab, k=rng.randint(0, 30)))
            for i in range(rng.randint(1, 12))
        }  # fmt: skip
        indexed = ArchiveRecall(texts.values())
        for _ in range(10):
            query = " ".join(rng.choices(vocab, k=rng.randint(0, 4)))
            for limit in (1, 3):
                want = _reference_recall_picks(query, texts, limit)
                assert archive_recall_picks(query, texts, limit) == want
                assert indexed(query, texts, limit) == want, (query, texts)


def test_the_score_counts_the_words_as_keyword_and_tag_match_count_them() -> None:
    """The score's best query and its components, bit for bit, as
    :func:`keyword_match` and :func:`tag_match` give them (reflect scores a year's notes
    against 200 queries with the words looked up in C), tagged notes and repeated words
    among them."""
    from memoryd.config import Config
    from memoryd.policy import score as sp

    cfg = Config().score
    rng = random.Random(21)
    vocab = ["kayak", "june", "river", "plan", "部署", "deploy", "deployments", "kube", "notes"]
    now = 1.77e9
    for _ in range(300):
        body = " ".join(rng.choices(vocab, k=rng.randint(0, 12)))
        tags = ", ".join(rng.sample(vocab, rng.randint(0, 3)))
        doc = sp.Document.of((f"tags: {tags}\n" if tags else "") + body)
        queries = sp.prepare_queries(" ".join(rng.choices(vocab, k=rng.randint(1, 5)))
                                     for _ in range(rng.randint(0, 8)))  # fmt: skip
        sig = signals.file_signals(
            signals.MemoryFile("memory/x.md", 10, now - 40 * DAY), (), now,
            counts=signals.HitCounts(3, 1, 2, 3, now - DAY),
        )  # fmt: skip
        got = sp.score(sig, doc, queries, cfg)
        best = None
        for text, words in queries:
            k, g = sp.keyword_match(words, doc), sp.tag_match(words, doc)
            part = cfg.keyword_weight * k + cfg.tag_weight * g
            if best is None or part > best[0]:
                best = (part, k, g, text)
        if best is not None:
            assert (got.keyword, got.tag, got.query) == best[1:]
