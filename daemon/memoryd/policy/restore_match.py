"""Does a ``memory_search`` query ask for an archived file? Pure.

The daemon's restore on demand (:mod:`memoryd.ondemand`) scores every new search query
against the text of each file memoryd archived and brings back the best one when its
score reaches :data:`RESTORE_THRESHOLD`. OpenClaw's own search scores are on another
scale (and never see the archive), so memoryd scores with its own words.

This is the simple keyword version: the share of the query's distinctive words (not a
stop word, three letters or more, a plural ``s`` dropped) that the file's text contains.
A query made of a file's distinctive words scores 1; unrelated words score 0. The
interface (``match_score``, ``RESTORE_THRESHOLD``, ``best_match``) is what the daemon
relies on; a calibrated scorer may replace the body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# At or above this score a query restores the file (share of its distinctive words found).
RESTORE_THRESHOLD = 0.6

_WORD = re.compile(r"\w+", re.UNICODE)

_STOP_WORDS = """
the and for are but not you all any can had her was one our out day get has him his how
man new now old see two way who its did let put say she too use that with have this will
your from they know want been good much some time very when come here just like long make
many more only over such take than them well were what where which while about after again
also back before being could does doing each even every into most other same should still
their then there these those through under until would note notes file files memory
today yesterday tomorrow please find search show tell give need last next week month year
"""
_STOP = frozenset(_STOP_WORDS.split())


def words(text: str) -> set[str]:
    """The distinctive words of ``text``: lower case, no stop words, no plural ``s``."""
    out = set()
    for raw in _WORD.findall(text.lower()):
        if len(raw) < 3 or raw in _STOP or (raw.isdigit() and len(raw) < 4):
            continue
        if len(raw) > 4 and raw.endswith("s") and not raw.endswith("ss"):
            raw = raw[:-1]
        out.add(raw)
    return out


def match_score(query: str, text: str) -> float:
    """Share of the query's distinctive words found in ``text`` (0 when it has none)."""
    wanted = words(query)
    if not wanted:
        return 0.0
    return len(wanted & words(text)) / len(wanted)


def best_match(query: str, candidates: Mapping[str, str]) -> tuple[str, float] | None:
    """The candidate (key → text) the query asks for, with its score; None below the threshold.

    Ties go to the key that sorts first, so the answer does not depend on dict order.
    """
    wanted = words(query)
    if not wanted:
        return None
    best: tuple[str, float] | None = None
    for key in sorted(candidates):
        score = len(wanted & words(candidates[key])) / len(wanted)
        if score >= RESTORE_THRESHOLD and (best is None or score > best[1]):
            best = (key, score)
    return best
