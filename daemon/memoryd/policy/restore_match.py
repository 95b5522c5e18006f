"""Restore on demand: does a search query ask for a note memoryd archived?

OpenClaw's search scores are on their own scale (and an archived note is not in
OpenClaw's index any more, so it cannot be returned at all); memoryd therefore
matches the query against the archived text with its own keyword / tag score
(:mod:`memoryd.policy.score`): the share of the query's words found in the note,
lifted by the share found among its tags when it has tags. A restore needs a
score of at least :data:`RESTORE_THRESHOLD`, calibrated on generated histories
(``bench/bench_policies.py --restore``; figures in docs/decisions.md): queries
written for a needed, archived note against every archived note's text.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from .score import Document, keyword_match, tag_match, tokens

# Calibrated on generated histories (bench/bench_policies.py --restore): at 0.6 (more
# than half of the query's words in the note) 89 % of queries for an archived note restore
# it, and 3 % of queries for a note that is not archived restore another one.
RESTORE_THRESHOLD: float = 0.6

KEYWORD_WEIGHT, TAG_WEIGHT = 0.4, 0.2  # [score]'s default weights, without time and access


@functools.lru_cache(maxsize=4096)
def _document(text: str) -> Document:
    return Document.of(text)


@functools.lru_cache(maxsize=4096)
def _words(query: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tokens(query)))


def match_score(query: str, text: str) -> float:
    """How well ``query`` asks for the note ``text``, 0..1 (0: no words to match).

    The share of the query's words found in the note; with tags, the blend of that
    share and the share found among the tags (0.4 : 0.2, as in ``[score]``) when it is
    higher. Distinct query words count once.
    """
    words = _words(query)
    if not words:
        return 0.0
    doc = _document(text)
    k = keyword_match(words, doc)
    if not doc.tags:
        return k
    blend = (KEYWORD_WEIGHT * k + TAG_WEIGHT * tag_match(words, doc)) / (
        KEYWORD_WEIGHT + TAG_WEIGHT
    )
    return max(k, blend)  # a tag that matches lifts the score; tags never lower it


def best_match(query: str, candidates: Mapping[str, str]) -> tuple[str, float] | None:
    """The candidate (path → archived text) the query asks for most, if at or above the
    threshold; ties go to the first path in sort order."""
    words = _words(query)
    if not words:
        return None
    best: tuple[str, float] | None = None
    for path in sorted(candidates):
        s = match_score(query, candidates[path])
        if s >= RESTORE_THRESHOLD and (best is None or s > best[1]):
            best = (path, s)
    return best
