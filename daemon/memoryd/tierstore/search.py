"""Which notes of the tier store hold a recall's words: the tiers searched in order, a match's
rank, and when one match clearly leads the others. Reading only (no move, no count): what
:mod:`.recall` acts on, and what ``simulate``'s harm replay asks of recall.

Matching is the seed's ``grep -il "w1\\|w2"``: a file matches when it contains any
of the words, case-insensitively (substrings, so Chinese words need no
tokenising). Within a tier, files are ranked by how many different words they
contain, then (in gist/) whether a word is among the gist's tags, then how often
the words occur, then by recency.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import faults
from ..fsutil import read_note
from ..workspace import is_utf8_name
from .gist import TAGS_LABEL
from .layout import TIERS, note_of

ARCHIVE = "archive"  # the layer after forgotten/: what expire archived from the workspaces
SNIPPET = 160


@dataclass(frozen=True)
class Match:
    """One matching file: where it is, which words it has, and a line to show."""

    tier: str
    filename: str
    note: str
    is_summary: bool
    words: tuple[str, ...]
    occurrences: int
    tag_match: bool
    mtime: float
    snippet: str

    @property
    def rel(self) -> str:
        return f"{self.tier}/{self.filename}"

    def rank_key(self) -> tuple[Any, ...]:
        return (-len(self.words), not self.tag_match, -self.occurrences, -self.mtime, self.rel)


LEAD_OCCURRENCES = 3  # a lead by occurrences alone needs at least this many
LEAD_RATIO = 2.0  # … and this many times the runner-up's


def clearly_ahead(leader: tuple[int, int], runner_up: tuple[int, int]) -> bool:
    """Whether the best match clearly leads the next best (each: distinct query words it
    holds, occurrences of them). Pure.

    The rule, stated: it holds *more of the query's words* than any other match (the note
    that has "kayak" and "june" over the notes that only mention June), or as many but the
    words occur at least :data:`LEAD_OCCURRENCES` times in it and at least
    :data:`LEAD_RATIO` times as often as in the runner-up (a note about kayaks over notes
    that say the word once). Anything closer is no clear lead: narrow the words."""
    (words, occ), (rival_words, rival_occ) = leader, runner_up
    if words != rival_words:
        return words > rival_words
    return occ >= LEAD_OCCURRENCES and occ >= LEAD_RATIO * rival_occ


def archive_brings_back(ranked: list[tuple[int, int]], limit: int) -> int:
    """How many of the ranked archive matches (each: distinct query words it holds,
    occurrences) recall brings back: all of them up to ``limit``; of more, the leader alone
    when it is :func:`clearly_ahead`, else none (the agent must narrow its words). Pure:
    ``simulate`` replays the same rule (:func:`archive_recall_picks`)."""
    if len(ranked) <= limit:
        return len(ranked)
    return 1 if clearly_ahead(ranked[0], ranked[1]) else 0


def archive_recall_picks(query: str, texts: Mapping[str, str], limit: int = 3) -> list[str]:
    """The archived notes (path → text) a recall with ``query``'s words would bring back,
    ranked as :func:`memoryd.tierstore.recall.search_archive` ranks them (the time each was
    archived unknown: by path). Pure; what ``simulate``'s harm replay asks of recall
    (through :class:`ArchiveRecall`, which counts each word in each note once)."""
    return ArchiveRecall()(query, texts, limit)


class ArchiveRecall:
    """:func:`archive_recall_picks` for a replay that asks it of thousands of searches over
    the same archived notes (``simulate``'s harm: 6,000 recalls of 150 to 700 notes each in
    a heavy year, over 2,000 distinct words): how often each word occurs in each note's
    text is counted once and kept, with the texts that hold it, so a recall ranks only the
    notes holding one of its words. The same picks; only the counting is shared."""

    def __init__(self) -> None:
        # (word as bytes, folded or lowered) → (the note texts it was counted in, those of
        # them holding it → its occurrences there)
        self._counts: dict[tuple[bytes, bool], tuple[set[str], dict[str, int]]] = {}
        # folded or lowered → note text → its bytes as match_file looks for words in them
        self._haystacks: dict[bool, dict[str, bytes]] = {False: {}, True: {}}

    def _holding(self, wb: bytes, fold: bool, texts: set[str]) -> dict[str, int]:
        """Text → occurrences of ``wb`` in it, of the texts holding it among those counted
        so far, ``texts`` counted first (in C: the word is asked of each text once)."""
        counted, holding = self._counts.setdefault((wb, fold), (set(), {}))
        new = texts - counted
        if new:
            hays = self._haystacks[fold]
            for text in itertools.filterfalse(hays.__contains__, new):
                hays[text] = haystack(text.encode("utf-8"), fold)  # (lowered once)
            order = list(new)
            occurrences = list(
                map(bytes.count, map(hays.__getitem__, order), itertools.repeat(wb))
            )
            holding.update(itertools.compress(zip(order, occurrences, strict=True), occurrences))
            counted.update(order)
        return holding

    def __call__(self, query: str, texts: Mapping[str, str], limit: int = 3) -> list[str]:
        words = normalise_words([query])
        if not words:
            return []
        fold = needs_unicode_fold(words)
        pool = set(texts.values())
        holding = [self._holding(w.encode("utf-8"), fold, pool) for w in words]
        matched: set[str] = set()
        for h in holding:
            matched.update(pool.intersection(h))
        found = []
        for path, text in texts.items():
            if text in matched:  # (match_file's words found, and their occurrences)
                got = [n for h in holding if (n := h.get(text, 0))]
                found.append((-len(got), -sum(got), path))
        found.sort()
        n = archive_brings_back([(-w, -o) for w, o, _ in found], limit)
        return [p for _, _, p in found[:n]]

    def reaches(
        self, query: str, path: str, text: str, among: Callable[[], Mapping[str, str]],
        limit: int = 3,
    ) -> bool:  # fmt: skip
        """Whether the note ``path`` (its ``text``) is among those recall brings back from
        ``among()`` (the archived notes' texts, ``path`` with them): ``path in self(query,
        among(), limit)``, neither asked when the note holds none of the words (it is then no
        match at all: most of what a replay asks)."""
        words = normalise_words([query])
        if not words:
            return False
        fold = needs_unicode_fold(words)
        if not any(text in self._holding(w.encode("utf-8"), fold, {text}) for w in words):
            return False
        texts = among()
        pool = set(texts.values())
        if len(pool) != len(texts) or texts.get(path) != text:  # (two notes of one text)
            return path in self(query, texts, limit)
        holding = [self._holding(w.encode("utf-8"), fold, pool) for w in words]
        held: Counter[str] = Counter()  # text → how many of the words it holds
        for h in holding:
            held.update(pool.intersection(h))
        if len(held) <= limit:  # (every match brought back, this one among them)
            return True
        # more matches than the limit: only a leader clearly ahead of the runner-up
        mine = held[text]
        if max(held.values()) > mine:
            return False
        rivals = [t for t, n in held.items() if n == mine and t != text]
        if not rivals:  # (more of the words than any other: clearly ahead)
            return True
        occ = sum(h.get(text, 0) for h in holding)
        best = max(sum(h.get(t, 0) for h in holding) for t in rivals)
        # (as many words and occurrences as a rival: whichever path leads, by no margin)
        return best < occ and clearly_ahead((mine, occ), (mine, best))


def haystack(data: bytes, fold: bool) -> bytes:
    """A note's bytes as :func:`match_file` looks for the words in them: case-folded
    (``fold``, for non-ASCII words), else lowered as ASCII (enough for caseless scripts)."""
    if fold:
        return data.decode("utf-8", errors="replace").casefold().encode("utf-8")
    return data.lower()


def normalise_words(words: list[str]) -> list[str]:
    """Search words: split on whitespace, lower-cased, duplicates dropped, order kept."""
    out: list[str] = []
    for w in words:
        for part in w.split():
            low = part.casefold()
            if low and low not in out:
                out.append(low)
    return out


def needs_unicode_fold(words: list[str]) -> bool:
    return any(not w.isascii() and w.upper() != w.lower() for w in words)


def match_file(
    data: bytes, words: list[str], tier: str, fold: bool | None = None
) -> tuple[tuple[str, ...], int, bool, str]:
    """(words found, occurrences, tag match, snippet) of one file's bytes (pure).

    ``fold``: whether non-ASCII case folding is needed (computed from ``words``
    when not given; callers matching many files compute it once).
    """
    if fold is None:
        fold = needs_unicode_fold(words)
    hay = haystack(data, fold)
    found: list[str] = []
    occurrences = 0
    first_at = -1
    for w in words:
        wb = w.encode("utf-8")
        n = hay.count(wb)
        if n:
            found.append(w)
            occurrences += n
            at = hay.find(wb)
            if first_at < 0 or at < first_at:
                first_at = at
    if not found:
        return (), 0, False, ""
    tag_match = False
    if tier == "gist":
        for head in hay.split(b"\n", 4)[:4]:
            s = head.strip()
            label = TAGS_LABEL.encode("utf-8")
            if s.startswith(label) or s.startswith(b"tags:"):
                tag_match = any(w.encode("utf-8") in s for w in found)
                break
    start = hay.rfind(b"\n", 0, first_at) + 1
    end = hay.find(b"\n", first_at)
    raw = data.decode("utf-8", errors="replace") if len(hay) != len(data) else None
    if raw is None:
        line = data[start : end if end >= 0 else len(data)].decode("utf-8", errors="replace")
    else:  # case folding changed lengths: locate the line in the decoded text instead
        line = next((ln for ln in raw.splitlines() if any(w in ln.casefold() for w in found)), "")
    line = line.strip()
    if len(line) > SNIPPET:
        line = line[: SNIPPET - 1] + "…"
    return tuple(found), occurrences, tag_match, line


def read_all(path: str | Path) -> bytes | None:
    """A note's bytes (never through a symlink, never blocking on a FIFO); None if no note."""
    got = read_note(path)
    return None if got is None else got[0]


def read_shown(path: str | Path) -> str | None:
    """The text shown of a note found (None: it is no note any more)."""
    data = read_all(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def search_tier(root: Path, tier: str, words: list[str]) -> list[Match]:
    """Every file of ``root/tier`` containing any of ``words``, best first.

    The hot path of recall reads every file of a tier, so it stays close to the
    system calls: one ``scandir`` (file type from the directory entry, no stat),
    one open and read per file, and a ``stat`` only for the files that match.
    """
    folder = root / tier
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
        entries = list(os.scandir(folder))
    except OSError:
        return []
    faults.point("recall.listed")
    fold = needs_unicode_fold(words)
    out: list[Match] = []
    for entry in entries:
        name = entry.name
        if not name.endswith(".md") or name.startswith(".") or not is_utf8_name(name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        data = read_all(entry.path)
        if data is None:
            continue
        found, occ, tag, snippet = match_file(data, words, tier, fold)
        if found:
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            note, is_summary = note_of(tier, name)
            out.append(Match(tier, name, note, is_summary, found, occ, tag, mtime, snippet))
    out.sort(key=Match.rank_key)
    return out


@dataclass
class SearchResult:
    words: list[str]
    tier: str | None  # the tier where the search stopped (None: nothing anywhere)
    matches: list[Match]  # every match in that tier, best first
    searched: list[str]

    def shown(self, limit: int) -> list[Match]:
        return self.matches[:limit]

    def too_many(self, limit: int) -> bool:
        return len(self._notes()) > limit

    def _notes(self) -> list[str]:
        return list(dict.fromkeys(m.note for m in self.matches))

    def leader(self) -> str | None:
        """The note that clearly leads the others (:func:`clearly_ahead`), or None."""
        if not self.matches:
            return None
        best = self.matches[0]
        rival = next((m for m in self.matches if m.note != best.note), None)
        if rival is None:
            return best.note
        ahead = clearly_ahead(
            (len(best.words), best.occurrences), (len(rival.words), rival.occurrences)
        )
        return best.note if ahead else None


def layered_search(root: Path, words: list[str]) -> SearchResult:
    """Search the tiers in the seed's order and stop at the first with a match."""
    searched: list[str] = []
    for tier in TIERS:
        searched.append(tier)
        matches = search_tier(root, tier, words)
        if matches:
            return SearchResult(words, tier, matches, searched)
    return SearchResult(words, None, [], searched)
