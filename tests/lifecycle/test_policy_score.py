"""Relevance score (seed 001): components, tags, pruning limits — numbers checked by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from memoryd.config import ScoreConfig
from memoryd.policy.score import (
    Document,
    Score,
    access_frequency,
    extract_tags,
    metrics,
    prepare_queries,
    prune_candidates,
    score,
    time_decay,
    tokens,
)
from memoryd.signals import DAY, Hit, file_signals
from memoryd.workspace import MemoryFile

NOW = datetime(2026, 11, 3, 12, tzinfo=UTC).timestamp()
CFG = ScoreConfig()


def _sig(age_days: float, hit_ages: list[float], rel: str = "memory/t.md"):
    hits = [Hit(NOW - a * DAY, "q", f"c{i}") for i, a in enumerate(hit_ages)]
    return file_signals(MemoryFile(rel, 10, NOW - age_days * DAY), hits, NOW)


def test_tokens_split_latin_words_and_chinese_pairs() -> None:
    assert tokens("The Boat trip, 2026!") == ["boat", "trip", "2026"]
    assert tokens("咖啡配方") == ["咖啡", "啡配", "配方"]
    assert tokens("用 espresso 做咖啡") == ["用", "做咖", "咖啡", "espresso"]


def test_ascii_text_gives_the_words_the_general_split_gives() -> None:
    """Plain ASCII (most queries and notes) is split in one pass: the same words, in the same
    order, as splitting out CJK runs first, for text with punctuation, digits, stop words,
    one-letter words, underscores and case."""
    import random

    def general(text: str) -> list[str]:
        # (the split every text holding a CJK character takes: one put first, then dropped)
        got = tokens("咖 " + text)
        assert got[0] == "咖"
        return got[1:]

    rng = random.Random(3)
    pieces = ["The", "boat", "a", "I", "x_y", "2026", "of", "AND", "-", ", ", "!", " ", "\n",
              "Trip's", "e-mail", "__", "9"]  # fmt: skip
    for _ in range(2000):
        text = "".join(rng.choices(pieces, k=rng.randint(0, 12)))
        assert text.isascii() and tokens(text) == general(text), text


def test_tags_from_front_matter_lines_and_hashtags_not_headings() -> None:
    text = (
        "---\ntitle: x\ntags: [coffee, Espresso]\n---\n"
        "# Heading\n标签：咖啡、烘焙\nSee #router and #2.\n"
    )
    assert extract_tags(text) == ("coffee", "espresso", "咖啡", "烘焙", "router")
    listed = "---\ntags:\n  - boat\n  - trip\n---\nbody"
    assert extract_tags(listed) == ("boat", "trip")
    assert extract_tags("# Only a heading\n## And another") == ()


def test_time_decay_follows_the_seed() -> None:
    assert time_decay(0, CFG) == 1.0
    assert time_decay(7.9, CFG) == 1.0  # whole days: 7
    assert time_decay(8, CFG) == pytest.approx(0.98)
    assert time_decay(30, CFG) == pytest.approx(1 - 0.02 * 23)
    assert time_decay(400, CFG) == 0.1


def test_access_frequency_log_scaled_with_recent_bonus() -> None:
    assert access_frequency(_sig(10, []), CFG) == 0.0
    old = access_frequency(_sig(60, [20] * 4), CFG)
    assert old == pytest.approx(math.log(5) / math.log(21))
    recent = access_frequency(_sig(60, [20, 20, 20, 2]), CFG)
    assert recent == pytest.approx(min(1.0, 1.5 * math.log(5) / math.log(21)))
    assert access_frequency(_sig(60, [1] * 50), CFG) == 1.0


def test_score_components_and_weights() -> None:
    doc = Document.of("---\ntags: [coffee]\n---\nEspresso recipe: grind fine.\n")
    sig = _sig(3, [1])
    s = score(sig, doc, prepare_queries(["espresso grind coffee beans"]), CFG)
    assert s.keyword == pytest.approx(3 / 4)  # espresso, grind, coffee(tag text) found; beans not
    assert s.tag == pytest.approx(1 / 4)
    assert s.time == 1.0
    expected = 0.4 * s.keyword + 0.2 * 1.0 + 0.2 * s.access + 0.2 * s.tag
    assert s.total == pytest.approx(expected)


def test_without_queries_the_score_is_time_and_access_reweighted() -> None:
    s = score(_sig(3, []), Document.of("text"), [], CFG)
    assert (s.keyword, s.tag, s.query) == (None, None, None)
    assert s.total == pytest.approx(0.5)  # (0.2·1 + 0.2·0) / 0.4


def test_best_recent_query_counts() -> None:
    qs = prepare_queries(["router firmware", "boat trip", "Boat Trip", "__dreaming_daily__:x"])
    assert [q for q, _ in qs] == ["router firmware", "boat trip"]
    s = score(_sig(3, []), Document.of("We planned the boat trip."), qs, CFG)
    assert s.query == "boat trip" and s.keyword == 1.0


def _scores(n: int) -> list[Score]:
    return [Score(f"memory/{i:03d}.md", i / n, 0, 1, 0, 0, None) for i in range(n)]


def test_pruning_is_off_by_default_and_capped_at_a_fifth() -> None:
    scores = _scores(100)
    paths = [s.path for s in scores]
    assert prune_candidates(scores, paths, 100, CFG) == {}
    on = CFG._replace(prune_enabled=True)
    got = prune_candidates(scores, paths, 100, on)
    assert len(got) == 20  # 60 score below 0.6, at most 20 % go
    assert set(got) == set(paths[:20])  # the lowest scores first
    assert all(rule == "prune" for rule, _ in got.values())


def test_capacity_keeps_the_best_and_respects_eligibility() -> None:
    scores = _scores(10)
    cfg = CFG._replace(capacity_enabled=True, capacity=8, max_prune_fraction=1.0)
    eligible = [s.path for s in scores if s.path != "memory/000.md"]  # 000 is protected
    got = prune_candidates(scores, eligible, 10, cfg)
    assert set(got) == {"memory/001.md", "memory/002.md"}
    assert all(rule == "capacity" for rule, _ in got.values())


def test_metrics() -> None:
    m = metrics(_scores(4), {"a": 10, "b": 5}, would_prune=1)
    assert m == {
        "memory_size": 4,
        "memory_bytes": 15,
        "avg_relevance_score": 0.375,
        "prune_rate": 0.25,
    }
