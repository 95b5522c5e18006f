"""The words a note is asked for by: learned from the past searches that found it.

Restore on demand matches a search's words against an archived note's text. A search in
other words for the same thing (a synonym, a client's nickname, "coffee" for the espresso
note) never matches, though the user's OpenClaw, with its embeddings, found the note by
those words while it was in ``memory/``. There is no embedding model memoryd can run here
(issue 28, item 2; docs/decisions.md): what memoryd can know locally is which searches
*did* find a note before it was archived. A search whose first result was the note, or
after which the agent read it, says its words ask for that note: they are learned as the
note's, and later searches in those words reach it in the archive as if the note held them.

Pure: the calls and their strong results come in as plain values; the daemon, ``simulate``
and the hooks feed it from the hits table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from .score import tokens

# A word learned from fewer searches than this is not yet the note's (one stray first
# result must not teach a note a word): measured on the generated families (decisions.md).
MIN_SEARCHES = 1
# A word learned by more notes than this names none of them (a general word).
MAX_NOTES = 3


class Vocabulary:
    """Per note, the words of the searches that found it, and how many notes learned each."""

    def __init__(self) -> None:
        self.by_note: dict[str, Counter[str]] = {}
        self.notes_of: dict[str, set[str]] = {}

    def learn(self, path: str, query: str) -> None:
        """A search with ``query`` found ``path`` (first result, or read after it)."""
        got = self.by_note.setdefault(path, Counter())
        for w in dict.fromkeys(tokens(query)):
            got[w] += 1
            self.notes_of.setdefault(w, set()).add(path)

    def words(self, path: str) -> frozenset[str]:
        """The words learned for ``path``: asked by enough searches, held by few notes."""
        got = self.by_note.get(path)
        if not got:
            return frozenset()
        return frozenset(
            w for w, n in got.items()
            if n >= MIN_SEARCHES and len(self.notes_of.get(w, ())) <= MAX_NOTES
        )  # fmt: skip

    def notes_with(self, word: str) -> set[str]:
        return self.notes_of.get(word, set())


def learned_from(found: Iterable[tuple[str, str]]) -> Vocabulary:
    """A vocabulary from (path, query) pairs: each a past search that found the note."""
    v = Vocabulary()
    for path, query in found:
        v.learn(path, query)
    return v


def extended(texts: Mapping[str, str], vocab: Vocabulary) -> dict[str, frozenset[str]]:
    """Per note, the learned words it does not hold in its own text (for a report)."""
    out = {}
    for path, text in texts.items():
        own = set(tokens(text))
        extra = vocab.words(path) - own
        if extra:
            out[path] = frozenset(extra)
    return out
