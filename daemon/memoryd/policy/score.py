"""Relevance score, pruning and capacity.

``score = 0.4 keyword + 0.2 time decay + 0.2 access frequency + 0.2 tag match`` (weights
from ``[score]``), each component in 0..1, as docs/lifecycle.md ("Score") defines them.
Without a query (reports, pruning) each distinct query the agent asked in the last
``query_window_days`` is tried and the best counts (and is named); with none at all, the
score is time and access alone, re-weighted to 0..1.

Pruning (score below ``prune_threshold``) and capacity (at most ``capacity`` files) archive
at most ``max_prune_fraction`` of the files in one run, lowest scores first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..config import ScoreConfig
from ..signals import DAY, FileSignals

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STOP = frozenset(
    " ".join(
        (
            "the and for are was were with what when where which who how did does do is it its",
            "of to in on at by an or be we you i me my our this that these those from about as",
            "can could would should have has had not no yes any all",
        )
    ).split()
)
_TAG_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:tags?|标签|標籤)\s*[:：]\s*(.+)$", re.I | re.M)
_HASHTAG = re.compile(r"(?:(?<=\s)|^)#([^\s#,.;:!?()\[\]{}\"'`]+)", re.M)
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)


def tokens(text: str) -> list[str]:
    """Query/document words: Latin words (≥ 2 letters, no stop words) and CJK pairs."""
    low = text.casefold()
    if low.isascii():  # (no CJK run to pair: one pass; most queries and notes)
        return [w for w in _WORD.findall(low) if len(w) >= 2 and w not in _STOP]
    out: list[str] = []
    for run in _CJK.findall(low):
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    for word in _WORD.findall(_CJK.sub(" ", low)):
        if len(word) >= 2 and word not in _STOP:
            out.append(word)
    return out


def extract_tags(text: str) -> tuple[str, ...]:
    """Tags of a note: front matter ``tags``, ``tags:`` / ``标签:`` lines, ``#hashtags``."""
    found: list[str] = []
    front = _FRONT.match(text)
    if front:
        lines = front[1].splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^\s*tags\s*:\s*(.*)$", line, re.I)
            if not m:
                continue
            inline = m[1].strip()
            if inline:
                found.extend(_split_tags(inline))
            else:  # a YAML list on the following lines
                for item in lines[i + 1 :]:
                    im = re.match(r"^\s*-\s*(.+)$", item)
                    if not im:
                        break
                    found.extend(_split_tags(im[1]))
        body = text[front.end() :]
    else:
        body = text
    for m in _TAG_LINE.finditer(body):
        found.extend(_split_tags(m[1]))
    for m in _HASHTAG.finditer(body):
        tag = m[1]
        if not tag.isdigit():
            found.append(tag)
    seen: dict[str, None] = {}
    for t in found:
        t = t.strip().strip("#").strip("'\"").casefold()
        if t:
            seen.setdefault(t, None)
    return tuple(seen)


def _split_tags(value: str) -> list[str]:
    value = value.strip().strip("[]")
    return [p for p in re.split(r"[,，、;；\s]+", value) if p.strip("#'\" ")]


@dataclass(frozen=True)
class Document:
    """What the score needs of a file's text, computed once: its word set and tags."""

    words: frozenset[str]
    tags: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> Document:
        return cls(frozenset(tokens(text)), extract_tags(text))


@dataclass(frozen=True)
class Score:
    """A file's score with its four components (None: not measurable without a query)."""

    path: str
    total: float
    keyword: float | None
    time: float
    access: float
    tag: float | None
    query: str | None  # the query the match was measured against


def time_decay(age_days: float, cfg: ScoreConfig) -> float:
    days = math.floor(max(age_days, 0.0))
    if days <= cfg.no_decay_days:
        return 1.0
    return max(cfg.decay_floor, 1.0 - cfg.decay_per_day * (days - cfg.no_decay_days))


def access_frequency(sig: FileSignals, cfg: ScoreConfig) -> float:
    if not sig.hits_total:
        return 0.0
    base = math.log1p(sig.hits_total) / math.log1p(max(cfg.access_saturation, 1))
    if sig.last_hit is not None and (sig.now - sig.last_hit) <= cfg.recent_access_days * DAY:
        base *= 1.0 + cfg.recent_access_bonus
    return min(base, 1.0)


def keyword_match(query_words: Sequence[str], doc: Document) -> float:
    if not query_words:
        return 0.0
    return sum(1 for w in query_words if w in doc.words) / len(query_words)


def tag_match(query_words: Sequence[str], doc: Document) -> float:
    if not doc.tags:
        return 0.5
    if not query_words:
        return 0.0
    hit = 0
    for w in query_words:
        if any(w in tag or (len(tag) >= 2 and tag in w) for tag in doc.tags):
            hit += 1
    return min(hit / len(query_words), 1.0)


def score(
    sig: FileSignals, doc: Document, queries: Sequence[tuple[str, Sequence[str]]], cfg: ScoreConfig
) -> Score:
    """Score one file against ``queries`` ((text, words) pairs; the best counts)."""
    t = time_decay(sig.age_days, cfg)
    a = access_frequency(sig, cfg)
    if not queries:
        weight = cfg.time_weight + cfg.access_weight
        total = (cfg.time_weight * t + cfg.access_weight * a) / weight if weight else 0.0
        return Score(sig.path, total, None, t, a, None, None)
    best: tuple[float, float, float, str] | None = None
    # (keyword_match and tag_match, as they count, the words looked up by ``map`` in C: a
    # year's notes against 200 queries are 200 k pairs; a note without tags scores 0.5)
    holds = doc.words.__contains__
    kw, tw = cfg.keyword_weight, cfg.tag_weight
    for text, words in queries:
        k = sum(map(holds, words)) / len(words) if words else 0.0
        g = tag_match(words, doc) if doc.tags else 0.5
        part = kw * k + tw * g
        if best is None or part > best[0]:
            best = (part, k, g, text)
    assert best is not None
    part, k, g, text = best
    total = part + cfg.time_weight * t + cfg.access_weight * a
    weights = cfg.keyword_weight + cfg.time_weight + cfg.access_weight + cfg.tag_weight
    return Score(sig.path, total / weights, k, t, a, g, text)


def prepare_queries(texts: Iterable[str], limit: int = 200) -> list[tuple[str, list[str]]]:
    """Distinct queries (first ``limit``) with their words; queries without words dropped."""
    out: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for text in texts:
        key = text.strip().casefold()
        if not key or key in seen or key.startswith("__dreaming"):
            continue
        seen.add(key)
        words = tokens(text)
        if words:
            out.append((text.strip(), words))
        if len(out) >= limit:
            break
    return out


def prune_candidates(
    scores: Sequence[Score], eligible: Iterable[str], total_files: int, cfg: ScoreConfig
) -> dict[str, tuple[str, str]]:
    """path → (rule, reason) for files pruning / capacity would archive (maybe none).

    Only ``eligible`` files (not protected, marked, pinned or already expiring)
    are candidates; at most ``max_prune_fraction`` of ``total_files`` go.
    """
    if not (cfg.prune_enabled or cfg.capacity_enabled):
        return {}
    ok = set(eligible)
    ranked = sorted((s for s in scores if s.path in ok), key=lambda s: (s.total, s.path))
    chosen: dict[str, tuple[str, str]] = {}
    if cfg.prune_enabled:
        for s in ranked:
            if s.total < cfg.prune_threshold:
                chosen[s.path] = (
                    "prune",
                    f"score {s.total:.2f} below the prune threshold {cfg.prune_threshold}",
                )
    if cfg.capacity_enabled:
        remaining = total_files - len(chosen)
        for s in ranked:
            if remaining <= cfg.capacity:
                break
            if s.path not in chosen:
                chosen[s.path] = (
                    "capacity",
                    f"over capacity ({total_files} files, keep {cfg.capacity}); "
                    f"score {s.total:.2f} among the lowest",
                )
                remaining -= 1
    cap = math.floor(cfg.max_prune_fraction * total_files)
    if len(chosen) > cap:
        order = {s.path: i for i, s in enumerate(ranked)}
        keep = sorted(chosen, key=lambda p: order[p])[:cap]
        chosen = {p: chosen[p] for p in keep}
    return chosen


def metrics(
    scores: Sequence[Score], sizes: Mapping[str, int], would_prune: int
) -> dict[str, float]:
    """The memory's size (files, bytes), average score, and the share expire would archive."""
    n = len(scores)
    return {
        "memory_size": n,
        "memory_bytes": sum(sizes.values()),
        "avg_relevance_score": round(sum(s.total for s in scores) / n, 4) if n else 0.0,
        "prune_rate": round(would_prune / n, 4) if n else 0.0,
    }
