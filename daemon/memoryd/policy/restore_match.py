"""Does a ``memory_search`` query ask for an archived file? Pure.

The daemon's restore on demand (:mod:`memoryd.ondemand`) scores every new search query
against the text of each file memoryd archived and brings back the best one when its
score reaches :data:`RESTORE_THRESHOLD`. OpenClaw's own search scores are on another
scale (and never see the archive), so memoryd scores with its own words.

This is the simple keyword version: the share of the query's distinctive words that the
file's text contains. Words are those of memoryd's keyword score
(:func:`memoryd.policy.score.tokens`: case-folded, its stop words dropped, Chinese /
Japanese / Korean text as character pairs), less the words a search uses to ask for
memory in general rather than for one file, Latin words of three letters or more, a
plural ``s`` dropped.
A query made of a file's distinctive words scores 1; unrelated words score 0. The
interface (``match_score``, ``RESTORE_THRESHOLD``, ``best_match``) is what the daemon
relies on; a calibrated scorer may replace the body.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from .score import tokens

# At or above this score a query restores the file (share of its distinctive words found).
RESTORE_THRESHOLD = 0.6

# Words that ask for memory in general, not for one file (``tokens`` drops the common
# English stop words already).
_QUERY_NOISE_WORDS = """
but you one her day get him his man new now old see two way she too use your they know
want been good much some time very come here just like long make many more only over
such take than them well then into most other same still their there through under until
after again also back before being each even every doing while note notes file files
memory today yesterday tomorrow please find search show tell give need last next week
month year let put say out
"""
_QUERY_NOISE = frozenset(_QUERY_NOISE_WORDS.split())


def words(text: str) -> set[str]:
    """The distinctive words of ``text``: the keyword score's words, less query noise."""
    out = set()
    for word in tokens(text):
        if word in _QUERY_NOISE or (word.isascii() and len(word) < 3):
            continue
        if word.isdigit() and len(word) < 4:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


@functools.lru_cache(maxsize=4096)
def _text_words(text: str) -> frozenset[str]:
    """:func:`words` of an archived file's text, remembered: the daemon scores every new
    search against the same archive (1,000 notes took 0.25 s a search to read again)."""
    return frozenset(words(text))


def _share(wanted: set[str], text: str) -> float:
    return len(wanted & _text_words(text)) / len(wanted) if wanted else 0.0


def match_score(query: str, text: str) -> float:
    """Share of the query's distinctive words found in ``text`` (0 when it has none)."""
    return _share(words(query), text)


def best_match(query: str, candidates: Mapping[str, str]) -> tuple[str, float] | None:
    """The candidate (key → text) the query asks for, with its score; None below the threshold.

    Ties go to the key that sorts first, so the answer does not depend on dict order.
    """
    wanted = words(query)
    if not wanted:
        return None
    best: tuple[str, float] | None = None
    for key in sorted(candidates):
        score = _share(wanted, candidates[key])
        if score >= RESTORE_THRESHOLD and (best is None or score > best[1]):
            best = (key, score)
    return best
