"""Restore on demand: does a search query ask for a note memoryd archived?

An archived note is not in OpenClaw's index, so memoryd matches the query against the
archived text with its own keyword / tag score (:mod:`memoryd.policy.score`). A restore needs
a score of at least :data:`RESTORE_THRESHOLD`, and the archived note must also answer the
query better than every note still in the workspace and be named by one of its distinctive
words (held by at most :data:`DISTINCTIVE_NOTES` notes): the threshold alone restored notes
nobody needed (docs/decisions.md, "Restore threshold").
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from .score import Document, keyword_match, tag_match, tokens

# Calibrated on generated histories (bench/bench_policies.py --restore; docs/decisions.md).
RESTORE_THRESHOLD: float = 0.6

# A word held by at most this many notes (workspace and archive) names a note: a query must
# use one of the archived note's such words to restore it (docs/decisions.md).
DISTINCTIVE_NOTES = 3

KEYWORD_WEIGHT, TAG_WEIGHT = 0.4, 0.2  # [score]'s default weights, without time and access

# The least share of a query's words a note must hold to reach the threshold: tags lift the
# keyword share k to (KW·k + TW·t) / (KW + TW) at most, t ≤ 1 (0.4 with the figures above).
MIN_KEYWORD_SHARE = min(
    RESTORE_THRESHOLD,
    (RESTORE_THRESHOLD * (KEYWORD_WEIGHT + TAG_WEIGHT) - TAG_WEIGHT) / KEYWORD_WEIGHT,
)


@functools.lru_cache(maxsize=4096)
def _document(text: str) -> Document:
    return Document.of(text)


@functools.lru_cache(maxsize=4096)
def _words(query: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(tokens(query)))


def query_words(query: str) -> tuple[str, ...]:
    """The query's distinct words, as matching counts them: every score here depends on
    which words they are, not on their order."""
    return _words(query)


def match_score(query: str, text: str) -> float:
    """How well ``query`` asks for the note ``text``, 0..1 (0: no words to match): the share
    of its distinct words found in the note; with tags, the blend of that and the share found
    among the tags (0.4 : 0.2, as in ``[score]``) when it is higher."""
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


def document_frequency(texts: Iterable[str]) -> Counter[str]:
    """word → how many of the notes hold it (their words and tags)."""
    df: Counter[str] = Counter()
    for text in texts:
        doc = _document(text)
        df.update(set(doc.words) | set(doc.tags))
    return df


def names_it(query: str, text: str, df: Mapping[str, int]) -> bool:
    """Whether the query uses one of the note's distinctive words: a word of the note
    that at most :data:`DISTINCTIVE_NOTES` notes hold (``df``: from
    :func:`document_frequency` over the workspace and the archive)."""
    doc = _document(text)
    own = set(doc.words) | set(doc.tags)
    return any(w in own and df.get(w, 0) <= DISTINCTIVE_NOTES for w in _words(query))


def top_matches(query: str, candidates: Mapping[str, str]) -> tuple[list[str], float]:
    """The archived notes sharing the query's best score at or above the threshold (in path
    order), and that score: what :func:`best_match` and :func:`tied_matches` look at next
    (``[]``: neither finds anything, and the workspace need not be read)."""
    if not _words(query):
        return [], 0.0
    top, tops = -1.0, []
    for path in sorted(candidates):
        s = match_score(query, candidates[path])
        if s < RESTORE_THRESHOLD:
            continue
        if s > top:
            top, tops = s, [path]
        elif s == top:
            tops.append(path)
    return tops, top


def best_match(
    query: str,
    candidates: Mapping[str, str],
    present: Mapping[str, str] | None = None,
    leaders: tuple[list[str], float] | None = None,
) -> tuple[str, float] | None:
    """The archived note (path → archived text) the query asks for, if any: at or above the
    threshold, *above* every other archived note (a tie: :func:`tied_matches`) and every note
    in ``present`` (path → text), and named by the query (:func:`names_it`). ``leaders``:
    :func:`top_matches` of the same query and candidates, if at hand.
    """
    tops, top = top_matches(query, candidates) if leaders is None else leaders
    if len(tops) != 1:
        return None
    if present is None:
        return tops[0], top
    return (tops[0], top) if _named_over_workspace(query, candidates, present, tops, top) else None


def tied_matches(
    query: str,
    candidates: Mapping[str, str],
    present: Mapping[str, str],
    leaders: tuple[list[str], float] | None = None,
) -> list[str]:
    """When the query names two or more archived notes exactly as well, better than every
    note in the workspace: those of them it names (path order, two or more), which nothing
    brings back by itself (the agent reads the one it wants); else ``[]``. ``leaders`` as
    for :func:`best_match`."""
    tops, top = top_matches(query, candidates) if leaders is None else leaders
    if len(tops) < 2:
        return []
    named = _named_over_workspace(query, candidates, present, tops, top)
    return named if len(named) >= 2 else []


def _named_over_workspace(
    query: str,
    candidates: Mapping[str, str],
    present: Mapping[str, str],
    tops: list[str],
    top: float,
) -> list[str]:
    """Of the archived leaders ``tops`` (scoring ``top``), those the query names, when no
    note in the workspace answers it as well; ``[]`` when one does."""
    if any(match_score(query, text) >= top for text in present.values()):
        return []
    df = document_frequency([*candidates.values(), *present.values()])
    return [p for p in tops if names_it(query, candidates[p], df)]


class Matcher:
    """Every note of ``texts`` (path → text) a query reaches the threshold with, found by bit
    sets instead of a score per note (``simulate`` matches every query against every note).

    A note of no tags holding j of n words scores j / n, :func:`match_score`'s very number;
    a note with tags must hold :func:`words_needed` of them to possibly reach it, and only
    those are scored. The query names a note when it holds one of its distinctive words."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = dict(texts)
        self.paths = sorted(self.texts)  # (bit i: paths[i]; the lowest bit, the first path)
        self.df = document_frequency(self.texts.values())
        words: dict[str, int] = {}  # word → the notes holding it (bit i: paths[i])
        owned: dict[str, int] = {}  # word → the notes holding it among their words or tags
        self.tagged = 0
        for i, path in enumerate(self.paths):
            doc = _document(self.texts[path])
            bit = 1 << i
            for w in doc.words:
                words[w] = words.get(w, 0) | bit
            for w in set(doc.words) | set(doc.tags):
                owned[w] = owned.get(w, 0) | bit
            if doc.tags:
                self.tagged |= bit
        self.words, self.owned = words, owned
        # What tag_match asks of a tagged note, a word at a time (the word in one of its tags,
        # or a tag of 2+ characters in the word), as bit sets over the notes: by the
        # substrings of each short tag, by the tags themselves; a long tag is asked directly.
        self._in_tag: dict[str, int] = {}  # substring → the notes with a short tag holding it
        self._tag: dict[str, int] = {}  # short tag of 2+ characters → the notes having it
        self._long_tags: dict[str, int] = {}  # a tag too long for its substrings → its notes
        for i, path in enumerate(self.paths):
            bit = 1 << i
            for tag in set(_document(self.texts[path]).tags):
                if len(tag) > _SHORT_TAG:
                    self._long_tags[tag] = self._long_tags.get(tag, 0) | bit
                    continue
                if len(tag) >= 2:
                    self._tag[tag] = self._tag.get(tag, 0) | bit
                for sub in {tag[a:b] for a in range(len(tag)) for b in range(a + 1, len(tag) + 1)}:
                    self._in_tag[sub] = self._in_tag.get(sub, 0) | bit
        self._tag_hits: dict[str, int] = {}

    def tag_hits(self, word: str) -> int:
        """The notes whose tags ``word`` matches as :func:`memoryd.policy.score.tag_match`
        counts it (the word in a tag, or a tag of 2+ characters in the word), as a bit set."""
        got = self._tag_hits.get(word)
        if got is not None:
            return got
        got = self._in_tag.get(word, 0)
        n = len(word)
        if n <= _SHORT_TAG * 4:
            for a in range(n - 1):
                for b in range(a + 2, min(n, a + _SHORT_TAG) + 1):
                    got |= self._tag.get(word[a:b], 0)
        else:  # (a word this long: every short tag asked directly)
            for tag, bits in self._tag.items():
                if tag in word:
                    got |= bits
        for tag, bits in self._long_tags.items():
            if word in tag or tag in word:
                got |= bits
        self._tag_hits[word] = got
        return got

    def candidates(self, query: str) -> list[tuple[str, float, bool]]:
        """The notes ``query`` scores at or above :data:`RESTORE_THRESHOLD` with, best first
        (ties in path order): (path, score, whether the query names it)."""
        words = _words(query)
        n = len(words)
        if not n:
            return []
        at = at_least([self.words.get(w, 0) for w in words])
        named = 0
        for w in words:
            if self.df.get(w, 0) <= DISTINCTIVE_NOTES:
                named |= self.owned.get(w, 0)
        found: list[tuple[str, float, bool]] = []
        plain = ~self.tagged
        for j in range(n, 0, -1):
            share = j / n
            if share < RESTORE_THRESHOLD:
                break
            self._collect(at[j] & ~at[j + 1] & plain, share, named, found)
        need = words_needed(n)
        for bits, s in self._tagged_scores(words, at, need):
            self._collect(bits, s, named, found)
        found.sort(key=_best_first)
        return found

    def best(self, query: str) -> list[tuple[str, float, bool]]:
        """The first of :meth:`candidates` alone, found without listing the others (``[]``:
        none, or a tie for the best score): all restore on demand looks at."""
        words = _words(query)
        n = len(words)
        if not n:
            return []
        at = at_least([self.words.get(w, 0) for w in words])
        top, top_bits = -1.0, 0  # the best score reached, and the notes scoring it
        plain = ~self.tagged
        for j in range(n, 0, -1):
            share = j / n
            if share < RESTORE_THRESHOLD:
                break
            bits = at[j] & ~at[j + 1] & plain
            if bits:
                top, top_bits = share, bits
                break
        need = words_needed(n)
        for bits, s in self._tagged_scores(words, at, need):
            if s >= top:
                top, top_bits = s, (top_bits | bits if s == top else bits)
        low = top_bits & -top_bits
        if not top_bits or top_bits != low:  # (none, or a tie: no one best match)
            return []
        named = 0
        for w in words:
            if self.df.get(w, 0) <= DISTINCTIVE_NOTES:
                named |= self.owned.get(w, 0)
        return [(self.paths[low.bit_length() - 1], top, bool(low & named))]

    def _tagged_scores(
        self, words: tuple[str, ...], at: list[int], need: int
    ) -> Iterator[tuple[int, float]]:
        """(notes, score) of the tagged notes scoring at least :data:`RESTORE_THRESHOLD`:
        match_score from two bit-set counts (words held: k of n; matched by tags: g of n),
        the notes of each (k, g) at once."""
        n = len(words)
        tagged = at[need] & self.tagged
        if not tagged:
            return
        by_tag = at_least([self.tag_hits(w) & tagged for w in words])
        for k in range(n, need - 1, -1):
            holding = at[k] & ~at[k + 1] & tagged
            if not holding:
                continue
            kw = k / n
            for g in range(n, -1, -1):
                bits = holding & by_tag[g] & ~by_tag[g + 1]
                if not bits:
                    continue
                tw = min(g / n, 1.0)
                blend = (KEYWORD_WEIGHT * kw + TAG_WEIGHT * tw) / (KEYWORD_WEIGHT + TAG_WEIGHT)
                s = max(kw, blend)
                if s >= RESTORE_THRESHOLD:
                    yield bits, s

    def _collect(
        self, bits: int, share: float, named: int, found: list[tuple[str, float, bool]]
    ) -> None:
        while bits:
            low = bits & -bits
            bits ^= low
            found.append((self.paths[low.bit_length() - 1], share, bool(low & named)))


def at_least(sets: list[int]) -> list[int]:
    """``at[j]``: the notes in at least ``j`` of ``sets`` (bit sets over the notes), for j
    from 0 (every note: -1) to ``len(sets) + 1`` (none), counted a set at a time (recall's
    ranking asks it too: :meth:`memoryd.tierstore.search.ArchiveRecall.reaches`)."""
    n = len(sets)
    at = [-1] + [0] * (n + 1)
    for i, bits in enumerate(sets, 1):
        if bits:
            for j in range(i, 0, -1):
                at[j] |= at[j - 1] & bits
    return at


def _best_first(found: tuple[str, float, bool]) -> tuple[float, str]:
    return -found[1], found[0]


# A tag up to this long is found by its substrings (Matcher.tag_hits); a longer one is
# asked of each word directly.
_SHORT_TAG = 24


def words_needed(query_words: int) -> int:
    """How many of a query's ``query_words`` distinct words a note must hold to possibly reach
    :data:`RESTORE_THRESHOLD` (:data:`MIN_KEYWORD_SHARE`, a hair lower against rounding;
    at least one: a note holding none scores at most a tag blend of 1/3)."""
    return max(1, math.ceil(MIN_KEYWORD_SHARE * query_words - 1e-9))
