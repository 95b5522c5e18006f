"""``simulate`` at a year of heavy use: its shortcuts decide as the plain computation does.

The replay's restores and the harm table look only at each search's best restore match
(the daemon's rule restores that one or none), found alone (``Matcher.best``); harm's need
events are read from the replay's prepared hits one by one, and its recall asks whether
the needed note is among those brought back without ranking the others when it cannot be.
Each is held here to the way before: every candidate listed and looked through, every need
event listed and sorted, every recall ranked; on generated histories and made-up notes.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence

import pytest

from memoryd.commands.simulate import restore_best
from memoryd.policy import candidates as pc
from memoryd.policy import harm as hm
from memoryd.policy import replay as rp
from memoryd.policy.restore_match import Matcher, best_match
from memoryd.tierstore.search import ArchiveRecall
from support.histories import GenParams, generate, replay_inputs
from support.reference_rules import archive_recall_picks, install_need_events, restore_index

pytestmark = pytest.mark.unit
DAY = 86400.0


def _texts_and_queries(seed: int) -> tuple[dict[str, object], dict[str, str], list[str]]:
    inp = replay_inputs(generate(seed, GenParams(days=120)))
    texts = dict(inp["texts"])  # type: ignore[call-overload]
    texts["memory/tagged.md"] = "---\ntags: [kubernetes, rollout]\n---\nnotes about kubernetes\n"
    texts["memory/parts.md"] = "tags: kube, deployments, zebraherd, x, 部署\nkube deploy notes\n"
    texts["memory/a-twin.md"] = texts["memory/z-twin.md"] = "kayak river june notes\n"
    # a clear leader the query does not name: each of its words is in four notes
    texts["memory/ferry-all.md"] = "harbour ferry schedule\n"
    for k in range(3):
        texts[f"memory/ferry-{k}.md"] = "harbour ferry\n"
        texts[f"memory/sched-{k}.md"] = "schedule\n"
    rng = random.Random(seed)
    vocab = sorted({w for t in texts.values() for w in t.split() if w.isalpha()})
    made = ["kubernetes rollout plan", "kubernetes", "", "kayak river", "deploy zebra", "部署",
            "harbour ferry schedule"]
    made += [" ".join(rng.sample(vocab, rng.randint(1, 6))) for _ in range(300)]
    return inp, texts, [c.query for c in inp["calls"]][:400] + made  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", [2, 9])
def test_the_best_restore_match_alone_is_the_first_of_every_candidate(seed: int) -> None:
    _inp, texts, queries = _texts_and_queries(seed)
    m = Matcher(texts)
    every = [m.candidates(q) for q in queries]
    # the first alone, when it leads; two or more sharing the best score are no best match
    firsts = [c[:1] if len(c) < 2 or c[1][1] < c[0][1] else [] for c in every]
    assert [m.best(q) for q in queries] == firsts
    assert sum(1 for f in firsts if f) > 100
    twins = queries.index("kayak river")
    assert [p for p, *_ in every[twins][:2]] == ["memory/a-twin.md", "memory/z-twin.md"]
    assert firsts[twins] == [] and best_match("kayak river", texts) is None  # (the daemon's)
    assert any(f and not f[0][2] for f in firsts) and any(f and f[0][2] for f in firsts)
    assert any(len(c) > 1 and c[1][1] == c[0][1] for c in every)  # (ties, beyond the twins)


def _reference_restores(
    res: rp.PolicyResult,
    calls: Sequence[rp.Call],
    cands: Sequence[Sequence[tuple[str, float, bool]]],
    hits: Sequence[rp.ReplayHit],
    horizon: float,
) -> tuple[int, ...]:
    """Restore on demand as the replay counted it, looking through every candidate."""
    times: dict[str, list[float]] = {}
    for h in hits:
        times.setdefault(h.path, []).append(h.ts)
    for ts in times.values():
        ts.sort()

    def first_after(path: str, a: float) -> float:
        ts = times.get(path, [])
        i = bisect.bisect_right(ts, a)
        return ts[i] if i < len(ts) else math.inf

    def any_in(path: str, a: float, b: float) -> bool:
        return first_after(path, a) <= b

    by_path: dict[str, list[tuple[float, float]]] = {}
    for t, chosen in res.decisions:
        for path in chosen:
            by_path.setdefault(path, []).append((t, first_after(path, t)))
    restored: set[tuple[str, float]] = set()
    wanted: set[tuple[str, float]] = set()
    n = caught = needless = right = 0
    for i in sorted(range(len(calls)), key=lambda i: calls[i].ts):
        ts, needed = calls[i].ts, calls[i].needed
        if needed is not None:
            ep = next((e for e in by_path.get(needed, ()) if e[0] < ts <= e[1]), None)
            if ep is not None:
                wanted.add((needed, ep[0]))
        best_present = -1.0
        if len(cands[i]) > 1 and cands[i][1][1] >= cands[i][0][1]:
            continue  # a tie at the top: no one best match, nothing restored
        for path, score, *named in cands[i]:
            ep = next((e for e in by_path.get(path, ()) if e[0] < ts <= e[1]), None)
            if ep is None:
                best_present = max(best_present, score)
                continue
            if best_present >= score or named == [False]:
                break
            if (path, ep[0]) not in restored:
                restored.add((path, ep[0]))
                n += 1
                caught += any_in(path, ep[0], ep[0] + horizon) and ep[1] >= ts
                # (a hit at the restore's own moment counts: [ts, ts + horizon])
                needless += not any(ts <= t <= ts + horizon for t in times.get(path, ()))
                right += needed == path
            break
    return n, caught, needless, right, len(wanted)


def _reference_search_restores(cands, archive, ts, still):  # type: ignore[no-untyped-def]
    """harm's restore on demand at a search, looking through every candidate."""
    if len(cands) > 1 and cands[1][1] >= cands[0][1]:
        return None  # a tie at the top
    best_present = -1.0
    for path, score, *named in cands:
        if path != still and not archive.archived_at(path, ts):
            best_present = max(best_present, score)
            continue
        if best_present >= score or named == [False]:
            return None
        return str(path)
    return None


@pytest.mark.parametrize("seed", [3, 8])
def test_restores_and_harm_from_the_best_match_alone_are_those_of_every_candidate(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restores every policy's replay counts, and its harm table (the needs from the
    prepared hits, recall asked whether it reaches the note), against every candidate
    looked through, every need event listed and every recall ranked."""
    inp = replay_inputs(generate(seed, GenParams(days=150)))
    files, hits, runs, calls, texts = (inp[k] for k in ("files", "hits", "runs", "calls", "texts"))
    policies = [pc.policy_named(n) for n in ("seed", "cut30", pc.DEFAULT_POLICY)]
    every = restore_index(calls, texts)
    best = restore_best(calls, texts)
    assert best == [c[:1] if len(c) < 2 or c[1][1] < c[0][1] else [] for c in every]
    prepared = rp.prepare(rp.by_path(hits))
    got = rp.replay(files, hits, runs, policies, 60, calls=calls,
                    restore_candidates=best.__getitem__, prepared=prepared)  # fmt: skip
    want = rp.replay(files, hits, runs, policies, 60, calls=calls,
                     restore_candidates=every.__getitem__)  # fmt: skip
    assert [rp.result_document(r, str) for r in got] == [
        rp.result_document(r, str) for r in want]  # fmt: skip
    restored = 0
    for r in got:
        ref = _reference_restores(r, calls, every, hits, 60 * DAY)
        assert (r.restores, r.restores_caught, r.restores_needless, r.restores_right,
                r.restores_wanted) == ref  # fmt: skip
        restored += r.restores
    assert restored > 0
    index = hm.need_index(prepared, calls)
    recall = ArchiveRecall()
    fast = [hm.harm(r.decisions, hits, [], calls, candidates=best.__getitem__, recall=recall,
                    texts=texts, index=index).document() for r in got]  # fmt: skip
    events = install_need_events(hits, calls)
    assert [e for p in sorted(index.events) for e in index.events[p]] == sorted(
        events, key=lambda e: (e.path, e.ts))  # fmt: skip
    monkeypatch.setattr(hm, "_search_restores", _reference_search_restores)
    plain = [hm.harm(r.decisions, hits, events, calls, candidates=every.__getitem__,
                     recall=archive_recall_picks, texts=texts).document() for r in got]  # fmt: skip
    assert fast == plain
    assert sum(int(h["needed"]) for h in fast) > 20  # type: ignore[call-overload]
    assert any(h["ways"].get("later recall") for h in fast)  # type: ignore[attr-defined]
    # and with the archive in OpenClaw's index (a search that found the note reaches it)
    fast = [hm.harm(r.decisions, hits, [], calls, candidates=best.__getitem__, recall=recall,
                    texts=texts, index=index, archive_indexed=True).document()
            for r in got]  # fmt: skip
    plain = [hm.harm(r.decisions, hits, events, calls, candidates=every.__getitem__,
                     recall=archive_recall_picks, texts=texts, archive_indexed=True).document()
             for r in got]  # fmt: skip
    assert fast == plain
    assert any(h["ways"].get("same index") for h in fast)  # type: ignore[attr-defined]


def test_recall_reaches_a_note_exactly_when_it_is_among_the_picks() -> None:
    """Whether recall brings a note back, asked of one :class:`ArchiveRecall` over many
    recalls (its counts kept), against ranking every note each time: ties in words, in
    occurrences and in both, notes of the same text, words that need Unicode folding, words
    inside longer ones and words with punctuation. Asked of one that counts each note as it
    comes, and of one given the notes first (their words indexed, as ``simulate`` has it)."""
    rng = random.Random(4)
    vocab = ["kayak", "June", "june", "Straße", "STRASSE", "部署", "river", "plan", "x", "été",
             "kayaking", "xxx", "e-mail", "river-plan", "部署会议"]  # fmt: skip
    recall = ArchiveRecall()
    asked = reached = 0
    for _ in range(300):
        texts = {f"memory/n{i}.md": " ".join(rng.choices(vocab, k=rng.randint(0, 12)))
                 for i in range(rng.randint(1, 14))}  # fmt: skip
        if rng.random() < 0.2:
            texts["memory/same.md"] = next(iter(texts.values()))
        indexed = ArchiveRecall(texts.values())
        for _ in range(6):
            query = " ".join(rng.sample(vocab, rng.randint(0, 3)))
            pool = {p: t for p, t in texts.items() if rng.random() < 0.8}
            for limit in (1, 3):
                picks = archive_recall_picks(query, pool, limit)
                assert recall(query, pool, limit) == picks
                assert indexed(query, pool, limit) == picks
                for path, text in pool.items():
                    for asking in (recall, indexed):
                        got = asking.reaches(query, path, text, lambda pool=pool: pool, limit)
                        assert got == (path in picks), (query, path, pool)
                    asked += 1
                    reached += got
    assert asked > 5000 and reached > 500
