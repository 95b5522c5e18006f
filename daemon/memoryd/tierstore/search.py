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

import bisect
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    holds, occurrences of them): it holds *more of the query's words*, or as many but they
    occur at least :data:`LEAD_OCCURRENCES` times in it and :data:`LEAD_RATIO` times as often
    as in the runner-up. Anything closer is no clear lead: narrow the words. Pure."""
    (words, occ), (rival_words, rival_occ) = leader, runner_up
    if words != rival_words:
        return words > rival_words
    return occ >= LEAD_OCCURRENCES and occ >= LEAD_RATIO * rival_occ


def archive_brings_back(ranked: list[tuple[int, int]], limit: int) -> int:
    """How many of the ranked archive matches (each: distinct query words it holds,
    occurrences) recall brings back: all of them up to ``limit``; of more, the leader alone
    when it is :func:`clearly_ahead`, else none (the agent must narrow its words). Pure:
    ``simulate`` replays the same rule (:class:`ArchiveRecall`)."""
    if len(ranked) <= limit:
        return len(ranked)
    return 1 if clearly_ahead(ranked[0], ranked[1]) else 0


class ArchiveRecall:
    """The archived notes (path → text) a recall with a query's words brings back, ranked as
    :func:`memoryd.tierstore.recall.search_archive` ranks them (by path: the archive time is
    unknown), for ``simulate``'s harm replay, which asks it of every search over the same
    notes: each word's occurrences in each note are counted once and kept, so a recall ranks
    only the notes holding one of its words. Each distinct note text is a bit, a set of
    notes an ``int``."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        """``texts``: the notes recalls will be asked over, when known: their words are
        indexed (:class:`_WordIndex`); a note not among them is counted when asked."""
        self._ids: dict[str, int] = {}  # note text → its bit's number
        self._texts: list[str] = []
        # (word as bytes, folded or lowered) → [the notes it was counted in, those holding
        # it, its occurrences in each of those (bit number → count)]
        self._counts: dict[tuple[bytes, bool], tuple[list[int], dict[int, int]]] = {}
        # folded or lowered → bit number → the note's bytes as match_file looks in them
        self._haystacks: dict[bool, dict[int, bytes]] = {False: {}, True: {}}
        self._indexed = self._bits(texts)
        self._index: dict[bool, _WordIndex] = {}  # (made at the first word of each kind)

    def _bits(self, texts: Iterable[str]) -> int:
        """The set of ``texts`` (each numbered the first time it is seen)."""
        ids = self._ids
        bits = 0
        for text in texts:
            i = ids.get(text)
            if i is None:
                i = ids[text] = len(self._texts)
                self._texts.append(text)
            bits |= 1 << i
        return bits

    def _holding(self, wb: bytes, fold: bool, notes: int) -> tuple[int, dict[int, int]]:
        """(the notes holding ``wb`` among those counted so far, its occurrences in each),
        ``notes`` counted first (in C: the word is asked of each note's bytes once)."""
        entry = self._counts.get((wb, fold))
        if entry is None:
            entry = self._counts[(wb, fold)] = ([0, 0], {})
            if self._indexed and _INDEX_WORD.fullmatch(wb):
                index = self._index.get(fold)
                if index is None:
                    index = self._index[fold] = _WordIndex(self._indexed_haystacks(fold))
                got = index.occurrences(wb)
                held = 0
                for i in got:
                    held |= 1 << i
                entry[0][:] = [self._indexed, held]
                entry[1].update(got)
        sets, occurrences = entry
        new = notes & ~sets[0]
        if new:
            sets[0] |= new
            order = list(_members(new))
            hays = self._haystacks[fold]
            for i in itertools.filterfalse(hays.__contains__, order):
                hays[i] = haystack(self._texts[i].encode("utf-8"), fold)  # (lowered once)
            held = sets[1]
            for i, n in zip(order, map(bytes.count, map(hays.__getitem__, order),
                                       itertools.repeat(wb)), strict=True):  # fmt: skip
                if n:
                    occurrences[i] = n
                    held |= 1 << i
            sets[1] = held
        return sets[1], occurrences

    def _indexed_haystacks(self, fold: bool) -> dict[int, bytes]:
        hays = self._haystacks[fold]
        for i in _members(self._indexed):
            if i not in hays:
                hays[i] = haystack(self._texts[i].encode("utf-8"), fold)
        return {i: hays[i] for i in _members(self._indexed)}

    def _words(self, query: str) -> list[tuple[bytes, bool]]:
        words = normalise_words([query])
        fold = needs_unicode_fold(words)
        return [(w.encode("utf-8"), fold) for w in words]

    def __call__(self, query: str, texts: Mapping[str, str], limit: int = 3) -> list[str]:
        words = self._words(query)
        if not words:
            return []
        pool = self._bits(texts.values())
        holding = [self._holding(wb, fold, pool) for wb, fold in words]
        matched = 0
        for held, _occ in holding:
            matched |= held & pool
        found = []
        for path, text in texts.items():
            i = self._ids[text]
            if matched >> i & 1:  # (match_file's words found, and their occurrences)
                got = [n for _held, occ in holding if (n := occ.get(i, 0))]
                found.append((-len(got), -sum(got), path))
        found.sort()
        n = archive_brings_back([(-w, -o) for w, o, _ in found], limit)
        return [p for _, _, p in found[:n]]

    def reaches(
        self, query: str, path: str, text: str, among: Callable[[], Mapping[str, str]],
        limit: int = 3,
    ) -> bool:  # fmt: skip
        """``path in self(query, among(), limit)``, neither asked when the note (its
        ``text``) holds none of the words: most of what a replay asks."""
        words = self._words(query)
        if not words:
            return False
        me = self._bits((text,))
        if not any(self._holding(wb, fold, me)[0] & me for wb, fold in words):
            return False
        texts = among()
        pool = self._bits(texts.values())
        if pool.bit_count() != len(texts) or texts.get(path) != text:  # (two notes of one text)
            return path in self(query, texts, limit)
        holding = [self._holding(wb, fold, pool) for wb, fold in words]
        sets = [held & pool for held, _occ in holding]
        matched = 0
        for held in sets:
            matched |= held
        if matched.bit_count() <= limit:  # (every match brought back, this one among them)
            return True
        # more matches than the limit: only a leader clearly ahead of the runner-up
        from ..policy.restore_match import at_least

        at = at_least(sets)  # at[j]: the notes holding at least j of the words
        mine = sum(1 for held in sets if held & me)
        if at[mine + 1]:  # (another holds more of the words)
            return False
        rivals = at[mine] & ~me
        if not rivals:  # (more of the words than any other: clearly ahead)
            return True
        counts = [o for _held, o in holding]
        i = self._ids[text]
        occ = sum(o.get(i, 0) for o in counts)
        # (ahead of the runner-up is ahead of each rival: the first it is not, no clear lead)
        for r in _members(rivals):
            theirs = sum(o.get(r, 0) for o in counts)
            # (as many words and occurrences as a rival: whichever path leads, by no margin)
            if theirs >= occ or not clearly_ahead((mine, occ), (mine, theirs)):
                return False
        return True


def _members(bits: int) -> Iterator[int]:
    """The numbers of a bit set's bits, lowest first."""
    while bits:
        low = bits & -bits
        bits ^= low
        yield low.bit_length() - 1


# A query word made only of these bytes (letters, digits, ``_``, and every byte of a
# non-ASCII character) occurs only inside a run of them in a note: its occurrences in the
# note are those in the note's runs, which :class:`_WordIndex` keeps.
_INDEX_WORD = re.compile(rb"[A-Za-z0-9_\x80-\xff]+")
# A word held by more index words than this (a letter, a syllable) is counted in each note.
_MAX_INDEX_WORDS = 2000


class _WordIndex:
    """The runs of word bytes (:data:`_INDEX_WORD`) of many notes' haystacks, each with the
    notes holding it and how often, all in one ``bytes``: a query word's occurrences in every
    note are found in the few runs holding it, one search in C. The counts are
    ``bytes.count``'s: a word that cannot cross the end of a run occurs in a note exactly as
    often as in its runs."""

    def __init__(self, haystacks: Mapping[int, bytes]) -> None:
        postings: dict[bytes, list[tuple[int, int]]] = {}
        for i, hay in haystacks.items():
            runs: dict[bytes, int] = {}
            for run in _INDEX_WORD.findall(hay):
                runs[run] = runs.get(run, 0) + 1
            for run, n in runs.items():
                postings.setdefault(run, []).append((i, n))
        self._haystacks = haystacks
        self._runs = list(postings)
        self._postings = postings
        self._starts: list[int] = []
        at = 0
        for run in self._runs:
            self._starts.append(at)
            at += len(run) + 1
        self._all = b"\n".join(self._runs)  # (a newline ends each run: no word holds one)

    def occurrences(self, wb: bytes) -> dict[int, int]:
        """note → occurrences of ``wb`` (a word of :data:`_INDEX_WORD` bytes), of the notes
        holding it (counted note by note when more than :data:`_MAX_INDEX_WORDS` runs do)."""
        found: dict[int, int] = {}
        runs, starts, postings = self._runs, self._starts, self._postings
        pos = self._all.find(wb)
        seen = 0
        while pos != -1:
            k = bisect.bisect_right(starts, pos) - 1
            run = runs[k]
            n = run.count(wb)
            for i, times in postings[run]:
                found[i] = found.get(i, 0) + n * times
            seen += 1
            if seen > _MAX_INDEX_WORDS:
                return self._counted(wb)
            pos = self._all.find(wb, starts[k] + len(run) + 1)
        return found

    def _counted(self, wb: bytes) -> dict[int, int]:
        counts = zip(self._haystacks, map(bytes.count, self._haystacks.values(),
                                           itertools.repeat(wb)), strict=True)  # fmt: skip
        return {i: n for i, n in counts if n}


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
    """(words found, occurrences, tag match, snippet) of one file's bytes (pure). ``fold``:
    whether non-ASCII case folding is needed (from ``words`` when not given)."""
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


# Of a note found, the text handed on (the plugin shows the model 8,000 characters and keeps
# 8 MiB of a command's output: a 9.5 MB note made the answer unreadable after the note had
# moved and its hit was counted). The whole note stays where recall says it is.
SHOWN_MAX_CHARS = 64_000


def shown_text(data: bytes) -> str:
    """A found note's text as recall hands it on: at most :data:`SHOWN_MAX_CHARS`."""
    text = data[: SHOWN_MAX_CHARS * 4].decode("utf-8", errors="replace")
    if len(text) <= SHOWN_MAX_CHARS and len(data) <= SHOWN_MAX_CHARS * 4:
        return text
    return f"{text[:SHOWN_MAX_CHARS]}\n[… cut at {SHOWN_MAX_CHARS:,} characters of a longer note]"


def read_shown(path: str | Path) -> str | None:
    """The text shown of a note found (None: it is no note any more)."""
    data = read_all(path)
    return None if data is None else shown_text(data)


def search_tier(root: Path, tier: str, words: list[str]) -> list[Match]:
    """Every file of ``root/tier`` containing any of ``words``, best first: one ``scandir``,
    one read per file, and a ``stat`` only for the files that match (recall's hot path)."""
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
